"""Measured compute time follows the work: more FLOPs take longer, a split shard less.

Sizes are large enough (milliseconds to tens of milliseconds) that the signal dominates
timer noise; margins are generous (4x the work must measure > 2x; a 4-way split < 0.6x).
The machines these tests run on are shared, and other work can slow a whole
measurement window several-fold. So the tests time with ``statistic="min"`` and measure
the shards to compare in interleaved rounds, keeping each shard's least-disturbed
round: other work then has to slow every round of one shard and none of the other to
flip a comparison.
"""

from __future__ import annotations

import tensoropt as to
from tensoropt.configs import Config
from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler, local_shard

ONE = Config((1,), (None,))


def profiler() -> ComputeProfiler:
    return ComputeProfiler(cache_path=None, warmup=2, min_runs=7, max_runs=30, min_time_s=0.15,
                           statistic="min")


def steady(p: ComputeProfiler, pairs, rounds: int = 3) -> list[float]:
    """Per (op, config), the least of ``rounds`` interleaved measurements."""
    best = [float("inf")] * len(pairs)
    for _ in range(rounds):
        for i, (op, config) in enumerate(pairs):
            best[i] = min(best[i], p.measure(op, local_shard(op, config)).seconds)
    return best


def matmul_op(m: int, k: int = 512, n: int = 512):
    x = to.placeholder(to.float32, [m, k])
    w = to.get_variable(f"w{m}_{k}_{n}", [k, n])
    return to.matmul(x, w).op


def test_four_times_the_flops_measures_slower():
    small, large = matmul_op(512), matmul_op(2048)
    analytical = AnalyticalCompute(1e12)
    assert analytical.compute_s(large, ONE) == 4 * analytical.compute_s(small, ONE)
    p = profiler()
    t_small, t_large = steady(p, [(small, ONE), (large, ONE)])
    assert t_small > 0.0
    assert t_large > 2.0 * t_small, (t_small, t_large)


def test_four_way_split_measures_faster():
    op = matmul_op(2048)
    p = profiler()
    splits = [Config((4,), ("m",)), Config((2, 2), ("m", "n"))]
    whole, *shards = steady(p, [(op, ONE)] + [(op, c) for c in splits])
    for config, shard in zip(splits, shards):
        assert 0.0 < shard < 0.6 * whole, (str(config), shard, whole)


def test_redundant_axes_do_not_divide_the_work():
    op = matmul_op(256)
    p = ComputeProfiler(cache_path=None, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)
    whole = p.compute_s(op, ONE)
    assert p.compute_s(op, Config((4,), (None,))) == whole   # the same shard: a cache hit
    assert p.measurements == 1


def test_conv_split_over_batch_measures_faster():
    x = to.placeholder(to.float32, [32, 32, 32, 32])
    f = to.get_variable("f", [3, 3, 32, 64])
    op = to.nn.conv2d(x, f, strides=1, padding="SAME").op
    whole, shard = steady(profiler(), [(op, ONE), (op, Config((4,), ("b",)))])
    assert 0.0 < shard < 0.6 * whole, (shard, whole)
