"""Every edge table of a priced search space holds, for every pair of layouts, the
alternatives written out here pair by pair from ``reschedule`` alone: the forward
conversion, plus the gradient's conversion back when a gradient flows over the edge, and
for a tensor both ends keep, the three reuse choices (``reuse_options``), keep_consumer
left out where the producer's copy is pinned.

The tables are priced together (one shortest-path tree per layout) and shared across
edges with the same layouts; this is the check that sharing changes no figure."""

from __future__ import annotations

import pytest

import tensoropt as to
from reschedule import conversion_time, reuse_options
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.configs import gradient_inputs
from tensoropt.search.space import build_space
from tensoropt.search.strategy import make_cost_model


def _expected(model, table):
    tensor = table.producer.outputs[table.out_index]
    shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
    cost = model.step_cost
    grad = gradient_inputs(table.consumer, model.grad)[table.in_index]
    pinned = not table.producer.op_def.grad_from_output_ok
    both = table.alternatives[(0, 0)][0].reuse != "none"
    out = {}
    for u, src in enumerate(table.src_layouts):
        for v, dst in enumerate(table.dst_layouts):
            time = conversion_time(src, dst, shape, itemsize, cost)
            if grad:
                time += conversion_time(dst.grad(), src.grad(), shape, itemsize, cost)
            if not both:
                out[(u, v)] = [(0.0, time, "none")]
            elif src == dst:
                out[(u, v)] = [(-float(src.local_bytes(shape, itemsize)), time, "shared")]
            else:
                out[(u, v)] = [(float(o.extra_memory_bytes), time + o.extra_time_s, o.name)
                               for o in reuse_options(src, dst, shape, itemsize, cost)
                               if not (pinned and o.name == "keep_consumer")]
    return out


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm"])
def test_edge_tables_equal_pair_by_pair_pricing(name):
    to.reset_default_graph()
    models.build(name, size="tiny")
    graph = to.get_default_graph()
    model = make_cost_model(graph, get_cluster("paper-v100x16", devices=4), 4)
    space, _ = build_space(graph, model)
    reuses, grads = set(), 0
    for table in space.edges:
        got = {k: [(a.memory_bytes, a.time_s, a.reuse) for a in alts]
               for k, alts in table.alternatives.items()}
        assert got == _expected(model, table), (table.producer.name, table.consumer.name)
        reuses |= {a.reuse for alts in table.alternatives.values() for a in alts}
        grads += any(a.grad for alts in table.alternatives.values() for a in alts)
    # the comparison covered gradients and every kind of alternative
    assert grads and {"none", "keep_both", "keep_producer"} <= reuses
