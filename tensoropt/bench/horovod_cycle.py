"""Horovod's cycle as the simulator models it, against what a chain of collectives takes.

    mpirun --allow-run-as-root --oversubscribe -np 2 .venv/bin/python -m tensoropt.bench horovod_cycle

Horovod's background loop looks for ready collectives once per cycle. The simulator
(``SimOptions.horovod_cycle``) runs each rank's collectives on such a cycle of ``C``: a
collective issued within ``C`` of the end of the rank's last collective starts ``C`` after
that end, one issued later ``C`` after it is issued (``engine.cycle_start``). This measures, in one ``session.run`` each (median of
``--repeats`` over the slowest rank):

1. a chain of ``--links`` tiny all-reduces, each issued when the one before ends: ``C``
   per link (what ``tensoropt calibrate`` records as ``overheads.collective_s``);
2. the same chain with a chain of matmuls before each all-reduce (sizes drawn at random,
   so that the compute between two collectives falls anywhere in a cycle), and the
   matmuls alone.

It then prices chain 2 three ways: measured; simulated by the simulator's own event loop
with the cycle (each link's compute is the matmuls' measured time shared out by their
FLOPs); and "one cycle per collective", what an estimate that adds ``C`` to every
collective gives.
"""

from __future__ import annotations

import argparse

import numpy as np

from tensoropt._tf import import_tensorflow
from tensoropt.execution.calibration_overheads import slowest_median_s
from tensoropt.execution.mpi_env import import_mpi
from tensoropt.simulator.engine import simulate
from tensoropt.simulator.graph import TaskGraph

__all__ = ["main", "cycled_chain_s"]


def cycled_chain_s(compute_s: list[float], cycle_s: float) -> float:
    """What the simulator gives for compute, then a tiny collective, link after link, with
    the collectives on a cycle of ``cycle_s``."""
    g = TaskGraph(["compute:0", "chain:0"], cycles={"chain:0": cycle_s})
    prev = None
    for i, d in enumerate(compute_s):
        g.add_task(f"mm{i}", "compute", ["compute:0"], d)
        g.add_task(f"ar{i}", "collective", ["chain:0"], 0.0)
        if prev:
            g.add_dependency(prev, f"mm{i}")
        g.add_dependency(f"mm{i}", f"ar{i}")
        prev = f"ar{i}"
    return simulate(g).makespan_s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench horovod_cycle")
    parser.add_argument("--links", type=int, default=32, help="collectives in each chain")
    parser.add_argument("--repeats", type=int, default=25, help="timed runs per chain (median)")
    parser.add_argument("--sizes", default="100,400", help="matmul sizes drawn from [lo, hi)")
    args = parser.parse_args(argv)
    lo, hi = (int(x) for x in args.sizes.split(","))
    if args.links < 2 or args.repeats < 1 or not 1 <= lo < hi:
        parser.error("--links >= 2, --repeats >= 1, --sizes lo,hi with 1 <= lo < hi")
    MPI = import_mpi()
    tf = import_tensorflow()
    import horovod.tensorflow as hvd

    tf.compat.v1.disable_eager_execution()
    hvd.init(comm=MPI.COMM_WORLD)
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(0)
    sizes = rng.integers(lo, hi, size=args.links)
    x = tf.compat.v1.placeholder(tf.float32, [16])
    mats = [tf.compat.v1.get_variable(f"m{i}", initializer=rng.standard_normal((n, n)).astype(np.float32))
            for i, n in enumerate(sizes.tolist())]

    def chain(reduce: bool):
        y = x
        for i, m in enumerate(mats):
            z = m * (1.0 + y[0] * 1e-9)               # reads y: the links stay in order
            for _ in range(3):
                z = tf.matmul(z, m) * 1e-3
            y = y + tf.reduce_sum(z) * 1e-9
            if reduce:
                y = hvd.allreduce(y, op=hvd.Average, name=f"cycle_bench/mixed{i}")
        return y

    compute_only, mixed = chain(False), chain(True)
    tiny = x
    for i in range(args.links):
        tiny = hvd.allreduce(tiny * 0.5, op=hvd.Average, name=f"cycle_bench/tiny{i}")
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    session = tf.compat.v1.Session(config=config)
    session.run(tf.compat.v1.global_variables_initializer())
    feed = {x: np.ones(16, np.float32)}

    def timed(fetch) -> float:
        return slowest_median_s(comm, lambda: session.run(fetch, feed), args.repeats)

    back_to_back, compute, measured = timed(tiny), timed(compute_only), timed(mixed)
    if hvd.rank() == 0:
        n = args.links
        cycle = back_to_back / n
        flops = sizes.astype(float) ** 3
        per_link = (compute * flops / flops.sum()).tolist()
        simulated = cycled_chain_s(per_link, cycle)
        flat = compute + n * cycle
        print(f"{n} tiny all-reduces back to back: {back_to_back * 1e3:.2f} ms = a cycle of {cycle * 1e3:.3f} ms")
        print(f"{n} links of matmuls ({lo}..{hi}) then a tiny all-reduce: compute alone {compute * 1e3:.2f} ms")
        for label, t in (("measured", measured), ("simulated, horovod's cycle", simulated),
                         ("one cycle per collective", flat)):
            print(f"  {label:<28} {t * 1e3:8.2f} ms  ({(t - compute) / n * 1e3:.3f} ms per link beyond compute,"
                  f" {(t - measured) / measured:+.1%} vs measured)")
    return 0
