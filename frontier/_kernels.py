"""Compiled frontier kernels (numba): merge-style products, reductions and thinning.

These loops walk sorted Pareto lists and never materialize a product's candidates:

* ``merge_range`` computes output cells ``c0 .. c1-1`` of a *merge*. Each output cell is
  the reduced union of the products of some *blocks* ``a[acell] (x) mid[k] (x) b[bcell]``
  (``layout`` says which; see ``block_of``). A block is ``na`` *streams*, one per point
  i of ``a[acell]``, each ``a_i + b_j`` for j = 0, 1, ... in ascending memory. A heap
  pops candidates in ascending (memory, time) order, so Algorithm 1 runs as the
  candidates come: a candidate is kept when it is faster than every kept point. Streams
  start only when their first candidate is due, and a stream (or the rest of one, or the
  rest of a block) that cannot beat the current least time is skipped whole.
* ``reduce_sorted`` runs Algorithm 1 on candidates already sorted by (cell, memory, time)
  (equal memories come fastest first, so the later ones are dominated).
* ``thin_cells`` keeps, per cell, a point only when it is at least ``delta`` faster than
  the last kept one.
* ``suffix_max`` gives, per point, the largest ``radius - time`` from it to its cell's end.

Error radii (see ``_table``): a candidate's radius is the sum of its parts' radii. A
candidate dropped for the last kept point p (which has no more memory) raises p's radius
to at least ``r + t_p - t``; this holds for dominated candidates too, and for skipped
ones (bounded through ``suffix_max``, which is exact for whole stream ends). A faster
candidate is also dropped when that keeps p's radius within ``budget``. With
``exact=True`` (no radii, budget 0) the radius bookkeeping is skipped and streams jump
over dominated candidates by binary search.

Tables are passed as tuples ``(mem, time, radius, off, suffix, summary)``; an empty
``radius`` or ``suffix`` array means zeros. Every kernel releases the GIL, so threads can run cell
ranges side by side, and is cached on disk (numba ``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["merge_range", "reduce_sorted", "thin_cells", "suffix_max", "COMBINE", "PRODUCT",
           "UNION", "GROUPS"]

COMBINE, PRODUCT, UNION, GROUPS = 0, 1, 2, 3
_SMALL = 256         # cells with at most this many candidates are sorted, not heaped
_MAX_SINGLE = 16     # frontier points found by repeated minima (``_single_cell``)
_JIT = dict(cache=True, nogil=True)


@njit(inline="always", **_JIT)
def block_of(layout: np.ndarray, bmap: np.ndarray, c: int, x: int):
    """(a cell, b cell, mid index) of block x of output cell c.

    ``layout = (mode, K, P)``: COMBINE: cell c = w*P + p has blocks k < K with a cell
    w*K + k and b cell p*K + k (b transposed, so that a cell's blocks are contiguous in
    both); PRODUCT: one block, a cell c and b cell bmap[c]; UNION:
    one output cell whose blocks are a's K cells, each with b's cell 0; GROUPS: cell
    c = w*P + g has a block per member k of group g (``bmap[P + 1 + bmap[g] + x]``), with
    a cell w*K + k and b's cell 0.
    """
    mode, K, P = layout[0], layout[1], layout[2]
    if mode == COMBINE:
        w = c // P
        return w * K + x, (c - w * P) * K + x, x
    if mode == PRODUCT:
        return c, bmap[c], 0
    if mode == GROUPS:
        w = c // P
        k = bmap[P + 1 + bmap[c - w * P] + x]
        return w * K + k, 0, k
    return x, 0, x


@njit(inline="always", **_JIT)
def _blocks(layout: np.ndarray, bmap: np.ndarray, c: int) -> int:
    """How many blocks output cell c has (see ``block_of``)."""
    mode, K, P = layout[0], layout[1], layout[2]
    if mode == PRODUCT:
        return 1
    if mode == GROUPS:
        g = c % P
        return bmap[g + 1] - bmap[g]
    return K


@njit(inline="always", **_JIT)
def _lt(m1, t1, c1, m2, t2, c2):
    """Heap order: memory, then time, then code (lower blocks first)."""
    if m1 != m2:
        return m1 < m2
    if t1 != t2:
        return t1 < t2
    return c1 < c2


@njit(inline="always", **_JIT)
def _key_lt(x, y):
    return _lt(x[0], x[1], x[2], y[0], y[1], y[2])


@njit(inline="always", **_JIT)
def _root(H):
    return (H[0][0], H[1][0], H[2][0], H[3][0], H[4][0])


@njit(inline="always", **_JIT)
def _push(H, n, key):
    """Adds ``key = (memory, time, code, i, j)`` to the heap ``H`` (five arrays) of n
    entries, room assumed; the entries on the way up move down into the hole."""
    hm, ht, hc, hi, hj = H
    m, t, c = key[0], key[1], key[2]
    while n > 0:
        p = (n - 1) >> 1
        if not _lt(m, t, c, hm[p], ht[p], hc[p]):
            break
        hm[n], ht[n], hc[n], hi[n], hj[n] = hm[p], ht[p], hc[p], hi[p], hj[p]
        n = p
    hm[n], ht[n], hc[n], hi[n], hj[n] = m, t, c, key[3], key[4]


@njit(inline="always", **_JIT)
def _pop(H, n):
    """Removes the root of a heap of n entries; returns the new size."""
    hm, ht, hc, hi, hj = H
    n -= 1
    if n == 0:
        return n
    m, t, c, i, j = hm[n], ht[n], hc[n], hi[n], hj[n]
    x = 0
    while True:
        y = 2 * x + 1
        if y >= n:
            break
        if y + 1 < n and _lt(hm[y + 1], ht[y + 1], hc[y + 1], hm[y], ht[y], hc[y]):
            y += 1
        if not _lt(hm[y], ht[y], hc[y], m, t, c):
            break
        hm[x], ht[x], hc[x], hi[x], hj[x] = hm[y], ht[y], hc[y], hi[y], hj[y]
        x = y
    hm[x], ht[x], hc[x], hi[x], hj[x] = m, t, c, i, j
    return n


@njit(**_JIT)
def _new_heap(cap):
    return (np.empty(cap), np.empty(cap), np.empty(cap, dtype=np.int64),
            np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64))


@njit(**_JIT)
def _grow_heap(H, need):
    """``H`` copied into arrays with room for at least ``need`` entries."""
    n = len(H[0])
    G = _new_heap(max(2 * n, need))
    G[0][:n] = H[0]
    G[1][:n] = H[1]
    G[2][:n] = H[2]
    G[3][:n] = H[3]
    G[4][:n] = H[4]
    return G


@njit(**_JIT)
def _grow(f, i, need):
    """Copies of the output rows (floats, ints) with room for at least ``need`` rows."""
    cap = max(2 * len(f), need)
    f2 = np.empty((cap, f.shape[1]))
    i2 = np.empty((cap, i.shape[1]), dtype=np.int64)
    f2[:len(f)] = f
    i2[:len(i)] = i
    return f2, i2


@njit(inline="always", **_JIT)
def _first_below(base, times, lo, hi, v):
    """The first j in [lo, hi) with base + times[j] < v (times descending), else hi.

    Galloping from lo: the answer is usually close, and nearby entries are in cache.
    """
    step = 1
    while lo < hi and not base + times[lo] < v:
        lo2 = lo + step
        if lo2 >= hi or base + times[lo2] < v:
            hi = min(hi, lo2)
            lo += 1
            break
        lo = lo2 + 1
        step *= 2
    else:
        return lo
    while lo < hi:
        mid = (lo + hi) >> 1
        if base + times[mid] < v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(inline="always", **_JIT)
def _sum_row(dst, a, b, add):
    """dst = (a + add) + b elementwise (``add`` empty: a + b)."""
    if len(add):
        for x in range(len(a)):
            dst[x] = (a[x] + add[x]) + b[x]
    else:
        for x in range(len(a)):
            dst[x] = a[x] + b[x]


@njit(**_JIT)
def _corners(layout, bmap, c, S, M, w, exact):
    """Describes every block x of output cell c in ``w[:, x]``: its ideal corner (0:
    least memory, 1: least time; memory inf for an empty block), the time of its
    least-memory point (3) and the memory of its least-time point (4), and unless
    ``exact`` the largest radius of its points (2) and the radii of those two points
    (5, 6). Returns the number of blocks.

    ``S = (asum, bsum)``: rows over the cells of a and b of the first point's memory,
    time, radius, the last point's, and the largest radius; memory inf for an empty
    cell. For COMBINE a cell's blocks are contiguous in both, so the loops vectorize.
    """
    asum, bsum = S
    mm, mt, mr = M
    has_mid, has_mr = len(mm) > 0, len(mr) > 0
    K, P = layout[1], layout[2]
    rows = (0, 4, 6, 1, 3, 2, 5)          # summary row of each row of w
    if layout[0] == COMBINE:
        ba, bb = (c // P) * K, (c % P) * K
        for r in range(7):
            if exact and (r == 2 or r >= 5):
                continue
            q = rows[r]
            add = (mm if q == 0 or q == 3 else mt if q == 1 or q == 4 else mr)
            if (has_mr if q == 2 or q >= 5 else has_mid):
                _sum_row(w[r], asum[q, ba:ba + K], bsum[q, bb:bb + K], add)
            else:
                _sum_row(w[r], asum[q, ba:ba + K], bsum[q, bb:bb + K], add[:0])
        return K
    n = _blocks(layout, bmap, c)
    for x in range(n):
        acell, bcell, k = block_of(layout, bmap, c, x)
        for r in range(7):
            q = rows[r]
            add = 0.0
            if q in (0, 3):
                add = mm[k] if has_mid else 0.0
            elif q in (1, 4):
                add = mt[k] if has_mid else 0.0
            else:
                add = mr[k] if has_mr else 0.0
            w[r, x] = (asum[q, acell] + add) + bsum[q, bcell]
    return n


@njit(inline="always", **_JIT)
def _among(x, arr, n):
    """Whether x is one of arr[:n]."""
    for q in range(n):
        if arr[q] == x:
            return True
    return False


@njit(inline="always", **_JIT)
def _f0_covers(f0, nf, m, t, r, exact):
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


@njit(**_JIT)
def _live_blocks(layout, bmap, c, T, exact, live, w, f0):
    """The blocks of output cell c worth merging: writes their x to ``live`` and F0
    (below) to ``f0``; returns (how many blocks, how many F0 points). ``w`` (7 x K) is
    scratch (see ``_corners``).

    F0 is the frontier of the blocks' *extreme points* (each block's least-memory and
    least-time point), found by repeated minima of time below a memory bound (at most
    ``_SMALL`` points, fastest first). A block is left out when it is empty, or when
    its ideal corner (its least memory, its least time) is covered by a point of F0
    (``_f0_covers``): every point of the block is then dominated by a candidate that
    is merged (F0's points lie on blocks that cannot be left out, since no point of F0
    dominates another). With radii, only when that point's own radius already covers
    what the block's points could stand for.
    """
    n = _corners(layout, bmap, c, (T[0][5], T[1][5]), T[2], w, exact)
    nf = 0
    bound = np.inf
    while nf < f0.shape[1]:
        tb, mb, rb = np.inf, np.inf, 0.0
        for x in range(n):
            if w[0, x] < bound and (w[3, x] < tb or (w[3, x] == tb and w[0, x] < mb)):
                tb, mb, rb = w[3, x], w[0, x], w[5, x]
            if w[4, x] < bound and (w[1, x] < tb or (w[1, x] == tb and w[4, x] < mb)):
                tb, mb, rb = w[1, x], w[4, x], w[6, x]
        if tb == np.inf:
            break
        f0[0, nf], f0[1, nf], f0[2, nf] = mb, tb, 0.0 if exact else rb
        nf += 1
        bound = mb
    for s in range(nf // 2):
        for r in range(3):
            f0[r, s], f0[r, nf - 1 - s] = f0[r, nf - 1 - s], f0[r, s]
    kept = 0
    for x in range(n):
        if w[0, x] == np.inf:
            continue
        if not _f0_covers(f0, nf, w[0, x], w[1, x], 0.0 if exact else w[2, x], exact):
            live[kept] = x
            kept += 1
    return kept, nf


@njit(inline="always", **_JIT)
def _insert(f, order, n):
    """Inserts candidate n (``f[:, n]``) into ``order[:n]``, sorted by (memory, time)."""
    m, t = f[0, n], f[1, n]
    s = n
    while s > 0 and (f[0, order[s - 1]] > m or (f[0, order[s - 1]] == m
                                              and f[1, order[s - 1]] > t)):
        order[s] = order[s - 1]
        s -= 1
    order[s] = n


@njit(**_JIT)
def _small_candidates(layout, bmap, c, T, live, buf, opts):
    """Writes the candidates of the blocks ``live`` of output cell c that F0 does not
    cover (see ``_f0_covers``) to ``buf = (f, i, order, f0)``: rows memory, time,
    radius; rows index in a, index in b, mid index; their order by (memory, time);
    ``opts = (exact, number of F0 points)``. Returns how many. For cells with few
    candidates, where a heap costs more than an insertion sort."""
    exact, nf = opts
    A, B, M = T
    am, at, ar, aoff = A[0], A[1], A[2], A[3]
    bm, bt, br, boff = B[0], B[1], B[2], B[3]
    mm, mt, mr = M
    f, ii, order, f0 = buf
    n = 0
    for x in live:
        acell, bcell, k = block_of(layout, bmap, c, x)
        mk = mm[k] if len(mm) else 0.0
        tk = mt[k] if len(mt) else 0.0
        rk = mr[k] if len(mr) else 0.0
        for i in range(aoff[acell], aoff[acell + 1]):
            for j in range(boff[bcell], boff[bcell + 1]):
                m, t = (am[i] + mk) + bm[j], (at[i] + tk) + bt[j]
                r = 0.0 if exact else ((ar[i] if len(ar) else 0.0) + rk
                                       + (br[j] if len(br) else 0.0))
                if nf and _f0_covers(f0, nf, m, t, r, exact):
                    continue
                if n == f.shape[1]:
                    return -1
                f[0, n], f[1, n], f[2, n] = m, t, r
                ii[0, n], ii[1, n], ii[2, n] = i, j, k
                _insert(f, order, n)
                n += 1
    return n


@njit(**_JIT)
def _single_cell(layout, c, T, w, live, budget, exact):
    """Output cell c of a COMBINE whose cells all hold one point: each block is one
    candidate, so the frontier is found by repeated minima of time below a memory
    bound, with no sorting (most node eliminations). Writes the frontier's blocks x to
    ``live`` (memory ascending) and their memory, time and radius to ``w[0:3, x]``.

    Returns ``(h, gap)``: how many points (-1 when more than ``_MAX_SINGLE``: use the
    general path) and the largest thinning gap (see ``merge_range``).
    """
    A, B, M = T
    asum, bsum = A[5], B[5]
    mm, mt, mr = M
    K, P = layout[1], layout[2]
    ba, bb = (c // P) * K, (c % P) * K
    _sum_row(w[0], asum[0, ba:ba + K], bsum[0, bb:bb + K], mm)
    _sum_row(w[1], asum[1, ba:ba + K], bsum[1, bb:bb + K], mt)
    if not exact:
        _sum_row(w[2], asum[2, ba:ba + K], bsum[2, bb:bb + K], mr)
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
        if h == _MAX_SINGLE:
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
        if w[2, y] + drop <= budget:
            gap = max(gap, drop)
            w[2, keeper] = max(w[2, keeper], w[2, y] + drop)
        else:
            live[kept] = y
            kept += 1
    return kept, gap


@njit(**_JIT)
def merge_range(layout, bmap, A, B, M, budget, exact):
    """Output cells ``layout[3]`` .. ``layout[4] - 1`` of a merge (see module doc).

    Args:
        layout: int array ``(mode, K, P, c0, c1, single)``; ``bmap``: see ``block_of``;
            single: 1 when every cell of a and b holds one point (COMBINE only).
        A, B: tables ``(mem, time, radius, off, suffix, summary)`` (summary: see
            ``_corners``); M: mid ``(mem, time, radius)`` per block index, or three
            empty arrays.
        budget: seconds; a faster candidate is dropped when its keeper's radius stays
            within it. exact: no radii anywhere and budget 0.

    Returns:
        ``(f, i, off, counts, gap)``: per kept point (memory, time, radius) and (index
        in a, index in b, mid index); the offsets of the cells; candidates examined and
        blocks merged; the largest ``t_keeper - t`` of a faster candidate dropped within
        the budget.
    """
    K, c0, c1 = layout[1], layout[3], layout[4]
    am, at, ar, aoff, asuf, asum = A
    bm, bt, br, boff, bsuf, bsum = B
    mm, mt, mr = M
    has_mid, has_ar, has_br, has_mr = len(mm) > 0, len(ar) > 0, len(br) > 0, len(mr) > 0
    of = np.empty((256, 3))
    oi = np.empty((256, 3), dtype=np.int64)
    ooff = np.zeros(c1 - c0 + 1, dtype=np.int64)
    H = _new_heap(max(64, 2 * K + 2))
    live = np.empty(K, dtype=np.int64)
    corner = np.empty((7, K))
    small = (np.empty((3, _SMALL)), np.empty((3, _SMALL), dtype=np.int64),
             np.empty(_SMALL, dtype=np.int64), np.empty((3, _SMALL)))
    nout = 0
    examined = 0
    merged = 0
    gap = 0.0
    none = (np.inf, np.inf, -1, -1, -1)
    single = layout[0] == COMBINE and layout[5] == 1
    for c in range(c0, c1):
        hn = 0
        v = np.inf
        last = -1
        if single:
            h, g = _single_cell(layout, c, (A, B, M), corner, live, budget, exact)
            if h >= 0:
                examined += K
                merged += K
                gap = max(gap, g)
                if nout + h > len(of):
                    of, oi = _grow(of, oi, nout + h)
                w0, p0 = c // layout[2], c % layout[2]
                for s in range(h):
                    x = live[s]
                    of[nout, 0], of[nout, 1] = corner[0, x], corner[1, x]
                    of[nout, 2] = 0.0 if exact else corner[2, x]
                    oi[nout, 0], oi[nout, 1], oi[nout, 2] = (aoff[w0 * K + x],
                                                             boff[p0 * K + x], x)
                    nout += 1
                ooff[c - c0 + 1] = nout
                continue
        nlive, nf = _live_blocks(layout, bmap, c, (A, B, M), exact, live, corner, small[3])
        merged += nlive
        total = 0
        for s in range(nlive):
            acell, bcell, k = block_of(layout, bmap, c, live[s])
            total += (aoff[acell + 1] - aoff[acell]) * (boff[bcell + 1] - boff[bcell])
        if total <= _SMALL:                      # few candidates: sort them, no heap
            n = _small_candidates(layout, bmap, c, (A, B, M), live[:nlive], small, (exact, nf))
            examined += n
            sf, si, order, _ = small
            for s in range(n):
                x = order[s]
                m, t, r = sf[0, x], sf[1, x], sf[2, x]
                if last >= 0 and (t >= v or r + (v - t) <= budget):
                    if t < v:
                        gap = max(gap, v - t)
                    if not exact and r + (v - t) > of[last, 2]:
                        of[last, 2] = r + (v - t)
                    continue
                if nout >= len(of):
                    of, oi = _grow(of, oi, nout + 1)
                of[nout, 0], of[nout, 1], of[nout, 2] = m, t, r
                oi[nout, 0], oi[nout, 1], oi[nout, 2] = si[0, x], si[1, x], si[2, x]
                last = nout
                nout += 1
                v = t
            ooff[c - c0 + 1] = nout
            continue
        if hn + nlive > len(H[0]):
            H = _grow_heap(H, hn + nlive)
        for s in range(nlive):
            x = live[s]
            acell, bcell, k = block_of(layout, bmap, c, x)
            _push(H, hn, (corner[0, x], corner[3, x], 2 * x + 1, aoff[acell], boff[bcell]))
            hn += 1
        if hn == 0:
            ooff[c - c0 + 1] = nout
            continue
        cur = _root(H)
        hn = _pop(H, hn)
        while True:
            m, t, code, i, j = cur
            examined += 1
            x = code >> 1
            acell, bcell, k = block_of(layout, bmap, c, x)
            a1, b0, b1 = aoff[acell + 1], boff[bcell], boff[bcell + 1]
            mk = mm[k] if has_mid else 0.0
            tk = mt[k] if has_mid else 0.0
            rk = mr[k] if has_mr else 0.0
            tb_last = bt[b1 - 1]
            nxt1 = none                          # the block's next stream, if it can win
            if code & 1 and i + 1 < a1:
                i2 = i + 1
                if exact:
                    i2 = _first_below(tb_last + tk, at, i2, a1, v)
                elif (at[a1 - 1] + tk) + tb_last >= v:   # the rest of the block is dominated
                    need = asuf[i2] + (rk - tk) + bsuf[b0] + v
                    if need > of[last, 2]:
                        of[last, 2] = need
                    i2 = a1
                else:
                    while (at[i2] + tk) + tb_last >= v:
                        need = ((ar[i2] if has_ar else 0.0) - at[i2]) + (rk - tk) + bsuf[b0] + v
                        if need > of[last, 2]:
                            of[last, 2] = need
                        i2 += 1
                if i2 < a1:
                    nxt1 = ((am[i2] + mk) + bm[b0], (at[i2] + tk) + bt[b0], code, i2, b0)
            r = 0.0 if exact else ((ar[i] if has_ar else 0.0) + rk + (br[j] if has_br else 0.0))
            if t >= v:                           # dominated by the last kept point
                if not exact and r + (v - t) > of[last, 2]:
                    of[last, 2] = r + (v - t)
            elif last >= 0 and r + (v - t) <= budget:   # thinned: the keeper stands for it
                gap = max(gap, v - t)
                if r + (v - t) > of[last, 2]:
                    of[last, 2] = r + (v - t)
            elif last >= 0 and of[last, 0] == m:        # same memory, faster: replaces it
                of[last, 2] = max(r, of[last, 2] + t - of[last, 1])
                of[last, 1] = t
                oi[last, 0], oi[last, 1], oi[last, 2] = i, j, k
                v = t
            else:
                if nout >= len(of):
                    of, oi = _grow(of, oi, nout + 1)
                of[nout, 0], of[nout, 1], of[nout, 2] = m, t, r
                oi[nout, 0], oi[nout, 1], oi[nout, 2] = i, j, k
                last = nout
                nout += 1
                v = t
            nxt2 = none                          # the stream's next candidate that can win
            j2 = j + 1
            if j2 < b1:
                ta = at[i] + tk
                if exact:
                    j2 = _first_below(ta, bt, j2, b1, v)
                elif ta + tb_last >= v:          # the rest of the stream is dominated
                    need = ((ar[i] if has_ar else 0.0) - at[i]) + (rk - tk) + bsuf[j2] + v
                    if need > of[last, 2]:
                        of[last, 2] = need
                    j2 = b1
                else:
                    ra = (ar[i] if has_ar else 0.0) + rk
                    while ta + bt[j2] >= v:
                        examined += 1
                        need = ra + (br[j2] if has_br else 0.0) + v - (ta + bt[j2])
                        if need > of[last, 2]:
                            of[last, 2] = need
                        j2 += 1
                if j2 < b1:
                    nxt2 = ((am[i] + mk) + bm[j2], ta + bt[j2], 2 * x, i, j2)
            # Go on with the least of the successors and the heap, touching the heap
            # only when needed (a block often wins several times in a row).
            if _key_lt(nxt2, nxt1):
                nxt1, nxt2 = nxt2, nxt1
            if nxt2[2] >= 0:
                if hn + 2 > len(H[0]):
                    H = _grow_heap(H, hn + 2)
                _push(H, hn, nxt2)
                hn += 1
            if nxt1[2] >= 0 and (hn == 0 or _key_lt(nxt1, _root(H))):
                cur = nxt1
                continue
            if nxt1[2] >= 0:
                if hn + 1 > len(H[0]):
                    H = _grow_heap(H, hn + 1)
                _push(H, hn, nxt1)
                hn += 1
            if hn == 0:
                break
            cur = _root(H)
            hn = _pop(H, hn)
        ooff[c - c0 + 1] = nout
    return of[:nout], oi[:nout], ooff, np.array([examined, merged]), gap


@njit(**_JIT)
def reduce_sorted(cell, mem, time, radius):
    """Algorithm 1 per cell on candidates sorted by (cell, memory, time).

    Returns ``(keep, radius)``: the positions kept (in order) and their radii, with the
    radii of the dropped (dominated) ones handed to their keepers as in ``merge_range``.
    """
    n = len(mem)
    keep = np.empty(n, dtype=np.int64)
    rad = np.empty(n)
    has_r = len(radius) > 0
    nk = 0
    for x in range(n):
        r = radius[x] if has_r else 0.0
        if nk and cell[keep[nk - 1]] == cell[x] and time[x] >= time[keep[nk - 1]]:
            need = r + time[keep[nk - 1]] - time[x]
            if need > rad[nk - 1]:
                rad[nk - 1] = need
            continue
        keep[nk] = x
        rad[nk] = r
        nk += 1
    return keep[:nk], rad[:nk]


@njit(**_JIT)
def thin_cells(time, radius, off, delta):
    """Per cell of a reduced table, keeps a point only when it is at least ``delta``
    faster than the last kept one; a dropped point's radius goes to that keeper.

    Returns ``(keep, radius, gap)``: kept positions, their radii, and the largest amount
    by which a keeper is slower than a point it now stands for.
    """
    n = len(time)
    keep = np.empty(n, dtype=np.int64)
    rad = np.empty(n)
    has_r = len(radius) > 0
    nk = 0
    worst = 0.0
    for c in range(len(off) - 1):
        for x in range(off[c], off[c + 1]):
            r = radius[x] if has_r else 0.0
            if x > off[c]:
                gap = time[keep[nk - 1]] - time[x]
                if gap < delta:
                    worst = max(worst, gap)
                    rad[nk - 1] = max(rad[nk - 1], r + gap)
                    continue
            keep[nk] = x
            rad[nk] = r
            nk += 1
    return keep[:nk], rad[:nk], worst


@njit(**_JIT)
def suffix_max(radius, time, off):
    """Per point x of cell c: max over x <= y < off[c+1] of radius[y] - time[y]."""
    out = np.empty(len(time))
    has_r = len(radius) > 0
    for c in range(len(off) - 1):
        best = -np.inf
        for x in range(off[c + 1] - 1, off[c] - 1, -1):
            best = max(best, (radius[x] if has_r else 0.0) - time[x])
            out[x] = best
    return out
