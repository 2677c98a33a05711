"""How far approximate frontiers are from the exact one, on a real cost graph.

    python -m tensoropt.bench approximation [--model paper_vgg16] [--devices 8]
        [--epsilon 0.01,0.05] [--max-candidates 1000000,100000,30000]

Prices the model once on ``paper-v100x16`` scaled to ``--devices`` (analytical costs),
tracks its exact frontier, then each approximation (``frontier.track``'s ``epsilon`` and
``max_candidates``). For each it prints the Frontier-Tracking seconds, the number of
plans, the error bound ``track`` reports (also as a share of T, the time no plan beats)
and the error actually made: for every exact point, how much slower the fastest returned
plan with no more memory is. Exits 1 if an actual error exceeds its bound.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import tensoropt as to
from frontier import track
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.search.driver import cost_graph
from tensoropt.search.strategy import make_cost_model


def actual_errors(exact: list[tuple[float, float]], approx: list[tuple[float, float]]):
    """Per exact point (m, t): (best - t) where best is the least time of an approximate
    point with memory <= m. The least memory is kept exactly by every approximation."""
    mem, tim = np.array(approx, dtype=float).T
    best = np.minimum.accumulate(tim)                  # over points up to each memory
    em, et = np.array(exact, dtype=float).T
    i = np.searchsorted(mem, em * (1 + 1e-12), side="right") - 1
    return np.where(i >= 0, best[np.maximum(i, 0)] - et, np.inf)


def _line(name: str, seconds: float, result, exact) -> bool:
    s = result.stats
    bound, lower = s.time_error_bound_s, s.time_lower_bound_s
    err = actual_errors(exact.points, result.points)
    rel = err / np.array([t for _, t in exact.points])
    ok = bool(np.all(err <= bound + 1e-9 * lower))
    print(f"  {name:<24} {seconds:8.1f} s {len(result.points):6d} plans   bound {bound:.3g} s "
          f"({bound / lower:6.2%} of T)   actual: max {err.max():.3g} s ({err.max() / lower:.3%} "
          f"of T), slower by at most {rel.max():.3%}, mean {rel.mean():.3%}"
          + ("" if ok else "   FAIL: above the bound"), flush=True)
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench approximation")
    parser.add_argument("--model", default="paper_vgg16")
    parser.add_argument("--size", default="paper")
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--epsilon", default="0.01,0.05", help="comma-separated epsilons")
    parser.add_argument("--max-candidates", default="1000000,100000,30000",
                        help="comma-separated candidate caps")
    args = parser.parse_args(argv)
    to.reset_default_graph()
    models.build(args.model, size=args.size)
    graph = to.get_default_graph()
    start = time.perf_counter()
    cg = cost_graph(graph, make_cost_model(graph, get_cluster("paper-v100x16"), args.devices))
    print(f"{args.model} on paper-v100x16@{args.devices}: {cg.num_nodes} ops, {cg.num_edges} "
          f"edges, priced in {time.perf_counter() - start:.1f} s", flush=True)
    start = time.perf_counter()
    exact = track(cg)
    seconds = time.perf_counter() - start
    print(f"  {'exact':<24} {seconds:8.1f} s {len(exact.points):6d} plans   T = "
          f"{exact.stats.time_lower_bound_s:.4g} s", flush=True)
    ok = True
    runs = [("epsilon", float(e)) for e in filter(None, args.epsilon.split(","))]
    runs += [("max_candidates", int(float(c))) for c in filter(None, args.max_candidates.split(","))]
    for key, value in runs:
        start = time.perf_counter()
        result = track(cg, **{key: value})
        ok &= _line(f"{key} {value:g}", time.perf_counter() - start, result, exact)
    print("every approximation within its bound" if ok else "SOME BOUNDS WERE EXCEEDED")
    return 0 if ok else 1
