"""Run under ``mpirun -np 4``: trains tiny models under many plans, and compares each with
a single-process run of the same script (same initial values, same batches).

Usage: parity_driver.py OUT.json [--summary | --baselines] [model ...]. Rank 0 writes, per model and
plan, the largest relative differences of losses and final parameters, the plan's
description and the collectives each rank issued per step by kind.

Plans: by default the frontier's two ends, data parallel and 8 random plans, searched on
each rank alike. With ``--summary``, every rank takes them from ``to.search_strategy``'s
result as a user script would (rank 0 searches, the others receive it): the frontier's
first, middle and last plans and the data-parallel plan; each plan's hash is compared
across the ranks. Then ``to.find_strategy``'s plan: rank 0 saves it as JSON, every rank
loads that file and trains the plan it read (``round_trip``: the loaded plan equals the
one found, edges and steps included).

Every rank's losses and its own block of every parameter (its shard, or its replica) are
gathered to rank 0 and compared with the single-process run, so a rank whose replica
diverged is seen.

With ``--baselines``, the plans of the baselines (``tensoropt.search.baselines``:
Mesh-TF, OptCNN, ToFu, PaSE, MCMC), one run per distinct plan (its ``methods`` lists
every baseline that found it).
"""

import hashlib
import json
import os
import sys

import numpy as np

import tensoropt as to
from tensoropt._tf import import_tensorflow
from tensoropt.costs.model import CostModel
from tensoropt.execution.accounting import expected_collectives
from tensoropt.execution.lowering import lower_graph
from tensoropt.search.driver import sample_plan, search_frontier

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
        if i == 0:   # each rank must apply its slice of the one process's mask
            h = to.nn.dropout(h, rate=0.25, seed=11)
    wo = to.get_variable("out/w", [8, 4], initializer=to.glorot_uniform_initializer(seed=7))
    logits = to.matmul(h, wo)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

    def feed(rng):
        return {x: rng.normal(size=(8, 12)).astype(np.float32), y: rng.integers(0, 4, 8).astype(np.int32)}

    return loss, feed


def cnn():
    x = to.placeholder(to.float32, [8, 8, 8, 4], name="images")
    y = to.placeholder(to.int32, [8], name="labels")
    w1 = to.get_variable("conv1/w", [3, 3, 4, 8], initializer=to.glorot_uniform_initializer(seed=1))
    h = to.nn.relu(to.nn.conv2d(x, w1, strides=1, padding="SAME"))
    h = to.nn.lrn(to.nn.max_pool2d(h, 2, 2, "VALID"), 2, bias=1.0, alpha=0.05, beta=0.75)
    w2 = to.get_variable("conv2/w", [3, 3, 8, 8], initializer=to.glorot_uniform_initializer(seed=2))
    h = to.nn.conv2d(h, w2, strides=1, padding="SAME")
    mean, variance = to.nn.moments(h, axes=[0, 1, 2])
    gamma = to.get_variable("bn/gamma", [8], initializer=to.ones_initializer())
    beta = to.get_variable("bn/beta", [8], initializer=to.zeros_initializer())
    h = to.nn.avg_pool2d(to.nn.relu(to.nn.batch_normalization(h, mean, variance, beta, gamma, 1e-3)),
                         2, 2, "VALID")
    flat = to.reshape(h, [8, 32])
    wo = to.get_variable("fc/w", [32, 4], initializer=to.glorot_uniform_initializer(seed=3))
    bo = to.get_variable("fc/b", [4], initializer=to.zeros_initializer())
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=to.nn.bias_add(to.matmul(flat, wo), bo)))

    def feed(rng):
        return {x: rng.normal(size=(8, 8, 8, 4)).astype(np.float32), y: rng.integers(0, 4, 8).astype(np.int32)}

    return loss, feed


