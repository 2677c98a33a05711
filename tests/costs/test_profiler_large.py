"""Shards too large to run here are measured on a divided stand-in and scaled back."""

from __future__ import annotations

import pytest

import tensoropt as to
from tensoropt.configs import Config
from tensoropt.costs.profiler import (ComputeProfiler, Measurement, fit_shard, local_shard, shard_bytes,
                                subdivide)

ONE = Config((1,), (None,))


def matmul_op():
    x = to.placeholder(to.float32, [2048, 512])
    return to.matmul(x, to.get_variable("w", [512, 256])).op


def test_fit_divides_the_largest_non_reduction_dim():
    op = matmul_op()
    shard = local_shard(op, ONE)
    flops = op.space.flops
    same, factor = fit_shard(op, shard, flops, max_bytes=1e12, max_flops=flops)
    assert same is shard and factor == 1
    small, factor = fit_shard(op, shard, flops, max_bytes=1e12, max_flops=flops / 3)
    assert factor == 4                                    # the smallest divisor of 2048 >= 3
    assert small.inputs == (((512, 512), "float32"), ((512, 256), "float32"))
    assert small.outputs == (((512, 256), "float32"),)
    assert small.split_dims == ("m",) and dict(small.local_dim_sizes)["m"] == 512
    by_bytes, factor = fit_shard(op, shard, 1.0, max_bytes=shard_bytes(shard) / 2, max_flops=1e30)
    assert factor == 2 and by_bytes.inputs[0][0] == (1024, 512)


def test_fit_keeps_an_embeddings_vocabulary_whole():
    ids = to.placeholder(to.int32, [64, 32])
    op = to.nn.embedding_lookup(to.get_variable("table", [4096, 64]), ids).op
    shard = local_shard(op, ONE)
    small, factor = fit_shard(op, shard, 1.0, max_bytes=shard_bytes(shard) / 4, max_flops=1e30)
    assert factor >= 4
    assert small.inputs[0][0][0] == 4096 and "v" not in small.split_dims


def test_subdivide_rejects_a_non_divisor():
    op = matmul_op()
    with pytest.raises(ValueError, match="divisor"):
        subdivide(op, local_shard(op, ONE), "m", 3)


def test_compute_s_scales_the_stand_ins_time(monkeypatch):
    op = matmul_op()
    p = ComputeProfiler(cache_path=None, max_flops=op.space.flops / 8)
    seen = []

    def fake_measure(op_, shard):
        seen.append(shard)
        return Measurement(seconds=0.001, step_s=0.0011, overhead_s=0.0001, runs=1)

    monkeypatch.setattr(p, "measure", fake_measure)
    assert p.compute_s(op, ONE) == pytest.approx(0.008)
    assert seen[0].inputs[0][0] == (256, 512)
    assert p.compute_s(op, Config((8,), ("m",))) == pytest.approx(0.001)   # fits: unscaled
    assert seen[1].inputs[0][0] == (256, 512) and len(seen) == 2


def test_a_large_shard_profiles_within_the_limits():
    op = matmul_op()
    p = ComputeProfiler(cache_path=None, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0,
                        max_bytes=2**20, max_flops=1e8)
    assert p.compute_s(op, ONE) > 0.0 and p.measurements == 1
