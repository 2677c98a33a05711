"""Which elimination runs when (Algorithm 2's loop), and the linear backbone of LDP.

``reduce_graph`` eliminates until every component of the working graph is a path
("ldp") or has at most two nodes ("elimination"): parallel edges first, then nodes with
two neighbours, then leaves, and heuristic elimination only when no exact one applies.
For "ldp" the first node of each component is marked and the marks are extended along
single downstream neighbours (Section 3.2); marked nodes are not eliminated, so the
backbone left for LDP is a long path.

Usage::

    reduce_graph(work, "ldp", "min_memory")
    for comp in components(work): ...
"""

from __future__ import annotations

from typing import Optional

from frontier._eliminate import Heuristic, Work

__all__ = ["reduce_graph", "components", "is_path"]


def components(work: Work) -> list[list[int]]:
    """Connected components of the current graph, each sorted by topological index."""
    seen: set[int] = set()
    comps = []
    for s in sorted(work.adj, key=work.topo.__getitem__):
        if s in seen:
            continue
        comp, stack = [], [s]
        seen.add(s)
        while stack:
            x = stack.pop()
            comp.append(x)
            for y in work.adj[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        comps.append(sorted(comp, key=work.topo.__getitem__))
    return comps


def is_path(work: Work, comp: list[int]) -> bool:
    nedges = sum(work.degree(v) for v in comp) // 2
    return all(work.degree(v) <= 2 for v in comp) and nedges == len(comp) - 1


def _extend_marks(work: Work) -> None:
    """Marks the linear backbone: a tail's single downstream neighbour is marked."""
    if not work.marking:
        return
    for i, tail in enumerate(work.tails):
        while tail in work.adj:
            down = [y for y in work.adj[tail] if work.topo[y] > work.topo[tail]]
            if len(down) != 1 or down[0] in work.marked:
                break
            tail = down[0]
            work.marked.add(tail)
        work.tails[i] = tail


def _start_backbones(work: Work) -> bool:
    """Marks the first node of every component that has no marked node."""
    new = False
    for comp in components(work):
        if not any(v in work.marked for v in comp):
            work.marked.add(comp[0])
            work.tails.append(comp[0])
            new = True
    return new


def _is_source(work: Work, v: int) -> bool:
    """No neighbour before v: all its edges are out-going, as in Eq. (7)."""
    return all(work.topo[y] > work.topo[v] for y in work.adj[v])


def _span(work: Work, v: int) -> int:
    """How far in topological order v's edges reach (a mask used by every layer
    reaches from the first layer to the last)."""
    pos = [work.topo[y] for y in work.adj[v]] + [work.topo[v]]
    return max(pos) - min(pos)


def _node_cost(work: Work, v: int) -> tuple:
    """How much work eliminating v (two neighbours) takes: the blocks of its product,
    K_h * K_v * K_j, times its tables' points per cell; ties by topological index."""
    h, j = work.adj[v]
    cells = work.K[h] * work.K[v] * work.K[j]
    return cells, work.topo[v]


def _parallel_pair(work: Work) -> Optional[tuple[int, int]]:
    for u, nb in work.adj.items():
        for v, wids in nb.items():
            if len(wids) > 1:
                return u, v
    return None


def reduce_graph(work: Work, method: str, heuristic: Heuristic) -> None:
    """Eliminates until every component is a path ("ldp") or has at most two nodes
    ("elimination"). Exact eliminations always go first. Heuristic elimination only
    when none applies, of a node off the backbone with three or more neighbours,
    preferring (in order) a source (all edges out-going, as Eq. 7 is stated; a mask is
    one), the widest reach in topological order, the most neighbours."""
    ldp = method == "ldp"
    if ldp:
        _start_backbones(work)
    while True:
        if ldp:
            _extend_marks(work)
        pair = _parallel_pair(work)
        if pair is not None:
            work.edge_elim(*pair)
            continue
        order = sorted(work.adj, key=work.topo.__getitem__)
        free = [v for v in order if not (ldp and v in work.marked)]
        two = [v for v in free if work.degree(v) == 2]
        if two:
            work.node_elim(min(two, key=lambda v: _node_cost(work, v)))
            continue
        v = next((v for v in free if work.degree(v) == 1
                  and (ldp or work.degree(next(iter(work.adj[v]))) >= 2)), None)
        if v is not None:
            work.fold(v, next(iter(work.adj[v])))
            work.tally.branch_eliminations += 1
            continue
        comps = components(work)
        if ldp:
            if all(is_path(work, c) for c in comps):
                return
            if work.marking and _start_backbones(work):
                continue
        elif all(len(c) <= 2 for c in comps):
            return
        cand = [v for v in free if work.degree(v) >= 3]
        if not cand:
            # Only backbone nodes are left and they do not form a path: give up the
            # backbone and let exact eliminations work on all nodes.
            assert ldp and work.marking
            work.marking = False
            work.marked.clear()
            work.tails.clear()
            work.tally.backbone_fallbacks += 1
            continue
        v = max(cand, key=lambda x: (_is_source(work, x), _span(work, x), work.degree(x),
                                     -work.topo[x]))
        work.heuristic_elim(v, heuristic)
