"""Frontier arithmetic on numpy arrays: reduce, product, union (Algorithm 1).

A *frontier table* holds one Pareto frontier per *cell* (a configuration, or a pair of
configurations), stored flat in CSR form::

    t = Table(mem, time, off)       # cell c owns points off[c]:off[c+1]
    t.mem[off[c]:off[c+1]]          # ascending memory
    t.time[off[c]:off[c+1]]         # strictly descending time

Every operation returns the new table plus back pointers: for each output point, the
flat index of the input point(s) it came from. The caller (``_eliminate``) stores them for
unrolling. Nothing here loops over points in Python.

Usage::

    idx, off = reduce_cells(cell, mem, time, ncells)        # Algorithm 1, per cell
    c, ia, ib = cell_product(a, b, bmap)                    # a[c] (x) b[bmap[c]]
    c, ia, ib, ik = combine(a, b, W, K, P)                  # U_k a[w,k] (x) b[k,p]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["Table", "reduce_cells", "cell_product", "gather", "union_all", "combine",
           "combine_grouped", "row_groups", "transpose", "single_point_cells", "thin"]

_IDX = np.int64


@dataclass
class Table:
    """A frontier per cell, flat. ``off`` has ``ncells + 1`` entries."""

    mem: np.ndarray
    time: np.ndarray
    off: np.ndarray

    @property
    def ncells(self) -> int:
        return len(self.off) - 1

    @property
    def npoints(self) -> int:
        return len(self.mem)

    def counts(self) -> np.ndarray:
        return np.diff(self.off)

    def max_cell(self) -> int:
        return int(self.counts().max()) if self.ncells else 0


def single_point_cells(t: Table) -> bool:
    """True when every cell holds exactly one point (then point index == cell index)."""
    return t.npoints == t.ncells


def _offsets(cells: np.ndarray, ncells: int) -> np.ndarray:
    off = np.zeros(ncells + 1, dtype=_IDX)
    if len(cells):
        np.cumsum(np.bincount(cells, minlength=ncells), out=off[1:])
    return off


def reduce_cells(cell: np.ndarray, mem: np.ndarray, time: np.ndarray, ncells: int,
                 quantum: Optional[float] = None) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 applied to every cell at once.

    Args:
        cell: int array, the cell of each candidate point (any order).
        mem, time: float arrays, the candidate points.
        ncells: number of cells of the output.
        quantum: optional time bucket width (seconds, > 0): within a cell, points whose
            times share a bucket ``floor(time / quantum)`` are thinned to the one with
            the least memory; see ``track`` for the error this allows.

    Returns:
        ``(idx, off)``: indices into the inputs of the kept points, ordered by cell then
        ascending memory; and the CSR offsets of the output table.
    """
    n = len(mem)
    if n == 0:
        return np.empty(0, dtype=_IDX), np.zeros(ncells + 1, dtype=_IDX)
    # Order by (cell, memory); points of equal (cell, memory) come in any order.
    om = np.argsort(mem)
    if ncells == 1:
        order = om
    else:
        key = np.asarray(cell, dtype=_IDX) * (n + 1)
        key[om] += _dense_rank_sorted(mem[om])
        order = np.argsort(key)
    c = np.asarray(cell, dtype=_IDX)[order]
    m = mem[order]
    t = time[order]
    ot = np.argsort(t)
    tr = np.empty(n, dtype=_IDX)
    tr[ot] = _dense_rank_sorted(t[ot])
    # Keys of earlier cells are larger than every key of a later cell, so a running
    # minimum over the whole array restarts at each cell boundary.
    key = (ncells - 1 - c) * (n + 1) + tr
    run = np.minimum.accumulate(key)
    keep = np.empty(n, dtype=bool)
    keep[0] = True
    np.less(key[1:], run[:-1], out=keep[1:])
    # Among kept points of equal (cell, memory) only the last (least time) stays.
    kp = np.flatnonzero(keep)
    if len(kp) > 1:
        tie = (c[kp[1:]] == c[kp[:-1]]) & (m[kp[1:]] == m[kp[:-1]])
        keep[kp[:-1][tie]] = False
    idx = order[keep]
    if quantum:
        idx = _thin_time(idx, cell[idx], time[idx], quantum)
    return idx, _offsets(cell[idx], ncells)


