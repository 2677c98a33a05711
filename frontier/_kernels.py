"""Compiled frontier kernels (numba): merge-style products, reductions and thinning.

These loops walk sorted Pareto lists and never materialize a product's candidates:

* ``merge_range`` computes output cells ``c0 .. c1-1`` of a *merge*. Each output cell is
  the reduced union of the products of some *blocks* ``a[acell] (x) mid[k] (x) b[bcell]``
  (``layout`` says which; see ``_blocks.block_of``). A block is a set of *streams*, one
  per point of its shorter list, each walking the longer list in ascending memory
  (``a_i + b_j`` for j = 0, 1, ... when a's list is the shorter). A heap pops
  candidates in ascending (memory, time) order, so Algorithm 1 runs as the candidates
  come: a candidate is kept when it is faster than every kept point. Streams start only
  when their first candidate is due, and a stream (or the rest of one, or the rest of a
  block) that cannot beat the current least time is skipped whole.
* the linear scans of ``_scans``: Algorithm 1 on sorted candidates, thinning, and the
  suffix maxima of ``radius - time`` that bound skipped candidates' radii.

Error radii (see ``_table``): a candidate's radius is the sum of its parts' radii. A
candidate dropped for the last kept point p (which has no more memory) raises p's radius
to at least ``r + t_p - t``; this holds for dominated candidates too, and for skipped
ones (bounded through ``suffix_max``, which is exact for whole stream ends). A faster
candidate is also dropped when that keeps p's radius within ``budget``. With
``exact=True`` (no radii, budget 0) the radius bookkeeping is skipped; streams jump over
dominated candidates by galloping search (also with radii, where the candidates skipped
share one radius).

Tables are passed as tuples ``(mem, time, radius, off, suffix, summary)``; an empty
``radius`` or ``suffix`` array means zeros. Every kernel releases the GIL, so threads can
run cell ranges side by side, and is cached on disk (``_jit``).

Usage (``_values`` prepares the arguments)::

    f, i, off, counts, gap = merge_range(layout, bmap, A, B, M, budget, exact)
"""

from __future__ import annotations

import numpy as np

from frontier._blocks import (COMBINE, GROUPS, PRODUCT, UNION, block_of, live_blocks,
                              single_cell, small_candidates)
from frontier._heap import grow_heap, grow_rows, key_lt, new_heap, pop, push, root
from frontier._jit import jit

__all__ = ["merge_range", "COMBINE", "PRODUCT", "UNION", "GROUPS", "SMALL_BUFFER"]

SMALL_BUFFER = 256   # candidates a cell may have to be sorted instead of heaped (at most)


@jit
def _first_below(times, add1, add2, lo, hi, v):
    """The first x in [lo, hi) with ``(times[x] + add1) + add2 < v`` (times descending),
    else hi. Gallops from lo: the answer is usually close, and nearby entries are in
    cache. The sum is formed as the candidates' times are, bit for bit."""
    step = 1
    while lo < hi and not (times[lo] + add1) + add2 < v:
        lo2 = lo + step
        if lo2 >= hi or (times[lo2] + add1) + add2 < v:
            hi = min(hi, lo2)
            lo += 1
            break
        lo = lo2 + 1
        step *= 2
    else:
        return lo
    while lo < hi:
        mid = (lo + hi) >> 1
        if (times[mid] + add1) + add2 < v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@jit
def _raise(of, last, need):
    """The keeper ``last`` now stands for a point that needs radius ``need``."""
    if need > of[last, 2]:
        of[last, 2] = need


