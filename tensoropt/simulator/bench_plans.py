"""Benchmark: the FT-ordered simulator check on real frontiers.

Usage::

    python -m tensoropt.bench simulator                      # paper_vgg16@8, paper_wide_resnet@16
    python -m tensoropt.bench simulator --models paper_vgg16@8 --epsilon 0.05 --verify-every 4
    python -m tensoropt.bench simulator --synthetic          # the engine bench (bench.py)

For each ``model@devices``: the model's paper preset is searched on the
``paper-v100x16`` cluster scaled to that many devices (``SearchOptions(epsilon=...)``),
then ``check_frontier`` simulates the frontier in Frontier-Tracking's order (chained
collectives, one representative rank, no overheads: the analytical cost model has no
calibration). It prints the plans simulated and the tasks per plan; the seconds per plan
of a full simulation (FlexFlow's Algorithm 1: the plan's task graph assembled from the
cached fragments, then the event loop over every task) and of a delta one (the changed
fragments spliced into the nearest recent state's graph, then the delta run), each split
into graph and simulation; the speed-up (target >= 2x), the simulation alone's, and the
one against a full event loop on the spliced graph; how many plans were verified
delta == full; and the check's Kendall tau-b values, adjacent inversions, dominated
count and ``mini_time`` regret (memory limit: the cluster's device memory / 1.1).
Exits 1 if a verified plan differs.
"""

from __future__ import annotations

import time
from typing import Any

import tensoropt as to
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import SAFETY_MARGIN, frontier_for
from tensoropt.simulator.check import check_frontier

__all__ = ["run_frontier", "print_frontier", "DEFAULT_MODELS"]

DEFAULT_MODELS = ("paper_vgg16@8", "paper_wide_resnet@16")


def run_frontier(spec: str, epsilon: float = 0.05, budget: int = 64,
                 verify_every: int = 4) -> dict[str, Any]:
    """Searches and checks one ``model@devices``; returns the figures."""
    name, _, devices = spec.partition("@")
    if not devices.isdigit():
        raise ValueError(f"{spec!r}: give MODEL@DEVICES, e.g. paper_vgg16@8")
    n = int(devices)
    to.reset_default_graph()
    models.build(name, size="paper")
    graph = to.get_default_graph()
    cluster = get_cluster("paper-v100x16", devices=n)
    t0 = time.perf_counter()
    result = frontier_for(graph, cluster, n, search=SearchOptions(epsilon=epsilon))
    search_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    check = check_frontier(result, cluster, memory_limit=cluster.memory_bytes / SAFETY_MARGIN,
                           budget=budget, verify_every=verify_every)
    return {"spec": spec, "ops": len(graph.operations), "search_s": search_s,
            "check_s": time.perf_counter() - t0, "check": check}


def print_frontier(r: dict[str, Any]) -> bool:
    """Prints one model's figures; returns whether every verified plan matched."""
    c = r["check"]
    rows = c.frontier_rows
    tasks = sum(x.tasks for x in rows) / max(len(rows), 1)
    print(f"{r['spec']}: {r['ops']} ops, frontier of {c.frontier_size} plans "
          f"(searched in {r['search_s']:.1f} s), {len(rows)} simulated + data parallel "
          f"in {r['check_s']:.1f} s wall")
    print(f"  tasks per plan      {tasks:,.0f}")
    fg, dg = c.full_graph_s_per_plan, c.delta_graph_s_per_plan
    print(f"  full  per plan      {c.full_s_per_plan:.4f} s wall (graph assembled {fg:.4f} s "
          f"+ event loop {c.full_s_per_plan - fg:.4f} s)")
    if c.delta_s_per_plan:
        print(f"  delta per plan      {c.delta_s_per_plan:.4f} s wall (graph spliced {dg:.4f} s "
              f"+ delta run {c.delta_s_per_plan - dg:.4f} s)")
        print(f"  speed-up            {c.delta_speedup:.2f}x (target >= 2x); simulation alone "
              f"{c.simulation_speedup:.2f}x; vs a full event loop on the spliced graph "
              f"{c.spliced_speedup:.2f}x")
    else:
        print("  delta per plan      n/a (one plan checked: nothing to delta from)")
    ok = not c.delta_mismatches
    print(f"  {'PASS' if ok else 'FAIL'}  delta == full on {c.verified - len(c.delta_mismatches)}"
          f"/{c.verified} verified plans")
    for line in c.summary_lines()[1:]:
        print(line)
    dp = c.row(-1)
    if dp is not None:
        print(f"  data parallel: estimated {dp.estimated_time_s:.4f} s, simulated "
              f"{dp.simulated_time_s:.4f} s, peak {dp.simulated_peak_bytes / 2**30:.3f} GiB")
    return ok
