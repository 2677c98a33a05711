"""Memory of one process that builds many plans, as a benchmark that builds and trains
many plans in one job does (the accuracy bench, the parity tests).

    mpirun --allow-run-as-root --oversubscribe -np 2 .venv/bin/python -m tensoropt.bench plans_memory

Rank 0 samples ``--plans`` random plans of a zoo model (every rank receives them); each
rank builds each plan's execution graph and trains one step on it. After every
``--every`` plans it prints each rank's resident memory (``VmRSS``) and its peak
(``VmHWM``), and at the end the growth per plan over the run after the first report.
Memory stays flat when nothing of a built graph outlives the next one.
"""

from __future__ import annotations

import argparse

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt.search.driver import sample_plan, sampling_space
from tensoropt.search.strategy import make_cost_model

__all__ = ["main", "resident_mib"]


def resident_mib() -> dict[str, float]:
    """This process's ``VmRSS`` and ``VmHWM`` in MiB (Linux)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench plans_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="transformer")
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--plans", type=int, default=50)
    parser.add_argument("--every", type=int, default=10)
    args = parser.parse_args(argv)
    world = to.init()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    spec = models.build(args.model, size=args.size)
    graph = to.get_default_graph()
    plans = None
    if world.rank == 0:
        space = sampling_space(graph, make_cost_model(graph, "paper-v100x16", world.size))
        rng = np.random.default_rng(7)
        plans = [sample_plan(space, rng).to_json() for _ in range(args.plans)]
    plans = [to.Plan.from_json(p) for p in comm.bcast(plans, root=0)]
    feed = spec.feed(np.random.default_rng(0))
    reports = []
    if world.rank == 0:
        print(f"{args.model} ({args.size}) on {world.size} rank(s): build and train one step of "
              f"{args.plans} sampled plans in one process", flush=True)
    for i, plan in enumerate(plans, 1):
        to.build_execution_graph(plan=plan)
        to.run(spec.train_op, feed)
        if i % args.every == 0 or i == len(plans):
            memory = comm.gather(resident_mib(), root=0)
            if world.rank == 0:
                reports.append((i, max(m["VmRSS"] for m in memory)))
                print(f"{i:4d} plans: " + "   ".join(
                    f"rank {r} VmRSS {m['VmRSS']:7.0f} MiB VmHWM {m['VmHWM']:7.0f} MiB"
                    for r, m in enumerate(memory)), flush=True)
    if world.rank == 0 and len(reports) > 1:
        (first, rss0), (last, rss1) = reports[0], reports[-1]
        print(f"growth from plan {first} to plan {last}: {rss1 - rss0:+.0f} MiB "
              f"({(rss1 - rss0) / (last - first):+.2f} MiB per plan, largest rank)")
    return 0
