"""Frontier arithmetic on tables (Algorithm 1 and the paper's product and union).

Every operation returns the new table plus back pointers: for each output point, the
flat index of the input point(s) it came from. The caller (``_eliminate``) stores them
for unrolling. The loops are the compiled kernels of ``_kernels``; this module prepares
their arguments, splits cells over threads and assembles the results.

``budget`` (seconds, default 0) lets a reduction drop a faster point when the kept
point with no more memory can stand for it with a radius of at most ``budget``; with 0
only dominated points go. Radii (see ``_table``) are tracked whenever an input has them
or the budget is positive.

Usage::

    idx, off, rad = reduce_cells(cell, mem, time, ncells)   # Algorithm 1, per cell
    t, ia, ib = cell_product(a, b, bmap)                    # a[c] (x) b[bmap[c]]
    t, ia, ib, k = combine(a, b, Shape(W, K, P))            # U_k a[w,k] (x) b[k,p]
    t, idx = union_all(a)                                   # all cells, reduced
    t, idx, gap = thin(t, delta)                            # coarser frontiers
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from frontier import _kernels as K_
from frontier._copies import add_pairs, kernel_rows, shift_pointers
from frontier._scans import reduce_sorted, sort_runs, thin_cells
from frontier._table import (IDX, Table, cell_ids, gather, offsets, radius_max,
                             single_point_cells)

__all__ = ["Shape", "MergeCounts", "reduce_cells", "cell_product", "translated", "union_all",
           "union_groups", "thin", "combine"]

_EMPTY = np.empty(0)
_EMPTY_IDX = np.empty(0, dtype=IDX)
_THREAD_MIN_WORK = 20_000        # estimated candidates below which one thread is used
# Kernel paths, by size (tests lower them to force the general heap merge everywhere):
SMALL_CELL_CANDIDATES = 256      # cells with at most this many candidates are sorted
SINGLE_CELL_POINTS = 16          # one-point merges solved by repeated minima up to this
HEAP_BUCKETS = 4                 # memory buckets per heap entry in front of the heap (0: none)
COMBINE_BLOCK_POINTS = 1 << 22   # b's points per block of output columns in ``combine``
# Streams' tails retired by a memory grid over a's cells (``_kernels._stream_caps``): in
# a COMBINE whose a cells hold at least GRID_MIN_POINTS points on average, each used by
# at least GRID_MIN_USES output cells, with b's cells at most GRID_MAX_SHORT points.
GRID_MIN_POINTS = 64
GRID_MIN_USES = 8
GRID_MAX_SHORT = 32
GRID_MAX = 4096                  # grid points at most (about one per point of a's cells)
GRID_MAX_ENTRIES = 1 << 22       # cells x grid points at most (two float tables: 64 MiB)
_NO_GRID = (np.full((0, 0), np.inf), np.full((0, 0), np.inf), np.zeros(3))


@dataclass(frozen=True)
class Shape:
    """Cells of ``combine``: a has W x K cells (``w*K + k``), b has K x P (``k*P + p``)."""

    W: int
    K: int
    P: int


@dataclass
class MergeCounts:
    """What the kernels did, summed over a run (``track`` reports it).

    ``gap_s`` is the largest amount by which a kept point is slower than a faster point
    it was given (a thinning drop) since the caller last reset it.
    """

    candidates: int = 0          # candidate points examined one by one
    blocks: int = 0              # products of two cells merged (not left out whole)
    rows: int = 0                # configurations seen by the grouping of ``_shared``
    row_groups: int = 0          # ... and how many distinct ones they had
    cols: int = 0
    col_groups: int = 0
    gap_s: float = 0.0


@dataclass(frozen=True)
class _Merge:
    mode: int
    K: int
    P: int
    ncells: int
    bmap: np.ndarray = field(default_factory=lambda: _EMPTY_IDX)
    work: Optional[np.ndarray] = None   # estimated candidates per output cell


def _f64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _summary(t: Table) -> np.ndarray:
    """Rows over the cells: first point's memory, time, radius; last point's; the
    largest radius. Memory is inf for an empty cell."""
    first, last = t.off[:-1], t.off[1:] - 1
    empty = first > last
    first, last = np.where(empty, 0, first), np.where(empty, 0, last)
    rad = t.radii() if t.npoints else np.zeros(1)
    if t.npoints == 0:
        return np.full((7, t.ncells), np.inf)
    big = np.zeros(t.ncells) if t.radius is None else np.maximum.reduceat(
        np.r_[rad, 0.0], np.minimum(t.off[:-1], t.npoints))
    out = np.stack([t.mem[first], t.time[first], rad[first], t.mem[last], t.time[last],
                    rad[last], np.where(empty, 0.0, big)])
    out[0, empty] = np.inf
    return out


def _kernel_table(t: Table, exact: bool) -> tuple:
    """``(vals, off, summary)`` as ``_kernels`` takes a table: a row per point of
    memory, time, radius and the suffix maximum of radius - time (zeros when exact)."""
    off = np.ascontiguousarray(t.off, dtype=IDX)
    assert off[0] == 0 and off[-1] == t.npoints, "a table's cells must cover its points"
    vals = np.empty((t.npoints, 4))
    kernel_rows(_f64(t.mem), _f64(t.time), _EMPTY if t.radius is None else _f64(t.radius),
                off, exact, vals)
    return vals, off, _summary(t)


def _mid_rows(mid: Optional[Table]) -> np.ndarray:
    """The rows memory, time, radius of a one-point-per-cell table (none: no columns)."""
    if mid is None:
        return np.zeros((3, 0))
    return np.ascontiguousarray(np.stack([mid.mem, mid.time, mid.radii()]), dtype=np.float64)


def _chunks(spec: _Merge, threads: int) -> list[tuple[int, int]]:
    """Cell ranges of about equal estimated work, a few per thread."""
    n = spec.ncells
    if threads <= 1 or n < 2 or spec.work is None or spec.work.sum() < _THREAD_MIN_WORK:
        return [(0, n)]
    cum = np.cumsum(spec.work, dtype=np.float64)
    parts = min(n, 4 * threads)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="right")
    bounds = np.unique(np.r_[0, cuts, n])
    return [(int(s), int(e)) for s, e in zip(bounds[:-1], bounds[1:]) if e > s]


_POOLS: dict[int, ThreadPoolExecutor] = {}   # kept: starting threads per merge cost more
# A forked child (``_forked``) has none of the pools' threads: it starts its own.
os.register_at_fork(after_in_child=_POOLS.clear)


def _pool(threads: int) -> ThreadPoolExecutor:
    """The worker threads of merges split over ``threads`` (started once, then reused)."""
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(max_workers=threads,
                                             thread_name_prefix="frontier-merge")
    return _POOLS[threads]


def _grid(spec: _Merge, a: Table, b: Table, ka: tuple, exact: bool, a_grid: Optional[dict] = None) -> tuple:
    """``merge_range``'s grid over a's cells (``_kernels.grid_table``), or none: only
    for a COMBINE with long cells of a, each used by several output cells, and short
    cells of b (the streams then walk a, and their tails can be retired). Not with a
    relative budget (``_run`` passes none): radii then grow with time, and the cut
    takes a cell's largest radius for every interval, so it cut little and cost more
    than it saved (``hard:chain:100:256``, ``--relative``: 4.6 s -> 6.8 s CPU).
    ``a_grid``: a dict kept by the caller across runs over the same ``a`` (``combine``'s
    column blocks), which holds the grid once made: it depends on a alone."""
    if spec.mode != K_.COMBINE or a.npoints == 0 or b.npoints == 0:
        return _NO_GRID
    per_a = a.npoints / a.ncells
    if (per_a < GRID_MIN_POINTS or spec.P < GRID_MIN_USES
            or b.npoints > GRID_MAX_SHORT * b.ncells):
        return _NO_GRID
    if a_grid is None:
        return _a_grid(a, ka, exact, per_a)
    if "grid" not in a_grid:
        a_grid["grid"] = _a_grid(a, ka, exact, per_a)
    return a_grid["grid"]


def _a_grid(a: Table, ka: tuple, exact: bool, per_a: float) -> tuple:
    """The grid of ``_grid`` over a's cells (``_NO_GRID`` where there is none to make)."""
    vals, off = ka[0], ka[1]
    lo, hi = float(vals[:, 0].min()), float(vals[:, 0].max())
    G = int(min(GRID_MAX, per_a))
    if not (hi > lo and np.isfinite(hi - lo)) or a.ncells * (G + 2) > GRID_MAX_ENTRIES:
        return _NO_GRID
    delta = (hi - lo) / G
    tt, tu = K_.grid_table(vals, off, lo, delta, G, exact)
    return tt, tu, np.array([lo, delta, float(G)])


