"""Estimated against measured, as the paper's Table 2, on this machine's MPI ranks.

    mpirun --allow-run-as-root --oversubscribe -np 4 .venv/bin/tensoropt calibrate
    mpirun --allow-run-as-root --oversubscribe -np 4 .venv/bin/python -m tensoropt.bench accuracy

For each model, ``--plans`` plans sampled at random from its search space (priced with
the profiled cost model: measured op shards and the calibration profile) are built and
trained. It prints, per model, the mean relative error (c - ĉ) / c of the estimate ĉ
against the measurement c for:

- per-iteration time: the median wall time of ``--steps`` steps, slowest rank;
- network time: from one traced step, the time spent in horovod collectives (the plan's
  collectives are chained, so they do not overlap one another), slowest rank;
- peak memory per rank: the bytes of every TensorFlow variable (parameters, optimizer
  slots) plus the allocator's peak during a traced step (activations, gradients and
  temporaries), largest rank.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt._tf import import_tensorflow
from tensoropt.search.driver import sample_plan, sampling_space
from tensoropt.search.strategy import make_cost_model


def _measure(spec, plan, feed, comm, steps: int) -> tuple[float, float, float]:
    tf = import_tensorflow()
    to.build_execution_graph(engine="tensorflow", plan=plan)
    rt = to.runtime._runtime
    session, lowered = rt.session, rt.lowered
    tf_feed = {lowered.tensors[k]: rt_feed for k, rt_feed in
               ((k, to.runtime._local_feed(k, np.asarray(v), rt.sharding)) for k, v in feed.items())}
    train = lowered.train_ops[id(spec.train_op)]
    session.run(train, feed_dict=tf_feed)  # warm up
    times = []
    for _ in range(steps):
        comm.Barrier()
        start = time.perf_counter()
        session.run(train, feed_dict=tf_feed)
        times.append(time.perf_counter() - start)
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    metadata = tf.compat.v1.RunMetadata()
    comm.Barrier()
    session.run(train, feed_dict=tf_feed, options=options, run_metadata=metadata)
    network = peak = 0.0
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            if "Horovod" in node.timeline_label:
                network += node.all_end_rel_micros * 1e-6
            for used in node.memory:
                peak = max(peak, used.peak_bytes)
    with lowered.tf_graph.as_default():
        resident = sum(v.shape.num_elements() * v.dtype.size for v in tf.compat.v1.global_variables())
    from mpi4py import MPI

    return (comm.allreduce(statistics.median(times), op=MPI.MAX), comm.allreduce(network, op=MPI.MAX),
            comm.allreduce(resident + peak, op=MPI.MAX))


def _error(measured: float, estimated: float) -> float:
    return (measured - estimated) / measured if measured else 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench accuracy")
    parser.add_argument("--models", default="mlp,cnn,transformer,lstm")
    parser.add_argument("--size", default="small")
    parser.add_argument("--plans", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cost-model", default="profiled", choices=["profiled", "analytical"])
    args = parser.parse_args(argv)
    world = to.init()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rows = []
    for name in args.models.split(","):
        to.reset_default_graph()
        spec = models.build(name, size=args.size)
        graph = to.get_default_graph()
        plans = None
        if world.rank == 0:
            model = make_cost_model(graph, to.runtime.local_cluster(), world.size, args.cost_model)
            space = sampling_space(graph, model)
            rng = np.random.default_rng(7)
            plans = [sample_plan(space, rng).to_json() for _ in range(args.plans)]
        plans = [to.Plan.from_json(p) for p in comm.bcast(plans, root=0)]
        feed = spec.feed(np.random.default_rng(0))
        errors = []
        for plan in plans:
            measured = _measure(spec, plan, feed, comm, args.steps)
            estimated = (plan.time_s, plan.network_s, plan.memory_bytes)
            errors.append([_error(m, e) for m, e in zip(measured, estimated)])
            if world.rank == 0:
                print(f"  {name}: measured {measured[0] * 1e3:8.2f} ms, network {measured[1] * 1e3:8.2f} ms, "
                      f"{measured[2] / 2**20:8.2f} MiB; estimated {estimated[0] * 1e3:8.2f} ms, "
                      f"{estimated[1] * 1e3:8.2f} ms, {estimated[2] / 2**20:8.2f} MiB", flush=True)
        rows.append((name, np.mean(np.abs(errors), axis=0), np.mean(errors, axis=0)))
    if world.rank == 0:
        print(f"\nmean |(measured - estimated) / measured| over {args.plans} sampled plans per model, "
              f"{world.size} ranks, {args.cost_model} costs ({args.size} models):")
        print(f"{'model':<14}{'time':>10}{'network':>10}{'memory':>10}   signed mean (time, network, memory)")
        for name, absolute, signed in rows:
            print(f"{name:<14}{absolute[0]:>10.1%}{absolute[1]:>10.1%}{absolute[2]:>10.1%}   "
                  f"{signed[0]:+.1%}, {signed[1]:+.1%}, {signed[2]:+.1%}")
    return 0
