"""Peak resident memory per rank for an MLP whose weights are all split over the ranks.

    mpirun --allow-run-as-root --oversubscribe -np 4 .venv/bin/python -m tensoropt.bench shard_memory \\
        [--param-gib 2] [--layers 4] [--batch 8]

Records an MLP of ``--layers`` dense layers alternating width w -> 2w -> w (glorot-uniform
kernels, zero biases), with w chosen so that the kernels hold about ``--param-gib`` GiB
of float32, and a small classifier. Plain SGD trains it: SGD keeps no slots, so the
parameters themselves dominate. The plan is the frontier's least-memory end, checked to
split every kernel over all ranks. Each rank then builds its graph, initializes its
variables and runs one training step. The bench prints each rank's peak resident memory
(``VmHWM`` from ``/proc/self/status``: the whole process, TensorFlow and horovod
included), its resident memory before building (``VmRSS``), and the bytes of parameters it
holds, against the whole model's parameter bytes. With shard-only variables each rank's
peak stays well below the whole parameter size; building the whole initial value on every
rank and slicing it, as TensorOpt once did, puts at least the largest kernel on every rank.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import tensoropt as to
from tensoropt.bench.fuzz_plans import AlphaBeta
from tensoropt.costs.model import CostModel
from tensoropt.plan import Plan
from tensoropt.search.driver import search_frontier

__all__ = ["main", "status_bytes"]

GIB = 2 ** 30


def status_bytes(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (e.g. "VmHWM", "VmRSS"), in bytes.

    Raises:
        RuntimeError: where ``/proc/self/status`` has no such field (not Linux).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    raise RuntimeError(f"/proc/self/status has no {field}; this benchmark needs Linux")


def _mlp(param_gib: float, layers: int, batch: int, classes: int = 8):
    width = max(8, int(math.sqrt(param_gib * GIB / (4 * 2 * layers))) // 8 * 8)
    x = to.placeholder(to.float32, [batch, width], name="x")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = x
    for i in range(layers):
        out = 2 * width if i % 2 == 0 else width
        with to.variable_scope(f"fc{i}"):
            kernel = to.get_variable("kernel", [h.shape[1], out], initializer=to.glorot_uniform_initializer())
            bias = to.get_variable("bias", [out], initializer=to.zeros_initializer())
        h = to.nn.relu(to.nn.bias_add(to.matmul(h, kernel), bias))
    w = to.get_variable("logits/kernel", [h.shape[1], classes], initializer=to.glorot_uniform_initializer())
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=to.matmul(h, w)))
    train_op = to.train.GradientDescentOptimizer(0.01).minimize(loss)
    return x, labels, loss, train_op, width


def _split_plan(graph, ranks: int) -> Plan:
    """The least-memory plan; every kernel must be split ``ranks`` ways in it."""
    plan = search_frontier(graph, CostModel(graph, ranks, AlphaBeta(), 1e10)).plans[0]
    for v in graph.trainable_variables:
        if "kernel" not in v.op.name:
            continue
        split = math.prod(plan.ops[v.op.name].mesh[a] for _, a in plan.ops[v.op.name].dim_axes)
        if split != ranks:
            raise RuntimeError(f"the least-memory plan splits {v.op.name} {split} ways, not {ranks}")
    return plan


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench shard_memory")
    parser.add_argument("--param-gib", type=float, default=2.0, help="kernel parameters, GiB")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args(argv)
    world = to.init()
    from mpi4py import MPI  # noqa: PLC0415 - after init

    comm = MPI.COMM_WORLD
    x, labels, loss, train_op, width = _mlp(args.param_gib, args.layers, args.batch)
    graph = to.get_default_graph()
    param_bytes = sum(v.nbytes for v in graph.trainable_variables)
    plan = _split_plan(graph, world.size) if world.size > 1 else None
    before = status_bytes("VmRSS")
    start = time.perf_counter()
    to.build_execution_graph(plan=plan or to.find_strategy())
    built = time.perf_counter() - start
    after_init = status_bytes("VmHWM")
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((args.batch, width)).astype(np.float32),
            labels: rng.integers(0, 8, args.batch).astype(np.int32)}
    value, _ = to.run([loss, train_op], feed)
    lowered = to.runtime._runtime.lowered
    held = sum(int(np.prod(v.shape.as_list())) * v.dtype.size
               for v in lowered.tf_graph.get_collection("variables"))
    row = (world.rank, before, after_init, status_bytes("VmHWM"), held, built)
    rows = comm.gather(row, root=0)
    if world.rank == 0:
        print(f"MLP: {args.layers} layers of width {width} <-> {2 * width}, batch {args.batch}, SGD; "
              f"parameters {param_bytes / GIB:.3f} GiB; {world.size} rank(s), every kernel split "
              f"{world.size} ways; first loss {float(value):.4f}")
        print(f"{'rank':>4} {'VmRSS before build':>19} {'VmHWM after init':>17} {'peak VmHWM':>11} "
              f"{'peak - before':>14} {'params held':>12} {'peak / params':>14} {'build s':>8}")
        for rank, rss, init_hwm, hwm, held_bytes, seconds in rows:
            print(f"{rank:>4} {rss / GIB:>15.3f} GiB {init_hwm / GIB:>13.3f} GiB {hwm / GIB:>7.3f} GiB "
                  f"{(hwm - rss) / GIB:>10.3f} GiB {held_bytes / GIB:>8.3f} GiB {hwm / param_bytes:>13.0%} "
                  f"{seconds:>8.1f}")
    comm.Barrier()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
