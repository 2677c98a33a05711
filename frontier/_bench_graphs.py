"""``python -m frontier.bench --synthetic-hard`` and ``--graph FILE``: one graph per row.

Each row tracks one graph in a child process (``bench.run_in_child``) and prints the wall and
CPU seconds, the frontier's size, T (a time no strategy beats), the error bound (the
largest radius, as a share of T; the old summed bound for comparison; and the largest
radius as a share of its point's own time, what ``--relative`` bounds) and the
child's peak resident memory (VmHWM, which includes building the graph).

Graphs:

* ``hard:SHAPE:N:K`` -- ``synthetic.hard_graph(SHAPE, N, K)`` (random costs, 5% of
  pairs with a reuse alternative). ``--synthetic-hard`` runs the two of issue 14:
  ``hard:chain:400:256`` and ``hard:shortcut:400:128``.
* a path -- a ``CostGraph.save`` file, e.g. a priced model.

Usage::

    python -m frontier.bench --synthetic-hard --epsilon 0.05 --threads 2
    python -m frontier.bench --synthetic-hard --epsilon 0.05 --relative
    python -m frontier.bench --graph vgg16_16.npz,transformer_16.npz --timeout 900
    python -m frontier.bench --graph inception_v3_16.npz --epsilon 0.01 --steps
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional

__all__ = ["HARD_GRAPHS", "check_source", "build", "run_graph", "print_rows"]

HARD_GRAPHS = ("hard:chain:400:256", "hard:shortcut:400:128")


def check_source(source: str) -> None:
    """Raises ValueError, saying what to give, when ``source`` names no graph."""
    from frontier.synthetic import HARD_SHAPES

    if source.startswith("hard:"):
        parts = source.split(":")
        if (len(parts) != 4 or parts[1] not in HARD_SHAPES or not parts[2].isdigit()
                or not parts[3].isdigit()):
            raise ValueError(f"graph {source!r}: expected hard:SHAPE:N:K with SHAPE one of "
                             f"{HARD_SHAPES}, e.g. hard:chain:400:256")
    elif not os.path.exists(source):
        raise ValueError(f"graph {source!r}: no such file; give hard:SHAPE:N:K or a file "
                         "written by CostGraph.save")


def build(source: str):
    """The CostGraph named by ``source`` (see the module doc)."""
    from frontier.graph import CostGraph
    from frontier.synthetic import hard_graph

    check_source(source)
    if source.startswith("hard:"):
        _, shape, n, k = source.split(":")
        return hard_graph(shape, int(n), int(k), seed=0)
    return CostGraph.load(source)


def _peak_rss_bytes() -> int:
    """This process's peak resident memory (VmHWM), or -1 where /proc has none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def run_graph(source: str, method: str, threads: int, epsilon: Optional[float],
              max_candidates: Optional[int], relative: bool = False) -> dict[str, Any]:
    """Builds (or loads) one graph and tracks it; returns the row's figures."""
    from frontier import track

    g = build(source)
    c0, w0 = time.process_time(), time.perf_counter()
    res = track(g, method=method, threads=threads, epsilon=epsilon,
                max_candidates=max_candidates, relative=relative)
    c1, w1 = time.process_time(), time.perf_counter()
    s = res.stats
    lower = s.time_lower_bound_s or 1.0
    return {"nodes": g.num_nodes, "edges": g.num_edges, "wall": w1 - w0, "cpu": c1 - c0,
            "points": len(res.points), "max_cell": s.max_cell_points,
            "heuristic": s.heuristic_eliminations, "T": s.time_lower_bound_s,
            "bound": s.time_error_bound_s / lower,
            "summed": s.summed_bound_s / lower, "relative": s.relative_error_bound,
            "rss": _peak_rss_bytes(),
            "by_step": s.seconds_by_step, "slowest": s.slowest_steps}


def print_rows(sources: list[str], method: str, threads: int, epsilon: Optional[float],
               max_candidates: Optional[int], timeout: float, steps: bool = False,
               relative: bool = False) -> None:
    """Runs every graph in a child with ``timeout`` seconds and prints a row each; with
    ``steps``, also (as ``#`` lines) the seconds per kind of elimination and the slowest
    eliminations (``TrackStats.slowest_steps``)."""
    from frontier.bench import run_in_child

    for src in sources:
        check_source(src)
    cols = ["graph", "nodes", "edges", "wall_s", "cpu_s", "points", "max_cell", "heur",
            "T_s", "bound_%T", "summed_%T", "own_%t", "peak_GiB"]
    print(f"# method={method} threads={threads} epsilon={epsilon} relative={relative} "
          f"max_candidates={max_candidates}")
    print(f"{cols[0]:>26} " + " ".join(f"{c:>10}" for c in cols[1:]))
    for src in sources:
        out = run_in_child(run_graph, (src, method, threads, epsilon, max_candidates, relative),
                           timeout,
                           label=src)
        name = os.path.basename(src)
        if "stopped" in out:
            print(f"{name:>26} " + f"{out['stopped']:>10}", flush=True)
            continue
        row = [out["nodes"], out["edges"], f"{out['wall']:.1f}", f"{out['cpu']:.1f}",
               out["points"], out["max_cell"], out["heuristic"], f"{out['T']:.4g}",
               f"{out['bound']:.3%}",
               f"{out['summed']:.3%}", f"{out['relative']:.3%}",
               f"{out['rss'] / 2**30:.2f}" if out["rss"] >= 0 else "-"]
        print(f"{name:>26} " + " ".join(f"{str(c):>10}" for c in row), flush=True)
        if steps:
            print("#   seconds by kind: " + ", ".join(f"{k} {n} x {t:.2f} s"
                                                   for k, n, t in out["by_step"]))
            for sec, kind, nodes, cand, pts in out["slowest"]:
                print(f"#   {sec:8.3f} s  {kind:<9} nodes {list(nodes)}  candidates {cand}  "
                      f"points {pts}", flush=True)
