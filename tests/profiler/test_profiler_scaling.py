"""Measured compute time follows the work: more FLOPs take longer, a split shard less.

Sizes are large enough (tens of milliseconds) that the signal dominates timer noise and
a loaded machine; margins are generous (4x the work must measure > 2x; a 4-way split
< 0.6x).
"""

from __future__ import annotations

import tensoropt as to
from tensoropt.configs import Config
from tensoropt.profiler import AnalyticalCompute, ComputeProfiler

ONE = Config((1,), (None,))


def profiler() -> ComputeProfiler:
    return ComputeProfiler(cache_path=None, warmup=2, min_runs=5, max_runs=30, min_time_s=0.2)


def matmul_op(m: int, k: int = 512, n: int = 512):
    x = to.placeholder(to.float32, [m, k])
    w = to.get_variable(f"w{m}_{k}_{n}", [k, n])
    return to.matmul(x, w).op


def test_four_times_the_flops_measures_slower():
    small, large = matmul_op(512), matmul_op(2048)
    analytical = AnalyticalCompute(1e12)
    assert analytical.compute_s(large, ONE) == 4 * analytical.compute_s(small, ONE)
    p = profiler()
    t_small, t_large = p.compute_s(small, ONE), p.compute_s(large, ONE)
    assert p.measurements == 2
    assert t_small > 0.0
    assert t_large > 2.0 * t_small, (t_small, t_large)


def test_four_way_split_measures_faster():
    op = matmul_op(2048)
    p = profiler()
    whole = p.compute_s(op, ONE)
    for config in (Config((4,), ("m",)), Config((2, 2), ("m", "n"))):
        shard = p.compute_s(op, config)
        assert 0.0 < shard < 0.6 * whole, (str(config), shard, whole)
    # A redundant axis does not divide the work: same shard, same (cached) time.
    assert p.compute_s(op, Config((4,), (None,))) == whole


def test_conv_split_over_batch_measures_faster():
    x = to.placeholder(to.float32, [32, 32, 32, 32])
    f = to.get_variable("f", [3, 3, 32, 64])
    op = to.nn.conv2d(x, f, strides=1, padding="SAME").op
    p = profiler()
    whole = p.compute_s(op, ONE)
    shard = p.compute_s(op, Config((4,), ("b",)))
    assert 0.0 < shard < 0.6 * whole, (shard, whole)
