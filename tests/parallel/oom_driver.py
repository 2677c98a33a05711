"""Run under ``mpirun -np 2``: for each model, ``mini_time`` under a memory limit that
rules out the frontier's fastest plans; the chosen plan is trained and its measured peak
memory per rank (``execution.step_profile``) compared with the limit.

Usage: oom_driver.py OUT.json [tiny|small] [model ...]. Rank 0 writes, per model, the
limit, the plan's additive estimate, and every rank's measured peak. With
``TENSOROPT_OOM_COST_MODEL=profiled`` the search and its checked peak use the profiled
cost model (measured op times and workspaces; needs a calibration profile).
"""

import json
import os
import sys

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt.simulator import FIT_CHECK, simulate_plan

SIZE = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] in ("tiny", "small") else "tiny"
COST_MODEL = os.environ.get("TENSOROPT_OOM_COST_MODEL", "analytical")


def checked_peak(graph, plan) -> float:
    """The plan's memory as ``mini_time`` checks it: its additive estimate or its
    simulated peak as a bound (``FIT_CHECK``), the larger."""
    return max(plan.memory_bytes, simulate_plan(graph, plan, to.runtime.local_cluster(),
                                                COST_MODEL, FIT_CHECK).peak_memory_bytes)


def _limit(graph, frontier, fastest: float, name: str) -> float:
    """The checked peak of the plan a third along the frontier (the faster plans need
    more), when it is below the fastest plan's; else (a checked peak need not grow along
    the frontier) the largest checked peak of the frontier below the fastest plan's."""
    third = checked_peak(graph, frontier[len(frontier) // 3])
    if third < fastest:
        return third
    below = [p for p in (checked_peak(graph, plan) for plan in frontier) if p < fastest]
    if not below:
        raise SystemExit(f"oom_driver: {name}: every frontier plan's checked peak is at least the "
                         f"fastest plan's ({fastest:.0f} B), so no limit rules the fastest out; "
                         "try another model or device count")
    return max(below)


def main(out_path, names):
    world = to.init()
    from mpi4py import MPI
    rows = []
    for name in names:
        to.reset_default_graph()
        spec = models.build(name, size=SIZE)
        graph = to.get_default_graph()
        frontier = to.search_strategy(option="mini_time", cost_model=COST_MODEL).frontier
        fastest = checked_peak(graph, frontier[-1])
        limit = _limit(graph, frontier, fastest, name)
        plan = to.find_strategy(option="mini_time", memory_limit=limit, cost_model=COST_MODEL)
        to.build_execution_graph(plan=plan)
        feed = spec.feed(np.random.default_rng(0))
        for _ in range(2):
            to.run(spec.train_op, feed)
        _, step = to.run(spec.train_op, feed, profile=True)
        peaks = MPI.COMM_WORLD.allgather(step.peak_bytes)
        if world.rank == 0:
            rows.append({"model": name, "limit_bytes": limit, "estimated_bytes": plan.memory_bytes,
                         "fastest_bytes": fastest, "measured_peak_bytes": peaks,
                         "resident_bytes": step.resident_bytes})
    if world.rank == 0:
        with open(out_path, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [a for a in sys.argv[2:] if a not in ("tiny", "small")] or ["mlp", "cnn", "transformer", "lstm"])
