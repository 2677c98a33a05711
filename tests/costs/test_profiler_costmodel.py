"""The providers behind the cost model: ``CostModel(..., compute=provider)``."""

from __future__ import annotations

import pytest

import tensoropt as to
from tensoropt.configs import Config, enumerate_configs
from tensoropt.costs.model import CostModel
from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler
from tensoropt.search.driver import search_frontier


class AlphaBeta:
    """Links of 10 us latency and 10 GB/s."""

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        return 0.0 if group_size == 1 else 1e-5 + nbytes / 1e10


def mlp():
    x = to.placeholder(to.float32, [64, 128], name="x")
    y = to.placeholder(to.int32, [64], name="y")
    h = to.nn.relu(to.matmul(x, to.get_variable("w1", [128, 256])))
    logits = to.matmul(h, to.get_variable("w2", [256, 10]))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    return to.get_default_graph()


def test_analytical_provider_is_the_cost_models_roofline():
    graph = mlp()
    own = CostModel(graph, 4, AlphaBeta(), peak_flops=3e10)
    provided = CostModel(graph, 4, AlphaBeta(), peak_flops=1.0, compute=AnalyticalCompute(3e10))
    pairs = 0
    for op in graph.operations:
        for config in enumerate_configs(op, 4):
            assert provided.op_cost(op, config) == own.op_cost(op, config), (op.name, str(config))
            pairs += 1
    assert pairs > 20


def test_search_runs_on_profiled_compute():
    graph = mlp()
    profiler = ComputeProfiler(cache_path=None, warmup=1, min_runs=3, max_runs=3, min_time_s=0.0)
    result = search_frontier(graph, CostModel(graph, 2, AlphaBeta(), peak_flops=1.0, compute=profiler))
    assert result.plans
    measured = profiler.measurements
    assert measured > 0
    ops = {op.name: op for op in graph.operations}
    for plan in result.plans:
        expected = 0.0
        for name, oc in plan.ops.items():
            axis_dims = [None] * len(oc.mesh)
            for dim, axis in oc.dim_axes:
                axis_dims[axis] = dim
            config = Config(tuple(oc.mesh) or (1,), tuple(axis_dims) or (None,))
            op = ops[name]
            if op.kind == "variable":           # a trained variable computes its update
                elements = op.outputs[0].get_shape().num_elements() // config.split_factor()
                expected += profiler.update_s(to.train.GradientDescentOptimizer(0.1), elements)
            else:
                expected += profiler.compute_s(op, config)
        assert plan.compute_s == pytest.approx(expected)
    assert profiler.measurements == measured          # every repeat was a cache hit
