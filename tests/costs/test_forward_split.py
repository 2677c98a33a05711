"""The forward pass's share of an op's compute, measured by the profiler instead of a
FLOP ratio: ``ComputeProfiler.forward_s``, cached beside the time, and what the cost
model makes of it (``compute_split``, a keep_producer re-run's ``rerun_cost``)."""

from __future__ import annotations

import json

import pytest

import tensoropt as to
from tensoropt.configs import Config
from tensoropt.costs.model import FORWARD_SHARE, CostModel
from tensoropt.costs.profiler import ComputeProfiler, local_shard

ONE = Config((1,), (None,))


class NoNetwork:
    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        return 0.0


def steady_profiler(path=None) -> ComputeProfiler:
    # the least-disturbed step of each: a share, not an absolute time, is asserted
    return ComputeProfiler(cache_path=path, threads=1, warmup=1, min_runs=10, max_runs=50,
                           min_time_s=0.05, statistic="min")


def max_pool():
    x = to.placeholder(to.float32, [8, 32, 32, 16], name="x")
    return to.nn.max_pool2d(x, 2, 2, "VALID").op


def cross_entropy():
    logits = to.placeholder(to.float32, [256, 2048], name="logits")
    labels = to.placeholder(to.int32, [256], name="labels")
    return to.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).op


@pytest.mark.parametrize("build, low, high", [
    (max_pool, 0.0, 0.25),        # the backward scatters into a zeroed input: 7-8% forward here
    (cross_entropy, 0.6, 1.0),    # TensorFlow's kernel computes the gradient in the forward: 96%
], ids=["max_pool", "cross_entropy"])
def test_the_forward_pass_is_timed_apart_and_its_share_is_the_ops_own(build, low, high):
    op = build()
    profiler = steady_profiler()
    total, forward = profiler.compute_s(op, ONE), profiler.forward_s(op, ONE)
    assert 0 < forward <= total
    assert low <= forward / total <= high, (forward, total)
    assert not low <= FORWARD_SHARE <= high       # a FLOP-ratio share would have failed this


def test_the_cost_model_splits_and_reruns_by_the_measured_forward():
    x = to.placeholder(to.float32, [8, 32, 32, 8], name="x")
    h = to.nn.conv2d(x, to.get_variable("w", [1, 1, 8, 16]), strides=1, padding="SAME")
    pool = to.nn.max_pool2d(h, 2, 2, "VALID")
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_mean(pool))
    op, profiler = pool.op, steady_profiler()
    model = CostModel(to.get_default_graph(), 1, NoNetwork(), peak_flops=1.0, compute=profiler,
                      op_overhead_s=1e-4)
    total, measured_forward = profiler.compute_s(op, ONE), profiler.forward_s(op, ONE)
    forward, backward = model.compute_split(op, ONE)
    assert forward == pytest.approx(measured_forward + 1e-4)       # one launch each way
    assert backward == pytest.approx(total - measured_forward + 1e-4)
    assert forward < FORWARD_SHARE * (total + 2e-4)
    # a keep_producer consumer differentiates on a rebuilt input: its forward runs again
    assert model.rerun_cost(op, ONE) == (pytest.approx(forward), 0.0)


def test_an_older_profile_without_forward_times_is_measured_once_more(tmp_path):
    op = max_pool()
    path = tmp_path / "profile.json"
    key = steady_profiler().key(local_shard(op, ONE))
    entries = {key: 0.25, f"{key}|forward_transient_bytes": 0.0, f"{key}|backward_transient_bytes": 0.0}
    path.write_text(json.dumps({"format": "tensoropt.compute_profile", "version": 1, "entries": entries}))
    profiler = steady_profiler(path)
    assert profiler.compute_s(op, ONE) == 0.25 and profiler.measurements == 0
    forward = profiler.forward_s(op, ONE)
    assert profiler.measurements == 1 and 0 < forward
    assert profiler.compute_s(op, ONE) == 0.25          # the cached time is kept
    profiler.save()
    again = steady_profiler(path)
    assert again.forward_s(op, ONE) == forward and again.measurements == 0
