"""Frontier-Tracking: the (memory, time) Pareto frontier of a cost graph.

Usage::

    from frontier import CostGraph, track
    g = CostGraph()
    a = g.add_node("matmul_1", [(4.0, 1.0), (2.0, 3.0)])
    b = g.add_node("relu_1", [(1.0, 1.0), (0.5, 2.0)])
    g.add_edge(a, b, [[[(0, 0)], [(1, 1)]], [[(1, 1)], [(0, 0), (-1, 2)]]])
    res = track(g, method="ldp")
    res.points, res.choice(0), res.stats
"""

from frontier.graph import CostGraph
from frontier.track import TrackResult, track

__all__ = ["CostGraph", "TrackResult", "track"]