def transformer():
    b, s, v, d, heads = 4, 4, 12, 8, 2
    tokens = to.placeholder(to.int32, [b, s], name="tokens")
    targets = to.placeholder(to.int32, [b, s], name="targets")
    emb = to.get_variable("embedding", [v, d], initializer=to.random_normal_initializer(stddev=0.5, seed=1))
    x = to.nn.embedding_lookup(emb, tokens)
    qkv_w = to.get_variable("qkv/w", [d, 3 * d], initializer=to.glorot_uniform_initializer(seed=2))
    qkv = to.reshape(to.matmul(to.reshape(x, [b * s, d]), qkv_w), [b, s, 3 * d])
    q, k, val = to.split(qkv, 3, axis=2)

    def heads_of(t):
        return to.transpose(to.reshape(t, [b, s, heads, d // heads]), [0, 2, 1, 3])

    scores = to.matmul(heads_of(q), heads_of(k), transpose_b=True) * 0.5
    ctx = to.matmul(to.nn.softmax(scores), heads_of(val))
    ctx = to.reshape(to.transpose(ctx, [0, 2, 1, 3]), [b, s, d])
    h = to.contrib.layers.layer_norm(x + ctx, epsilon=1e-6)
    ff_w = to.get_variable("ff/w", [d, 16], initializer=to.glorot_uniform_initializer(seed=3))
    ff = to.nn.gelu(to.matmul(to.reshape(h, [b * s, d]), ff_w))
    out_w = to.get_variable("out/w", [16, v], initializer=to.glorot_uniform_initializer(seed=4))
    logits = to.matmul(ff, out_w)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(
        labels=to.reshape(targets, [b * s]), logits=logits))

    def feed(rng):
        return {tokens: rng.integers(0, v, (b, s)).astype(np.int32),
                targets: rng.integers(0, v, (b, s)).astype(np.int32)}

    return loss, feed


def lstm():
    b, t, d, h, v = 4, 3, 4, 8, 6
    x = to.placeholder(to.float32, [b, t, d], name="x")
    y = to.placeholder(to.int32, [b], name="y")
    cell = to.nn.rnn_cell.MultiRNNCell([to.nn.rnn_cell.LSTMCell(h), to.nn.rnn_cell.LSTMCell(h)])
    outputs, state = to.nn.dynamic_rnn(cell, x, dtype=to.float32)
    w = to.get_variable("proj/w", [h, v], initializer=to.glorot_uniform_initializer(seed=5))
    logits = to.matmul(state[-1].h, w) + to.reduce_sum(outputs) * 0.01
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

    def feed(rng):
        return {x: rng.normal(size=(b, t, d)).astype(np.float32), y: rng.integers(0, v, b).astype(np.int32)}

    return loss, feed


def activations():
    """The activations, losses and shape functions beyond the core set, trained by centered
    RMSProp with momentum on gradients clipped by value and by global norm: sums over split
    dims (``l2_normalize``, ``l2_loss``, the global norm), reshapes of split tensors
    (``expand_dims``, ``squeeze``), ``pad``, ``tile``, ``cumsum`` and ``sequence_mask``,
    elementwise ops under every split, and an accuracy (``argmax``, ``equal``, ``cast``),
    other comparisons and a ``one_hot`` in the loss."""
    x = to.placeholder(to.float32, [8, 12], name="x")
    y = to.placeholder(to.float32, [8, 4], name="y")
    w0 = to.get_variable("fc0/w", [12, 16], initializer=to.glorot_uniform_initializer(seed=1))
    b0 = to.get_variable("fc0/b", [16], initializer=to.random_normal_initializer(stddev=0.1, seed=2))
    h = to.nn.leaky_relu(to.matmul(x, w0) + b0, alpha=0.1)
    h = to.add_n([to.nn.elu(h), to.nn.selu(h) * 0.5, to.nn.silu(h)])
    h = to.nn.l2_normalize(to.nn.relu6(h * 3.0), axis=1, epsilon=1e-6)
    w1 = to.get_variable("fc1/w", [16, 8], initializer=to.glorot_uniform_initializer(seed=3))
    h = to.squeeze(to.expand_dims(to.matmul(h, w1), 1), axis=[1])
    h = to.concat([h[:, :5], to.slice(h, [0, 5], [-1, 3])], axis=1) + to.stack([h, h], axis=1)[:, -1]
    h = h + 0.5 * to.pad(h[:, 1:7], [[0, 0], [1, 1]], mode="REFLECT") + 0.1 * to.tile(h[:4], [2, 1])
    h = h + 0.1 * to.cumsum(h, axis=1) * to.sequence_mask(to.argmax(y, 1) + 3, 8, dtype=to.float32)
    h = to.where(to.greater(h, 0.0), h, h * 0.5) - 0.1 * to.reduce_max(h, axis=1, keepdims=True)
    h = to.nn.softplus(h) - to.minimum(to.abs(h), 0.5) + to.pow(to.squared_difference(h, 0.25), 1.5)
    w2 = to.get_variable("out/w", [8, 4], initializer=to.glorot_uniform_initializer(seed=4))
    logits = to.matmul(h, w2)
    loss = to.reduce_mean(to.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    loss = loss + 1e-2 * to.add_n([to.nn.l2_loss(w0), to.nn.l2_loss(w1)])
    # the metric ops, in the loss's value only (a cast from bool carries no gradient)
    hits = to.cast(to.equal(to.argmax(logits, 1), to.argmax(y, axis=1)), to.float32)
    above = to.cast(to.greater(logits, 0.0), to.float32) * to.cast(to.less_equal(logits, 1.0), to.float32)
    loss = loss + 0.1 * to.reduce_mean(hits) + 0.01 * to.reduce_sum(above)
    loss = loss + 0.1 * to.reduce_mean(to.one_hot(to.argmin(y, 1), 4, on_value=2.0) * logits)

    def feed(rng):
        return {x: rng.normal(size=(8, 12)).astype(np.float32), y: rng.uniform(0, 1, (8, 4)).astype(np.float32)}

    def train(loss):   # both clips, the global norm's active (the norm is about 10x clip_norm)
        optimizer = to.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True)
        grads, variables = zip(*optimizer.compute_gradients(loss))
        grads, _ = to.clip_by_global_norm([to.clip_by_value(g, -0.5, 0.5) for g in grads], CLIP_NORM)
        return optimizer.apply_gradients(zip(grads, variables))

    return loss, feed, train


CLIP_NORM = 0.02


def training_step(loss, extra):
    """The model's own training step (``extra``: what its function returned after the
    feed), else Adam's."""
    return extra[0](loss) if extra else to.train.AdamOptimizer(0.01).minimize(loss)


MODELS = {"mlp": mlp, "cnn": cnn, "transformer": transformer, "lstm": lstm, "activations": activations}


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


def _found_and_loaded(out_path, rank):
    """``to.find_strategy``'s plan, and the plan every rank reads back from rank 0's JSON."""
    from mpi4py import MPI
    found = to.find_strategy(option="mini_time", cluster="paper-v100x16")
    path = f"{out_path}.plan.json"
    if rank == 0:
        found.save(path)
    MPI.COMM_WORLD.Barrier()
    loaded = to.Plan.load(path)
    MPI.COMM_WORLD.Barrier()
    if rank == 0:
        os.remove(path)
    return found, loaded


def _plans(graph, summary: bool, out_path: str = "", rank: int = 0):
    if summary:
        result = to.search_strategy(option="mini_time", cluster="paper-v100x16")
        frontier = result.frontier
        found, loaded = _found_and_loaded(out_path, rank)
        return [frontier[0], frontier[len(frontier) // 2], frontier[-1], result.data_parallel, loaded], found
    search = search_frontier(graph, CostModel(graph, N, AlphaBeta(), 1e10))
    plans = [search.plans[0], search.plans[-1], search.data_parallel_plan()]
    sample_rng = np.random.default_rng(123)
    return (plans + [sample_plan(search.space, sample_rng) for _ in range(8)]
            + reduce_scatter_plans(search.space)), None


def _baseline_plans(graph):
    """The distinct plans of the baselines, and the methods that found each."""
    from tensoropt.search.baselines import (MinTimeTables, mcmc_search, mesh_tf_search, optcnn_search,
                                            pase_search, tofu_search)

    search = search_frontier(graph, CostModel(graph, N, AlphaBeta(), 1e10))
    tables = MinTimeTables(search.space)
    found = [mesh_tf_search(tables).plan, optcnn_search(tables).plan, tofu_search(tables).plan,
             pase_search(tables).plan, mcmc_search(tables, proposals=2000, seed=0).plan]
    distinct: dict = {}
    for plan in found:
        distinct.setdefault((tuple(sorted(plan.ops.items())), plan.edges), []).append(plan)
    return [same[0] for same in distinct.values()], [[p.option for p in same] for same in distinct.values()]


def _local_blocks(variables):
    """This rank's own block of each variable (its shard or its replica), unassembled."""
    runtime = to.runtime._runtime
    return runtime.session.run({v.op.name: runtime.lowered.tensors[v] for v in variables})


def _every_rank_rel(comm, variables, local, ref_params):
    """The largest relative difference of any rank's block from its slice of the reference."""
    sharding = to.runtime._runtime.sharding
    slices = {v.op.name: sharding.layout_of(v).shard_slices(comm.Get_rank(), v.shape) for v in variables}
    mine = max(rel(local[k], ref_params[k][slices[k]]) for k in ref_params)
    return max(comm.allgather(mine))


def reduce_scatter_plans(space, tries: int = 400):
    """A sampled plan in which an op leaves its output partial (``partial_out``) and an
    edge reduce-scatters it straight into the consumer's split; [] if none is found."""
    rng = np.random.default_rng(7)
    for _ in range(tries):
        plan = sample_plan(space, rng)
        if any(st.kind == "reducescatter" for e in plan.edges for st in e.forward_steps):
            return [plan]
    return []


def main(out_path, names, summary=False, baselines=False):
    world = to.init()
    from mpi4py import MPI
    results = []
    for name in names:
        to.reset_default_graph()
        loss, make_feed, *extra = MODELS[name]()
        train_op = training_step(loss, extra)
        graph = to.get_default_graph()
        rng = np.random.default_rng(0)
        feeds = [make_feed(rng) for _ in range(STEPS)]
        ref_losses, ref_params = reference(graph, loss, train_op, feeds)
        if baselines:
            (plans, methods), found = _baseline_plans(graph), None
        else:
            plans, found = _plans(graph, summary, out_path, world.rank)
            methods = [[p.option] for p in plans]
        variables = graph.trainable_variables
        comm = MPI.COMM_WORLD
        for index, plan in enumerate(plans):
            to.build_execution_graph(plan=plan)
            losses = [to.run([loss, train_op], feed)[0] for feed in feeds]
            counts = dict(to.runtime._runtime.sharding.collectives.counts)
            params = to.run({v.op.name: v for v in variables})
            every_rank = _every_rank_rel(comm, variables, _local_blocks(variables), ref_params)
            loss_every_rank = max(comm.allgather(rel(losses, ref_losses)))
            hashes = comm.allgather(hashlib.sha256(plan.to_json().encode()).hexdigest())
            if world.rank == 0:
                results.append({
                    "model": name, "plan": index, "option": plan.option, "methods": methods[index],
                    "loss_rel": max(rel(losses, ref_losses), loss_every_rank),
                    "param_rel": max(max(rel(params[k], ref_params[k]) for k in ref_params), every_rank),
                    "ranks_compared": comm.Get_size(),
                    "round_trip": None if found is None or index != len(plans) - 1 else (
                        plan == found and plan.edges == found.edges and len(plan.edges) > 0),
                    "losses": [float(v) for v in losses], "reference": [float(v) for v in ref_losses],
                    "step_kinds": sorted({st.kind for e in plan.edges for st in e.forward_steps}),
                    "reuse": sorted({e.reuse for e in plan.edges}),
                    "same_plan_on_every_rank": len(set(hashes)) == 1,
                    "memory_bytes": plan.memory_bytes,
                    "collectives": counts,
                    "expected_collectives": expected_collectives(graph, plan),
                })
    if world.rank == 0:
        with open(out_path, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    args = [a for a in sys.argv[2:] if a not in ("--summary", "--baselines")]
    main(sys.argv[1], args or list(MODELS), summary="--summary" in sys.argv[2:],
         baselines="--baselines" in sys.argv[2:])