def _exact(a: Table, b: Table, mid: Optional[Table], budget: float, rel: float) -> bool:
    """No radii anywhere and nothing to thin: the kernels' exact path."""
    return budget <= 0 and rel <= 0 and a.radius is None and b.radius is None and (
        mid is None or mid.radius is None)


def _run(spec: _Merge, a: Table, b: Table, mid: Optional[Table], *, budget: float,
         threads: int, counts: Optional[MergeCounts], rel: float = 0.0,
         a_rows: Optional[tuple] = None, single: Optional[bool] = None,
         a_grid: Optional[dict] = None):
    """Runs ``merge_range`` over all output cells; returns (Table, ia, ib, k).

    ``a_rows``: a's ``_kernel_table``, when the caller made it once for several runs;
    ``a_grid``: a dict that keeps a's grid (``_grid``) across those runs;
    ``single``: whether every cell of a, b and mid holds one point, when b is one block
    of a larger table (``combine``'s column blocks) and the answer is the whole one's."""
    exact = _exact(a, b, mid, budget, rel)
    T = (_kernel_table(a, exact) if a_rows is None else a_rows, _kernel_table(b, exact),
         _mid_rows(mid))
    bmap = np.ascontiguousarray(spec.bmap, dtype=IDX)

    if single is None:
        single = (a.npoints == a.ncells and b.npoints == b.ncells
                  and not (mid is not None and mid.npoints != mid.ncells))
    single = int(single)
    grid = _NO_GRID if rel > 0 else _grid(spec, a, b, T[0], exact, a_grid)

    def one(rng: tuple[int, int]):
        layout = np.array([spec.mode, spec.K, spec.P, rng[0], rng[1], single,
                           SMALL_CELL_CANDIDATES, SINGLE_CELL_POINTS, a.radius is not None,
                           b.radius is not None, HEAP_BUCKETS], dtype=IDX)
        return K_.merge_range(layout, bmap, T, float(max(budget, 0.0)), float(rel), exact,
                              grid)

    ranges = _chunks(spec, threads)
    if len(ranges) > 1:
        parts = list(_pool(threads).map(one, ranges))
    else:
        parts = [one(ranges[0])]
    off = np.zeros(spec.ncells + 1, dtype=IDX)
    base = 0
    for (s, e), p in zip(ranges, parts):
        off[s + 1:e + 1] = p[2][1:] + base
        base += p[2][-1]
    if counts is not None:
        counts.candidates += sum(int(p[3][0]) for p in parts)
        counts.blocks += sum(int(p[3][1]) for p in parts)
        counts.gap_s = max([counts.gap_s] + [float(p[4]) for p in parts])
    # The kernels' rows go straight to the columns, each part freed once copied: no
    # concatenated copy of all rows beside the parts and the columns (a product of 88M
    # points made 144 bytes a point of these at once, 12.7 GB; now at most 96).
    cols = [np.empty(base) for _ in range(2 if exact else 3)]
    idx = [np.empty(base, dtype=IDX) for _ in range(3)]
    at = 0
    for i in range(len(parts)):
        f, ii = parts[i][0], parts[i][1]
        parts[i] = None
        n = len(f)
        for j, col in enumerate(cols):
            col[at:at + n] = f[:, j]
        del f
        for j, col in enumerate(idx):
            col[at:at + n] = ii[:, j]
        del ii
        at += n
    table = Table(cols[0], cols[1], off, None if exact else cols[2])
    return (table, *idx)


