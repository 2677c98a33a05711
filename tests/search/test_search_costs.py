"""Closed forms: an op's cost under one configuration, and the data-parallel plan of a
2-layer MLP, priced by hand (compute + gradient all-reduce)."""

import numpy as np
import pytest

import tensoropt as to
from tensoropt.cluster import get_cluster
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.configs import Config
from tensoropt.costs.model import CostModel
from tensoropt.search.driver import data_parallel_configs, plan_from_configs, plan_table, price_plan, search_frontier
from tensoropt.search.strategy import make_cost_model

B, D, H, C, N = 64, 32, 48, 8, 4


def _mlp():
    x = to.placeholder(to.float32, [B, D], name="x")
    y = to.placeholder(to.int32, [B], name="y")
    w1 = to.get_variable("w1", [D, H])
    w2 = to.get_variable("w2", [H, C])
    h = to.nn.relu(to.matmul(x, w1))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=to.matmul(h, w2)))
    to.train.AdamOptimizer().minimize(loss)
    return to.get_default_graph()


def _ring_allreduce(cluster, nbytes, g):
    link = cluster.intra  # 4 devices: one machine
    return 2 * (g - 1) * link.latency_s + 2 * (g - 1) / g * nbytes / link.bandwidth_bytes_per_s


def test_data_parallel_mlp_costs_compute_plus_gradient_allreduce():
    graph = _mlp()
    cluster = get_cluster("paper-v100x16", devices=N)
    model = make_cost_model(graph, cluster, N)
    result = search_frontier(graph, model)
    plan = result.data_parallel_plan()
    flops = sum(op.space.flops for op in graph.operations)
    compute = flops / N / cluster.peak_flops
    # gradients of w1 and w2, and the loss mean's partial sum (one float)
    network = (_ring_allreduce(cluster, D * H * 4, N) + _ring_allreduce(cluster, H * C * 4, N)
               + _ring_allreduce(cluster, 4, N))
    assert plan.compute_s == pytest.approx(compute, rel=1e-12)
    assert plan.network_s == pytest.approx(network, rel=1e-12)
    assert plan.time_s == pytest.approx(compute + network, rel=1e-12)
    # parameters with gradients and 2 Adam slots, replicated; saved activations split 4 ways:
    # x (saved by matmul 1), relu's output, and the logits (saved by the cross-entropy)
    params = (D * H + H * C) * 4 * (2 + 2)
    saved = (B * D + B * H + B * C) * 4 / N
    # relu's output is saved by relu and by matmul 2 in the same layout: one copy
    assert plan.memory_bytes == pytest.approx(params + saved, rel=1e-12)
    assert all(not e.forward_steps for e in plan.edges), "data parallel moves no activation"


def test_matmul_cost_by_hand():
    graph = _mlp()
    cluster = get_cluster("paper-v100x16", devices=N)
    model = CostModel(graph, N, AnalyticalCollectives(cluster), cluster.peak_flops)
    mm = graph.get_operation_by_name("MatMul")
    # k split over axis 0 of [2,2] (partial output all-reduced), n over axis 1
    cost = model.op_cost(mm, Config((2, 2), ("k", "n")))
    assert cost.compute_s == pytest.approx(3 * 2 * B * D * H / 4 / cluster.peak_flops)
    out_bytes = B * (H // 2) * 4
    allreduce = model.collectives.time_s("allreduce", out_bytes, 2, 2)
    assert cost.sync_s == pytest.approx(allreduce)  # x is fed data: no input gradient to reduce
    # saved: x sliced along k (axis 0), w1 split on both axes
    assert cost.saved_bytes == B * D // 2 * 4 + D * H // 4 * 4
    assert cost.param_bytes == 0


def test_every_frontier_plan_recosts_to_its_point_and_dominates_data_parallel():
    graph = _mlp()
    model = make_cost_model(graph, "paper-v100x16", N)
    result = search_frontier(graph, model)
    mems = [p.memory_bytes for p in result.plans]
    times = [p.time_s for p in result.plans]
    assert mems == sorted(mems) and all(a > b for a, b in zip(times, times[1:]))
    dp = result.data_parallel_plan()
    assert any(p.memory_bytes <= dp.memory_bytes and p.time_s <= dp.time_s for p in result.plans)
    again = plan_from_configs(result.space, data_parallel_configs(result.space), None, "dp")
    assert again.time_s == dp.time_s
    for plan in result.plans:   # each plan's configurations and reuse choices re-cost to its point
        priced = price_plan(result.space, plan)
        assert (priced.ops, priced.edges) == (plan.ops, plan.edges)
        assert priced.memory_bytes == pytest.approx(plan.memory_bytes, rel=1e-9)
        assert priced.time_s == pytest.approx(plan.time_s, rel=1e-9)
        assert priced.compute_s == pytest.approx(plan.compute_s, rel=1e-12)


def test_the_plan_table_holds_every_frontier_plan_and_data_parallel():
    graph = _mlp()
    result = search_frontier(graph, make_cost_model(graph, "paper-v100x16", N))
    table = plan_table(result)
    assert table.rows == len(result.plans) + 1
    assert len(table.edges) < table.rows * len(result.space.edges)   # distinct edge plans only
    for i, plan in enumerate(result.plans):
        assert table.plan(i, plan.option) == plan
    assert table.plan(len(result.plans), "data_parallel") == result.data_parallel_plan()
