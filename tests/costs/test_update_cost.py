"""A trained variable's optimizer update: priced by the compute provider's ``update_s``
on the local shard (the profiler measures TensorFlow's own update), charged as the
variable's compute, backward, and simulated as its ``/update`` task."""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to
from tensoropt.cluster.presets import get_cluster
from tensoropt.configs import Config, config_of, enumerate_configs
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.costs.model import CostModel
from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler
from tensoropt.search.driver import search_frontier
from tensoropt.simulator import PlanSimulator

PER_ELEMENT_S = 1e-6


class _Updates(AnalyticalCompute):
    """The roofline, with an update of ``PER_ELEMENT_S`` per element; records its calls."""

    def __init__(self, peak_flops):
        super().__init__(peak_flops)
        self.calls = []

    def update_s(self, optimizer, elements, dtype):
        self.calls.append((type(optimizer).__name__, elements, dtype))
        return elements * PER_ELEMENT_S


def _model(devices: int):
    x = to.placeholder(to.float32, [8, 16], name="x")
    w = to.get_variable("w", [16, 32])
    frozen = to.get_variable("frozen", [32], trainable=False)
    loss = to.reduce_mean(to.matmul(x, w) + frozen)
    to.train.AdamOptimizer(1e-3).minimize(loss)
    graph = to.get_default_graph()
    cluster = get_cluster("paper-v100x16", devices=devices)
    provider = _Updates(cluster.peak_flops)
    return graph, w, frozen, cluster, provider, CostModel(graph, devices, AnalyticalCollectives(cluster),
                                                          cluster.peak_flops, compute=provider)


def test_a_trained_variable_computes_its_update_on_its_local_shard_backward():
    graph, w, frozen, cluster, provider, model = _model(2)
    whole = Config((2,), (None,))
    split = next(c for c in enumerate_configs(w.op, 2) if c.split_factor() == 2)
    assert model.op_cost(w.op, whole).compute_s == pytest.approx(16 * 32 * PER_ELEMENT_S)
    assert model.op_cost(w.op, split).compute_s == pytest.approx(16 * 32 // 2 * PER_ELEMENT_S)
    assert ("AdamOptimizer", 16 * 32 // 2, "float32") in provider.calls
    assert model.compute_split(w.op, split) == (0.0, pytest.approx(16 * 16 * PER_ELEMENT_S))
    assert model.op_cost(frozen.op, whole).compute_s == 0.0           # not trained: no update
    assert model.update_s(graph.get_operation_by_name("MatMul"), whole) == 0.0
    plain = CostModel(graph, 2, AnalyticalCollectives(cluster), cluster.peak_flops)
    assert plain.op_cost(w.op, whole).compute_s == 0.0                # the roofline: not priced


def test_the_simulated_update_task_takes_the_priced_update_and_the_step_adds_it():
    graph, w, _, cluster, _, model = _model(1)
    plan = search_frontier(graph, model).plans[0]
    sim = PlanSimulator(graph, model, cluster)
    timeline = sim.simulate_full(sim.versions_for_plan(plan))
    g = timeline.graph
    duration = dict(zip(g.names, (timeline.end_ps - timeline.start_ps).tolist()))
    assert duration[f"{w.op.name}/update"] == round(16 * 32 * PER_ELEMENT_S * 1e12)
    # one device, no collectives: the step is the compute sum, the update included
    compute = sum(model.op_cost(op, config_of(plan, op)).compute_s for op in graph.operations)
    assert sim.plan_result(plan).makespan_s == pytest.approx(compute, rel=1e-9)
    assert plan.time_s == pytest.approx(compute, rel=1e-9)
    assert compute > 16 * 32 * PER_ELEMENT_S


def test_the_profiler_measures_an_update_once_and_adam_on_more_elements_takes_longer(tmp_path):
    path = tmp_path / "profile.json"
    p = ComputeProfiler(cache_path=path, warmup=1, min_runs=5, max_runs=5, min_time_s=0.0, statistic="min")
    adam = to.train.AdamOptimizer(1e-3)
    small, large = p.update_s(adam, 1 << 10), p.update_s(adam, 1 << 22)
    assert p.measurements == 2
    # 4,096x the elements, elementwise; the small update is bound by launch overhead (0.26
    # ms against 4.3 ms, 16.6x, with another search running on the 2 cores), so only a
    # clear multiple is asked, not the elements' ratio
    assert large > 5 * small and large > 0
    p.save()
    again = ComputeProfiler(cache_path=path, warmup=1, min_runs=5, max_runs=5, min_time_s=0.0, statistic="min")
    assert again.update_s(adam, 1 << 22) == large and again.measurements == 0
    again.update_s(to.train.AdamOptimizer(2e-3), 1 << 22)           # other hyperparameters: measured
    again.update_s(to.train.GradientDescentOptimizer(1e-3), 1 << 22)
    assert again.measurements == 2
    with pytest.raises(ValueError, match="elements=0: an update needs one element"):
        again.update_s(adam, 0)
