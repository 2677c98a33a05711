"""The blocks of a merge's output cell: which they are, their corners, which can win.

An output cell of a merge (``_kernels.merge_range``) is the reduced union of *blocks*
``a[acell] (x) mid[k] (x) b[bcell]``; ``layout = (mode, K, P, ...)`` and ``bmap`` say
which (``block_of``). Before merging, ``live_blocks`` leaves out every block whose ideal
corner (least memory, least time) a point of F0 covers, F0 being the frontier of the
blocks' extreme points. Cells with few candidates are sorted directly
(``small_candidates``); cells of one-point tables are solved by repeated minima
(``single_cell``).

Usage (inside compiled code)::

    nlive, nf = live_blocks(layout, bmap, c, (A, B, M), exact, live, corner, (f0, stair))
    n = small_candidates(layout, bmap, c, (A, B, M), live[:nlive], buf, (exact, nf))
"""

from __future__ import annotations

import numpy as np

from frontier._jit import jit, jit_inline, jit_leaf, jit_leaf_inline

__all__ = ["COMBINE", "PRODUCT", "UNION", "GROUPS", "block_of", "block_in", "cell_row",
           "n_blocks", "corners",
           "f0_covers", "f0_minima", "live_blocks", "small_candidates", "single_cell"]

COMBINE, PRODUCT, UNION, GROUPS = 0, 1, 2, 3


@jit_leaf_inline
def cell_row(layout: np.ndarray, c: int):
    """``(w, q)`` with output cell ``c = w*P + q`` (``P = layout[2]``), for ``block_in``:
    a cell's merge finds its blocks without a division per candidate."""
    w = c // layout[2]
    return w, c - w * layout[2]


@jit_leaf_inline
def block_in(layout: np.ndarray, bmap: np.ndarray, c: int, wq, x: int):
    """``block_of(layout, bmap, c, x)`` given ``wq = cell_row(layout, c)``."""
    mode, K, P = layout[0], layout[1], layout[2]
    w, q = wq
    if mode == COMBINE:
        return w * K + x, q * K + x, x
    if mode == PRODUCT:
        return c, bmap[c], 0
    if mode == GROUPS:
        k = bmap[P + 1 + bmap[q] + x]
        return w * K + k, 0, k
    return x, 0, x


@jit_leaf
def block_of(layout: np.ndarray, bmap: np.ndarray, c: int, x: int):
    """(a cell, b cell, mid index) of block x of output cell c.

    ``layout = (mode, K, P)``: COMBINE: cell c = w*P + p has blocks k < K with a cell
    w*K + k and b cell p*K + k (b transposed, so that a cell's blocks are contiguous in
    both); PRODUCT: one block, a cell c and b cell bmap[c]; UNION:
    one output cell whose blocks are a's K cells, each with b's cell 0; GROUPS: cell
    c = w*P + g has a block per member k of group g (``bmap[P + 1 + bmap[g] + x]``), with
    a cell w*K + k and b's cell 0.
    """
    return block_in(layout, bmap, c, cell_row(layout, c), x)


@jit_leaf
def n_blocks(layout: np.ndarray, bmap: np.ndarray, c: int) -> int:
    """How many blocks output cell c has (see ``block_of``)."""
    mode, K, P = layout[0], layout[1], layout[2]
    if mode == PRODUCT:
        return 1
    if mode == GROUPS:
        g = c % P
        return bmap[g + 1] - bmap[g]
    return K


@jit_leaf
def _sum_row(dst, a, b, add):
    """dst = (a + add) + b elementwise (``add`` empty: a + b)."""
    if len(add):
        for x in range(len(a)):
            dst[x] = (a[x] + add[x]) + b[x]
    else:
        for x in range(len(a)):
            dst[x] = a[x] + b[x]


