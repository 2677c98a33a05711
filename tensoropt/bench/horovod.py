"""TensorOpt against Horovod, as the paper's Table 4, measured in one run.

    mpirun --allow-run-as-root --oversubscribe -np 2 .venv/bin/python -m tensoropt.bench horovod

Trains the same zoo model three ways on every rank of the job and prints the
per-iteration times and their ratios:

(a) TensorOpt's data-parallel plan;
(b) Horovod's ``DistributedOptimizer`` on the plain single-process graph, each rank on its
    half of the batch;
(c) TensorOpt's ``mini_time`` plan on the ``local`` cluster.

Each is warmed up, then timed over ``--steps`` iterations between barriers; a time is the
slowest rank's.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt._tf import import_tensorflow
from tensoropt.execution.lowering import lower_graph
from tensoropt.plan import Plan


def _time_steps(run_step, comm, steps: int, warmup: int) -> float:
    for _ in range(warmup):
        run_step()
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(steps):
        run_step()
    comm.Barrier()
    return comm.allreduce((time.perf_counter() - start) / steps, op=_max())


def _max():
    from mpi4py import MPI

    return MPI.MAX


def _tensoropt(plan: Plan, spec, batch, comm, steps, warmup) -> float:
    to.build_execution_graph(engine="tensorflow", plan=plan)
    return _time_steps(lambda: to.run(spec.train_op, feed_dict=batch), comm, steps, warmup)


def _horovod(model: str, size: str, batch_size: int, world, comm, steps, warmup) -> float:
    import horovod.tensorflow as hvd

    tf = import_tensorflow()
    local = batch_size // world.size
    graph = to.Graph()
    with graph.as_default():
        spec = models.build(model, size=size, batch=local)
    lowered = lower_graph(graph, tf, wrap_optimizer=hvd.DistributedOptimizer)
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.compat.v1.Session(graph=lowered.tf_graph, config=config) as session:
        session.run(lowered.init_op)
        feed = {lowered.tensors[k]: v for k, v in spec.feed(np.random.default_rng(world.rank)).items()}
        train = lowered.train_ops[id(spec.train_op)]
        return _time_steps(lambda: session.run(train, feed_dict=feed), comm, steps, warmup)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench horovod", description=__doc__.split("\n")[1])
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--size", default="small")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)

    world = to.init()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    to.reset_default_graph()
    spec = models.build(args.model, size=args.size)
    batch_size = spec.params["batch"]
    batch = spec.feed(np.random.default_rng(0))
    result = to.search_strategy(option="mini_time")   # the same on every rank
    mini_time, data_parallel = result.chosen, result.data_parallel

    times = {
        "(a) TensorOpt, data parallel": _tensoropt(data_parallel, spec, batch, comm, args.steps, args.warmup),
        "(b) Horovod DistributedOptimizer": _horovod(args.model, args.size, batch_size, world, comm,
                                                     args.steps, args.warmup),
        "(c) TensorOpt, mini_time": _tensoropt(mini_time, spec, batch, comm, args.steps, args.warmup),
    }
    if world.rank == 0:
        print(f"per-iteration time, {args.model} ({args.size}, batch {batch_size}) on {world.size} ranks, "
              f"{args.steps} steps after {args.warmup} warm-up, slowest rank:")
        for name, seconds in times.items():
            print(f"  {name:<36} {seconds * 1e3:10.2f} ms")
        a, b, c = times.values()
        print(f"  ratio (a)/(b) = {a / b:.3f}   (the paper's Table 4: within 7%)")
        print(f"  ratio (c)/(b) = {c / b:.3f}   ratio (c)/(a) = {c / a:.3f}")
        print(f"  mini_time plan: estimated {mini_time.time_s * 1e3:.2f} ms/iter, {mini_time.notes}")
    return 0
