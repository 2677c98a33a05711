"""``to.run(..., profile=True)``'s step profile, the main job's measured-vs-estimated line,
and memory in units that fit (one process; the mpirun parts are in tests/parallel)."""

import numpy as np
import pytest

import tensoropt as to
from tensoropt.execution.step_profile import format_bytes
from tensoropt.execution.step_report import StepReporter, report_step_from_env
from tensoropt.units import format_seconds

B, D = 256, 1024


@pytest.mark.parametrize("nbytes, text", [(0, "0 B"), (512, "512 B"), (3 * 1024 + 205, "3.2 KiB"),
                                          (41 * 2**20, "41.0 MiB"), (1.5 * 2**30, "1.50 GiB"),
                                          (-2048, "-2.0 KiB")])
def test_memory_is_printed_in_the_unit_that_fits(nbytes, text):
    assert format_bytes(nbytes) == text


@pytest.mark.parametrize("seconds, text", [(1.8, "1.80 s"), (0.0123, "12.30 ms"), (0.001, "1.00 ms"),
                                            (2.1e-6, "2.10 us"), (0.0, "0.00 us"), (-0.5, "-500.00 ms")])
def test_time_is_printed_in_the_unit_that_fits(seconds, text):
    assert format_seconds(seconds) == text


def _model():
    x = to.placeholder(to.float32, [B, D], name="x")
    w = to.get_variable("w", [D, D])
    loss = to.reduce_sum(to.nn.relu(to.matmul(x, w)))
    return x, loss, to.train.GradientDescentOptimizer(0.01).minimize(loss)


def test_run_returns_a_step_profile_that_counts_variables_and_the_step_allocations():
    x, loss, train = _model()
    to.build_execution_graph(plan=to.find_strategy(check_peak=False))
    feed = {x: np.ones((B, D), np.float32)}
    values, step = to.run([loss, train], feed, profile=True)
    assert values[1] is None and np.isfinite(values[0])
    assert step.resident_bytes == D * D * 4                  # w; plain SGD keeps no slots
    # the step allocates at least w's gradient (D x D) and the matmul's output (B x D)
    assert step.step_peak_bytes >= (D * D + B * D) * 4
    assert step.peak_bytes == step.resident_bytes + step.step_peak_bytes
    assert step.wall_s > 0 and step.network_s == 0.0          # one process: no collectives
    assert 0 < step.compute_s < 10 * step.wall_s              # the ops' summed times
    assert to.run(loss, feed) is not None                     # profile off: values only


def test_main_job_prints_measured_next_to_estimated_after_the_report_step(monkeypatch, capsys):
    monkeypatch.setenv("TENSOROPT_REPORT_STEP", "3")
    x, loss, train = _model()
    plan = to.find_strategy(check_peak=False)
    to.build_execution_graph(plan=plan)
    feed = {x: np.ones((B, D), np.float32)}
    for _ in range(2):
        to.run(train, feed)
    assert "measured" not in capsys.readouterr().err
    to.run(loss, feed)                                         # not a training step
    to.run([loss, train], feed)
    err = capsys.readouterr().err
    assert "after 3 steps: measured" in err and f"(estimated {format_bytes(plan.memory_bytes)})" in err
    assert "MiB" in err
    to.run(train, feed)
    assert capsys.readouterr().err == "", "printed once"


def test_report_step_setting_is_checked():
    assert report_step_from_env({}) == 5
    assert report_step_from_env({"TENSOROPT_REPORT_STEP": "0"}) == 0
    with pytest.raises(ValueError, match="TENSOROPT_REPORT_STEP='soon'"):
        report_step_from_env({"TENSOROPT_REPORT_STEP": "soon"})


def test_the_report_gives_the_simulated_figures_of_the_plan_the_search_simulated(monkeypatch, capsys):
    """A plan the search simulated (``simulate="chosen"``) is reported with the
    simulator's time and peak beside the additive estimate."""
    monkeypatch.setenv("TENSOROPT_REPORT_STEP", "2")
    x, loss, train = _model()
    result = to.search_strategy(option="mini_time", check_peak=False, simulate="chosen")
    check = result.simulator_check
    row = next(r for r in check["plans"] if r["index"] == check["chosen_index"])
    feed = {x: np.ones((B, D), np.float32)}
    to.build_execution_graph(plan=result.chosen)
    for _ in range(2):
        to.run(train, feed)
    err = capsys.readouterr().err
    assert f"simulated {row['simulated_time_s'] * 1e3:.2f} ms)" in err
    assert f"simulated peak {format_bytes(row['simulated_peak_bytes'])})" in err


def test_reporter_takes_the_slowest_rank_and_every_rank_peak():
    class Comm:
        def allgather(self, mine):
            return [mine, (mine[0] * 2, 3 * 2**20)]

    plan = to.Plan(parallelism=2, option="mini_time", ops={}, memory_bytes=2**20, time_s=0.01)
    r = StepReporter(plan, Comm(), rank=0, report_step=2, simulated={"time_s": 0.02},
                     out=open("/dev/null", "w"))
    from tensoropt.execution.step_profile import StepProfile
    r.step(0.5, None)
    r.step(0.9, StepProfile(0.9, 0.0, 2**20, 2**20))
    assert r.line.startswith("tensoropt: after 2 steps: measured 1.80 s per step (estimated 10.00 ms, "
                             "simulated 20.00 ms); peak memory per rank 2.0 MiB, 3.0 MiB (estimated 1.0 MiB)")


def test_the_report_says_when_measured_and_estimated_are_not_comparable():
    from tensoropt.execution.step_report import report_caveats
    calibrated = to.Plan(parallelism=4, option="mini_time", ops={}, time_s=0.01,
                         notes="estimated for cluster local")
    nominal = to.Plan(parallelism=2, option="mini_time", ops={}, time_s=0.01,
                      notes="estimated for cluster local-uncalibrated")
    assert report_caveats(calibrated, local_ranks=2, cores=2) == []
    over, = report_caveats(calibrated, local_ranks=4, cores=2)
    assert over.startswith("4 ranks share this machine's 2 cores (oversubscribed)")
    uncal, = report_caveats(nominal, local_ranks=2, cores=2)
    assert "nominal CPU figures" in uncal and "tensoropt calibrate" in uncal
    r = StepReporter(nominal, None, rank=0, report_step=1, out=open("/dev/null", "w"),
                     caveats=report_caveats(nominal, local_ranks=4, cores=2))
    from tensoropt.execution.step_profile import StepProfile
    r.step(0.5, StepProfile(0.5, 0.0, 2**20, 2**20))
    assert "; note: 4 ranks share" in r.line and "; note: the estimates use nominal" in r.line
