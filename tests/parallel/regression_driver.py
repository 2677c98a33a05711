"""Run under ``mpirun -np 2``: the plans in which the parity fuzz found mismatches, on the
smallest models that show them, against one process.

Usage: regression_driver.py OUT.json. Rank 0 writes, per case, the largest relative
differences of initial values, losses and final parameters, and the collective counts
built and expected.

- ``rebuilt_input_depends_on_another``: ``h * sigmoid(sum(h))`` under a plan that rebuilds
  the sigmoid's output in the multiply's backward (keep_producer, with steps) and passes
  ``h`` to it unconverted. The rebuilt input then depends on the multiply's other input
  itself: differentiating the rebuilt
  multiply must take each input's own partial derivative, or ``h``'s gradient counts the
  sigmoid path twice (model 48 of the fuzz).
- ``embedding_momentum``: an embedding table under Momentum, with rows that the second
  batch does not look up. One process updates only looked-up rows (TensorFlow's sparse
  Momentum); a plan's collectives deliver the gradient dense (model 54 of the fuzz).
"""

import json
import sys
from types import SimpleNamespace

import numpy as np

import tensoropt as to
from tensoropt.bench.fuzz_plans import AlphaBeta, plan_features
from tensoropt.bench.fuzz_worker import _reference, _run_plan, relative_difference
from tensoropt.costs.model import CostModel
from tensoropt.execution.accounting import expected_collectives
from tensoropt.search.driver import sample_plan, sampling_space, search_frontier


def rebuilt_input_depends_on_another():
    x = to.placeholder(to.float32, [4, 8], name="x")
    y = to.placeholder(to.int32, [4], name="y")
    w = to.get_variable("w", [8, 6], initializer=to.glorot_uniform_initializer())
    h = to.matmul(x, w)
    gated = h * to.sigmoid(to.reduce_sum(h, axis=1, keepdims=True) * 0.1)
    wo = to.get_variable("wo", [6, 3], initializer=to.glorot_uniform_initializer())
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=to.matmul(gated, wo)))
    train_op = to.train.MomentumOptimizer(0.1, momentum=0.9).minimize(loss)
    rng = np.random.default_rng(0)
    feeds = [{x: rng.normal(size=(4, 8)).astype(np.float32), y: rng.integers(0, 3, 4).astype(np.int32)}
             for _ in range(2)]
    graph = to.get_default_graph()
    space = sampling_space(graph, CostModel(graph, 2, AlphaBeta(), 1e10))
    rng = np.random.default_rng(1)
    multiply = gated.op
    for _ in range(5000):   # the multiply rebuilds its gate input and takes h as it is
        plan = sample_plan(space, rng)
        h_edge, gate_edge = (next(e for e in plan.to_dict()["edges"] if e["consumer"] == multiply.name
                                  and e["input"] == i) for i in (0, 1))
        if gate_edge["reuse"] == "keep_producer" and gate_edge["forward_steps"] and not h_edge["forward_steps"]:
            return loss, train_op, feeds, [plan]
    raise AssertionError("no sampled plan rebuilds the multiply's gate input")


def embedding_momentum():
    tokens = to.placeholder(to.int32, [4, 2], name="tokens")
    y = to.placeholder(to.int32, [4], name="y")
    table = to.get_variable("embedding", [12, 4], initializer=to.random_normal_initializer(stddev=0.5))
    h = to.reduce_sum(to.nn.embedding_lookup(table, tokens), axis=1)
    wo = to.get_variable("wo", [4, 3], initializer=to.glorot_uniform_initializer())
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=to.matmul(h, wo)))
    train_op = to.train.MomentumOptimizer(0.1, momentum=0.9).minimize(loss)
    # rows 0..7 in the first batch, rows 8..11 (only) in the second: rows 0..7 then have
    # momentum but no gradient
    feeds = [{tokens: np.arange(8, dtype=np.int32).reshape(4, 2), y: np.array([0, 1, 2, 0], np.int32)},
             {tokens: np.array([[8, 9], [10, 11], [8, 10], [9, 11]], np.int32), y: np.array([1, 2, 0, 1], np.int32)}]
    graph = to.get_default_graph()
    search = search_frontier(graph, CostModel(graph, 2, AlphaBeta(), 1e10))
    return loss, train_op, feeds, [search.data_parallel_plan(), search.plans[0], search.plans[-1]]


CASES = {"rebuilt_input_depends_on_another": rebuilt_input_depends_on_another,
         "embedding_momentum": embedding_momentum}


def main(out_path):
    world = to.init()
    results = []
    for name, make in CASES.items():
        to.reset_default_graph()
        loss, train_op, feeds, plans = make()
        model = SimpleNamespace(spec=SimpleNamespace(loss=loss, train_op=train_op))
        ref = _reference(model, feeds)
        for plan in plans:
            got = _run_plan(model, plan, feeds)
            if world.rank == 0:
                results.append({
                    "case": name, "option": plan.option, "features": sorted(plan_features(plan)),
                    "init_rel": max(relative_difference(got["initial"][k], v) for k, v in ref["initial"].items()),
                    "loss_rel": relative_difference(got["losses"], ref["losses"]),
                    "param_rel": max(relative_difference(got["final"][k], v) for k, v in ref["final"].items()),
                    "collectives": got["counts"],
                    "expected_collectives": expected_collectives(to.get_default_graph(), plan)})
    if world.rank == 0:
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
