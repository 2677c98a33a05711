"""Which elimination runs when (Algorithm 2's loop), and the linear backbone of LDP.

``reduce_graph`` eliminates until every component of the working graph is a path
("ldp") or has at most two nodes ("elimination"): parallel edges first, then nodes with
two neighbours, then leaves, and heuristic elimination only when no exact one applies.
For "ldp" the first node of each component is marked and the marks are extended along
single downstream neighbours (Section 3.2); marked nodes are not eliminated, so the
backbone left for LDP is a long path.

Three refinements change only the cost, never the heuristic choices nor an exact
frontier, each in its own module with the switch tests turn off to compare:

* ``_series``: a series node (two neighbours) whose product is large waits for the
  heuristic eliminations that are due anyway (``DEFER_CANDIDATES``); ready ones go in
  the order of their estimated products (``SERIES_BY_ESTIMATE``).
* ``_chains``: a heuristic elimination scores the waiting chains next to its node as
  if contracted, without multiplying them (``VIRTUAL_CHAINS``); they fold after it.
* ``_triangles``: a backbone node whose neighbours are joined may go instead of the
  free series node beside it when that is cheaper (``BACKBONE_TRIANGLES``).

One changes the heuristic choices where the exact order would be too costly:

* ``_hubs``: before a series elimination estimated huge (``HUB_CANDIDATES``), a node
  of the irreducible core at its chain's end (a hub that some heuristic elimination
  must fix) is fixed instead, and the series node folds cheaply after.

``_degrees.DegreeIndex`` keeps the nodes by degree from one elimination to the next.

Usage::

    reduce_graph(work, "ldp", "min_memory")
    for comp in components(work): ...
"""

from __future__ import annotations

from typing import Iterable

from frontier._chains import contract_next_to, virtual_chains
from frontier._degrees import DegreeIndex
from frontier._eliminate import Heuristic, Work
from frontier._hubs import fix_hub, hub_for
from frontier._series import Waits, node_cost, walk
from frontier._triangles import backbone_triangle

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
    """True when the component ``comp`` is a path (what LDP runs on)."""
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


def _start_backbones(work: Work, waiting: Iterable[int] = ()) -> bool:
    """Marks the first node of every component that has no marked node (the first that
    is not a waiting series node, which the graph without waiting would not have)."""
    new = False
    for comp in components(work):
        if not any(v in work.marked for v in comp):
            first = next((v for v in comp if v not in waiting), comp[0])
            work.marked.add(first)
            work.tails.append(first)
            new = True
    return new


def _is_source(work: Work, v: int, nbrs: Iterable[int]) -> bool:
    """No neighbour before v: all its edges are out-going, as in Eq. (7)."""
    return all(work.topo[y] > work.topo[v] for y in nbrs)


def _span(work: Work, v: int, nbrs: Iterable[int]) -> int:
    """How far in topological order v's edges reach (a mask used by every layer
    reaches from the first layer to the last)."""
    pos = [work.topo[y] for y in nbrs] + [work.topo[v]]
    return max(pos) - min(pos)


def _rank(work: Work, x: int, series: set[int]) -> tuple:
    """Which node heuristic elimination prefers (the largest): a source, then the widest
    reach, then the most neighbours, then the first; neighbours are the ends of the
    chains of series nodes at x."""
    ends = [walk(work, x, y, series)[0] for y in work.adj[x]]
    return _is_source(work, x, ends), _span(work, x, ends), work.degree(x), -work.topo[x]


def _hub_first(work: Work, waits: Waits, v: int, series: set[int],
               heuristic: Heuristic) -> bool:
    """Fixes the hub at v's chain (``_hubs``) when there is one; True if it did."""
    hub = hub_for(work, waits, v, series, lambda x: _rank(work, x, series))
    return hub is not None and fix_hub(work, hub, series, heuristic)


def reduce_graph(work: Work, method: str, heuristic: Heuristic) -> None:
    """Eliminates until every component is a path ("ldp") or has at most two nodes
    ("elimination"). Exact eliminations go first, but for series nodes that wait
    (``_series``). Heuristic elimination only when no other applies, of a node off
    the backbone with three or more neighbours, preferring (in order) a source (all
    edges out-going, as Eq. 7 is stated; a mask is one), the widest reach in
    topological order, the most neighbours; neighbours are counted as if the waiting
    chains were contracted."""
    ldp = method == "ldp"
    index = DegreeIndex(work)
    waits = Waits(work)
    if ldp:
        _start_backbones(work)
    while True:
        if ldp:
            _extend_marks(work)
        waits.forget(index.refresh())
        pair = index.parallel_pair()
        if pair is not None:
            work.edge_elim(*pair)
            continue
        two = index.free(2, ldp)
        series = set(two)
        v = waits.next_series(two, series) if two else None
        if v is not None:
            if ldp:
                v = backbone_triangle(waits, v, index.marked(2))
            if not _hub_first(work, waits, v, series, heuristic):
                work.node_elim(v)
            continue
        v = next((v for v in index.free(1, ldp)
                  if ldp or work.degree(next(iter(work.adj[v]))) >= 2), None)
        if v is not None:
            work.fold(v, next(iter(work.adj[v])))
            work.tally.branch_eliminations += 1
            continue
        comps = components(work)
        if ldp:
            if all(is_path(work, c) for c in comps):
                return
            if work.marking and _start_backbones(work, series):
                continue
        elif all(len(c) <= 2 for c in comps):
            return
        cand = index.free(3, ldp)
        if not cand and two:        # only waiting series nodes can go
            v = min(two, key=lambda v: node_cost(work, v))
            if not _hub_first(work, waits, v, series, heuristic):
                work.node_elim(v)
            continue
        if not cand:
            # Only backbone nodes are left and they do not form a path: give up the
            # backbone and let exact eliminations work on all nodes.
            assert ldp and work.marking
            work.marking = False
            work.marked.clear()
            work.tails.clear()
            work.tally.backbone_fallbacks += 1
            continue
        v = max(cand, key=lambda x: _rank(work, x, series))
        chains = virtual_chains(work, v, series)
        if chains is None:
            contract_next_to(work, v, series)
        work.heuristic_elim(v, heuristic, chains)