def reduce_cells(cell: np.ndarray, mem: np.ndarray, time: np.ndarray, ncells: int,
                 radius: Optional[np.ndarray] = None):
    """Algorithm 1 applied to every cell at once.

    Args:
        cell: int array, the cell of each candidate point (any order).
        mem, time: float arrays, the candidate points; radius: theirs, or None (zeros).
        ncells: number of cells of the output.

    Returns:
        ``(idx, off, radius)``: indices into the inputs of the kept points, ordered by
        cell then ascending memory; the CSR offsets of the output; the kept points'
        radii (None when the input had none). Only dominated points are dropped.
    """
    if len(mem) == 0:
        return _EMPTY_IDX, np.zeros(ncells + 1, dtype=IDX), None
    cell = np.asarray(cell)
    if np.all(cell[1:] >= cell[:-1]):         # grouped by cell (an edge's CSR): sort within
        start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1], True])
        order = sort_runs(start, _f64(mem), _f64(time))
    else:
        order = np.lexsort((time, mem, cell))
    rad_in = _EMPTY if radius is None else _f64(radius[order])
    keep, rad = reduce_sorted(np.ascontiguousarray(cell[order], dtype=IDX),
                                 _f64(mem[order]), _f64(time[order]), rad_in)
    idx = order[keep]
    return idx, offsets(cell[idx], ncells), None if radius is None else rad