def _dense_rank_sorted(x: np.ndarray) -> np.ndarray:
    """Dense ranks (0, 1, ...) of an already sorted array; equal values share a rank."""
    r = np.zeros(len(x), dtype=_IDX)
    if len(x) > 1:
        np.cumsum(x[1:] != x[:-1], out=r[1:])
    return r


def _thin_time(idx: np.ndarray, c: np.ndarray, t: np.ndarray, quantum: float) -> np.ndarray:
    """Within a cell keep only the lowest-memory point of each time bucket.

    ``idx`` is a reduced frontier ordered by cell then ascending memory (so descending
    time); buckets are ``floor(t / quantum)``. A dropped point q leaves a kept p with
    ``p.mem <= q.mem`` and ``p.time < q.time + quantum``.
    """
    if len(idx) < 2:
        return idx
    b = np.floor(t / quantum)
    same = (c[1:] == c[:-1]) & (b[1:] == b[:-1])
    keep = np.ones(len(idx), dtype=bool)
    keep[1:] = ~same
    return idx[keep]


def thin(t: Table, quantum: float) -> tuple[Table, np.ndarray, float]:
    """``t`` (a reduced table) with each cell thinned to its least-memory point per time
    bucket of width ``quantum``, as ``reduce_cells`` does.

    Returns:
        ``(table, idx, gap)``: the thinned table, the index in ``t`` of each kept point,
        and the largest amount by which a kept point is slower than a point it stands
        for (0.0 when nothing was dropped; always < ``quantum``). Every dropped point q
        leaves a kept p of its cell with ``p.mem <= q.mem`` and ``p.time <= q.time + gap``.
    """
    cell = np.repeat(np.arange(t.ncells, dtype=_IDX), t.counts())
    idx = _thin_time(np.arange(t.npoints, dtype=_IDX), cell, t.time, quantum)
    gap = 0.0
    if len(idx) < t.npoints:
        kept = np.zeros(t.npoints, dtype=_IDX)
        kept[idx] = idx
        cover = np.maximum.accumulate(kept)       # the kept point of each point's bucket
        gap = float(np.max(t.time[cover] - t.time))
    return Table(t.mem[idx], t.time[idx], _offsets(cell[idx], t.ncells)), idx, gap


def _finish(cells, mem, time, ncells, quantum, *cols):
    idx, off = reduce_cells(cells, mem, time, ncells, quantum)
    return (Table(mem[idx], time[idx], off),) + tuple(col[idx] for col in cols)


_CANDIDATE_BUDGET = 1 << 23   # candidate points materialized at once by ``combine``


