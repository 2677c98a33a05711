"""The working graph's nodes by degree, and its parallel edges, kept up to date.

``reduce_graph`` asks after every elimination which nodes have one, two or three or more
neighbours (off the backbone or on it) and which pairs of nodes have parallel edges.
``DegreeIndex`` answers from the nodes each elimination touched (``Work.touched``)
instead of rescanning the graph.

Usage::

    index = DegreeIndex(work)
    touched = index.refresh()            # after each elimination
    pair = index.parallel_pair()         # (u, v) with parallel edges, or None
    two = index.free(2, ldp=True)        # series nodes off the backbone
"""

from __future__ import annotations

from typing import Optional

from frontier._eliminate import Work

__all__ = ["DegreeIndex"]


class DegreeIndex:
    """The nodes by degree (1, 2, 3 or more) and the nodes with parallel edges, kept
    up to date from ``Work.touched`` instead of rescanning the graph per elimination."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.by_degree: tuple[set[int], set[int], set[int]] = (set(), set(), set())
        self.parallel: dict[int, set[int]] = {}

    def refresh(self) -> set[int]:
        """Takes in the nodes touched since the last call; returns them."""
        work = self.work
        touched, work.touched = work.touched, set()
        for x in touched:
            for s in self.by_degree:
                s.discard(x)
            self.parallel.pop(x, None)
            nb = work.adj.get(x)
            if not nb:
                continue
            self.by_degree[min(len(nb), 3) - 1].add(x)
            multi = {y for y, wids in nb.items() if len(wids) > 1}
            if multi:
                self.parallel[x] = multi
        return touched

    def parallel_pair(self) -> Optional[tuple[int, int]]:
        """The topologically first node with parallel edges and its first such
        neighbour; None when there are none."""
        if not self.parallel:
            return None
        u = min(self.parallel, key=self.work.topo.__getitem__)
        return u, min(self.parallel[u], key=self.work.topo.__getitem__)

    def marked(self, degree: int) -> list[int]:
        """Backbone nodes of that degree, in topological order."""
        marked = self.work.marked
        return sorted((v for v in self.by_degree[degree - 1] if v in marked),
                      key=self.work.topo.__getitem__)

    def free(self, degree: int, ldp: bool) -> list[int]:
        """Nodes of that degree (3: or more) not on the backbone, in topological order."""
        marked = self.work.marked if ldp else ()
        return sorted((v for v in self.by_degree[degree - 1] if v not in marked),
                      key=self.work.topo.__getitem__)