@jit
def _next_stream(A, B, blk, cur, v, exact, of, last):
    """The first candidate of the block's next stream that can beat v (or None as code
    -1), when ``cur`` is the first candidate of its stream; skipped streams hand their
    radii to the keeper ``last``. ``blk = (a0, a1, b0, b1, mk, tk, rk)``."""
    am, at, ar, _, asuf, _ = A
    bm, bt, br, _, bsuf, _ = B
    a0, a1, b0, b1, mk, tk, rk = blk
    _, _, code, i, j = cur
    ta_last, tb_last = at[a1 - 1] + tk, bt[b1 - 1]
    if a1 - a0 <= b1 - b0:                   # streams i over a, each walking b
        s = i + 1
        if s >= a1:
            return (np.inf, np.inf, -1, -1, -1)
        if exact:
            s = _first_below(at, tk, tb_last, s, a1, v)
        elif ta_last + tb_last >= v:         # the rest of the block is dominated
            _raise(of, last, asuf[s] + (rk - tk) + bsuf[b0] + v)
            s = a1
        else:
            while (at[s] + tk) + tb_last >= v:
                _raise(of, last, ((ar[s] if len(ar) else 0.0) - at[s]) + (rk - tk)
                       + bsuf[b0] + v)
                s += 1
        if s < a1:
            return ((am[s] + mk) + bm[b0], (at[s] + tk) + bt[b0], code, s, b0)
        return (np.inf, np.inf, -1, -1, -1)
    s = j + 1                                # streams j over b, each walking a
    if s >= b1:
        return (np.inf, np.inf, -1, -1, -1)
    if exact:
        s = _first_below(bt, ta_last, 0.0, s, b1, v)
    elif ta_last + tb_last >= v:
        _raise(of, last, bsuf[s] + (rk - tk) + asuf[a0] + v)
        s = b1
    else:
        while ta_last + bt[s] >= v:
            _raise(of, last, ((br[s] if len(br) else 0.0) - bt[s]) + (rk - tk)
                   + asuf[a0] + v)
            s += 1
    if s < b1:
        return ((am[a0] + mk) + bm[s], (at[a0] + tk) + bt[s], code, a0, s)
    return (np.inf, np.inf, -1, -1, -1)


@jit
def _next_in_stream(A, B, blk, cur, v, exact, of, last):
    """The next candidate of ``cur``'s stream that can beat v (or None as code -1);
    skipped candidates hand their radii to the keeper ``last``."""
    am, at, ar, _, asuf, _ = A
    bm, bt, br, _, bsuf, _ = B
    a0, a1, b0, b1, mk, tk, rk = blk
    _, _, code, i, j = cur
    x2 = code - (code & 1)                   # the block's code for later candidates
    if a1 - a0 <= b1 - b0:                   # walking b
        s = j + 1
        if s >= b1:
            return (np.inf, np.inf, -1, -1, -1)
        ta, tb_last = at[i] + tk, bt[b1 - 1]
        ra = (ar[i] if len(ar) else 0.0) + rk
        if exact:
            s = _first_below(bt, ta, 0.0, s, b1, v)
        elif ta + tb_last >= v:              # the rest of the stream is dominated
            _raise(of, last, (ra - ta) + bsuf[s] + v)
            s = b1
        elif not len(br):                    # one radius: the fastest skipped needs most
            s2 = _first_below(bt, ta, 0.0, s, b1, v)
            if s2 > s:
                _raise(of, last, ra + v - (ta + bt[s2 - 1]))
            s = s2
        else:
            while ta + bt[s] >= v:
                _raise(of, last, ra + br[s] + v - (ta + bt[s]))
                s += 1
        if s < b1:
            return ((am[i] + mk) + bm[s], ta + bt[s], x2, i, s)
        return (np.inf, np.inf, -1, -1, -1)
    s = i + 1                                # walking a
    if s >= a1:
        return (np.inf, np.inf, -1, -1, -1)
    tb, ta_last = bt[j], at[a1 - 1] + tk
    rb = (br[j] if len(br) else 0.0) + rk
    if exact:
        s = _first_below(at, tk, tb, s, a1, v)
    elif ta_last + tb >= v:
        _raise(of, last, (rb - tk - tb) + asuf[s] + v)
        s = a1
    elif not len(ar):
        s2 = _first_below(at, tk, tb, s, a1, v)
        if s2 > s:
            _raise(of, last, rb + v - ((at[s2 - 1] + tk) + tb))
        s = s2
    else:
        while (at[s] + tk) + tb >= v:
            _raise(of, last, ar[s] + rb + v - ((at[s] + tk) + tb))
            s += 1
    if s < a1:
        return ((am[s] + mk) + bm[j], (at[s] + tk) + tb, x2, s, j)
    return (np.inf, np.inf, -1, -1, -1)