def thin(t: Table, delta: float) -> tuple[Table, np.ndarray, float]:
    """``t`` (a reduced table) with each cell thinned: a point stays only when it is at
    least ``delta`` seconds faster than the last point kept before it. A dropped point's
    radius goes to that keeper (``max(r_keeper, r + t_keeper - t)``).

    Returns:
        ``(table, idx, gap)``: the thinned table, the index in ``t`` of each kept point,
        and the largest amount by which a keeper is slower than a point it now stands
        for (0.0 when nothing was dropped; always < ``delta``).
    """
    rad = _EMPTY if t.radius is None else _f64(t.radius)
    keep, new_rad, gap = thin_cells(_f64(t.time), rad, np.ascontiguousarray(t.off), delta)
    if len(keep) == t.npoints:
        return t, np.arange(t.npoints, dtype=IDX), 0.0
    out = Table(t.mem[keep], t.time[keep], offsets(cell_ids(t)[keep], t.ncells), new_rad)
    return out, keep, float(gap)


def translated(a: Table, b: Table, bmap: np.ndarray):
    """``cell_product`` when every cell of a, or every cell of b that ``bmap`` maps to,
    holds one point: each cell is the other side's frontier shifted by that point, which
    is a frontier already (nothing to reduce; radii add). Nothing is thinned, so the
    radii stay within any budget the inputs' radii were within.

    Returns:
        ``(table, ia, ib)`` as ``cell_product``.
    """
    C = a.ncells
    bmap = np.asarray(bmap, dtype=IDX)
    nb = b.counts()[bmap]
    a_many = bool(np.all(nb == 1))
    if a_many:
        off = a.off.copy()
    else:
        assert np.all(a.counts() == 1), "translated: neither side holds one point per cell"
        off = np.zeros(C + 1, dtype=IDX)
        np.cumsum(nb, out=off[1:])
    n = int(off[-1])
    ia, ib = np.empty(n, dtype=IDX), np.empty(n, dtype=IDX)
    shift_pointers(np.asarray(a.off, dtype=IDX), np.asarray(b.off, dtype=IDX), bmap, a_many,
                   np.asarray(off, dtype=IDX), ia, ib)
    cols = []
    for xa, xb in ((a.mem, b.mem), (a.time, b.time), (a.radius, b.radius)):
        if xa is None and xb is None:
            cols.append(None)
            continue
        cols.append(np.empty(n))
        add_pairs(_EMPTY if xa is None else _f64(xa), _EMPTY if xb is None else _f64(xb),
                  ia, ib, cols[-1])
    return Table(cols[0], cols[1], off, cols[2]), ia, ib


