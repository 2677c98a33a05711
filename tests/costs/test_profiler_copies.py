"""Conversion copies timed by the compute profiler (``ComputeProfiler.copies_s``) and priced
by the cost model (``CostModel.copies_s``)."""

import pytest

import tensoropt as to
from tensoropt.costs.model import CostModel
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.costs.profiler import ComputeProfiler
from tensoropt.cluster import get_cluster
from tensoropt.simulator.step_buffers import StepBuffers

OPS = (("transpose", (64, 32, 16), (2, 0, 1)), ("split", (64, 32, 16), 1, 2),
       ("concat", (64, 16, 16), 2, 1))


def _profiler():
    return ComputeProfiler(cache_path=None, threads=1, warmup=1, min_runs=3, max_runs=5, min_time_s=0.0)


def test_copies_are_timed_once_and_then_served_from_the_cache():
    profiler = _profiler()
    seconds = profiler.copies_s(OPS)
    assert 0 < seconds < 1.0 and profiler.measurements == 1
    assert profiler.copies_s(OPS) == seconds and profiler.hits == 1 and profiler.measurements == 1
    assert profiler.copies_s(OPS, itemsize=8) >= 0 and profiler.measurements == 2   # another key
    assert profiler.copies_s(()) == 0.0 and profiler.measurements == 2


def test_an_unknown_copy_op_is_named():
    with pytest.raises(ValueError, match="expected a transpose, split or concat"):
        _profiler().copies_s((("reverse", (4, 4), 0),))


def _model(compute=None, copy_bytes_per_s=0.0):
    x = to.placeholder(to.float32, [8, 4], name="x")
    to.reduce_mean(x)
    cluster = get_cluster("paper-v100x16", devices=2)
    return CostModel(to.get_default_graph(), 2, AnalyticalCollectives(cluster), cluster.peak_flops,
                     compute=compute, copy_bytes_per_s=copy_bytes_per_s)


class _Timed:
    """A compute provider that times copies: 1 ms per op."""

    def compute_s(self, op, config):
        return 0.0

    def copies_s(self, ops, itemsize=4):
        return 1e-3 * len(ops)


def test_the_cost_model_asks_a_provider_that_times_copies_and_else_uses_the_copy_speed():
    held = StepBuffers(0, 0, 0, copied=2_000_000, copy_ops=OPS)
    assert _model(_Timed(), copy_bytes_per_s=1e9).copies_s(held) == pytest.approx(3e-3)
    assert _model(copy_bytes_per_s=1e9).copies_s(held) == pytest.approx(2e-3)     # the roofline times none
    assert _model().copies_s(held) == 0.0
    assert _model(_Timed()).copies_s(StepBuffers(0, 0, 0)) == 0.0                # no copies, no time
