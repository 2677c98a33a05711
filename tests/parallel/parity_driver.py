"""Run under ``mpirun -np 4``: trains tiny models under many plans, and compares each with
a single-process run of the same script (same initial values, same batches).

Usage: parity_driver.py OUT.json [model ...]. Rank 0 writes, per model and plan, the
largest relative differences of losses and final parameters, the plan's description and
the collectives each rank issued per step by kind.
"""

import json
import sys

import numpy as np

import tensoropt as to
from tensoropt._tf import import_tensorflow
from tensoropt.costs import CostModel
from tensoropt.lowering import lower_graph
from tensoropt.search import sample_plan, search_frontier

STEPS = 3
N = 4


class AlphaBeta:
    """Prices collectives for the plans' search; any positive prices serve these tests."""

    def time_s(self, collective, nbytes, group_size, stride):
        factor = 2.0 if collective == "allreduce" else 1.0
        return factor * (group_size - 1) * (1e-5 + nbytes / group_size / 1e9) * (1 + stride / 8)


def mlp():
    x = to.placeholder(to.float32, [8, 12], name="x")
    y = to.placeholder(to.int32, [8], name="y")
    h = x
    for i, width in enumerate([16, 8]):
        w = to.get_variable(f"fc{i}/w", [h.shape[1], width], initializer=to.glorot_uniform_initializer(seed=i))
        b = to.get_variable(f"fc{i}/b", [width], initializer=to.random_normal_initializer(stddev=0.1, seed=9 + i))
        h = to.nn.relu(to.matmul(h, w) + b)
    wo = to.get_variable("out/w", [8, 4], initializer=to.glorot_uniform_initializer(seed=7))
    logits = to.matmul(h, wo)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

    def feed(rng):
        return {x: rng.normal(size=(8, 12)).astype(np.float32), y: rng.integers(0, 4, 8).astype(np.int32)}

    return loss, feed


MODELS = {"mlp": mlp}


def reference(graph, loss, train_op, feeds):
    tf = import_tensorflow()
    lowered = lower_graph(graph, tf)
    with tf.compat.v1.Session(graph=lowered.tf_graph) as sess:
        sess.run(lowered.init_op)
        losses = []
        for feed in feeds:
            tf_feed = {lowered.tensors[k]: v for k, v in feed.items()}
            losses.append(sess.run([lowered.tensors[loss], lowered.train_ops[id(train_op)]], tf_feed)[0])
        params = sess.run({v.op.name: lowered.variables[v] for v in graph.trainable_variables})
    return np.array(losses), params


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3)))


def main(out_path, names):
    world = to.init()
    results = []
    for name in names:
        to.reset_default_graph()
        loss, make_feed = MODELS[name]()
        train_op = to.train.AdamOptimizer(0.01).minimize(loss)
        graph = to.get_default_graph()
        rng = np.random.default_rng(0)
        feeds = [make_feed(rng) for _ in range(STEPS)]
        ref_losses, ref_params = reference(graph, loss, train_op, feeds)
        search = search_frontier(graph, CostModel(graph, N, AlphaBeta(), 1e10))
        plans = [search.plans[0], search.plans[-1], search.data_parallel_plan()]
        sample_rng = np.random.default_rng(123)
        plans += [sample_plan(search.space, sample_rng) for _ in range(8)]
        variables = graph.trainable_variables
        for index, plan in enumerate(plans):
            to.build_execution_graph(plan=plan)
            losses = [to.run([loss, train_op], feed)[0] for feed in feeds]
            counts = dict(to.runtime._runtime.sharding.collectives.counts)
            params = to.run({v.op.name: v for v in variables})
            if world.rank == 0:
                results.append({
                    "model": name, "plan": index, "option": plan.option,
                    "loss_rel": rel(losses, ref_losses),
                    "param_rel": max(rel(params[k], ref_params[k]) for k in ref_params),
                    "losses": [float(v) for v in losses], "reference": [float(v) for v in ref_losses],
                    "steps": sorted({e["forward"] for e in plan.edges}),
                    "reuse": sorted({e["reuse"] for e in plan.edges}),
                    "collectives": counts,
                })
    if world.rank == 0:
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(MODELS))