def cell_product(a: Table, b: Table, bmap: np.ndarray, *, budget: float = 0.0,
                 threads: int = 1, counts: Optional[MergeCounts] = None, rel: float = 0.0):
    """Cellwise product: output cell c = reduce(a[c] (x) b[bmap[c]]).

    Returns:
        ``(table, ia, ib)`` with the flat input indices of each output point.
    """
    C = a.ncells
    na, nb = a.counts(), b.counts()[bmap]
    if budget <= 0 and rel <= 0 and (np.all(nb == 1) or np.all(na == 1)):
        return translated(a, b, bmap)
    spec = _Merge(K_.PRODUCT, 1, 1, C, np.asarray(bmap, dtype=IDX), (na * nb).astype(float))
    t, ia, ib, _ = _run(spec, a, b, None, budget=budget, threads=threads, counts=counts,
                        rel=rel)
    return t, ia, ib


def union_all(a: Table, *, budget: float = 0.0, counts: Optional[MergeCounts] = None,
              rel: float = 0.0) -> tuple[Table, np.ndarray]:
    """Union of all cells, reduced, as a one-cell table."""
    zero = Table(np.zeros(1), np.zeros(1), np.array([0, 1], dtype=IDX))
    spec = _Merge(K_.UNION, a.ncells, 1, 1)
    t, ia, _, _ = _run(spec, a, zero, None, budget=budget, threads=1, counts=counts, rel=rel)
    return t, ia


def union_groups(a: Table, shape: Shape, group: np.ndarray, *, mid: Optional[Table] = None,
                 threads: int = 1, counts: Optional[MergeCounts] = None):
    """Cell (w, g) of the result = reduce(U_{k: group[k] == g} a[w,k] (x) mid[k]).

    ``a`` has cells ``w*K + k`` (``shape`` = (W, K, G)); ``mid`` (K cells) holds one point
    per cell. Only dominated points are dropped (radii are handed on). ``threads``
    split the output cells as in ``combine`` (the same result).

    Returns:
        ``(table, ia, k)``: the result with cells ``w*G + g``; per point, the flat index
        into ``a`` and its configuration k.
    """
    W, K, G = shape.W, shape.K, shape.P
    members = np.argsort(group, kind="stable").astype(IDX)
    goff = offsets(np.sort(group).astype(IDX), G)
    zero = Table(np.zeros(1), np.zeros(1), np.array([0, 1], dtype=IDX))
    # candidates per output cell (w, g): a's points in the group's cells of row w
    summed = np.zeros((W, K + 1), dtype=IDX)
    np.cumsum(a.counts().reshape(W, K)[:, members], axis=1, out=summed[:, 1:])
    work = (summed[:, goff[1:]] - summed[:, goff[:-1]]).reshape(-1).astype(float)
    spec = _Merge(K_.GROUPS, K, G, W * G, np.concatenate([goff, members]), work)
    t, ia, _, kk = _run(spec, a, zero, mid, budget=0.0, threads=threads, counts=counts)
    return t, ia, kk