def _whole_cell_batches(cells: np.ndarray, n: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Ranges [s, e) of blocks (sorted by output cell) with about ``budget`` candidates
    each, cut only between output cells so that each range reduces exactly on its own.
    A cell with more candidates than the budget is a range by itself."""
    if len(n) == 0:
        return []
    first = np.r_[np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]]), len(n)]
    before = np.r_[0, np.cumsum(n)][first]     # candidates before each cell's first block
    out, i = [], 0
    while i < len(first) - 1:
        j = int(np.searchsorted(before, before[i] + budget, side="right")) - 1
        j = max(j, i + 1)
        out.append((int(first[i]), int(first[j])))
        i = j
    return out


def cell_product(a: Table, b: Table, bmap: np.ndarray,
                 quantum: Optional[float] = None) -> tuple[Table, np.ndarray, np.ndarray]:
    """Cellwise product: output cell c = reduce(a[c] (x) b[bmap[c]]).

    Returns:
        ``(table, ia, ib)`` with the flat input indices of each output point.
    """
    C = a.ncells
    na = a.counts()
    nb = b.counts()[bmap]
    if np.all(nb == 1) or np.all(na == 1):
        # Translating a frontier keeps it a frontier: no reduce needed.
        if np.all(nb == 1):
            ia = np.arange(a.npoints, dtype=_IDX)
            cell = np.repeat(np.arange(C, dtype=_IDX), na)
            ib = b.off[bmap[cell]]
        else:
            g, ib = gather(b, bmap)
            cell = np.repeat(np.arange(C, dtype=_IDX), nb)
            ia = a.off[cell]
        mem = a.mem[ia] + b.mem[ib]
        time = a.time[ia] + b.time[ib]
        if not quantum:
            return Table(mem, time, _offsets(cell, C)), ia, ib
        return _finish(cell, mem, time, C, quantum, ia, ib)
    n = na * nb
    parts = [_cell_products(a, b, bmap, c0, c1, n, nb, quantum)
             for c0, c1 in _whole_cell_batches(np.arange(C), n, _CANDIDATE_BUDGET)]
    cell, mem, time, ia, ib = (np.concatenate([p[i] for p in parts]) for i in range(5))
    return Table(mem, time, _offsets(cell, C)), ia, ib


def _pairs(a_first: np.ndarray, b_first: np.ndarray, n: np.ndarray, nb: np.ndarray):
    """Every pair of points of a list of blocks: block i pairs ``n[i] / nb[i]`` points of
    ``a`` from flat index ``a_first[i]`` with ``nb[i]`` points of ``b`` from
    ``b_first[i]``. Returns the block of each pair and its flat indices into a and b."""
    blk = np.repeat(np.arange(len(n), dtype=_IDX), n)
    starts = np.zeros(len(n), dtype=_IDX)
    np.cumsum(n[:-1], out=starts[1:])
    local = np.arange(len(blk), dtype=_IDX) - starts[blk]
    nbb = nb[blk]
    return blk, a_first[blk] + local // nbb, b_first[blk] + local % nbb


def _cell_products(a: Table, b: Table, bmap: np.ndarray, c0: int, c1: int, n: np.ndarray,
                   nb: np.ndarray, quantum: Optional[float]):
    """``cell_product``'s kept points for cells [c0, c1): (cell, mem, time, ia, ib)."""
    blk, ia, ib = _pairs(a.off[c0:c1], b.off[bmap[c0:c1]], n[c0:c1], nb[c0:c1])
    cell = blk + c0
    mem, time = a.mem[ia] + b.mem[ib], a.time[ia] + b.time[ib]
    idx, _ = reduce_cells(cell - c0, mem, time, c1 - c0, quantum)
    return cell[idx], mem[idx], time[idx], ia[idx], ib[idx]


def gather(a: Table, cells: np.ndarray) -> tuple[Table, np.ndarray]:
    """A new table whose cell i is a copy of ``a``'s cell ``cells[i]``."""
    cnt = a.counts()[cells]
    off = np.zeros(len(cells) + 1, dtype=_IDX)
    np.cumsum(cnt, out=off[1:])
    ncell = np.repeat(np.arange(len(cells), dtype=_IDX), cnt)
    idx = a.off[cells][ncell] + (np.arange(off[-1], dtype=_IDX) - off[:-1][ncell])
    return Table(a.mem[idx], a.time[idx], off), idx


def union_all(a: Table, quantum: Optional[float] = None) -> tuple[Table, np.ndarray]:
    """Union of all cells, reduced, as a one-cell table."""
    zero = np.zeros(a.npoints, dtype=_IDX)
    idx, off = reduce_cells(zero, a.mem, a.time, 1, quantum)
    return Table(a.mem[idx], a.time[idx], off), idx


def _cell_stats(t: Table, shape: tuple[int, int]):
    first = t.off[:-1]
    last = t.off[1:] - 1
    return (t.mem[first].reshape(shape), t.time[first].reshape(shape),
            t.mem[last].reshape(shape), t.time[last].reshape(shape))


def _products(a, b, P, mid, quantum, refs, cl, wi, pi, ki, ca, cb, n):
    """The candidate points of blocks (w, k, p), filtered against the references (indexed
    by ``cl``, the block's output cell within the chunk) and reduced per output cell
    (w, p); returns (cells, mem, time, ia, ib, k)."""
    blk, ia, ib = _pairs(a.off[ca], b.off[cb], n, b.off[cb + 1] - b.off[cb])
    kk = ki[blk]
    # Same association as the corners and references: (a + mid) + b, bit for bit.
    if mid is not None:
        mem = (a.mem[ia] + mid.mem[kk]) + b.mem[ib]
        time = (a.time[ia] + mid.time[kk]) + b.time[ib]
    else:
        mem = a.mem[ia] + b.mem[ib]
        time = a.time[ia] + b.time[ib]
    # Point-level filter against the references (strict dominance only).
    cl = cl[blk]
    drop = np.zeros(len(blk), dtype=bool)
    for rm, rt, _ in refs:
        rmf = rm.reshape(-1)[cl]
        rtf = rt.reshape(-1)[cl]
        drop |= (rmf <= mem) & (rtf <= time) & ((rmf < mem) | (rtf < time))
    keep = ~drop
    ia, ib, kk, mem, time = ia[keep], ib[keep], kk[keep], mem[keep], time[keep]
    cells = wi[blk][keep] * P + pi[blk][keep]
    idx, _ = reduce_cells(cells, mem, time, int(cells.max()) + 1 if len(cells) else 1, quantum)
    return cells[idx], mem[idx], time[idx], ia[idx], ib[idx], kk[idx]


def _dominated_by_extremes(Lm: np.ndarray, Lt: np.ndarray, U1t: np.ndarray,
                           U2m: np.ndarray) -> np.ndarray:
    """Blocks (w, p, k) whose ideal corner (Lm, Lt) is strictly dominated by an actual
    point of some block of the same output cell: its least-memory point (Lm, U1t) or its
    least-time point (U2m, Lt). Every point of such a block is then strictly dominated,
    so dropping the block keeps the result exact."""
    R, Q, K = Lm.shape
    C = R * Q
    cell = np.repeat(np.arange(C, dtype=_IDX), 2 * K)
    pm = np.concatenate([Lm.reshape(C, K), U2m.reshape(C, K)], axis=1).reshape(-1)
    pt = np.concatenate([U1t.reshape(C, K), Lt.reshape(C, K)], axis=1).reshape(-1)
    idx, _ = reduce_cells(cell, pm, pt, C)       # per cell: memory up, time down
    sm, st, sc = pm[idx], pt[idx], cell[idx]
    qm, qt = Lm.reshape(-1), Lt.reshape(-1)
    qc = np.repeat(np.arange(C, dtype=_IDX), K)
    # One searchsorted for all cells: integer keys (cell, rank of memory).
    _, rank = np.unique(np.concatenate([sm, qm]), return_inverse=True)
    nr = int(rank.max()) + 1
    ks = sc * nr + rank[:len(sm)]
    j = np.searchsorted(ks, qc * nr + rank[len(sm):], side="right") - 1
    jj = np.maximum(j, 0)
    hit = (j >= 0) & (sc[jj] == qc)              # the cell's last point with m <= Lm
    dom = hit & ((st[jj] < qt) | ((st[jj] == qt) & (sm[jj] < qm)))
    return dom.reshape(Lm.shape)


def combine(a: Table, b: Table, W: int, K: int, P: int, *, mid: Optional[Table] = None,
            post: Optional[Table] = None, threads: int = 1, quantum: Optional[float] = None,
            stats: Optional[dict] = None):
    """Cell (w, p) of the result = reduce(U_k a[w,k] (x) mid[k] (x) b[k,p]) (x) post[p].

    ``a`` has cells ``w*K + k``, ``b`` cells ``k*P + p``; ``mid`` (K cells) and ``post``
    (P cells) must hold one point per cell. This is the kernel of node elimination
    (Eq. 4), branch elimination (Eq. 6 with a leaf) and one LDP step (Algorithm 3).

    Whole blocks (w, k, p) are skipped when their ideal corner (min memory, min time of
    the block) is dominated by a point that some block actually attains; equal points
    are broken towards the lower k, so the result stays exact.

    Returns:
        ``(table, ia, ib, k)``: the result with cells ``w*P + p`` and, per point, the flat
        index into ``a`` and ``b`` and the configuration k (index into ``mid``).
    """
    assert a.ncells == W * K and b.ncells == K * P
    am0, at0, am1, at1 = _cell_stats(a, (W, K))
    bm0, bt0, bm1, bt1 = _cell_stats(b, (K, P))
    if mid is not None:
        assert single_point_cells(mid) and mid.ncells == K
        am0, am1 = am0 + mid.mem, am1 + mid.mem
        at0, at1 = at0 + mid.time, at1 + mid.time
    # Layout (w, p, k): nonzero() then yields candidates grouped by output cell.
    bm0, bt0, bm1, bt1 = bm0.T.copy(), bt0.T.copy(), bm1.T.copy(), bt1.T.copy()
    budget = 1 << 21
    if W > 1:
        step = max(1, budget // max(1, K * P))
        chunks = [(w, min(W, w + step), 0, P) for w in range(0, W, step)]
    else:
        step = max(1, budget // max(1, K))
        if threads > 1:
            step = min(step, max(1, -(-P // (2 * threads))))
        chunks = [(0, 1, p, min(P, p + step)) for p in range(0, P, step)]

    def blocks(alive, w0, p0, p1):
        """The live blocks (w, k, p), ordered by output cell, and their candidate counts."""
        wi, pi, ki = np.nonzero(alive)
        cl_blocks = wi * (p1 - p0) + pi          # output cell of each block, ascending
        wi = wi + w0
        pi = pi + p0
        ca = wi * K + ki
        cb = ki * P + pi
        n = (a.off[ca + 1] - a.off[ca]) * (b.off[cb + 1] - b.off[cb])
        return cl_blocks, wi, pi, ki, ca, cb, n

    def work(ch):
        w0, w1, p0, p1 = ch
        Lm = am0[w0:w1, None, :] + bm0[None, p0:p1, :]
        Lt = at1[w0:w1, None, :] + bt1[None, p0:p1, :]
        U1t = at0[w0:w1, None, :] + bt0[None, p0:p1, :]   # actual point (Lm, U1t)
        U2m = am1[w0:w1, None, :] + bm1[None, p0:p1, :]   # actual point (U2m, Lt)
        refs = []
        k1 = Lm.argmin(axis=2)[..., None]
        r1m = np.take_along_axis(Lm, k1, 2)
        r1t = np.take_along_axis(U1t, k1, 2)
        k2 = Lt.argmin(axis=2)[..., None]
        r2m = np.take_along_axis(U2m, k2, 2)
        r2t = np.take_along_axis(Lt, k2, 2)
        refs.append((r1m, r1t, k1))
        refs.append((r2m, r2t, k2))
        dm = r2m - r1m
        dt = r1t - r2t
        dm[dm <= 0] = 1.0
        dt[dt <= 0] = 1.0
        for lam in (0.5,):
            wm = lam / dm
            wt = (1 - lam) / dt
            for xm, xt in ((Lm, U1t), (U2m, Lt)):
                s = xm * wm + xt * wt
                kk = s.argmin(axis=2)[..., None]
                refs.append((np.take_along_axis(xm, kk, 2), np.take_along_axis(xt, kk, 2),
                             kk))
        karange = np.arange(K)
        alive = np.ones(Lm.shape, dtype=bool)
        for rm, rt, rk in refs:
            dom = (rm <= Lm) & (rt <= Lt)
            dom &= ~((rm == Lm) & (rt == Lt) & (rk >= karange))
            alive &= ~dom
        cl_blocks, wi, pi, ki, ca, cb, n = blocks(alive, w0, p0, p1)
        if n.sum() > _CANDIDATE_BUDGET:   # a big product: a finer block filter pays off
            alive &= ~_dominated_by_extremes(Lm, Lt, U1t, U2m)
            cl_blocks, wi, pi, ki, ca, cb, n = blocks(alive, w0, p0, p1)
        pieces = [_products(a, b, P, mid, quantum, refs, cl_blocks[s:e],
                            wi[s:e], pi[s:e], ki[s:e], ca[s:e], cb[s:e], n[s:e])
                  for s, e in _whole_cell_batches(cl_blocks, n, _CANDIDATE_BUDGET)]
        return tuple(np.concatenate([pc[i] for pc in pieces]) if pieces else
                     np.empty(0, dtype=float if i in (1, 2) else _IDX) for i in range(6)) + (
            int(alive.sum()), int(n.sum()))

    if threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=threads) as ex:
            parts = list(ex.map(work, chunks))
    else:
        parts = [work(ch) for ch in chunks]
    cells = np.concatenate([p[0] for p in parts])
    mem = np.concatenate([p[1] for p in parts])
    time = np.concatenate([p[2] for p in parts])
    ia = np.concatenate([p[3] for p in parts])
    ib = np.concatenate([p[4] for p in parts])
    kk = np.concatenate([p[5] for p in parts]).astype(_IDX)
    if len(cells) > 1 and np.any(cells[1:] < cells[:-1]):
        o = np.argsort(cells, kind="stable")
        cells, mem, time, ia, ib, kk = cells[o], mem[o], time[o], ia[o], ib[o], kk[o]
    if post is not None:
        assert single_point_cells(post) and post.ncells == P
        pc = cells % P
        mem = mem + post.mem[pc]
        time = time + post.time[pc]
    if stats is not None:
        stats["blocks_total"] = stats.get("blocks_total", 0) + W * K * P
        stats["blocks_kept"] = stats.get("blocks_kept", 0) + sum(p[6] for p in parts)
        stats["candidates"] = stats.get("candidates", 0) + sum(p[7] for p in parts)
    return Table(mem, time, _offsets(cells, W * P)), ia, ib, kk


def row_groups(t: Table, R: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Groups the rows of a table with R x C cells (cell ``r*C + c``) whose frontiers are
    identical in every column.

    Returns:
        ``(gid, reps)``: the group of each row, and one representative row per group.
    """
    seen: dict[bytes, int] = {}
    gid = np.empty(R, dtype=_IDX)
    reps = []
    for r in range(R):
        o = t.off[r * C:(r + 1) * C + 1]
        s, e = o[0], o[-1]
        key = (o - s).tobytes() + t.mem[s:e].tobytes() + t.time[s:e].tobytes()
        g = seen.setdefault(key, len(seen))
        if g == len(reps):
            reps.append(r)
        gid[r] = g
    return gid, np.asarray(reps, dtype=_IDX)


def transpose(t: Table, R: int, C: int) -> tuple[Table, np.ndarray]:
    """The table with cell ``c*R + r`` = cell ``r*C + c`` of ``t``."""
    perm = (np.arange(R)[None, :] * C + np.arange(C)[:, None]).reshape(-1)
    return gather(t, perm)


def combine_grouped(a: Table, b: Table, W: int, K: int, P: int, *,
                    mid: Optional[Table] = None, post: Optional[Table] = None,
                    threads: int = 1, quantum: Optional[float] = None,
                    stats: Optional[dict] = None):
    """``combine`` with equal configurations shared.

    Configurations k whose rows of ``b`` are identical are merged first: the union over
    them of ``a[w,k] (x) mid[k]`` is reduced once per group (exact, since union
    distributes over product). Configurations p whose columns of ``b`` are identical
    share one result, translated by ``post[p]``. Same output and back pointers as
    ``combine``; falls back to it when no configurations are equal.
    """
    rg, rrep = row_groups(b, K, P)
    bt, _ = transpose(b, K, P)
    cg, crep = row_groups(bt, P, K)
    G, H = len(rrep), len(crep)
    if stats is not None:
        stats["row_groups"] = stats.get("row_groups", 0) + G
        stats["col_groups"] = stats.get("col_groups", 0) + H
        stats["rows"] = stats.get("rows", 0) + K
        stats["cols"] = stats.get("cols", 0) + P
    if G * H * 4 > K * P * 3:
        return combine(a, b, W, K, P, mid=mid, post=post, threads=threads, quantum=quantum,
                       stats=stats)
    cell_a = np.repeat(np.arange(W * K, dtype=_IDX), a.counts())
    ka = cell_a % K
    if mid is not None:
        mem, time = a.mem + mid.mem[ka], a.time + mid.time[ka]
    else:
        mem, time = a.mem, a.time
    idx, off = reduce_cells((cell_a // K) * G + rg[ka], mem, time, W * G)
    a2 = Table(mem[idx], time[idx], off)
    b2, b2src = gather(b, (rrep[:, None] * P + crep[None, :]).reshape(-1))
    c2, ia2, ib2, _ = combine(a2, b2, W, G, H, threads=threads, quantum=quantum, stats=stats)
    c, cidx = gather(c2, (np.arange(W)[:, None] * H + cg[None, :]).reshape(-1))
    ia = idx[ia2[cidx]]
    kk = ka[ia]
    src = b2src[ib2[cidx]]                       # point in a representative cell of b
    local = src - b.off[np.searchsorted(b.off, src, side="right") - 1]
    pc = np.repeat(np.arange(W * P, dtype=_IDX), c.counts()) % P
    ib = b.off[kk * P + pc] + local
    if post is not None:
        assert single_point_cells(post) and post.ncells == P
        c = Table(c.mem + post.mem[pc], c.time + post.time[pc], c.off)
    return c, ia, ib, kk


def combine_shared(a: Table, b: Table, W: int, K: int, P: int, *,
                   mid: Optional[Table] = None, post: Optional[Table] = None,
                   threads: int = 1, quantum: Optional[float] = None,
                   stats: Optional[dict] = None):
    """``combine_grouped`` computed once per group of identical rows w of ``a``.

    Rows w, w' of ``a`` with identical frontiers give identical result rows, so only
    one representative per group is computed and then copied; back pointers are moved
    to each row's own cells (same position within an identical frontier).
    """
    wg, wrep = row_groups(a, W, K) if W > 1 else (np.zeros(1, _IDX), np.zeros(1, _IDX))
    if len(wrep) == W:
        return combine_grouped(a, b, W, K, P, mid=mid, post=post, threads=threads,
                               quantum=quantum, stats=stats)
    if stats is not None:
        stats["w_groups"] = stats.get("w_groups", 0) + len(wrep)
        stats["ws"] = stats.get("ws", 0) + W
    ar, ar_src = gather(a, (wrep[:, None] * K + np.arange(K)[None, :]).reshape(-1))
    c, ia, ib, kk = combine_grouped(ar, b, len(wrep), K, P, mid=mid, post=post,
                                    threads=threads, quantum=quantum, stats=stats)
    cf, cidx = gather(c, (wg[:, None] * P + np.arange(P)[None, :]).reshape(-1))
    kk = kk[cidx]
    ib = ib[cidx]
    src = ar_src[ia[cidx]]                       # point of a in the representative row
    w = np.repeat(np.arange(W * P, dtype=_IDX), cf.counts()) // P
    local = src - a.off[wrep[wg[w]] * K + kk]
    return cf, a.off[w * K + kk] + local, ib, kk


def _joint_groups(x: Table, y: Table, R: int, C: int):
    gx, _ = row_groups(x, R, C)
    gy, _ = row_groups(y, R, C)
    _, first, gid = np.unique(gx * (R + 1) + gy, return_index=True, return_inverse=True)
    return gid.reshape(-1).astype(_IDX), first.astype(_IDX)


def cell_product_shared(a: Table, b: Table, R: int, C: int,
                        quantum: Optional[float] = None):
    """``cell_product(a, b, identity)`` for two R x C tables, computed once per group of
    rows identical in both and columns identical in both, then copied (Eq. 5)."""
    rg, rrep = _joint_groups(a, b, R, C)
    at, _ = transpose(a, R, C)
    bt, _ = transpose(b, R, C)
    cg, crep = _joint_groups(at, bt, C, R)
    if len(rrep) * len(crep) * 4 > R * C * 3:
        return cell_product(a, b, np.arange(R * C), quantum)
    cells = (rrep[:, None] * C + crep[None, :]).reshape(-1)
    asub, asrc = gather(a, cells)
    bsub, bsrc = gather(b, cells)
    csub, ia, ib = cell_product(asub, bsub, np.arange(len(cells)), quantum)
    H = len(crep)
    c, cidx = gather(csub, (rg[:, None] * H + cg[None, :]).reshape(-1))
    out_cell = np.repeat(np.arange(R * C, dtype=_IDX), c.counts())
    rep_cell = cells[rg[out_cell // C] * H + cg[out_cell % C]]
    ia_full = a.off[out_cell] + (asrc[ia[cidx]] - a.off[rep_cell])
    ib_full = b.off[out_cell] + (bsrc[ib[cidx]] - b.off[rep_cell])
    return c, ia_full, ib_full
