"""Deferred series nodes: which node with two neighbours is eliminated next, and which wait.

Eliminating a node with two neighbours h, j (a "series" node) changes no other node's
degree unless h and j are already joined, by an edge or by another chain of series nodes
(then it makes parallel edges, ``closes``). Such an elimination is therefore never what
makes a heuristic elimination unnecessary, and when its product is large
(``DEFER_CANDIDATES``, estimated from the points per cell of its tables) it waits: a
heuristic elimination that is due anyway often turns it into a cheap leaf fold, or cuts
the tables it would multiply. Heuristic elimination ranks and scores nodes as if the
waiting chains were contracted (``walk`` finds a chain's far end), so it fixes the same
nodes, and on an exact run (no epsilon) the same configurations, as without waiting; how
it scores the chains next to the node it fixes is ``_chains``'s job. A waiting node is
eliminated when no heuristic elimination is left; LDP folds the ones left on paths.
Ready series nodes go in the order of their estimated products (``SERIES_BY_ESTIMATE``).

Usage::

    waits = Waits(work)
    waits.forget(touched)                    # nodes whose edges changed since last time
    v = waits.next_series(two, set(two))     # None when every series node waits
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from frontier._eliminate import Work

__all__ = ["Waits", "walk", "closes", "node_cost", "out_cells", "DEFER_CANDIDATES",
           "SERIES_BY_ESTIMATE"]

#: A series elimination whose product is estimated to make more candidate points than
#: this waits for the heuristic eliminations that are due (see the module doc); tests
#: set it to 0 (every series node waits) or None (none does).
DEFER_CANDIDATES: Optional[float] = 1_000_000.0

#: Whether the series node eliminated next is the one whose product is estimated
#: smallest (``_series_candidates``, from the tables' points per cell) rather than the
#: one with the fewest blocks (``node_cost``, K_h * K_v * K_j). Tests turn it off.
SERIES_BY_ESTIMATE = True


def walk(work: Work, prev: int, cur: int, series: set[int]) -> tuple[int, list[int]]:
    """Follows the edge prev -> cur on through series nodes; returns the first node that
    is not one (prev's neighbour once the chain is contracted) and the series nodes
    passed. On a cycle of series nodes it stops where it started."""
    start, passed = prev, []
    while cur in series and cur != start:
        passed.append(cur)
        prev, cur = cur, next(y for y in work.adj[cur] if y != prev)
    return cur, passed


def closes(work: Work, v: int, series: set[int]) -> tuple[bool, set[int]]:
    """True when contracting v's chain of series nodes would make parallel edges (or a
    loop): its two ends are the same node, or are joined by an edge or another chain.
    Also returns the nodes the answer depends on (their edges and series status)."""
    h, j = work.adj[v]
    a, left = walk(work, v, h, series)
    b, right = walk(work, v, j, series)
    chain = {v, *left, *right}
    deps = chain | {a, b}
    if a == b or a == v or b == v:
        return True, deps
    for y in work.adj[a]:
        if y in chain:
            continue
        end, passed = walk(work, a, y, series)
        deps.add(end)
        deps.update(passed)
        if end == b:
            return True, deps
    return False, deps


def _series_candidates(work: Work, v: int) -> float:
    """Estimated candidate points of ``node_elim(v)``: per configuration k of v, the
    points of h-v at k (all of h's configurations), times v's own points at k, times
    the points of v-j at k."""
    sums = []
    for y in work.adj[v]:
        (wid,) = work.adj[v][y]
        u, w, tid = work.edges[wid]
        c = work.st.table(tid).counts().reshape(work.K[u], work.K[w])
        sums.append(c.sum(axis=1) if u == v else c.sum(axis=0))
    own = work.st.table(work.ntab[v]).counts()
    return float(np.dot(sums[0] * own, sums[1].astype(float)))


def out_cells(work: Work, v: int) -> int:
    """The cells of the edge ``node_elim(v)`` makes: K_h * K_j."""
    h, j = work.adj[v]
    return work.K[h] * work.K[j]


def node_cost(work: Work, v: int) -> tuple:
    """How much work eliminating v (two neighbours) takes, roughly: the blocks of its
    product, K_h * K_v * K_j; ties by topological index. (Which series nodes wait is
    decided by ``_series_candidates``, from the tables' points per cell.)"""
    h, j = work.adj[v]
    cells = work.K[h] * work.K[v] * work.K[j]
    return cells, work.topo[v]


class Waits:
    """Which series nodes wait (see the module doc), each answer remembered until a
    node it depends on is touched (``Work.touched``) or the backbone marks change."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.verdict: dict[int, bool] = {}
        self.users: dict[int, set[int]] = {}      # node -> verdicts that depend on it
        self.marks: set[int] = set()
        self.waited: set[int] = set()
        self.estimates: dict[int, float] = {}     # _series_candidates, until v is touched

    def forget(self, touched: set[int]) -> None:
        if self.work.marked != self.marks:
            self.verdict.clear()
            self.users.clear()
            self.marks = set(self.work.marked)
        for x in touched:
            self.estimates.pop(x, None)
            for v in self.users.pop(x, ()):
                self.verdict.pop(v, None)

    def estimate(self, v: int) -> float:
        """``_series_candidates(v)``; it depends on v's own tables only, and changing
        them touches v."""
        if v not in self.estimates:
            self.estimates[v] = _series_candidates(self.work, v)
        return self.estimates[v]

    def waits(self, v: int, series: set[int]) -> bool:
        if DEFER_CANDIDATES is None:
            return False
        if v not in self.verdict:
            if self.estimate(v) <= DEFER_CANDIDATES:
                wait, deps = False, {v}
            else:
                closed, deps = closes(self.work, v, series)
                wait = not closed
            self.verdict[v] = wait
            if wait and v not in self.waited:
                self.waited.add(v)
                self.work.tally.waited_series += 1
            for d in deps:
                self.users.setdefault(d, set()).add(v)
        return self.verdict[v]

    def next_series(self, two: list[int], series: set[int]) -> Optional[int]:
        """The series node to eliminate now, of those that do not wait: the smallest
        estimated product, then the fewest cells left (``SERIES_BY_ESTIMATE``; else the
        fewest blocks, ``node_cost``); None when all wait."""
        ready = [v for v in two if not self.waits(v, series)]
        if not ready:
            return None
        if SERIES_BY_ESTIMATE:
            return min(ready, key=lambda x: (self.estimate(x), out_cells(self.work, x),
                                             self.work.topo[x]))
        return min(ready, key=lambda x: node_cost(self.work, x))
