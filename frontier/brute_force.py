"""Reference enumerator: every strategy of a small CostGraph, then Algorithm 1.

Independent of the tracking code (it reads the graph only through its public getters
and uses plain Python), so tests can compare against it.

Usage::

    pts = brute_force(g)                 # [(mem, time), ...] exact frontier
    mem, time = cost_of(g, nodes, edges) # re-cost a strategy by hand (Eq. 3)
"""

from __future__ import annotations

import itertools

__all__ = ["brute_force", "cost_of", "all_costs", "pareto"]


def cost_of(graph, nodes: dict[int, int], edges: dict[int, int]) -> tuple[float, float]:
    """Sum of the chosen node configurations' and edge alternatives' costs."""
    mem = 0.0
    time = 0.0
    for v in range(graph.num_nodes):
        m, t = graph.node_costs(v)[nodes[v]]
        mem += float(m)
        time += float(t)
    for e in range(graph.num_edges):
        ec = graph.edge(e)
        m, t = ec.alternatives(nodes[ec.src], nodes[ec.dst])[edges[e]]
        mem += float(m)
        time += float(t)
    return mem, time


def all_costs(graph) -> list[tuple[float, float]]:
    """(memory, time) of every strategy: configurations x edge alternatives."""
    out = []
    ranges = [range(graph.num_configs(v)) for v in range(graph.num_nodes)]
    for cfg in itertools.product(*ranges):
        nodes = dict(enumerate(cfg))
        alts = [range(len(graph.edge(e).alternatives(cfg[graph.edge(e).src],
                                                     cfg[graph.edge(e).dst])))
                for e in range(graph.num_edges)]
        for choice in itertools.product(*alts):
            out.append(cost_of(graph, nodes, dict(enumerate(choice))))
    return out


def pareto(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Algorithm 1, in plain Python."""
    out = []
    best = float("inf")
    for m, t in sorted(points):
        if t < best:
            out.append((m, t))
            best = t
    return out


def brute_force(graph) -> list[tuple[float, float]]:
    """The exact frontier by enumeration. Exponential: small graphs only."""
    return pareto(all_costs(graph))
