"""Frontier-Tracking: the (memory, time) Pareto frontier of a cost graph.

Usage::

    from frontier import CostGraph, track
    g = CostGraph()
    a = g.add_node("matmul_1", [(4.0, 1.0), (2.0, 3.0)])       # or a (K, 2) array
    b = g.add_node("relu_1", [(1.0, 1.0), (0.5, 2.0)])
    e = g.add_edge(a, b, [[[(0, 0)], [(1, 1)]],                # costs[k][p] = alternatives
                          [[(1, 1)], [(0, 0), (-1, 2)]]])      # or (Ka, Kb, A, 2) array
    res = track(g, method="ldp")        # or "elimination"; threads=, heuristic=, epsilon=
    res.points                          # [(1.5, 7.0), (2.5, 5.0), (5.0, 2.0)]
    res.choice(0)                       # ({a: 1, b: 1}, {e: 1})
    res.stats                           # elimination counts, sizes, seconds per phase

Modules: ``graph`` (CostGraph, validation), ``track`` (track, TrackResult),
``_values`` (frontier tables: reduce, product, union, the batched kernels),
``_eliminate`` (node/edge/branch/heuristic elimination, backbone marking),
``_ldp`` (LDP and the final enumeration), ``_store`` (back pointers, unrolling),
``brute_force`` (reference enumerator), ``synthetic`` (test and bench graphs),
``bench`` (``python -m frontier.bench``).

The frontier is exact unless ``res.stats["heuristic_eliminations"]`` is non-zero or an
``epsilon`` was given (``res.exact`` says which); every point's ``choice`` re-costs to
exactly that point. With ``epsilon=e`` every exact point has a returned point with no more
memory and at most ``(1 + e)`` times its time (``res.stats["time_error_bound"]`` is the
bound reached, in seconds).
"""

from frontier.graph import CostGraph
from frontier.track import TrackResult, check_search_options, track

__all__ = ["CostGraph", "TrackResult", "track", "check_search_options"]