@jit
def _keep_single(layout, c, T, corner, live, budget, exact, out):
    """Output cell c of a COMBINE of one-point cells (``single_cell``), appended to
    ``out = (of, oi, nout)``; returns (the new out, points found or -1, thinning gap)."""
    of, oi, nout = out
    h, g = single_cell(layout, c, T, corner, live, budget, exact)
    if h < 0:
        return out, h, 0.0
    if nout + h > len(of):
        of, oi = grow_rows(of, oi, nout + h)
    K, P = layout[1], layout[2]
    aoff, boff = T[0][3], T[1][3]
    w0, p0 = c // P, c % P
    for s in range(h):
        x = live[s]
        of[nout, 0], of[nout, 1] = corner[0, x], corner[1, x]
        of[nout, 2] = 0.0 if exact else corner[2, x]
        oi[nout, 0], oi[nout, 1], oi[nout, 2] = aoff[w0 * K + x], boff[p0 * K + x], x
        nout += 1
    return (of, oi, nout), h, g


@jit
def merge_range(layout, bmap, A, B, M, budget, exact):
    """Output cells ``layout[3]`` .. ``layout[4] - 1`` of a merge (see module doc).

    Args:
        layout: int array ``(mode, K, P, c0, c1, single, small, single_max)``; ``bmap``:
            see ``block_of``. single: 1 when every cell of a and b holds one point
            (COMBINE only); then cells whose frontier has at most ``single_max`` points
            are solved by repeated minima. Cells with at most ``small`` candidates
            (<= ``SMALL_BUFFER``) are sorted instead of heaped.
        A, B: tables ``(mem, time, radius, off, suffix, summary)`` (summary: see
            ``_blocks.corners``); M: mid ``(mem, time, radius)`` per block index, or
            three empty arrays.
        budget: seconds; a faster candidate is dropped when its keeper's radius stays
            within it. exact: no radii anywhere and budget 0.

    Returns:
        ``(f, i, off, counts, gap)``: per kept point (memory, time, radius) and (index
        in a, index in b, mid index); the offsets of the cells; candidates examined and
        blocks merged; the largest ``t_keeper - t`` of a faster candidate dropped within
        the budget.
    """
    K, c0, c1 = layout[1], layout[3], layout[4]
    aoff, boff = A[3], B[3]
    mm, mt, mr = M
    ar, br = A[2], B[2]
    of = np.empty((256, 3))
    oi = np.empty((256, 3), dtype=np.int64)
    ooff = np.zeros(c1 - c0 + 1, dtype=np.int64)
    H = new_heap(max(64, 2 * K + 2))
    live = np.empty(K, dtype=np.int64)
    corner = np.empty((7, K))
    small = (np.empty((3, SMALL_BUFFER)), np.empty((3, SMALL_BUFFER), dtype=np.int64),
             np.empty(SMALL_BUFFER, dtype=np.int64), np.empty((3, SMALL_BUFFER)))
    nout = 0
    examined = 0
    merged = 0
    gap = 0.0
    single = layout[0] == COMBINE and layout[5] == 1
    for c in range(c0, c1):
        v = np.inf
        last = -1
        if single:
            (of, oi, nout), h, g = _keep_single(layout, c, (A, B, M), corner, live, budget,
                                                exact, (of, oi, nout))
            if h >= 0:
                examined += K
                merged += K
                gap = max(gap, g)
                ooff[c - c0 + 1] = nout
                continue
        nlive, nf = live_blocks(layout, bmap, c, (A, B, M), exact, live, corner, small[3])
        merged += nlive
        total = 0
        for s in range(nlive):
            acell, bcell, k = block_of(layout, bmap, c, live[s])
            total += (aoff[acell + 1] - aoff[acell]) * (boff[bcell + 1] - boff[bcell])
        if total <= min(layout[6], SMALL_BUFFER):   # few candidates: sort, no heap
            n = small_candidates(layout, bmap, c, (A, B, M), live[:nlive], small,
                                 (exact, nf))
            examined += n
            sf, si, order, _ = small
            for s in range(n):
                x = order[s]
                m, t, r = sf[0, x], sf[1, x], sf[2, x]
                if last >= 0 and (t >= v or r + (v - t) <= budget):
                    if t < v:
                        gap = max(gap, v - t)
                    if not exact:
                        _raise(of, last, r + (v - t))
                    continue
                if nout >= len(of):
                    of, oi = grow_rows(of, oi, nout + 1)
                of[nout, 0], of[nout, 1], of[nout, 2] = m, t, r
                oi[nout, 0], oi[nout, 1], oi[nout, 2] = si[0, x], si[1, x], si[2, x]
                last = nout
                nout += 1
                v = t
            ooff[c - c0 + 1] = nout
            continue
        if nlive > len(H[0]):
            H = grow_heap(H, nlive)
        hn = 0
        for s in range(nlive):
            x = live[s]
            acell, bcell, k = block_of(layout, bmap, c, x)
            push(H, hn, (corner[0, x], corner[3, x], 2 * x + 1, aoff[acell], boff[bcell]))
            hn += 1
        if hn == 0:
            ooff[c - c0 + 1] = nout
            continue
        cur = root(H)
        hn = pop(H, hn)
        while True:
            m, t, code, i, j = cur
            examined += 1
            acell, bcell, k = block_of(layout, bmap, c, code >> 1)
            blk = (aoff[acell], aoff[acell + 1], boff[bcell], boff[bcell + 1],
                   mm[k] if len(mm) else 0.0, mt[k] if len(mt) else 0.0,
                   mr[k] if len(mr) else 0.0)
            nxt1 = (np.inf, np.inf, -1, -1, -1)
            if code & 1:                         # the block's next stream, if it can win
                nxt1 = _next_stream(A, B, blk, cur, v, exact, of, last)
            r = 0.0 if exact else ((ar[i] if len(ar) else 0.0) + blk[6]
                                   + (br[j] if len(br) else 0.0))
            if t >= v:                           # dominated by the last kept point
                if not exact:
                    _raise(of, last, r + (v - t))
            elif last >= 0 and r + (v - t) <= budget:   # thinned: the keeper stands for it
                gap = max(gap, v - t)
                _raise(of, last, r + (v - t))
            elif last >= 0 and of[last, 0] == m:        # same memory, faster: replaces it
                of[last, 2] = max(r, of[last, 2] + t - of[last, 1])
                of[last, 1] = t
                oi[last, 0], oi[last, 1], oi[last, 2] = i, j, k
                v = t
            else:
                if nout >= len(of):
                    of, oi = grow_rows(of, oi, nout + 1)
                of[nout, 0], of[nout, 1], of[nout, 2] = m, t, r
                oi[nout, 0], oi[nout, 1], oi[nout, 2] = i, j, k
                last = nout
                nout += 1
                v = t
            nxt2 = _next_in_stream(A, B, blk, cur, v, exact, of, last)
            # Go on with the least of the successors and the heap, touching the heap
            # only when needed (a block often wins several times in a row).
            if key_lt(nxt2, nxt1):
                nxt1, nxt2 = nxt2, nxt1
            if nxt2[2] >= 0:
                if hn + 2 > len(H[0]):
                    H = grow_heap(H, hn + 2)
                push(H, hn, nxt2)
                hn += 1
            if nxt1[2] >= 0 and (hn == 0 or key_lt(nxt1, root(H))):
                cur = nxt1
                continue
            if nxt1[2] >= 0:
                if hn + 1 > len(H[0]):
                    H = grow_heap(H, hn + 1)
                push(H, hn, nxt1)
                hn += 1
            if hn == 0:
                break
            cur = root(H)
            hn = pop(H, hn)
        ooff[c - c0 + 1] = nout
    return of[:nout], oi[:nout], ooff, np.array([examined, merged]), gap
