"""30 generated models, each under 2 and 4 ranks and 12 plans in all, train like one process.

One ``mpirun`` job per device count (``tensoropt.bench.fuzz.run_fuzz``, which also turns
a stalled plan into a reported hang instead of a stuck test). Per model and device count:
the frontier's ends and turning point (up to 3 frontier points), data parallel, and
sampled plans chosen to cover re-scheduling step kinds and tensor-reuse choices. Each
plan's initial values, 2 steps' losses and final parameters are compared with a
single-process run (rtol 1e-4), and its collective counts with the plan's.

Run the same check on more models with ``python -m tensoropt.bench fuzz --models 200``.
"""

import shutil

import pytest

from tensoropt.bench.fuzz import PLAN_STEP_KINDS, run_fuzz
from tensoropt.bench.fuzz_plans import REUSE_CHOICES
from tensoropt.models.generated import FEATURES

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MODELS, PLANS_PER_RANK_COUNT = 30, 6


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is not installed; run `make setup` (it installs Open MPI)")
    return run_fuzz(range(MODELS), ranks=(2, 4), plans=PLANS_PER_RANK_COUNT, frontier_cap=3, steps=2,
                    plan_timeout_s=300, workdir=str(tmp_path_factory.mktemp("fuzz")))


def _where(r):
    return f"model {r.seed} ({r.record.get('label', '')}), {r.ranks} ranks, plan {r.index}"


def test_no_plan_mismatches_hangs_or_errors(report):
    assert not report.failures, report.failures[0]
    assert not report.hangs, [_where(r) for r in report.hangs]
    assert not report.errors, [f"{_where(r)}:\n{r.record.get('output', '')[-2000:]}" for r in report.errors]
    bad = [f"{_where(r)}: init {r.record['init_rel']:.2e} losses {r.record['loss_rel']:.2e} params "
           f"{r.record['param_rel']:.2e}, collectives {r.record['collectives']} vs {r.record['expected_collectives']}"
           for r in report.mismatches]
    assert not bad, "\n".join(bad)
    assert report.launches == 2


def test_every_model_ran_at_least_ten_plans_over_both_device_counts(report):
    assert sorted(report.models) == list(range(MODELS))
    per_model = report.plans_per_model()
    assert min(per_model.values()) >= 10, per_model
    assert len(report.runs) >= MODELS * 10
    for seed in range(MODELS):
        assert {r.ranks for r in report.runs if r.seed == seed} == {2, 4}, seed


def test_the_plans_cover_the_frontier_steps_reuse_choices_and_model_features(report):
    cov = report.coverage()
    assert {"least memory", "fastest", "turning point", "data parallel", "sampled"} <= cov["plan_kinds"], \
        cov["plan_kinds"]
    assert set(PLAN_STEP_KINDS) <= cov["step_kinds"], cov["step_kinds"]
    assert set(REUSE_CHOICES) <= cov["reuse"], cov["reuse"]
    assert {"(2,)", "(4,)", "(2, 2)"} <= cov["meshes"], cov["meshes"]
    assert cov["model_features"] == set(FEATURES)
    issued = set().union(*(set(k for k, n in r.record["collectives"].items() if n) for r in report.runs))
    assert {"allreduce", "allgather", "alltoall", "alltoallv"} <= issued, issued


def test_a_rank_that_stops_is_reported_as_a_hang_and_the_run_goes_on(tmp_path):
    """The last rank stops before model 0's first plan: the watchdog kills the job after
    the plan timeout, reports that plan as hung, and a new job runs the next plan."""
    report = run_fuzz(range(1), ranks=(2,), plans=2, frontier_cap=1, plan_timeout_s=30,
                      workdir=str(tmp_path), stall_at="0:0")
    assert [(r.seed, r.index, r.status) for r in report.runs] == [(0, 0, "hang"), (0, 1, "ok")]
    assert report.launches == 2 and not report.failures
    assert report.hangs[0].record["stalled_after_s"] == 30
