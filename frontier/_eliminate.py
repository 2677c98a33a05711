"""Graph eliminations of Frontier-Tracking (Section 3.2, Eqs. 4-7) on a working graph.

``Work`` holds the current graph: a frontier table per node (cells = configurations) and
per edge (cells = ``k * K_dst + p``, edges oriented from lower to higher topological
index), all registered in a ``Store`` for unrolling. The methods perform one elimination
each and count it in ``stats``:

* ``edge_elim(u, v)``   -- parallel edges merged by product (Eq. 5);
* ``node_elim(v)``      -- a node with two neighbours replaced by one edge (Eq. 4);
* ``branch_elim(v)``    -- a node with one neighbour folded into it (Eq. 6, leaf case);
* ``heuristic_elim(v)`` -- a node fixed to one configuration (Eq. 7), inexact.

Usage::

    w = Work(graph, order, store, stats, threads=1, quantum=None, max_candidates=None,
             time_scale=T)
    w.reduce_graph(method="ldp", heuristic=("weighted", 0.5))
    for comp in w.components(): ...
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from frontier._store import Store
from frontier._values import (Table, cell_product, cell_product_shared, gather,
                              combine_shared as combine,
                              reduce_cells, single_point_cells, thin)
from frontier.graph import CostGraph

__all__ = ["Work", "Heuristic"]

Heuristic = Union[str, tuple]


class Work:
    """The mutable graph being eliminated. Not thread safe; one per ``track`` call."""

    def __init__(self, graph: CostGraph, order: list[int], store: Store, stats: dict,
                 threads: int = 1, quantum: Optional[float] = None,
                 progress: Optional[Callable[[int, int], None]] = None,
                 max_candidates: Optional[int] = None, time_scale: float = 0.0) -> None:
        self.st = store
        self.stats = stats
        self.threads = threads
        self.quantum = quantum
        self.max_candidates = max_candidates
        self.time_scale = time_scale      # T of ``track``: the least time of any strategy
        self.progress = progress
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
        self._wid = -1
        for v in order:
            c = graph.node_costs(v)
            t = Table(c[:, 0].copy(), c[:, 1].copy(), np.arange(len(c) + 1, dtype=np.int64))
            self.ntab[v] = store.leaf_node(v, t)
        reduced: dict[int, tuple] = {}   # edges sharing cost arrays share their tables
        for eid in range(graph.num_edges):
            ec = graph.edge(eid)
            if id(ec.mem) not in reduced:   # the graph keeps ec.mem alive: ids are stable
                ncell = ec.shape[0] * ec.shape[1]
                cell = np.repeat(np.arange(ncell, dtype=np.int64), np.diff(ec.off))
                idx, off = reduce_cells(cell, ec.mem, ec.time, ncell)
                reduced[id(ec.mem)] = (Table(ec.mem[idx], ec.time[idx], off),
                                       (idx - ec.off[cell[idx]]).astype(np.int32))
            t, alt = reduced[id(ec.mem)]
            tid = store.leaf_edge(eid, t, alt)
            self._add_edge(ec.src, ec.dst, tid)
        self._note(None)

    # ------------------------------------------------------------ bookkeeping
    def reduced(self, table: Table, parents: tuple[int, ...],
                bp: tuple[np.ndarray, ...]) -> int:
        """Registers a table made by a reduction, which thinned it when ``quantum`` is
        set (adding ``quantum`` to its time error bound)."""
        return self.st.derived(table, parents, bp, error=self.quantum or 0.0)

    def capped(self, tids: tuple[int, ...], estimate: Callable[..., float]) -> tuple[int, ...]:
        """The inputs of one product, thinned when it would be too big.

        ``estimate(*counts)`` gives the candidate points the product would make from the
        inputs' points per cell. When that exceeds ``max_candidates`` (or twice what the
        product makes with one point per cell, if more), every input is thinned
        (``thin``) with the smallest time quantum of the ladder ``T * 2^-16,
        T * 2^-15, ...`` that brings the count under it (at most T). Each thinned input
        is a new table whose time error grows by the most it actually slowed a point
        (less than the quantum), so the bound ``track`` reports stays rigorous. Returns
        the ids to use; untouched inputs keep theirs.
        """
        if self.max_candidates is None or self.time_scale <= 0:
            return tids
        tables = [self.st.table(t) for t in tids]
        counts = [t.counts() for t in tables]
        floor = estimate(*(np.minimum(c, 1) for c in counts))
        limit = max(self.max_candidates, 2 * floor)
        if estimate(*counts) <= limit:
            return tids
        quantum = self.time_scale * 2.0 ** -16
        while True:
            thinned = [thin(t, quantum) for t in tables]
            if (estimate(*(t.counts() for t, _, _ in thinned)) <= limit
                    or quantum >= self.time_scale):
                break
            quantum *= 2
        out = []
        for tid, t, (new, idx, gap) in zip(tids, tables, thinned):
            out.append(tid if new.npoints == t.npoints else
                       self.st.derived(new, (tid,), (idx,), error=gap))
        self._count("capped_products")
        self.stats["cap_quantum_max"] = max(self.stats.get("cap_quantum_max", 0.0), quantum)
        return tuple(out)

    def _drop_all(self, *tids: int) -> None:
        for tid in set(tids):
            self.st.drop(tid)

    def _add_edge(self, u: int, v: int, tid: int) -> None:
        assert self.topo[u] < self.topo[v]
        wid = self._next_id()
        self.edges[wid] = [u, v, tid]
        self.adj[u].setdefault(v, []).append(wid)
        self.adj[v].setdefault(u, []).append(wid)
        self._note(self.st.table(tid))

    def _next_id(self) -> int:
        self._wid += 1
        return self._wid

    def _remove_edge(self, wid: int) -> None:
        u, v, tid = self.edges.pop(wid)
        for a, b in ((u, v), (v, u)):
            lst = self.adj[a][b]
            lst.remove(wid)
            if not lst:
                del self.adj[a][b]
        self.st.drop(tid)

    def _remove_node(self, v: int) -> None:
        assert not self.adj[v]
        del self.adj[v]
        self.st.drop(self.ntab.pop(v))
        self.marked.discard(v)
        if self.progress is not None:
            self.progress(self.total - len(self.adj), self.total)

    def _note(self, t: Optional[Table]) -> None:
        if t is not None and t.ncells:
            self.stats["max_cell_points"] = max(self.stats.get("max_cell_points", 0),
                                                t.max_cell())

    def _count(self, key: str) -> None:
        self.stats[key] = self.stats.get(key, 0) + 1

    def degree(self, v: int) -> int:
        return len(self.adj[v])

    def oriented(self, wid: int, first: int) -> int:
        """Table id of edge ``wid`` with cells ``k_first * K_other + k_other``."""
        u, v, tid = self.edges[wid]
        if u == first:
            return tid
        ku, kv = self.K[u], self.K[v]
        perm = (np.arange(ku)[None, :] * kv + np.arange(kv)[:, None]).reshape(-1)
        t, idx = gather(self.st.table(tid), perm)
        return self.st.derived(t, (tid,), (idx,))

    def _set_node(self, v: int, tid: int) -> None:
        self.st.drop(self.ntab[v])
        self.ntab[v] = tid
        self._note(self.st.table(tid))

    # ------------------------------------------------------------ eliminations
    def edge_elim(self, u: int, v: int) -> None:
        """Eq. (5): all edges between u and v become one (product per cell)."""
        if self.topo[u] > self.topo[v]:
            u, v = v, u
        wids = list(self.adj[u][v])
        tids = [self.edges[w][2] for w in wids]
        acc = tids[0]
        for other in tids[1:]:
            x, y = self.capped((acc, other), _product_candidates)
            t, ia, ib = cell_product_shared(self.st.table(x), self.st.table(y),
                                            self.K[u], self.K[v], self.quantum)
            prev, acc = acc, self.reduced(t, (x, y), (ia, ib))
            # Edge tables (tids) are dropped with their edges below.
            self._drop_all(*(i for i in (prev, x, y) if i not in tids))
        for wid in wids:
            self._remove_edge(wid)
        self._add_edge(u, v, acc)
        self._count("edge_eliminations")

    def _node_single(self, v: int) -> tuple[int, Optional[Table]]:
        """Node table of v and, if it has one point per cell, the table to fuse."""
        tid = self.ntab[v]
        t = self.st.table(tid)
        return tid, (t if single_point_cells(t) else None)

    def node_elim(self, v: int) -> None:
        """Eq. (4): v with neighbours h, j (one edge each) becomes an edge h-j."""
        h, j = sorted(self.adj[v], key=self.topo.__getitem__)
        (ehv,), (evj,) = self.adj[v][h], self.adj[v][j]
        a_id = self.oriented(ehv, h)
        b_id = self.oriented(evj, v)
        kh, kv, kj = self.K[h], self.K[v], self.K[j]
        nv, nv_single = self._node_single(v)
        if nv_single is None:
            bmap = np.tile(np.arange(kv), kh)
            t, ia, ib = cell_product(self.st.table(a_id), self.st.table(nv), bmap, self.quantum)
            a_id = self.reduced(t, (a_id, nv), (ia, ib))
        a0, b0 = a_id, b_id
        a_id, b_id = self.capped((a_id, b_id), _combine_candidates(kh, kv, kj))
        t, ia, ib, kk = combine(self.st.table(a_id), self.st.table(b_id), kh, kv, kj,
                                mid=nv_single, threads=self.threads, quantum=self.quantum,
                                stats=self.stats)
        if nv_single is not None:
            new = self.reduced(t, (a_id, b_id, nv), (ia, ib, kk))
        else:
            new = self.reduced(t, (a_id, b_id), (ia, ib))
        self._remove_edge(ehv)
        self._remove_edge(evj)
        self._drop_all(a_id, b_id, a0, b0)
        self._remove_node(v)
        self._add_edge(h, j, new)
        self._count("node_eliminations")

    def fold(self, v: int, u: int) -> None:
        """Folds v (whose only neighbour is u, by one edge) into u's node frontier.

        This is branch elimination (Eq. 6) for a node without other neighbours, and one
        step of LDP (Algorithm 3 line 6) when v is the head of the linear graph.
        """
        (wid,) = self.adj[v][u]
        b_id = self.oriented(wid, v)
        kv, ku = self.K[v], self.K[u]
        nv0, b0 = self.ntab[v], b_id
        nv, b_id = self.capped((nv0, b_id), _combine_candidates(1, kv, ku))
        nu, nu_single = self._node_single(u)
        t, ia, ib, kk = combine(self.st.table(nv), self.st.table(b_id), 1, kv, ku,
                                post=nu_single, threads=self.threads, quantum=self.quantum,
                                stats=self.stats)
        if nu_single is not None:
            pc = np.repeat(np.arange(ku, dtype=np.int64), t.counts())
            new = self.reduced(t, (nv, b_id, nu), (ia, ib, pc))
        else:
            mid = self.reduced(t, (nv, b_id), (ia, ib))
            t2, ia2, ib2 = cell_product(t, self.st.table(nu), np.arange(ku), self.quantum)
            new = self.reduced(t2, (mid, nu), (ia2, ib2))
            self.st.drop(mid)
        self._remove_edge(wid)
        self._drop_all(nv, b_id, b0)
        self._remove_node(v)
        self._set_node(u, new)

    def choose_config(self, v: int, heuristic: Heuristic) -> int:
        """The configuration heuristic elimination fixes for v.

        Each configuration k is scored by the minimum memory (and the minimum time) of
        v's own frontier at k plus, for every incident edge, the best over the
        neighbour's configurations p of edge(k, p) + neighbour(p). ``"min_memory"``
        ranks by memory then time, ``"min_time"`` by time then memory, and
        ``("weighted", w)`` by ``w * M + (1 - w) * T`` with M and T each rescaled to
        [0, 1] over v's configurations.
        """
        nt = self.st.table(self.ntab[v])
        first, last = nt.off[:-1], nt.off[1:] - 1
        M = nt.mem[first].copy()          # minimum memory per configuration
        T = nt.time[last].copy()          # minimum time per configuration
        for j, wids in self.adj[v].items():
            ntj = self.st.table(self.ntab[j])
            jm = ntj.mem[ntj.off[:-1]]
            jt = ntj.time[ntj.off[1:] - 1]
            for wid in wids:
                u, w, tid = self.edges[wid]
                et = self.st.table(tid)
                em = et.mem[et.off[:-1]].reshape(self.K[u], self.K[w])
                etm = et.time[et.off[1:] - 1].reshape(self.K[u], self.K[w])
                if u != v:
                    em, etm = em.T, etm.T
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

    def heuristic_elim(self, v: int, heuristic: Heuristic) -> None:
        """Eq. (7): fixes v's configuration; its edges' costs move to the neighbours."""
        k = self.choose_config(v, heuristic)
        self.stats.setdefault("heuristic_choices", []).append((v, k))
        nv = self.ntab[v]
        t, idx = gather(self.st.table(nv), np.array([k]))
        self.factors.append(self.st.derived(t, (nv,), (idx,)))
        for j in list(self.adj[v]):
            kj = self.K[j]
            for wid in list(self.adj[v][j]):
                u, w, tid = self.edges[wid]
                cells = (k * kj + np.arange(kj)) if u == v else (np.arange(kj) * self.K[v] + k)
                row, ridx = gather(self.st.table(tid), cells)
                row_id = self.st.derived(row, (tid,), (ridx,))
                nj = self.ntab[j]
                t2, ia, ib = cell_product(self.st.table(nj), row, np.arange(kj), self.quantum)
                new = self.reduced(t2, (nj, row_id), (ia, ib))
                self.st.drop(row_id)
                self._remove_edge(wid)
                self.ntab[j] = new
                self._note(t2)
        self._remove_node(v)
        self._count("heuristic_eliminations")

    # ------------------------------------------------------------ structure
    def components(self) -> list[list[int]]:
        """Connected components of the current graph, each sorted by topological index."""
        seen: set[int] = set()
        comps = []
        for s in sorted(self.adj, key=self.topo.__getitem__):
            if s in seen:
                continue
            comp, stack = [], [s]
            seen.add(s)
            while stack:
                x = stack.pop()
                comp.append(x)
                for y in self.adj[x]:
                    if y not in seen:
                        seen.add(y)
                        stack.append(y)
            comps.append(sorted(comp, key=self.topo.__getitem__))
        return comps

    def is_path(self, comp: list[int]) -> bool:
        nedges = sum(self.degree(v) for v in comp) // 2
        return all(self.degree(v) <= 2 for v in comp) and nedges == len(comp) - 1

    def _extend_marks(self) -> None:
        """Marks the linear backbone: a tail's single downstream neighbour is marked."""
        if not self.marking:
            return
        for i, tail in enumerate(self.tails):
            while tail in self.adj:
                down = [y for y in self.adj[tail] if self.topo[y] > self.topo[tail]]
                if len(down) != 1 or down[0] in self.marked:
                    break
                tail = down[0]
                self.marked.add(tail)
            self.tails[i] = tail

    def _start_backbones(self) -> bool:
        """Marks the first node of every component that has no marked node."""
        new = False
        for comp in self.components():
            if not any(v in self.marked for v in comp):
                self.marked.add(comp[0])
                self.tails.append(comp[0])
                new = True
        return new

    def _is_source(self, v: int) -> bool:
        """No neighbour before v: all its edges are out-going, as in Eq. (7)."""
        return all(self.topo[y] > self.topo[v] for y in self.adj[v])

    def _span(self, v: int) -> int:
        """How far in topological order v's edges reach (a mask used by every layer
        reaches from the first layer to the last)."""
        pos = [self.topo[y] for y in self.adj[v]] + [self.topo[v]]
        return max(pos) - min(pos)

    def _parallel_pair(self) -> Optional[tuple[int, int]]:
        for u, nb in self.adj.items():
            for v, wids in nb.items():
                if len(wids) > 1:
                    return u, v
        return None

    def reduce_graph(self, method: str, heuristic: Heuristic) -> None:
        """Eliminates until every component is a path ("ldp") or has at most two
        nodes ("elimination"). Exact eliminations always go first. Heuristic
        elimination only when none applies, of a node off the backbone with three or
        more neighbours, preferring (in order) a source (all edges out-going, as Eq. 7
        is stated; a mask is one), the widest reach in topological order, the most
        neighbours."""
        ldp = method == "ldp"
        if ldp:
            self._start_backbones()
        while True:
            if ldp:
                self._extend_marks()
            pair = self._parallel_pair()
            if pair is not None:
                self.edge_elim(*pair)
                continue
            order = sorted(self.adj, key=self.topo.__getitem__)
            free = [v for v in order if not (ldp and v in self.marked)]
            v = next((v for v in free if self.degree(v) == 2), None)
            if v is not None:
                self.node_elim(v)
                continue
            v = next((v for v in free if self.degree(v) == 1
                      and (ldp or self.degree(next(iter(self.adj[v]))) >= 2)), None)
            if v is not None:
                self.fold(v, next(iter(self.adj[v])))
                self._count("branch_eliminations")
                continue
            comps = self.components()
            if ldp:
                if all(self.is_path(c) for c in comps):
                    return
                if self.marking and self._start_backbones():
                    continue
            elif all(len(c) <= 2 for c in comps):
                return
            cand = [v for v in free if self.degree(v) >= 3]
            if not cand:
                # Only backbone nodes are left and they do not form a path: give up the
                # backbone and let exact eliminations work on all nodes.
                assert ldp and self.marking
                self.marking = False
                self.marked.clear()
                self.tails.clear()
                self._count("backbone_fallbacks")
                continue
            v = max(cand, key=lambda x: (self._is_source(x), self._span(x), self.degree(x),
                                         -self.topo[x]))
            self.heuristic_elim(v, heuristic)


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