@jit
def corners(layout, bmap, c, S, mid, w, exact):
    """Describes every block x of output cell c in ``w[:, x]``: its ideal corner (0:
    least memory, 1: least time; memory inf for an empty block), the time of its
    least-memory point (3) and the memory of its least-time point (4), and unless
    ``exact`` the largest radius of its points (2) and the radii of those two points
    (5, 6). Returns the number of blocks.

    ``S = (asum, bsum)``: rows over the cells of a and b of the first point's memory,
    time, radius, the last point's, and the largest radius; memory inf for an empty
    cell. ``mid``: rows memory, time, radius per block index (no columns: none). For
    COMBINE a cell's blocks are contiguous in both, so the loops vectorize.
    """
    asum, bsum = S
    has_mid = mid.shape[1] > 0
    K, P = layout[1], layout[2]
    rows = (0, 4, 6, 1, 3, 2, 5)          # summary row of each row of w
    cols = (0, 1, 2, 1, 0, 2, 2)          # the mid row added to each row of w
    if layout[0] == COMBINE:
        ba, bb = (c // P) * K, (c % P) * K
        for r in range(7):
            if exact and (r == 2 or r >= 5):
                continue
            q = rows[r]
            _sum_row(w[r], asum[q, ba:ba + K], bsum[q, bb:bb + K], mid[cols[r]])
        return K
    n = n_blocks(layout, bmap, c)
    for x in range(n):
        acell, bcell, k = block_of(layout, bmap, c, x)
        for r in range(7):
            add = mid[cols[r], k] if has_mid else 0.0
            w[r, x] = (asum[rows[r], acell] + add) + bsum[rows[r], bcell]
    return n


@jit_leaf
def f0_covers(f0, nf, m, t, r, exact):
    """Whether a point of F0 (``f0[:, :nf]``: memory ascending, time descending) has no
    more memory and no more time than (m, t), is better in one of them, and (unless
    ``exact``) has a radius that already covers r + its time - t."""
    lo, hi = 0, nf                           # the last F0 point with memory <= m
    while lo < hi:
        mid = (lo + hi) >> 1
        if f0[0, mid] <= m:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return False
    y = lo - 1
    return (f0[1, y] <= t and (f0[0, y] < m or f0[1, y] < t)
            and (exact or r + f0[1, y] - t <= f0[2, y]))


@jit
def live_blocks(layout, bmap, c, T, exact, live, w, scratch):
    """The blocks of output cell c worth merging: writes their x to ``live`` and F0
    (below) to ``f0``, where ``scratch = (f0, stair)``; returns (how many blocks, how
    many F0 points). ``w`` (7 x K) and ``stair`` (3 x 2K) are scratch (see
    ``corners``, ``f0_minima``).

    F0 is the frontier of the blocks' *extreme points* (each block's least-memory and
    least-time point), as repeated minima of time below a memory bound find it (at
    most as many points as ``f0`` has columns, fastest first; ``f0_minima``). A block
    is left out when it is empty, or when its ideal corner (its least memory, its
    least time) is covered by a point of F0 (``f0_covers``): every point of the block
    is then dominated by a candidate that is merged (F0's points lie on blocks that
    cannot be left out, since no point of F0 dominates another). With radii, only when
    that point's own radius already covers what the block's points could stand for.
    """
    n = corners(layout, bmap, c, (T[0][2], T[1][2]), T[2], w, exact)
    f0, stair = scratch
    nf = f0_minima(w, n, f0, stair, exact)
    kept = 0
    for x in range(n):
        if w[0, x] == np.inf:
            continue
        if not f0_covers(f0, nf, w[0, x], w[1, x], 0.0 if exact else w[2, x], exact):
            live[kept] = x
            kept += 1
    return kept, nf


@jit_inline
def _stair_add(stair, ns, m, t, r, exact):
    """Adds the point (m, t, r) to the staircase ``stair[:, :ns]`` of ``f0_minima``
    (which saw the points before it in the tie order); returns its new size."""
    if not (m < np.inf and t < np.inf):
        return ns
    lo = 0                                   # after the last point with memory <= m
    for y in range(ns):                      # (a count, not a search: no branches)
        lo += stair[0, y] <= m
    if lo > 0 and stair[1, lo - 1] <= t:
        return ns
    first = lo - 1 if lo > 0 and stair[0, lo - 1] == m else lo
    last = lo                                # out: first .. last - 1, no faster
    while last < ns and stair[1, last] >= t:
        last += 1
    shift = 1 - (last - first)
    if shift > 0:
        for y in range(ns - 1, last - 1, -1):
            for q in range(3):
                stair[q, y + shift] = stair[q, y]
    elif shift < 0:
        for y in range(last, ns):
            for q in range(3):
                stair[q, y + shift] = stair[q, y]
    stair[0, first], stair[1, first], stair[2, first] = m, t, 0.0 if exact else r
    return ns + shift


@jit_leaf
def f0_minima(w, n, f0, stair, exact):
    """F0 (see ``live_blocks``): the points repeated minima of time below a memory
    bound would find (the fastest extreme point, then the fastest with less memory,
    and so on; ties: less memory, then the lower block, its least-memory point first),
    at most as many as ``f0`` has columns (the fastest). Writes F0 to ``f0`` memory
    ascending and returns its size. ``stair`` is scratch (3 rows, at least 2n columns).

    One pass over the extreme points in that tie order keeps the staircase of those
    seen so far (memory ascending, time strictly descending): a point is dropped when
    the staircase point with the most memory not above its own is no slower (that one
    comes first in the tie order), else it goes in and the staircase points it beats
    go out. A point is in F0 exactly when it is first in (time, memory, order) among
    the points with no more memory, so the staircase at the end is F0. Points of
    infinite memory or time are never minima and stay out.
    """
    ns = 0
    for x in range(n):
        ns = _stair_add(stair, ns, w[0, x], w[3, x], w[5, x], exact)
        ns = _stair_add(stair, ns, w[4, x], w[1, x], w[6, x], exact)
    nf = min(ns, f0.shape[1])
    for y in range(nf):
        for q in range(3):
            f0[q, y] = stair[q, ns - nf + y]
    return nf


@jit_leaf
def _insert(f, order, n):
    """Inserts candidate n (``f[:, n]``) into ``order[:n]``, sorted by (memory, time)."""
    m, t = f[0, n], f[1, n]
    s = n
    while s > 0 and (f[0, order[s - 1]] > m or (f[0, order[s - 1]] == m
                                              and f[1, order[s - 1]] > t)):
        order[s] = order[s - 1]
        s -= 1
    order[s] = n


@jit
def small_candidates(layout, bmap, c, T, live, buf, opts):
    """Writes the candidates of the blocks ``live`` of output cell c that F0 does not
    cover (see ``f0_covers``) to ``buf = (f, i, order, f0)``: rows memory, time,
    radius; rows index in a, index in b, mid index; their order by (memory, time);
    ``opts = (exact, number of F0 points)``. Returns how many. For cells with few
    candidates, where a heap costs more than an insertion sort."""
    exact, nf = opts
    av, aoff = T[0][0], T[0][1]
    bv, boff = T[1][0], T[1][1]
    mid = T[2]
    f, ii, order, f0 = buf
    n = 0
    for x in live:
        acell, bcell, k = block_of(layout, bmap, c, x)
        mk, tk, rk = 0.0, 0.0, 0.0
        if mid.shape[1]:
            mk, tk, rk = mid[0, k], mid[1, k], mid[2, k]
        for i in range(aoff[acell], aoff[acell + 1]):
            for j in range(boff[bcell], boff[bcell + 1]):
                m, t = (av[i, 0] + mk) + bv[j, 0], (av[i, 1] + tk) + bv[j, 1]
                r = 0.0 if exact else (av[i, 2] + rk) + bv[j, 2]
                if nf and f0_covers(f0, nf, m, t, r, exact):
                    continue
                if n == f.shape[1]:
                    return -1
                f[0, n], f[1, n], f[2, n] = m, t, r
                ii[0, n], ii[1, n], ii[2, n] = i, j, k
                _insert(f, order, n)
                n += 1
    return n


@jit
def single_cell(layout, c, T, w, live, budget, rel, exact):
    """Output cell c of a COMBINE whose cells all hold one point: each block is one
    candidate, so the frontier is found by repeated minima of time below a memory
    bound, with no sorting (most node eliminations). Writes the frontier's blocks x to
    ``live`` (memory ascending) and their memory, time and radius to ``w[0:3, x]``.

    Returns ``(h, gap)``: how many points (-1 when more than ``layout[7]``: use the
    general path) and the largest thinning gap (see ``merge_range``).
    """
    asum, bsum, mid = T[0][2], T[1][2], T[2]
    K, P = layout[1], layout[2]
    ba, bb = (c // P) * K, (c % P) * K
    _sum_row(w[0], asum[0, ba:ba + K], bsum[0, bb:bb + K], mid[0])
    _sum_row(w[1], asum[1, ba:ba + K], bsum[1, bb:bb + K], mid[1])
    if not exact:
        _sum_row(w[2], asum[2, ba:ba + K], bsum[2, bb:bb + K], mid[2])
    h = 0
    bound = np.inf
    while True:                              # the fastest point below the bound, ...
        best, tb, mb = -1, np.inf, np.inf
        for x in range(K):
            mx, tx = w[0, x], w[1, x]
            if mx < bound and (tx < tb or (tx == tb and mx < mb)):
                best, tb, mb = x, tx, mx
        if best < 0:
            break
        if h == layout[7]:
            return -1, 0.0
        live[h] = best
        h += 1
        bound = mb                           # ... then the fastest with less memory
    for s in range(h // 2):
        live[s], live[h - 1 - s] = live[h - 1 - s], live[s]
    if exact:
        return h, 0.0
    for x in range(K):                       # radii of the dropped to their keepers
        lo, hi = 0, h
        while lo < hi:
            mid = (lo + hi) >> 1
            if w[0, live[mid]] <= w[0, x]:
                lo = mid + 1
            else:
                hi = mid
        y = live[lo - 1]
        if y != x and w[2, x] + w[1, y] - w[1, x] > w[2, y]:
            w[2, y] = w[2, x] + w[1, y] - w[1, x]
    kept, gap = 1, 0.0
    for s in range(1, h):                    # thinning within the budget
        y, keeper = live[s], live[kept - 1]
        drop = w[1, keeper] - w[1, y]
        if w[2, y] + drop <= budget + rel * w[1, keeper]:
            gap = max(gap, drop)
            w[2, keeper] = max(w[2, keeper], w[2, y] + drop)
        else:
            live[kept] = y
            kept += 1
    return kept, gap
