"""Edge costs priced by hand: every reuse alternative of a few layout pairs, forward and
backward re-scheduling, and the whole frontier of a variable -> tanh -> sum graph.

The collective times come from a two-line alpha-beta provider, so every figure below is
a closed form in ``A`` (seconds per message) and ``1 / BW`` (seconds per byte)."""

from __future__ import annotations

import pytest

import tensoropt as to
from reschedule import Layout
from tensoropt.costs.model import CostModel
from tensoropt.search.driver import search_frontier

A, BW = 1e-3, 1e6            # seconds per message, bytes per second
PEAK = 1e9                   # FLOP/s
N = 2


class RingTimes:
    """Ring alpha-beta: allreduce 2(g-1)A + 2(g-1)/g n/BW, the others (g-1)A + (g-1)/g n/BW."""

    def time_s(self, kind: str, nbytes: float, group_size: int, stride: int) -> float:
        if group_size == 1 or nbytes == 0:
            return 0.0
        k = 2 if kind == "allreduce" else 1
        return k * (group_size - 1) * A + k * (group_size - 1) / group_size * nbytes / BW


def _graph():
    v = to.get_variable("v", [4, 8])
    loss = to.reduce_sum(to.tanh(v))
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    return to.get_default_graph()


def _model():
    graph = _graph()
    return graph, CostModel(graph, N, RingTimes(), PEAK)


def _alts(model, tensor, src, dst, **kw):
    keep = kw.pop("keep", True)
    return {a.reuse: (a.memory_bytes, a.time_s)
            for a in model.edge_alternatives(tensor, Layout.parse(src), Layout.parse(dst), keep, keep, **kw)}


def _same(got: dict, want: dict) -> bool:
    """``got == want`` for {reuse: (memory_bytes, time_s)}, times to 1e-12 relative."""
    return set(got) == set(want) and all(got[k][0] == want[k][0] and got[k][1] == pytest.approx(want[k][1], rel=1e-12)
                                         for k in want)


FULL = 4 * 8 * 4             # bytes of the (4, 8) float32 tensor
HALF = FULL // 2


def test_alltoall_edge_prices_forward_backward_and_each_reuse_choice():
    graph, model = _model()
    v = graph.get_operation_by_name("v").outputs[0]
    a2a = A + 1 / 2 * HALF / BW                  # each rank holds HALF, sends half of it
    both_ways = a2a + a2a                        # S0,R -> R,S0 forward; its gradient back
    assert _same(_alts(model, v, "[2] S0,R", "[2] R,S0"), {
        "keep_both": (0.0, both_ways),
        "keep_producer": (-HALF, both_ways + a2a),    # the consumer's copy rebuilt forward
        "keep_consumer": (-HALF, both_ways + a2a)})   # the producer's copy rebuilt backward
    assert _same(_alts(model, v, "[2] S0,R", "[2] R,S0", keep=False), {"none": (0.0, both_ways)})
    # no gradient over the edge: forward only
    assert _same(_alts(model, v, "[2] S0,R", "[2] R,S0", keep=False, grad=False), {"none": (0.0, a2a)})


def test_allgather_edge_backward_is_a_free_slice_and_rebuilds_cost_what_they_run():
    graph, model = _model()
    v = graph.get_operation_by_name("v").outputs[0]
    gather = A + 1 / 2 * FULL / BW                # gathers FULL bytes in groups of 2
    assert _same(_alts(model, v, "[2] S0,R", "[2] R,R"), {
        "keep_both": (0.0, gather),
        "keep_producer": (-FULL, gather + gather),    # drop the replicated copy, gather again
        "keep_consumer": (-HALF, gather + 0.0)})      # drop the shard, slice it back for free
    # a pinned producer (a parameter) cannot drop its copy
    pinned = _alts(model, v, "[2] S0,R", "[2] R,R", producer_pinned=True)
    assert set(pinned) == {"keep_both", "keep_producer"}
    # replicated -> split: forward is a free slice, the gradient is all-gathered back
    assert _same(_alts(model, v, "[2] R,R", "[2] R,S0", keep=False), {"none": (0.0, gather)})


def test_partial_sum_edge_is_one_allreduce_and_same_layout_shares_one_copy():
    graph, model = _model()
    t = graph.get_operation_by_name("tanh").outputs[0]
    allreduce = 2 * A + 2 * 1 / 2 * FULL / BW
    got = _alts(model, t, "[2] R,R P{0}", "[2] R,R")
    assert _same({"keep_both": got["keep_both"]}, {"keep_both": (0.0, allreduce)})     # the gradient R -> R is free
    assert _same({"keep_producer": got["keep_producer"]}, {"keep_producer": (-FULL, 2 * allreduce)})
    assert _same(_alts(model, t, "[2] S0,R", "[2] S0,R"), {"shared": (-HALF, 0.0)})


def test_two_op_frontier_worked_out_by_hand():
    """v [4, 8] -> tanh -> reduce_sum, SGD, 2 devices. Memory: v and its gradient (2x its
    shard), and tanh's output kept for backward (Sum keeps nothing). Least memory, 192 B:
    v and tanh split in halves (64 + 64 + 64); then Sum either gathers tanh's output
    (allgather of 128 B; its gradient comes back as a free slice) or is split too and
    all-reduces its one-float partial sum (2A + 4/BW: slower). Fastest: everything
    replicated, 384 B (128 + 128 + 128), no communication. Any plan between them with
    less than 384 B splits v or tanh and so communicates at least one allgather (a split
    v gathered forward, or a replicated v's gradient gathered back): none beats both."""
    graph, model = _model()
    tanh, total = graph.get_operation_by_name("tanh"), graph.get_operation_by_name("Sum")
    result = search_frontier(graph, model)
    flops = tanh.space.flops + total.space.flops
    split_time = (tanh.space.flops / 2 + total.space.flops) / PEAK + (A + 1 / 2 * FULL / BW)
    assert [p.memory_bytes for p in result.plans] == [3 * HALF, 3 * FULL]
    assert [p.time_s for p in result.plans] == pytest.approx([split_time, flops / PEAK], rel=1e-12)
    small, fast = result.plans
    assert small.network_s == pytest.approx(A + 1 / 2 * FULL / BW, rel=1e-12)
    assert dict(small.ops)["Sum"].dim_axes == () and dict(small.ops)["v"].dim_axes == dict(small.ops)["tanh"].dim_axes
    assert all(c.dim_axes == () for c in fast.ops.values()) and fast.network_s == 0.0
