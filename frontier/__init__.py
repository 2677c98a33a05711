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
    res.stats                           # a TrackStats: counts, sizes, bound, seconds

Modules: ``graph`` (CostGraph, validation), ``track`` (track, TrackResult), ``stats``
(TrackStats), ``_table`` (frontier tables with error radii), ``_kernels`` (the compiled
merge, reduce and thinning loops), ``_values`` and ``_shared`` (product, union, combine
on tables), ``_eliminate`` (node/edge/branch/heuristic elimination), ``_structure``
(which elimination when; the LDP backbone), ``_series``, ``_chains`` and ``_triangles``
(series nodes that wait, chains scored without multiplying, backbone triangles),
``_degrees`` (the nodes by degree), ``_ldp`` (LDP and the final enumeration),
``_store`` (back pointers, unrolling), ``brute_force`` (reference enumerator),
``synthetic`` (test and bench graphs), ``bench`` (``python -m frontier.bench``).

The frontier is exact unless ``res.stats.heuristic_eliminations`` is non-zero, or an
``epsilon`` or ``max_candidates`` thinned it (``res.exact`` says which); every point's
``choice`` re-costs to exactly that point. When thinned, every exact point has a returned
point with no more memory and at most ``res.stats.time_error_bound_s`` seconds more time
(the largest per-point radius); with ``epsilon=e`` that is at most ``e * T``.

The kernels are compiled by numba on first use and cached on disk (in ``__pycache__``
next to ``_kernels.py``, or numba's user cache when that is not writable).
"""

from frontier.graph import CostGraph
from frontier.stats import TrackStats
from frontier.track import TrackResult, check_search_options, heuristic_rules, track

__all__ = ["CostGraph", "TrackResult", "TrackStats", "track", "check_search_options", "heuristic_rules"]
