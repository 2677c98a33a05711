"""The one rule for a rank's intra-op threads (tensoropt.cluster.threads), and that
training, calibration and the compute profiler all follow it."""

import pytest

from tensoropt.cluster import threads
from tensoropt.cluster.threads import rank_threads


@pytest.fixture
def sixteen_cpus(monkeypatch):
    monkeypatch.setattr(threads, "available_cpus", lambda: 16)


@pytest.mark.parametrize("ranks, expected", [(1, 16), (2, 8), (3, 5), (16, 1), (40, 1)])
def test_the_machine_cpus_are_shared_evenly_by_its_ranks(sixteen_cpus, ranks, expected):
    assert rank_threads(ranks, environ={}) == expected


@pytest.mark.parametrize("value, expected", [("3", 3), (" 2 ", 2), ("0", 8), ("", 8)])
def test_tensoropt_threads_overrides_the_share(sixteen_cpus, value, expected):
    assert rank_threads(2, environ={"TENSOROPT_THREADS": value}) == expected


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_tensoropt_threads_is_named_with_its_fix(value):
    with pytest.raises(ValueError, match=r"TENSOROPT_THREADS=.*positive number of intra-op threads"):
        rank_threads(1, environ={"TENSOROPT_THREADS": value})


def test_ranks_per_machine_below_one_is_refused():
    with pytest.raises(ValueError, match="ranks_per_machine=0"):
        rank_threads(0, environ={})


def test_the_profiler_reads_tensoropt_threads_as_training_does(monkeypatch):
    from tensoropt.costs.profiler import ComputeProfiler

    monkeypatch.setenv("TENSOROPT_THREADS", "3")
    assert ComputeProfiler(cache_path=None).threads == 3
    monkeypatch.setenv("TENSOROPT_THREADS", "many")
    with pytest.raises(ValueError, match="TENSOROPT_THREADS='many'"):
        ComputeProfiler(cache_path=None)
