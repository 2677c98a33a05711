"""The profiler measures each distinct shard once: a configuration whose mesh axes split
nothing is the whole op, a cache hit.

Whether measured times follow the work (4x the FLOPs slower, a 4-way split faster) is a
benchmark, not a test: ``python -m tensoropt.bench timings`` prints those ratios.
"""

from __future__ import annotations

import tensoropt as to
from tensoropt.configs import Config
from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler

ONE = Config((1,), (None,))


def matmul_op(m: int, k: int = 512, n: int = 512):
    x = to.placeholder(to.float32, [m, k])
    w = to.get_variable(f"w{m}_{k}_{n}", [k, n])
    return to.matmul(x, w).op


def test_redundant_axes_do_not_divide_the_work():
    op = matmul_op(256)
    p = ComputeProfiler(cache_path=None, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)
    whole = p.compute_s(op, ONE)
    assert p.compute_s(op, Config((4,), (None,))) == whole   # the same shard: a cache hit
    assert p.measurements == 1


def test_analytical_compute_of_four_times_the_flops_is_four_times():
    small, large = matmul_op(512), matmul_op(2048)
    analytical = AnalyticalCompute(1e12)
    assert analytical.compute_s(large, ONE) == 4 * analytical.compute_s(small, ONE) > 0
