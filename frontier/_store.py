"""Back-pointer store shared by eliminations and LDP, and the vectorized unroll.

Every frontier table made during a run is registered with the record of how its points
were derived. A point of a derived table points at one point of each parent table, so
the derivation of any final point is a tree whose shape is the same for every point;
``unroll`` walks that tree once with an index array per table.

Usage::

    st = Store(num_nodes, num_edges)
    t0 = st.leaf_node(v, table)                    # original node frontier
    t1 = st.leaf_edge(e, table, alt)               # original edge frontier
    t2 = st.derived(table, (t0, t1), (ia, ib), key)   # product / union / gather result
    t3 = st.derived(table, (t2,), (ix,), key, gap=g)  # a reduction that thinned by up to g
    st.fp[t2]           # its fingerprint: key (``_memo``); a leaf's hashes its values
    st.lower[t3]        # a time the part of the graph t3 stands for never beats (seconds)
    st.summed[t3]       # g + the gaps of t3's ancestors: a bound summed over reductions
    cfg, alt = st.unroll(t2, np.arange(n))         # (n, num_nodes), (n, num_edges)
    st.collect()        # frees pointers no live table needs (also runs by itself)
    st.can_recur(key)   # False: no table that can still be made asks for key again

Every fingerprint of a derived table is remembered with its parents' (``derivation``),
and the tables alive now are counted by fingerprint, so ``obtainable`` tells whether a
table of a given fingerprint is alive or can be made again from live tables by the
reductions that made it first: a reduction's inputs are live tables or reductions of
them, and a derived fingerprint hashes its operation and its parents' fingerprints, so
a table of a fingerprint that no live table's derivation can reach is never made
again (``_memo``'s results for such keys are dead weight: ``Work`` forgets them).

Each original node and edge is one leaf of exactly one derivation tree, so ``lower`` of
the final table is at least the sum of every node's and edge's least time, and no
strategy is faster: T of ``track``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from frontier._memo import table_fingerprint
from frontier._table import Table

__all__ = ["Store", "COLLECT_MIN_BYTES"]


@dataclass
class _Record:
    kind: str                      # "node", "edge" or "derived"
    label: int                     # node id / edge id; -1 for derived
    parents: tuple[int, ...]
    bp: tuple[np.ndarray, ...]     # one index array per parent; ("edge": alternatives)
    shared: bool = False           # bp are shared with other records or ``_memo``


COLLECT_MIN_BYTES = 256 * 2 ** 20   # back pointers below which ``collect`` never runs


def _narrow(b: np.ndarray) -> np.ndarray:
    """Non-negative indices in the narrowest unsigned type that holds them."""
    b = np.asarray(b)
    top = int(b.max()) if len(b) else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return b.astype(dtype, copy=False)
    return b.astype(np.int64, copy=False)


def _share(bp: tuple[np.ndarray, ...], holders: dict[int, int], pinned: set[int]) -> float:
    """The bytes of ``bp`` one record's renumbering frees: none of an array the memo
    holds (``pinned``), 1/n of one that n records hold."""
    return float(sum(b.nbytes / holders[id(b)] for b in bp if id(b) not in pinned))


def _least(table: Table) -> float:
    """The least ``time - radius`` of the table: no exact point of it is faster."""
    if table.npoints == 0:
        return -np.inf
    if table.radius is None:
        return float(table.time.min())
    return float((table.time - table.radius).min())


class Store:
    """Tables (values are dropped once dead) and their derivation records."""

    def __init__(self, num_nodes: int, num_edges: int) -> None:
        self.num_nodes = num_nodes
        self.num_edges = num_edges
        self.tables: list[Optional[Table]] = []
        self.records: list[_Record] = []
        # A time no strategy of the subgraph a table stands for beats (within its
        # cells), which scales its thinning budget: the larger of the sum over its
        # parents and its own least ``time - radius``. Lower bounds of disjoint parts
        # add, so the final table's is a lower bound of the whole graph's time. And the
        # error bound of the old method: every reduction's largest thinning gap, summed.
        self.lower: list[float] = []
        self.summed: list[float] = []
        self.npoints: list[int] = []      # points of each table (as its records number them)
        self.fp: list[bytes] = []         # fingerprint of each table's values (``_memo``)
        self.bytes = 0                    # back-pointer bytes now, and at most so far
        self.peak_bytes = 0
        self._after_collect = 0
        self.collections = 0
        self._held: set[int] = set()      # ids of the arrays records hold now
        # Ids of pointer arrays held outside the Store (``Work`` sets it: the memo's),
        # which renumbering a record cannot free (``collect``).
        self.pinned: Callable[[], set[int]] = set
        self._live: dict[bytes, int] = {}          # live tables (values kept) by fingerprint
        # The parents' fingerprints of every derived table's fingerprint (the records'
        # parents are emptied by ``collect``; this is small: 16 bytes a fingerprint).
        self.derivation: dict[bytes, tuple[bytes, ...]] = {}

    def _add(self, table: Table, rec: _Record, lower: float, fp: bytes,
             gap: float = 0.0) -> int:
        self.tables.append(table)
        self.fp.append(fp)
        self.records.append(rec)
        self.lower.append(lower)
        self.summed.append(gap + sum(self.summed[p] for p in rec.parents))
        self.npoints.append(table.npoints)
        self._live[fp] = self._live.get(fp, 0) + 1
        if rec.kind == "derived":
            self.derivation.setdefault(fp, tuple(self.fp[p] for p in rec.parents))
        # Shared arrays count once: a reused result's were counted when first held,
        # unless every record holding them was renumbered since (the memo kept them).
        self.bytes += sum(b.nbytes for b in rec.bp if id(b) not in self._held)
        self._held.update(id(b) for b in rec.bp)
        self.peak_bytes = max(self.peak_bytes, self.bytes)
        if self.bytes > max(COLLECT_MIN_BYTES, 2 * self._after_collect):
            self.collect()
        return len(self.tables) - 1

    def leaf_node(self, nid: int, table: Table) -> int:
        return self._add(table, _Record("node", nid, (), ()), float(table.time.min()),
                         table_fingerprint(table))

    def leaf_edge(self, eid: int, table: Table, alt: np.ndarray,
                  fp: Optional[bytes] = None) -> int:
        """``fp``: the fingerprint of (table, alt) when the caller has it (edges that
        share cost arrays share it); computed otherwise."""
        alt = _narrow(alt)
        return self._add(table, _Record("edge", eid, (), (alt,)), float(table.time.min()),
                         fp if fp is not None else table_fingerprint(table, alt))

    def derived(self, table: Table, parents: tuple[int, ...],
                bp: tuple[np.ndarray, ...], key: bytes, gap: float = 0.0,
                shared: bool = False) -> int:
        """Registers a table made from ``parents``; ``bp[i][x]`` is the point of parent i
        that point x came from; ``key`` its fingerprint (``_memo.fingerprint`` of the
        operation, its parameters and the parents' fingerprints); ``gap`` the largest
        thinning slow-down it made. ``shared``: ``bp`` are another record's arrays (a
        result taken from ``_memo``), counted in ``bytes`` once whoever holds them."""
        assert len(parents) == len(bp)
        # Shared pointers were narrowed when the record they come from was registered.
        bp = tuple(bp) if shared else tuple(_narrow(b) for b in bp)
        return self._add(table, _Record("derived", -1, tuple(parents), bp, shared),
                         max(sum(self.lower[p] for p in parents), _least(table)), key, gap)

    def collect(self) -> None:
        """Frees the back pointers that no point of a live table leads to.

        A live table (values not dropped) keeps all its points. A dead one keeps only
        the points that kept points point at, renumbered (its children's pointers are
        mapped to the new numbers); a record nothing reaches is emptied. Node leaves
        keep their numbering (a point is a configuration). Unrolling any live table
        gives the same result as before. ``_add`` runs this whenever the pointers have
        doubled since the last time (and exceed ``COLLECT_MIN_BYTES``).

        A record whose pointers are shared (``_memo``: other records, or the memo, hold
        the same arrays) is renumbered only when that pays (``_pays``): renumbering
        makes it a private copy (``b[keep]``, its parents' new numbers), never touching
        the shared arrays, which the memo may still hand to later layers; the record is
        then private (``shared=False``). Otherwise it keeps all its points, and so do
        its parents. On PaSE's Transformer at 64 devices every reused layer had kept its
        ancestors' points whole (about 0.9 GiB a layer).
        """
        n = len(self.records)
        need: list[Optional[np.ndarray]] = [None] * n
        last_child = [-1] * n                   # the last record whose pointers read t
        children = [0] * n
        holders: dict[int, int] = {}            # id(array) -> records holding it
        for rec in self.records:
            for p in rec.parents:
                children[p] += 1
            for b in rec.bp:
                holders[id(b)] = holders.get(id(b), 0) + 1
        pinned = self.pinned()
        # Bytes a record's own pointers would free if it lost every point (its share of
        # arrays other records hold too), with those of the ancestors only it reaches:
        # an estimate of what renumbering frees upstream.
        chain = [0.0] * n
        for t, rec in enumerate(self.records):
            if rec.kind == "node":
                continue
            chain[t] = _share(rec.bp, holders, pinned) + sum(
                chain[p] for p in rec.parents if children[p] == 1)
        for t in range(n - 1, -1, -1):          # children come after their parents
            rec = self.records[t]
            live = self.tables[t] is not None
            if rec.kind != "derived" or not (live or need[t] is not None):
                continue
            whole, marked = False, ()
            if rec.shared:
                pays, marked = self._pays(t, None if live else need[t], need, children,
                                          holders, pinned, chain)
                whole = not pays
                if whole and not live:
                    need[t][:] = True           # kept whole, numbers and all ...
            for p, b in zip(rec.parents, rec.bp):
                if need[p] is None:
                    need[p] = np.zeros(self.npoints[p], dtype=bool)
                if last_child[p] < 0:
                    last_child[p] = t
                if whole:
                    need[p][:] = True           # ... so its parents keep their numbers
                elif p not in marked:           # (``_pays`` marked those already)
                    need[p][b if live else b[need[t]]] = True
        # New numbers of the points of dead tables that lose points, kept only until
        # their last child is renumbered (a paper-scale run has 10^8 such points).
        remap: dict[int, np.ndarray] = {}
        for t in range(n):
            rec = self.records[t]
            if rec.kind == "node":
                continue
            if self.tables[t] is None and need[t] is None:
                rec.parents, rec.bp = (), ()
                self.npoints[t] = 0
                continue
            bp = [remap[p][b] if p in remap else b for p, b in zip(rec.parents, rec.bp)] \
                if rec.kind == "derived" else list(rec.bp)
            for p in rec.parents:
                if last_child[p] == t:
                    remap.pop(p, None)
            keep, need[t] = (need[t] if self.tables[t] is None else None), None
            if keep is not None and not keep.all():
                bp = [b[keep] for b in bp]
                remap[t] = _narrow(np.cumsum(keep, dtype=np.int64) - keep)
                self.npoints[t] = int(keep.sum())
            bp = tuple(_narrow(b) for b in bp)
            if rec.shared and any(x is not y for x, y in zip(bp, rec.bp)):
                rec.shared = False              # a private copy now; the shared arrays
            rec.bp = bp                         # are untouched
        self._held = {id(b) for rec in self.records for b in rec.bp}
        self.bytes = self.pointer_bytes()
        self._after_collect = self.bytes
        self.collections += 1

    def _pays(self, t: int, keep: Optional[np.ndarray], need: list,
              children: list[int], holders: dict[int, int], pinned: set[int],
              chain: list[float]) -> tuple[bool, set[int]]:
        """Whether renumbering shared record ``t`` (``keep``: the points its children
        need; None when its table is live and keeps all) frees more bytes than the
        private copy of its pointers costs, and the parents whose ``need`` it filled.
        Freed: its share of its shared arrays (none while the memo holds them; 1/n of
        them when n records do, which all renumbered free them whole: results the memo
        dropped after reuse stay with every layer that reused them otherwise); each
        parent's points no one else reaches (a parent with ``t`` as its only child),
        with, in proportion, what their ancestors' chain holds. Those parents' ``need``
        is filled here either way, with the points ``t`` reaches (the caller marks all
        of them instead when it does not pay)."""
        rec = self.records[t]
        kept = self.npoints[t] if keep is None else int(np.count_nonzero(keep))
        copy = kept * sum(b.itemsize for b in rec.bp)
        freed = _share(rec.bp, holders, pinned)
        marked: set[int] = set()
        if kept == 0:
            return True, marked
        for p, b in zip(rec.parents, rec.bp):
            if children[p] != 1 or self.records[p].kind == "node" or chain[p] == 0:
                continue
            if need[p] is None:
                need[p] = np.zeros(self.npoints[p], dtype=bool)
            need[p][b if keep is None else b[keep]] = True
            marked.add(p)
            lost = self.npoints[p] - int(np.count_nonzero(need[p]))
            freed += chain[p] * lost / max(self.npoints[p], 1)
        return freed > copy, marked

    def table(self, tid: int) -> Table:
        t = self.tables[tid]
        assert t is not None, "a dead table was used again"
        return t

    def pointer_bytes(self) -> int:
        """Bytes of back pointers kept for unrolling (arrays records share count once)."""
        arrays = {id(b): b for rec in self.records for b in rec.bp}
        return sum(b.nbytes for b in arrays.values())

    def drop(self, tid: int) -> None:
        """Frees the values of a table nobody will read again (back pointers stay)."""
        if self.tables[tid] is None:
            return
        self.tables[tid] = None
        fp = self.fp[tid]
        if self._live[fp] == 1:
            del self._live[fp]
        else:
            self._live[fp] -= 1

    def obtainable(self, fp: bytes, cache: Optional[dict[bytes, bool]] = None) -> bool:
        """Whether a table of fingerprint ``fp`` is live, or can be made again from live
        tables by the reductions its derivation records (every parent obtainable). A
        leaf is obtainable only while live. ``cache`` carries answers between calls
        while no table is added or dropped."""
        cache = {} if cache is None else cache
        stack = [fp]
        while stack:                  # depth first, without recursion: LDP's chains of
            f = stack[-1]             # folds are thousands of tables deep
            if f in cache:
                stack.pop()
                continue
            if self._live.get(f, 0) > 0:
                cache[f] = True
                stack.pop()
                continue
            parents = self.derivation.get(f, ())
            answer: Optional[bool] = bool(parents)
            for p in parents:
                known = cache.get(p)
                if known is None:
                    stack.append(p)   # answer it first, then come back to f
                    answer = None
                    break
                if not known:
                    answer = False
                    break
            if answer is not None:
                cache[f] = answer
                stack.pop()
        return cache[fp]

    def can_recur(self, key: bytes, cache: Optional[dict[bytes, bool]] = None,
                  consumed: tuple[int, ...] = ()) -> bool:
        """Whether a reduction keyed ``key`` (a derived table's fingerprint) can be asked
        for again: all its parents' fingerprints are ``obtainable``. False for a key no
        table was derived under. ``consumed``: live tables to count as gone (the inputs
        of the elimination under way); ``cache`` is then not used."""
        parents = self.derivation.get(key)
        if parents is None:
            return False
        gone = [self.fp[t] for t in consumed if self.tables[t] is not None]
        for fp in gone:
            self._live[fp] -= 1
        try:
            cache = {} if cache is None or gone else cache
            return all(self.obtainable(p, cache) for p in parents)
        finally:
            for fp in gone:
                self._live[fp] += 1

    def unroll(self, tid: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Configurations and edge alternatives of points ``idx`` of table ``tid``.

        Returns:
            ``(cfg, alt)``: int arrays of shape (len(idx), num_nodes) and
            (len(idx), num_edges); -1 where a node or edge is not reached. Both are
            column-major (transposed views of node-major arrays): each node or edge is
            written as one contiguous row, where writing a column of a row-major array
            touched one cache line per point (PaSE's InceptionV3 at 16 devices: 67,660
            points by 3,868 columns took 7.0 s, now 3.6 s).
        """
        n = len(idx)
        # int32: a paper-scale frontier has 10^5 points over thousands of nodes and edges.
        cfg = np.full((self.num_nodes, n), -1, dtype=np.int32)
        alt = np.full((self.num_edges, n), -1, dtype=np.int32)
        stack = [(tid, np.asarray(idx, dtype=np.int64))]
        while stack:
            t, ix = stack.pop()
            rec = self.records[t]
            if rec.kind == "node":
                assert n == 0 or cfg[rec.label, 0] < 0, "node reached twice while unrolling"
                cfg[rec.label] = ix
            elif rec.kind == "edge":
                assert n == 0 or alt[rec.label, 0] < 0, "edge reached twice while unrolling"
                alt[rec.label] = rec.bp[0][ix]
            else:
                for parent, b in zip(rec.parents, rec.bp):
                    stack.append((parent, b[ix]))
        return cfg.T, alt.T
