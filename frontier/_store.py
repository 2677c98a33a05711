"""Back-pointer store shared by eliminations and LDP, and the vectorized unroll.

Every frontier table made during a run is registered with the record of how its points
were derived. A point of a derived table points at one point of each parent table, so
the derivation of any final point is a tree whose shape is the same for every point;
``unroll`` walks that tree once with an index array per table.

Usage::

    st = Store(num_nodes, num_edges)
    t0 = st.leaf_node(v, table)                    # original node frontier
    t1 = st.leaf_edge(e, table, alt)               # original edge frontier
    t2 = st.derived(table, (t0, t1), (ia, ib))     # product / union / gather result
    t3 = st.derived(table, (t2,), (ix,), gap=g)    # a reduction that thinned by up to g
    st.lower[t3]        # the least time of the part of the graph t3 stands for (seconds)
    st.summed[t3]       # g + the gaps of t3's ancestors: a bound summed over reductions
    cfg, alt = st.unroll(t2, np.arange(n))         # (n, num_nodes), (n, num_edges)

Each original node and edge is one leaf of exactly one derivation tree, so ``lower`` of
the final table is the sum of every node's and edge's least time: T of ``track``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from frontier._table import Table

__all__ = ["Store"]


@dataclass
class _Record:
    kind: str                      # "node", "edge" or "derived"
    label: int                     # node id / edge id; -1 for derived
    parents: tuple[int, ...]
    bp: tuple[np.ndarray, ...]     # one index array per parent; ("edge": alternatives)


class Store:
    """Tables (values are dropped once dead) and their derivation records."""

    def __init__(self, num_nodes: int, num_edges: int) -> None:
        self.num_nodes = num_nodes
        self.num_edges = num_edges
        self.tables: list[Optional[Table]] = []
        self.records: list[_Record] = []
        # The least time of the subgraph a table stands for (the sum over its leaves),
        # which scales its thinning budget; and the error bound of the old method: the
        # largest thinning gap of every reduction in its derivation, summed.
        self.lower: list[float] = []
        self.summed: list[float] = []

    def _add(self, table: Table, rec: _Record, lower: float, gap: float = 0.0) -> int:
        self.tables.append(table)
        self.records.append(rec)
        self.lower.append(lower)
        self.summed.append(gap + sum(self.summed[p] for p in rec.parents))
        return len(self.tables) - 1

    def leaf_node(self, nid: int, table: Table) -> int:
        return self._add(table, _Record("node", nid, (), ()), float(table.time.min()))

    def leaf_edge(self, eid: int, table: Table, alt: np.ndarray) -> int:
        return self._add(table, _Record("edge", eid, (), (alt.astype(np.int32, copy=False),)),
                         float(table.time.min()))

    def derived(self, table: Table, parents: tuple[int, ...],
                bp: tuple[np.ndarray, ...], gap: float = 0.0) -> int:
        """Registers a table made from ``parents``; ``bp[i][x]`` is the point of parent i
        that point x came from; ``gap`` the largest thinning slow-down it made."""
        assert len(parents) == len(bp)
        small = tuple(np.asarray(b).astype(np.int32 if len(b) == 0 or int(np.max(b)) <
                                           2**31 - 1 else np.int64) for b in bp)
        return self._add(table, _Record("derived", -1, tuple(parents), small),
                         sum(self.lower[p] for p in parents), gap)

    def table(self, tid: int) -> Table:
        t = self.tables[tid]
        assert t is not None, "a dead table was used again"
        return t

    def pointer_bytes(self) -> int:
        """Bytes of back pointers kept for unrolling."""
        return sum(b.nbytes for rec in self.records for b in rec.bp)

    def drop(self, tid: int) -> None:
        """Frees the values of a table nobody will read again (back pointers stay)."""
        self.tables[tid] = None

    def unroll(self, tid: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Configurations and edge alternatives of points ``idx`` of table ``tid``.

        Returns:
            ``(cfg, alt)``: int arrays of shape (len(idx), num_nodes) and
            (len(idx), num_edges); -1 where a node or edge is not reached.
        """
        n = len(idx)
        # int32: a paper-scale frontier has 10^5 points over thousands of nodes and edges.
        cfg = np.full((n, self.num_nodes), -1, dtype=np.int32)
        alt = np.full((n, self.num_edges), -1, dtype=np.int32)
        stack = [(tid, np.asarray(idx, dtype=np.int64))]
        while stack:
            t, ix = stack.pop()
            rec = self.records[t]
            if rec.kind == "node":
                assert np.all(cfg[:, rec.label] < 0), "node reached twice while unrolling"
                cfg[:, rec.label] = ix
            elif rec.kind == "edge":
                assert np.all(alt[:, rec.label] < 0), "edge reached twice while unrolling"
                alt[:, rec.label] = rec.bp[0][ix]
            else:
                for parent, b in zip(rec.parents, rec.bp):
                    stack.append((parent, b[ix].astype(np.int64)))
        return cfg, alt
