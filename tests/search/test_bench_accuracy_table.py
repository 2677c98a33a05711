"""The accuracy bench's closing table (``tensoropt.bench.accuracy.summary_lines``)."""

from tensoropt.bench.accuracy import _summary, summary_lines


def _row(kind, measured_s, estimated_s, spread_s=0.0, halves=None):
    even, odd = halves or (measured_s, measured_s)
    figures = {"time": measured_s, "time_spread": spread_s, "network": 0.5 * measured_s, "memory": 100.0,
               "time_even_rounds": even, "time_odd_rounds": odd}
    estimate = {"time": estimated_s, "network": 0.5 * estimated_s, "memory": 90.0}
    return {"kind": kind, "measured": figures, "additive": dict(estimate), "simulated": dict(estimate)}


def test_errors_and_tau_per_model_and_n_a_where_the_frontier_times_tie():
    ordered = [_row("sampled", 1.0, 0.9), _row("frontier", 2.0, 2.2), _row("frontier", 1.0, 1.1),
               _row("frontier", 3.0, 3.3)]
    tied = [_row("frontier", 2.0, 1.0), _row("frontier", 1.0, 1.0)]   # every estimate the same
    lines = summary_lines([("mlp", _summary(ordered)), ("cnn", _summary(tied))])
    assert lines[0].split()[:2] == ["model", "source"] and lines[-4].startswith("targets:")
    mlp = [ln.split() for ln in lines if ln.startswith("mlp")]
    cnn = [ln.split() for ln in lines if ln.startswith("cnn")]
    assert [r[1] for r in mlp] == ["additive", "simulated"]
    # time: +10% under once, -10% over three times: mean |error| 10.0%, signed -5.0%
    assert mlp[0][2:4] == ["10.0%", "(-5.0%)"]
    assert mlp[0][-5:-1] == ["1.00", "1.00", "(3)", "1.00"]    # the estimated order is the measured one
    assert cnn[0][-5] == "n/a" and cnn[1][-5] == "n/a"


def test_tau_on_resolved_pairs_leaves_out_plans_measured_within_noise():
    # frontier plans at 10.0 and 10.5 ms (IQR 1 ms each) are within noise; the estimate
    # swaps them, which costs tau but not the resolved pairs' tau
    front = [_row("frontier", 10.0, 11.0, 1.0), _row("frontier", 10.5, 10.6, 1.0),
             _row("frontier", 20.0, 21.0, 1.0)]
    mlp = [ln.split() for ln in summary_lines([("mlp", _summary(front))]) if ln.startswith("mlp")]
    assert mlp[0][-5:-2] == ["0.33", "1.00", "(2)"]


def test_the_run_against_itself_orders_the_frontier_by_its_even_and_odd_rounds():
    # the even rounds order the three plans 1 < 2 < 3, the odd rounds 2 < 1 < 3: one pair of
    # three swapped, tau 1/3; the estimate follows the whole run's medians (tau 1)
    front = [_row("frontier", 10.0, 10.0, 1.0, halves=(9.0, 11.0)),
             _row("frontier", 10.5, 10.5, 1.0, halves=(10.5, 10.4)),
             _row("frontier", 20.0, 20.0, 1.0, halves=(20.0, 20.0))]
    lines = summary_lines([("lstm", _summary(front))])
    rows = [ln.split() for ln in lines if ln.startswith("lstm")]
    assert [r[-2] for r in rows] == ["0.33", "0.33"] and rows[0][-5] == "1.00"
    assert any(ln.startswith("tau, run vs itself:") for ln in lines)


def test_the_share_of_cpu_other_processes_took_is_printed_per_model_and_explained():
    front = [_row("frontier", 10.0, 10.0), _row("frontier", 20.0, 20.0)]
    lines = summary_lines([("mlp", {**_summary(front), "others_cpu": 0.234}),
                           ("cnn", {**_summary(front), "others_cpu": None}), ("lstm", _summary(front))])
    assert lines[0].split()[-2:] == ["others", "CPU"]
    assert [ln.split()[-1] for ln in lines if ln.startswith(("mlp", "cnn", "lstm"))] == \
        ["23.4%", "23.4%", "n/a", "n/a", "n/a", "n/a"]
    assert any(ln.startswith("others CPU:") for ln in lines)


def test_the_calibration_line_says_which_profile_how_old_and_how_loaded(tmp_path):
    import datetime
    import json

    from tensoropt.bench.accuracy import calibration_line

    assert "none at" in calibration_line(tmp_path / "missing.json")
    profile = {"format_version": 1, "world_size": 2, "hostnames": ["vm", "vm"], "machines": 1,
               "devices_per_machine": 2, "memory_bytes_per_device": 1e9,
               "compute": {"matmul_flops_per_s": 1e11}, "measurements": [],
               "created_utc": "2026-11-28T05:00:00+00:00", "foreign_cpu_share": 0.031}
    path = tmp_path / "local.json"
    path.write_text(json.dumps(profile))
    now = datetime.datetime(2026, 11, 28, 11, 0, tzinfo=datetime.timezone.utc)
    line = calibration_line(path, now=now)
    assert "(6.0 h ago)" in line and "took 3.1% of the CPUs" in line


def test_the_frontier_is_timed_longer_while_its_halves_disagree():
    from tensoropt.bench.accuracy import agrees_with_itself
    same = [(1.0, 1.1), (2.0, 2.1), (3.0, 3.1), (4.0, 4.1)]
    assert agrees_with_itself(same)
    swapped = [(1.0, 2.1), (2.0, 1.1), (3.0, 4.1), (4.0, 3.1)]     # tau 0.33 between halves
    assert not agrees_with_itself(swapped)
    one_swap = same[:2] + [(3.0, 4.1), (4.0, 3.1)] + [(5.0, 5.1), (6.0, 6.1), (7.0, 7.1), (8.0, 8.1),
                                                      (9.0, 9.1), (10.0, 10.1)]
    assert agrees_with_itself(one_swap)        # one pair of 45 swapped: tau 0.96
    assert agrees_with_itself([(1.0, 2.0)])    # one plan: nothing to order