def _column_blocks(points: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Consecutive ranges of columns with at most ``limit`` points each (``points``: the
    points per column), or more where one column alone has more."""
    blocks, start, held = [], 0, 0
    for p, n in enumerate(points.tolist()):
        if p > start and held + n > limit:
            blocks.append((start, p))
            start, held = p, 0
        held += n
    blocks.append((start, len(points)))
    return blocks


def _assemble(parts: list, W: int, P: int):
    """One table's columns and offsets (cells ``w*P + p``) from ``combine``'s column
    blocks: ``parts`` holds per block ``[p0, p1, off, columns]``, its cells
    ``w*(p1 - p0) + p``; the columns (memory, time, [radius,] ia, ib, k) are copied one
    at a time, each block's freed once copied."""
    counts = np.zeros((W, P), dtype=IDX)
    for p0, p1, off, _ in parts:
        counts[:, p0:p1] = np.diff(off).reshape(W, p1 - p0)
    out_off = np.zeros(W * P + 1, dtype=IDX)
    np.cumsum(counts.reshape(-1), out=out_off[1:])
    n = int(out_off[-1])
    out = []
    for j in range(len(parts[0][3])):
        dst = np.empty(n, dtype=parts[0][3][j].dtype)
        for p0, p1, off, cols in parts:
            src, Pc = cols[j], p1 - p0
            for w in range(W):
                s, e = off[w * Pc], off[(w + 1) * Pc]
                at = out_off[w * P + p0]
                dst[at:at + e - s] = src[s:e]
            cols[j] = None
            del src
        out.append(dst)
    return out, out_off


def combine(a: Table, b: Table, shape: Shape, *, mid: Optional[Table] = None,
            post: Optional[Table] = None, threads: int = 1, budget: float = 0.0,
            counts: Optional[MergeCounts] = None, rel: float = 0.0,
            b_cells: Optional[np.ndarray] = None):
    """Cell (w, p) of the result = reduce(U_k a[w,k] (x) mid[k] (x) b[k,p]) (x) post[p].

    ``a`` has cells ``w*K + k``, ``b`` cells ``k*P + p``; ``mid`` (K cells) and ``post``
    (P cells) must hold one point per cell. This is the kernel of node elimination
    (Eq. 4), branch elimination (Eq. 6 with a leaf) and one LDP step (Algorithm 3).
    ``b_cells`` (K*P cell ids of ``b``): cell (k, p) is b's cell ``b_cells[k*P + p]``
    instead, so that ``combine_grouped`` reads its representative cells in place.

    The kernels read b by output column (cells ``p*K + k``), a copy of b laid out so;
    past ``COMBINE_BLOCK_POINTS`` points that copy is made and merged a block of
    columns at a time (each output cell reads its own column only, so the result is
    the same): a fold of 394 configurations against an 88M-point edge table had made a
    copy of 62M points, then its transpose and the kernels' rows (96 bytes a point in
    all, about 6 GB).

    Returns:
        ``(table, ia, ib, k)``: the result with cells ``w*P + p`` and, per point, the flat
        index into ``a`` and ``b`` and the configuration k (index into ``mid``).
    """
    W, K, P = shape.W, shape.K, shape.P
    assert a.ncells == W * K
    if b_cells is None:
        assert b.ncells == K * P
        b_cells = np.arange(K * P, dtype=IDX)
    b_cells = np.asarray(b_cells, dtype=IDX).reshape(K, P)
    if mid is not None:
        assert single_point_cells(mid) and mid.ncells == K
    nb = b.counts()[b_cells]
    # Integers: numpy multiplies them in its own loop. A float product goes to BLAS,
    # whose idle threads then spin and take CPU from the kernels (4% of a run, seen).
    work = a.counts().reshape(W, K).astype(IDX) @ nb.astype(IDX)
    if post is not None:
        assert single_point_cells(post) and post.ncells == P
        budget = max(0.0, budget - radius_max(post))
    single = (a.npoints == a.ncells and bool(np.all(nb == 1))
              and not (mid is not None and mid.npoints != mid.ncells))
    blocks = _column_blocks(nb.sum(axis=0), COMBINE_BLOCK_POINTS)
    exact = _exact(a, b, mid, budget, rel)
    a_rows = _kernel_table(a, exact) if len(blocks) > 1 else None
    a_grid: dict = {}   # a's grid, made at most once for all the blocks
    parts = []
    for p0, p1 in blocks:
        bt, bidx = gather(b, b_cells[:, p0:p1].T.reshape(-1))   # cells p*K + k
        spec = _Merge(K_.COMBINE, K, p1 - p0, W * (p1 - p0), _EMPTY_IDX,
                      work[:, p0:p1].reshape(-1).astype(float))
        t, ia, ib, kk = _run(spec, a, bt, mid, budget=budget, threads=threads,
                             counts=counts, rel=rel, a_rows=a_rows, single=single, a_grid=a_grid)
        del bt
        ib = bidx[ib]
        del bidx
        parts.append([p0, p1, t.off, [t.mem, t.time] + ([] if exact else [t.radius])
                      + [ia, ib, kk]])
        del t, ia, ib, kk
    cols, off = parts[0][3], parts[0][2]
    if len(parts) > 1:
        cols, off = _assemble(parts, W, P)
    del parts
    t = Table(cols[0], cols[1], off, None if exact else cols[2])
    ia, ib, kk = cols[-3:]
    if post is not None:
        pc = cell_ids(t) % P
        rad = None
        if t.radius is not None or post.radius is not None:
            rad = t.radii() + post.radii()[pc]
        t = Table(t.mem + post.mem[pc], t.time + post.time[pc], t.off, rad)
    return t, ia, ib, kk
