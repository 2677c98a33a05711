"""Graph eliminations of Frontier-Tracking (Section 3.2, Eqs. 4-7) on a working graph.

``Work`` holds the current graph: a frontier table per node (cells = configurations) and
per edge (cells = ``k * K_dst + p``, edges oriented from lower to higher topological
index), all registered in a ``Store`` for unrolling. The methods perform one elimination
each and count it in the ``Tally``:

* ``edge_elim(u, v)``   -- parallel edges merged by product (Eq. 5);
* ``node_elim(v)``      -- a node with two neighbours replaced by one edge (Eq. 4);
* ``fold(v, u)``        -- a node with one neighbour folded into it (Eq. 6, leaf case,
  and one LDP step);
* ``heuristic_elim(v)`` -- a node fixed to one configuration (Eq. 7), inexact.

Which elimination runs when is decided by ``_structure.reduce_graph``.

Thinning: with ``epsilon`` every reduction may drop a point for a kept one with no more
memory while the keeper's radius stays within ``epsilon`` times the least time of the
part of the graph the new table stands for (``Store.lower``). Those shares add up to T
over the whole graph, so every returned point is within ``epsilon * T`` of the exact
points it stands for. ``max_candidates`` thins a product's inputs instead (``capped``).

Usage::

    w = Work(graph, order, store, tally, Options(threads=2, epsilon=0.01, time_scale_s=T))
    reduce_graph(w, "ldp", "min_memory")           # frontier._structure
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np

from frontier._meet import meet
from frontier._memo import Memo, entry_bytes, fingerprint, table_fingerprint
from frontier._memory import release_kept_memory
from frontier._shared import cell_product_shared, combine_shared
from frontier._store import Store
from frontier._table import IDX, Table, gather, single_point_cells
from frontier._values import Shape, cell_product, reduce_cells, thin
from frontier.graph import CostGraph
from frontier.stats import Tally

__all__ = ["Work", "Options", "Heuristic", "Chain", "FORGET_MIN_BYTES"]

#: Results of at least this many bytes (values and back pointers) are kept by the memo
#: only while a later reduction can ask for them (``Work._forget``); smaller ones are
#: kept as before (checking each would cost more than they hold). None: all as before.
FORGET_MIN_BYTES: Optional[int] = 16 * 2 ** 20

Heuristic = Union[str, tuple]
#: A contracted chain as ``choose_config`` scores it: (end node, least memory, least time).
Chain = tuple[int, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Options:
    """How a run thins and parallelizes (see ``track``)."""

    threads: int = 1
    epsilon: Optional[float] = None
    relative: bool = False           # epsilon bounds each point's error relative to its time
    max_candidates: Optional[int] = None
    time_scale_s: float = 0.0        # T: the least time of any strategy
    progress: Optional[Callable[[int, int], None]] = None
    memo_bytes: Optional[int] = None  # the memo's budget; None: ``_memo.memo_budget()``


class Work:
    """The mutable graph being eliminated. Not thread safe; one per ``track`` call."""

    def __init__(self, graph: CostGraph, order: list[int], store: Store, tally: Tally,
                 options: Options) -> None:
        self.st = store
        self.tally = tally
        self.opt = options
        self.total = graph.num_nodes
        self.topo = {v: i for i, v in enumerate(order)}
        self.K = {v: graph.num_configs(v) for v in order}
        self.ntab: dict[int, int] = {}
        self.edges: dict[int, list[int]] = {}          # work edge id -> [u, v, table id]
        self.adj: dict[int, dict[int, list[int]]] = {v: {} for v in order}
        self.factors: list[int] = []                   # one-cell tables fixed aside
        self.marked: set[int] = set()
        self.tails: list[int] = []
        self.marking = True
        self.touched: set[int] = set(order)          # nodes whose edges changed (_degrees)
        self.memo = Memo(options.memo_bytes)         # results of repeated products
        self._memo_tid: dict[bytes, int] = {}        # memo key -> the record it came from
        store.pinned = self.memo.pointer_ids         # what the collector cannot free
        self._wid = -1
        for v in order:
            c = graph.node_costs(v)
            t = Table(c[:, 0].copy(), c[:, 1].copy(), np.arange(len(c) + 1, dtype=IDX))
            self.ntab[v] = store.leaf_node(v, t)
        reduced: dict[int, tuple] = {}   # edges sharing cost arrays share their tables
        for eid in range(graph.num_edges):
            ec = graph.edge(eid)
            if id(ec.mem) not in reduced:   # the graph keeps ec.mem alive: ids are stable
                ncell = ec.shape[0] * ec.shape[1]
                cell = np.repeat(np.arange(ncell, dtype=IDX), np.diff(ec.off))
                idx, off, _ = reduce_cells(cell, ec.mem, ec.time, ncell)
                t = Table(ec.mem[idx], ec.time[idx], off)
                alt = (idx - ec.off[cell[idx]]).astype(np.int32)
                reduced[id(ec.mem)] = (t, alt, table_fingerprint(t, alt))
            t, alt, fp = reduced[id(ec.mem)]
            tid = store.leaf_edge(eid, t, alt, fp)
            self._add_edge(ec.src, ec.dst, tid)

    # ------------------------------------------------------------ bookkeeping
    @property
    def rel(self) -> float:
        """With ``relative``, a kept point's radius may reach this share of its own time:
        eps / (1 + eps), so that a point t - r >= t / (1 + eps) (see ``track``)."""
        if self.opt.epsilon is None or not self.opt.relative:
            return 0.0
        return self.opt.epsilon / (1.0 + self.opt.epsilon)

    def budget(self, *tids: int) -> float:
        """The thinning budget (seconds) of a table made from ``tids`` (0 with
        ``relative``: then ``rel`` alone bounds the radii)."""
        if self.opt.epsilon is None or self.opt.relative:
            return 0.0
        return self.opt.epsilon * sum(self.st.lower[t] for t in tids)

    def remembered(self, op: str, parents: tuple[int, ...], params: tuple,
                   compute: Callable[[], tuple]) -> int:
        """The table of reduction ``op`` of ``parents``: ``compute()`` gives
        ``(table, back pointers)``, run only when no earlier reduction had the same
        operation, parameters and parents' fingerprints (``_memo``), whose result is
        registered again instead (the same values and pointers, shared)."""
        key = fingerprint(op, params, *(self.st.fp[p] for p in parents))
        hit = self.memo.get(key)
        if hit is not None:
            table, bp, gap = hit
            self.tally.memo_hits += 1
            return self.st.derived(table, parents, bp, key, gap=gap, shared=True)
        start = time.perf_counter()
        table, bp = compute()
        seconds = time.perf_counter() - start
        gap, self.tally.gap_s = self.tally.gap_s, 0.0
        tid = self.st.derived(table, parents, bp, key, gap=gap)
        rec = self.st.records[tid]
        entry = (table, rec.bp, gap)
        size = entry_bytes(entry)
        if FORGET_MIN_BYTES is not None and size >= FORGET_MIN_BYTES:
            # The parents are the elimination's to consume: a result no table left
            # after it can ask for again is not kept (``_forget``).
            if not self.st.can_recur(key, consumed=parents):
                return tid
            if self.memo.bytes + size > self.memo.max_bytes:
                self._forget()                   # room from the dead first
        rec.shared = self.memo.put(key, entry, seconds)
        if rec.shared:
            self._memo_tid[key] = tid
        self._unshare_unused()
        return tid

    def _unshare_unused(self) -> None:
        for old in self.memo.take_unused():      # dropped unreused: pointers its own
            self.st.records[self._memo_tid.pop(old)].shared = False

    def _forget(self) -> None:
        """Forgets the memo's results of ``FORGET_MIN_BYTES`` or more that no reduction
        can ask for again (``Store.can_recur``: no live table has, or can still make,
        the fingerprint of one of their inputs). Runs after every elimination, and
        before a result is put in a full memo. On PaSE's Transformer at 64 devices the
        self-attention results (88M and 46M points), which GreedyDual credit kept to
        the end, go once the last layer that can use them is eliminated. Changes no
        result, only what is remembered."""
        if FORGET_MIN_BYTES is None or not self.memo.bytes:
            return
        cache: dict[bytes, bool] = {}
        self.memo.forget(lambda key: self.st.can_recur(key, cache), FORGET_MIN_BYTES)
        self._unshare_unused()

    def capped(self, tids: tuple[int, ...], estimate: Callable[..., float]) -> tuple[int, ...]:
        """The inputs of one product, thinned when it would be too big.

        ``estimate(*counts)`` gives the candidate points the product would make from the
        inputs' points per cell. When that exceeds ``max_candidates`` (or twice what the
        product makes with one point per cell, if more), every input is thinned
        (``thin``) with the smallest step of the ladder ``T * 2^-16, T * 2^-15, ...``
        that brings the count under it (at most T). Radii record what each kept point
        now stands for, so the bound ``track`` reports stays rigorous. Returns the ids
        to use; untouched inputs keep theirs.
        """
        if self.opt.max_candidates is None or self.opt.time_scale_s <= 0:
            return tids
        tables = [self.st.table(t) for t in tids]
        counts = [t.counts() for t in tables]
        floor = estimate(*(np.minimum(c, 1) for c in counts))
        limit = max(self.opt.max_candidates, 2 * floor)
        if estimate(*counts) <= limit:
            return tids
        delta = self.opt.time_scale_s * 2.0 ** -16
        while True:
            thinned = [thin(t, delta) for t in tables]
            if (estimate(*(t.counts() for t, _, _ in thinned)) <= limit
                    or delta >= self.opt.time_scale_s):
                break
            delta *= 2
        out = []
        for tid, t, (new, idx, gap) in zip(tids, tables, thinned):
            out.append(tid if new.npoints == t.npoints else
                       self.st.derived(new, (tid,), (idx,),
                                       fingerprint("thin", delta, self.st.fp[tid]), gap=gap))
        self.tally.capped_products += 1
        self.tally.cap_delta_max_s = max(self.tally.cap_delta_max_s, delta)
        return tuple(out)

    def _drop_all(self, *tids: int) -> None:
        for tid in set(tids):
            self.st.drop(tid)

    def _add_edge(self, u: int, v: int, tid: int) -> None:
        assert self.topo[u] < self.topo[v]
        self._wid += 1
        self.edges[self._wid] = [u, v, tid]
        self.adj[u].setdefault(v, []).append(self._wid)
        self.adj[v].setdefault(u, []).append(self._wid)
        self.touched.update((u, v))
        self._note(self.st.table(tid))

    def _remove_edge(self, wid: int) -> None:
        u, v, tid = self.edges.pop(wid)
        for a, b in ((u, v), (v, u)):
            lst = self.adj[a][b]
            lst.remove(wid)
            if not lst:
                del self.adj[a][b]
        self.touched.update((u, v))
        self.st.drop(tid)

    def _remove_node(self, v: int) -> None:
        assert not self.adj[v]
        del self.adj[v]
        self.touched.add(v)
        self.st.drop(self.ntab.pop(v))
        self.marked.discard(v)
        if self.opt.progress is not None:
            self.opt.progress(self.total - len(self.adj), self.total)

    def _note(self, t: Table) -> None:
        if t.ncells:
            self.tally.max_cell_points = max(self.tally.max_cell_points, t.max_cell())

    def _step(self, kind: str, nodes: tuple, start: tuple[float, int], out: int) -> None:
        """Records one elimination (``Tally.steps``): ``start`` is the
        ``(perf_counter, candidates)`` taken when it began, ``out`` the points made."""
        self.tally.steps.append((time.perf_counter() - start[0], kind, nodes,
                                 self.tally.candidates - start[1], out))
        self._forget()               # results no later step can ask for (``_memo``)
        release_kept_memory()        # what the step freed, if much (``_memory``)

    def _start(self) -> tuple[float, int]:
        return time.perf_counter(), self.tally.candidates

    def degree(self, v: int) -> int:
        return len(self.adj[v])

    def oriented(self, wid: int, first: int) -> int:
        """Table id of edge ``wid`` with cells ``k_first * K_other + k_other``."""
        u, v, tid = self.edges[wid]
        if u == first:
            return tid
        ku, kv = self.K[u], self.K[v]
        perm = (np.arange(ku)[None, :] * kv + np.arange(kv)[:, None]).reshape(-1)

        def compute():
            t, idx = gather(self.st.table(tid), perm)
            return t, (idx,)
        return self.remembered("transpose", (tid,), (ku, kv), compute)

    def _set_node(self, v: int, tid: int) -> None:
        self.st.drop(self.ntab[v])
        self.ntab[v] = tid
        self._note(self.st.table(tid))

    def product(self, a: int, b: int, bmap: np.ndarray) -> int:
        """Registers ``cell_product`` of tables a and b (cell c times b's ``bmap[c]``)."""
        budget = self.budget(a, b)

        def compute():
            t, ia, ib = cell_product(self.st.table(a), self.st.table(b), bmap, budget=budget,
                                     threads=self.opt.threads, counts=self.tally, rel=self.rel)
            return t, (ia, ib)
        return self.remembered("product", (a, b), (bmap, budget), compute)

    # ------------------------------------------------------------ eliminations
    def edge_elim(self, u: int, v: int) -> None:
        """Eq. (5): all edges between u and v become one (product per cell)."""
        start = self._start()
        if self.topo[u] > self.topo[v]:
            u, v = v, u
        wids = list(self.adj[u][v])
        tids = [self.edges[w][2] for w in wids]
        acc = tids[0]
        for other in tids[1:]:
            x, y = self.capped((acc, other), _product_candidates)
            budget = self.budget(x, y)

            def compute():
                t, ia, ib = cell_product_shared(self.st.table(x), self.st.table(y), self.K[u],
                                                self.K[v], budget=budget,
                                                threads=self.opt.threads, counts=self.tally,
                                                rel=self.rel)
                return t, (ia, ib)
            prev, acc = acc, self.remembered("edge", (x, y), (self.K[u], self.K[v], budget),
                                             compute)
            # Edge tables (tids) are dropped with their edges below.
            self._drop_all(*(i for i in (prev, x, y) if i not in tids))
        for wid in wids:
            self._remove_edge(wid)
        self._add_edge(u, v, acc)
        self.tally.edge_eliminations += 1
        self._step("edge", (u, v), start, self.st.table(acc).npoints)

    def _node_single(self, v: int) -> tuple[int, Optional[Table]]:
        """Node table of v and, if it has one point per cell, the table to fuse."""
        tid = self.ntab[v]
        t = self.st.table(tid)
        return tid, (t if single_point_cells(t) else None)

    def node_elim(self, v: int) -> None:
        """Eq. (4): v with neighbours h, j (one edge each) becomes an edge h-j."""
        start = self._start()
        h, j = sorted(self.adj[v], key=self.topo.__getitem__)
        (ehv,), (evj,) = self.adj[v][h], self.adj[v][j]
        a_id = self.oriented(ehv, h)
        b_id = self.oriented(evj, v)
        kh, kv, kj = self.K[h], self.K[v], self.K[j]
        nv, nv_single = self._node_single(v)
        if nv_single is None:
            a_id = self.product(a_id, nv, np.tile(np.arange(kv), kh))
        a0, b0 = a_id, b_id
        a_id, b_id = self.capped((a_id, b_id), _combine_candidates(kh, kv, kj))
        parents = (a_id, b_id) if nv_single is None else (a_id, b_id, nv)
        budget = self.budget(*parents)

        def compute():
            t, ia, ib, kk = combine_shared(self.st.table(a_id), self.st.table(b_id),
                                           Shape(kh, kv, kj), mid=nv_single,
                                           threads=self.opt.threads, budget=budget,
                                           counts=self.tally, rel=self.rel)
            return t, (ia, ib, kk)[:len(parents)]
        new = self.remembered("node", parents, (kh, kv, kj, budget), compute)
        self._remove_edge(ehv)
        self._remove_edge(evj)
        self._drop_all(a_id, b_id, a0, b0)
        self._remove_node(v)
        self._add_edge(h, j, new)
        self.tally.node_eliminations += 1
        self._step("node", (v, h, j), start, self.st.table(new).npoints)

    def _fold_inputs(self, v: int, u: int) -> tuple:
        """What folding v into u starts from: ``(edge id, K of v, K of u, v's node table,
        the edge's table oriented from v, its table before capping)``, both tables capped
        for a product of v's configurations into u's."""
        (wid,) = self.adj[v][u]
        b0 = self.oriented(wid, v)
        kv, ku = self.K[v], self.K[u]
        nv, b_id = self.capped((self.ntab[v], b0), _combine_candidates(1, kv, ku))
        return wid, kv, ku, nv, b_id, b0

    def fold(self, v: int, u: int) -> None:
        """Folds v (whose only neighbour is u, by one edge) into u's node frontier.

        This is branch elimination (Eq. 6) for a node without other neighbours, and one
        step of LDP (Algorithm 3 line 6) when v is the head of the linear graph.
        """
        start = self._start()
        wid, kv, ku, nv, b_id, b0 = self._fold_inputs(v, u)
        nu, nu_single = self._node_single(u)
        parents = (nv, b_id) if nu_single is None else (nv, b_id, nu)
        budget = self.budget(*parents)

        def compute():
            t, ia, ib, kk = combine_shared(self.st.table(nv), self.st.table(b_id),
                                           Shape(1, kv, ku), post=nu_single,
                                           threads=self.opt.threads, budget=budget,
                                           counts=self.tally, rel=self.rel)
            if nu_single is None:
                return t, (ia, ib)
            return t, (ia, ib, np.repeat(np.arange(ku, dtype=IDX), t.counts()))
        new = self.remembered("fold", parents, (kv, ku, budget), compute)
        if nu_single is None:              # u's own frontier is multiplied in after
            folded, new = new, self.product(new, nu, np.arange(ku))
            self.st.drop(folded)
        self._remove_edge(wid)
        self._drop_all(nv, b_id, b0)
        self._remove_node(v)
        self._set_node(u, new)
        self._step("fold", (v, u), start, self.st.table(new).npoints)

    def meet(self, v: int, u: int) -> int:
        """Folds v (whose only neighbour is u, by one edge) into u as ``fold`` does when
        u's own frontier has several points per configuration, and unites u's
        configurations at once: the table id of the one-cell frontier of v's side,
        u's and the edge between (``_meet``). For the last step of LDP, where a path's
        two folded halves meet; u's node keeps its table (its configurations are
        spent), v is removed."""
        start = self._start()
        wid, kv, ku, nv, b_id, b0 = self._fold_inputs(v, u)
        nu = self.ntab[u]
        budget = self.budget(nv, b_id)

        def compute():
            t, ia, ib, _ = combine_shared(self.st.table(nv), self.st.table(b_id),
                                          Shape(1, kv, ku), threads=self.opt.threads,
                                          budget=budget, counts=self.tally, rel=self.rel)
            return t, (ia, ib)
        folded = self.remembered("fold", (nv, b_id), (kv, ku, budget), compute)
        budget = self.budget(folded, nu)

        def compute_meet():
            t, ia, ib = meet(self.st.table(folded), self.st.table(nu), budget=budget,
                             threads=self.opt.threads, counts=self.tally, rel=self.rel)
            return t, (ia, ib)
        out = self.remembered("meet", (folded, nu), (ku, budget), compute_meet)
        self.st.drop(folded)
        self._remove_edge(wid)
        self._drop_all(nv, b_id, b0)
        self._remove_node(v)
        self._step("fold", (v, u), start, self.st.table(out).npoints)
        return out

    def choose_config(self, v: int, heuristic: Heuristic,
                      chains: Optional[dict[int, Chain]] = None,
                      shared_ends: bool = False) -> int:
        """The configuration heuristic elimination fixes for v.

        Each configuration k is scored by the minimum memory (and the minimum time) of
        v's own frontier at k plus, for every incident edge, the best over the
        neighbour's configurations p of edge(k, p) + neighbour(p). ``"min_memory"``
        ranks by memory then time, ``"min_time"`` by time then memory, and
        ``("weighted", w)`` by ``w * M + (1 - w) * T`` with M and T each rescaled to
        [0, 1] over v's configurations.

        ``chains`` scores v as if chains of series nodes at it were contracted: for the
        neighbour y that starts one, ``(x, mem, time)``: the node x at its other end and
        the least memory and least time of every cell (k, p) of the edge v-x that
        contracting it would make (``_chains.chain_minima``). Such edges are scored
        after v's other edges, in the order of their y, as after the contraction.
        With ``shared_ends`` the edges and chains that end at one neighbour are scored
        as the one edge that merging them (Eq. 5) would make: their cells' least memory
        (time) is the sum of theirs (``_hubs``).
        """
        nt = self.st.table(self.ntab[v])
        first, last = nt.off[:-1], nt.off[1:] - 1
        M = nt.mem[first].copy()          # minimum memory per configuration
        T = nt.time[last].copy()          # minimum time per configuration
        chains = chains or {}
        scored: list[tuple[int, np.ndarray, np.ndarray]] = []
        for j, wids in self.adj[v].items():
            if j in chains:
                continue
            for wid in wids:
                u, w, tid = self.edges[wid]
                et = self.st.table(tid)
                em = et.mem[et.off[:-1]].reshape(self.K[u], self.K[w])
                etm = et.time[et.off[1:] - 1].reshape(self.K[u], self.K[w])
                if u != v:
                    em, etm = em.T, etm.T
                scored.append((j, em, etm))
        scored += [chains[j] for j in self.adj[v] if j in chains]
        if shared_ends:
            scored = _merge_ends(scored)
        for j, em, etm in scored:
            ntj = self.st.table(self.ntab[j])
            jm = ntj.mem[ntj.off[:-1]]
            jt = ntj.time[ntj.off[1:] - 1]
            M += (em + jm[None, :]).min(axis=1)
            T += (etm + jt[None, :]).min(axis=1)
        if heuristic == "min_memory":
            return int(np.lexsort((T, M))[0])
        if heuristic == "min_time":
            return int(np.lexsort((M, T))[0])
        w = float(heuristic[1])
        ms = (M - M.min()) / ((M.max() - M.min()) or 1.0)
        ts = (T - T.min()) / ((T.max() - T.min()) or 1.0)
        return int(np.lexsort((M, T, w * ms + (1 - w) * ts))[0])

    def heuristic_elim(self, v: int, heuristic: Heuristic,
                       chains: Optional[dict[int, Chain]] = None,
                       shared_ends: bool = False) -> None:
        """Eq. (7): fixes v's configuration; its edges' costs move to the neighbours.
        ``chains``, ``shared_ends``: see ``choose_config``."""
        start = self._start()
        nbrs = tuple(self.adj[v])
        k = self.choose_config(v, heuristic, chains, shared_ends)
        self.tally.heuristic_choices.append((v, k))
        nv = self.ntab[v]
        t, idx = gather(self.st.table(nv), np.array([k]))
        self.factors.append(self.st.derived(t, (nv,), (idx,),
                                            fingerprint("pick", k, self.st.fp[nv])))
        for j in list(self.adj[v]):
            kj = self.K[j]
            for wid in list(self.adj[v][j]):
                u, w, tid = self.edges[wid]
                cells = (k * kj + np.arange(kj)) if u == v else (np.arange(kj) * self.K[v] + k)
                row, ridx = gather(self.st.table(tid), cells)
                row_id = self.st.derived(row, (tid,), (ridx,),
                                         fingerprint("row", cells, self.st.fp[tid]))
                nj = self.ntab[j]
                new = self.product(nj, row_id, np.arange(kj))
                self.st.drop(row_id)
                self._remove_edge(wid)
                self._set_node(j, new)
        self._remove_node(v)
        self.tally.heuristic_eliminations += 1
        self._step("heuristic", (v, *nbrs), start, 0)


def _merge_ends(scored: list) -> list:
    """``scored`` (``(end node, least memory, least time)`` per edge or chain) with the
    entries that end at one node summed into one, at the place of its first."""
    merged: dict[int, list] = {}
    for j, em, etm in scored:
        if j in merged:
            merged[j][1] = merged[j][1] + em
            merged[j][2] = merged[j][2] + etm
        else:
            merged[j] = [j, em, etm]
    return [tuple(x) for x in merged.values()]


def _product_candidates(na: np.ndarray, nb: np.ndarray) -> float:
    """Candidate points of a cellwise product, from both tables' points per cell."""
    return float(np.dot(na.astype(float), nb.astype(float)))


def _combine_candidates(W: int, K: int, P: int) -> Callable[[np.ndarray, np.ndarray], float]:
    """Candidate points of ``combine`` (a: W x K cells, b: K x P cells) from both tables'
    points per cell, before any block is filtered out."""
    def estimate(na: np.ndarray, nb: np.ndarray) -> float:
        return float(np.dot(na.reshape(W, K).sum(axis=0).astype(float),
                            nb.reshape(K, P).sum(axis=1).astype(float)))
    return estimate
