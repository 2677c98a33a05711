"""Compiled frontier kernels (numba): merge-style products, unions and reductions.

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
ones (bounded through the suffix maxima, which are exact for whole stream ends). A
faster candidate is also dropped when that keeps p's radius within ``budget + rel *
t_p`` (``rel`` > 0: an error relative to each point's own time). With
``exact=True`` (no radii, budget 0) the radius bookkeeping is skipped; streams jump over
dominated candidates by galloping search (also with radii, where the candidates skipped
share one radius).

A table is passed as ``(vals, off, summary)``: ``vals`` has a row per point (memory,
time, radius, suffix maximum of radius - time; the last two zero when exact), ``off``
the CSR offsets of its cells, ``summary`` rows over the cells (``_blocks.corners``).
``mid`` has rows memory, time, radius per block index (no columns: none). Every kernel
releases the GIL, so threads can run cell ranges side by side, and is cached on disk
(``_jit``).

Usage (``_values`` prepares the arguments)::

    f, i, off, counts, gap = merge_range(layout, bmap, (A, B, mid), budget, rel, exact,
                                         grid)
"""

from __future__ import annotations

import numpy as np

from frontier._blocks import (COMBINE, GROUPS, PRODUCT, UNION, block_in, cell_row,
                              live_blocks, single_cell, small_candidates)
from frontier._heap import (bucket_of, clear_buckets, enqueue, grow_heap, grow_rows, key_lt,
                            new_buckets, new_heap, pop, refill, root)
from frontier._jit import jit, jit_inline, jit_leaf, jit_leaf_inline

__all__ = ["merge_range", "grid_table", "COMBINE", "PRODUCT", "UNION", "GROUPS", "SMALL_BUFFER"]

SMALL_BUFFER = 256   # candidates a cell may have to be sorted instead of heaped (at most)
MAX_BUCKETS = 1 << 16   # memory buckets in front of a cell's heap (at most)
LEAPS = 2               # leader points a stream's next candidate is checked against
U_SAMPLES = 4           # b points per block that sample U in _stream_caps (about)
CAP_STRIDE = 16         # grid intervals a stream's cut is first sought by (_stream_caps)


@jit_inline
def _first_below(vals, add1, add2, lo, hi, v):
    """The first x in [lo, hi) with ``(vals[x, 1] + add1) + add2 < v`` (times
    descending), else hi. Gallops from lo: the answer is usually close, and nearby rows
    are in cache. The sum is formed as the candidates' times are, bit for bit."""
    step = 1
    while lo < hi and not (vals[lo, 1] + add1) + add2 < v:
        lo2 = lo + step
        if lo2 >= hi or (vals[lo2, 1] + add1) + add2 < v:
            hi = min(hi, lo2)
            lo += 1
            break
        lo = lo2 + 1
        step *= 2
    else:
        return lo
    while lo < hi:
        mid = (lo + hi) >> 1
        if (vals[mid, 1] + add1) + add2 < v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@jit_leaf_inline
def _raise(of, last, need):
    """The keeper ``last`` now stands for a point that needs radius ``need``."""
    if need > of[last, 2]:
        of[last, 2] = need


@jit_leaf_inline
def _next_stream(av, bv, blk, cur, v, exact, cap, capped):
    """The first candidate of the block's next stream that can beat v (code -1: none),
    when ``cur`` is the first candidate of its stream, and the radius the streams
    skipped on the way need from the keeper (-inf: none). ``blk = (a0, a1, b0, b1, mid
    memory, time, radius, a has radii, b has radii)``. When ``capped``, streams walking
    a that ``cap`` ends at their first row (wholly covered, ``_stream_caps``) are passed
    over."""
    a0, a1, b0, b1, mk, tk, rk = blk[0], blk[1], blk[2], blk[3], blk[4], blk[5], blk[6]
    code, i, j = cur[2], cur[3], cur[4]
    ta_last, tb_last = av[a1 - 1, 1] + tk, bv[b1 - 1, 1]
    need = -np.inf
    if a1 - a0 <= b1 - b0:                   # streams i over a, each walking b
        s = i + 1
        if s >= a1:
            return (np.inf, np.inf, -1, -1, -1), need
        if exact:
            s = _first_below(av, tk, tb_last, s, a1, v)
        elif ta_last + tb_last >= v:         # the rest of the block is dominated
            need = av[s, 3] + (rk - tk) + bv[b0, 3] + v
            s = a1
        else:
            while (av[s, 1] + tk) + tb_last >= v:
                need = max(need, (av[s, 2] - av[s, 1]) + (rk - tk) + bv[b0, 3] + v)
                s += 1
        if s < a1:
            return ((av[s, 0] + mk) + bv[b0, 0], (av[s, 1] + tk) + bv[b0, 1], code, s,
                    b0), need
        return (np.inf, np.inf, -1, -1, -1), need
    s = j + 1                                # streams j over b, each walking a
    if s >= b1:
        return (np.inf, np.inf, -1, -1, -1), need
    if exact:
        s = _first_below(bv, ta_last, 0.0, s, b1, v)
    elif ta_last + tb_last >= v:
        need = bv[s, 3] + (rk - tk) + av[a0, 3] + v
        s = b1
    else:
        while ta_last + bv[s, 1] >= v:
            need = max(need, (bv[s, 2] - bv[s, 1]) + (rk - tk) + av[a0, 3] + v)
            s += 1
    if capped:                               # later streams are faster: they beat v too
        while s < b1 and cap[s] <= a0:
            s += 1
    if s < b1:
        return ((av[a0, 0] + mk) + bv[s, 0], (av[a0, 1] + tk) + bv[s, 1], code, a0,
                s), need
    return (np.inf, np.inf, -1, -1, -1), need


@jit_leaf_inline
def _next_in_stream(av, bv, blk, cur, v, exact, aend):
    """The next candidate of ``cur``'s stream that can beat v (code -1: none), and the
    radius the candidates skipped on the way need from the keeper (-inf: none). A
    stream walking a ends at row ``aend`` (<= a1: its rest retired, ``_stream_caps``)."""
    a0, a1, b0, b1, mk, tk, rk = blk[0], blk[1], blk[2], blk[3], blk[4], blk[5], blk[6]
    code, i, j = cur[2], cur[3], cur[4]
    x2 = code - (code & 1)                   # the block's code for later candidates
    need = -np.inf
    if a1 - a0 <= b1 - b0:                   # walking b
        s = j + 1
        if s >= b1:
            return (np.inf, np.inf, -1, -1, -1), need
        ta, tb_last = av[i, 1] + tk, bv[b1 - 1, 1]
        ra = av[i, 2] + rk
        if exact:
            s = _first_below(bv, ta, 0.0, s, b1, v)
        elif ta + tb_last >= v:              # the rest of the stream is dominated
            need = (ra - ta) + bv[s, 3] + v
            s = b1
        elif not blk[8]:                     # one radius: the fastest skipped needs most
            s2 = _first_below(bv, ta, 0.0, s, b1, v)
            if s2 > s:
                need = ra + v - (ta + bv[s2 - 1, 1])
            s = s2
        else:
            n1 = -np.inf                     # two running maxima: half the wait on max
            while ta + bv[s, 1] >= v:
                need = max(need, ra + bv[s, 2] + v - (ta + bv[s, 1]))
                s += 1
                if not ta + bv[s, 1] >= v:
                    break
                n1 = max(n1, ra + bv[s, 2] + v - (ta + bv[s, 1]))
                s += 1
            need = max(need, n1)
        if s < b1:
            return ((av[i, 0] + mk) + bv[s, 0], ta + bv[s, 1], x2, i, s), need
        return (np.inf, np.inf, -1, -1, -1), need
    a1 = aend
    s = i + 1                                # walking a
    if s >= a1:
        return (np.inf, np.inf, -1, -1, -1), need
    tb, ta_last = bv[j, 1], av[a1 - 1, 1] + tk
    rb = bv[j, 2] + rk
    if exact:
        s = _first_below(av, tk, tb, s, a1, v)
    elif ta_last + tb >= v:                  # the rest of the stream is dominated
        if a1 < blk[1]:                      # cut: the suffix maxima would run on past
            most = -np.inf                   # the cut, onto faster points
            for x in range(s, a1):
                most = max(most, av[x, 2] - av[x, 1])
            need = (rb - tk - tb) + most + v
        else:
            need = (rb - tk - tb) + av[s, 3] + v
        s = a1
    elif not blk[7]:
        s2 = _first_below(av, tk, tb, s, a1, v)
        if s2 > s:
            need = rb + v - ((av[s2 - 1, 1] + tk) + tb)
        s = s2
    else:
        n1 = -np.inf
        while (av[s, 1] + tk) + tb >= v:
            need = max(need, av[s, 2] + rb + v - ((av[s, 1] + tk) + tb))
            s += 1
            if not (av[s, 1] + tk) + tb >= v:
                break
            n1 = max(n1, av[s, 2] + rb + v - ((av[s, 1] + tk) + tb))
            s += 1
        need = max(need, n1)
    if s < a1:
        return ((av[s, 0] + mk) + bv[j, 0], (av[s, 1] + tk) + tb, x2, s, j), need
    return (np.inf, np.inf, -1, -1, -1), need


@jit_leaf_inline
def _leader_point(av, bv, lblk, lcur, m):
    """The leader's last candidate with memory at most m, from its kept candidate
    ``lcur`` on (along its stream; ``lblk`` its block, as ``blk`` of ``_merge_cell``):
    ``(memory, time, radius, code)``; memory inf when even the kept one has more."""
    a0, a1, b0, b1, mk, tk, rk = lblk[0], lblk[1], lblk[2], lblk[3], lblk[4], lblk[5], lblk[6]
    code, i, j = lcur[2], lcur[3], lcur[4]
    if lcur[0] > m:
        return np.inf, np.inf, 0.0, code
    if a1 - a0 <= b1 - b0:                   # the leader walks b
        ma = av[i, 0] + mk
        step = 1                             # gallop: the answer is usually close
        while j + step < b1 and ma + bv[j + step, 0] <= m:
            j += step
            step *= 2
        while step > 1:
            step >>= 1
            if j + step < b1 and ma + bv[j + step, 0] <= m:
                j += step
        c = code if j == lcur[4] else code - (code & 1)
        return (ma + bv[j, 0], (av[i, 1] + tk) + bv[j, 1], (av[i, 2] + rk) + bv[j, 2], c)
    mb = bv[j, 0]
    step = 1
    while i + step < a1 and (av[i + step, 0] + mk) + mb <= m:
        i += step
        step *= 2
    while step > 1:
        step >>= 1
        if i + step < a1 and (av[i + step, 0] + mk) + mb <= m:
            i += step
    c = code if i == lcur[3] else code - (code & 1)
    return ((av[i, 0] + mk) + mb, (av[i, 1] + tk) + bv[j, 1], (av[i, 2] + rk) + bv[j, 2], c)


@jit_leaf_inline
def _leap(av, bv, lblk, lcur, blk, x, exact, aend):
    """``x``, the next candidate of a stream of block ``blk``, or a later one of that
    stream: the candidates the leader's point y (``_leader_point`` at x's memory)
    stands for are left out. y comes before them in the merge's order, is no slower,
    and (unless ``exact``) its own radius covers theirs (``r + t_y - t <= r_y``), so
    whatever kept point stands for y stands for them too; exact, they would have been
    dominated. Up to ``LEAPS`` leader points, each a run of the stream; code -1: the
    stream's rest is left out. A stream walking a ends at row ``aend``."""
    a0, a1, b0, b1, mk, tk, rk = blk[0], blk[1], blk[2], blk[3], blk[4], blk[5], blk[6]
    walk_b = a1 - a0 <= b1 - b0
    for _ in range(LEAPS):
        my, ty, ry, cy = _leader_point(av, bv, lblk, lcur, x[0])
        if not (ty <= x[1] and (my < x[0] or (my == x[0] and (ty < x[1] or cy < x[2])))):
            return x
        i, j = x[3], x[4]
        if walk_b:
            ta, ra, ma = av[i, 1] + tk, av[i, 2] + rk, av[i, 0] + mk
            while j < b1 and ta + bv[j, 1] >= ty and (
                    exact or (ra + bv[j, 2]) + (ty - (ta + bv[j, 1])) <= ry):
                j += 1
            if j == x[4]:
                return x
            if j >= b1:
                return (np.inf, np.inf, -1, -1, -1)
            x = (ma + bv[j, 0], ta + bv[j, 1], x[2], i, j)
        else:
            tb, rb, mb = bv[j, 1], bv[j, 2], bv[j, 0]
            while i < aend and (av[i, 1] + tk) + tb >= ty and (
                    exact or ((av[i, 2] + rk) + rb) + (ty - ((av[i, 1] + tk) + tb)) <= ry):
                i += 1
            if i == x[3]:
                return x
            if i >= aend:
                return (np.inf, np.inf, -1, -1, -1)
            x = ((av[i, 0] + mk) + mb, (av[i, 1] + tk) + tb, x[2], i, j)
    return x


@jit_leaf
def _cell_size(layout, bmap, c, offs, live, nlive):
    """``(candidates, streams)`` of output cell c's blocks ``live[:nlive]``: the
    products' sizes, and their shorter sides' (``offs``: a's and b's cell offsets)."""
    aoff, boff = offs
    wq = cell_row(layout, c)
    total = 0
    streams = 0
    for s in range(nlive):
        acell, bcell, k = block_in(layout, bmap, c, wq, live[s])
        na, nb = aoff[acell + 1] - aoff[acell], boff[bcell + 1] - boff[bcell]
        total += na * nb
        streams += min(na, nb)
    return total, streams


@jit_leaf
def _merge_cell(where, T, buf, state):
    """The heap merge of output cell c's live blocks into ``of``, ``oi`` from row
    ``nout`` on (room assumed, for outputs and queue entries).

    ``where = (layout, bmap, c, live, corner, cap, capped)`` (``cap``: where each
    stream walking a ends, by its b row, when ``capped``; ``_stream_caps``);
    ``T = (A, B, mid)``;
    ``buf = ((hf, hx), (lf, lx, nxt, head, bits), of, oi)``: the heap and the bucket lists
    in front of it (``_heap``); ``state = (nout, (budget, rel), exact, (lo, scale, nb))``:
    the buckets (one: the heap alone). Returns (the new nout, candidates examined, the
    largest thinning gap). Separate from ``merge_range``, and with each table's values
    in one array, so that numba counts no references in the loop: it does when an
    array is reassigned in a loop, taken out of a tuple, or passed to a function it
    inlines itself (``_jit``); the atomic counts took most of the time before.
    """
    layout, bmap, c, live, corner, cap, capped = where
    (hf, hx), Q, of, oi = buf
    nout, (budget, rel), exact, (lo, scale, nb) = state
    av, aoff, bv, boff, mid = T[0][0], T[0][1], T[1][0], T[1][1], T[2]
    has_mid, a_rad, b_rad = mid.shape[1] > 0, layout[8], layout[9]
    wq = cell_row(layout, c)
    examined = 0
    gap = 0.0
    v = np.inf
    last = -1
    hn = 0
    cb = 0                                       # the bucket the heap holds
    for s in range(len(live)):
        x = live[s]
        acell, bcell, k = block_in(layout, bmap, c, wq, x)
        key = (corner[0, x], corner[3, x], 2 * x + 1, aoff[acell], boff[bcell])
        hn = enqueue(hf, hx, hn, Q, key, lo, scale, nb, cb)
    hn, cb = refill(Q, hf, hx, hn, nb, cb)
    if hn == 0:
        return nout, examined, gap
    cur = root(hf, hx)
    hn = pop(hf, hx, hn)
    lblk = (aoff[0], aoff[0], boff[0], boff[0], 0.0, 0.0, 0.0, a_rad, b_rad)
    lcur = cur
    lead = False                                 # a kept point's stream leads
    while True:
        m, t, code, i, j = cur
        examined += 1
        acell, bcell, k = block_in(layout, bmap, c, wq, code >> 1)
        mk, tk, rk = 0.0, 0.0, 0.0
        if has_mid:
            mk, tk, rk = mid[0, k], mid[1, k], mid[2, k]
        blk = (aoff[acell], aoff[acell + 1], boff[bcell], boff[bcell + 1], mk, tk, rk,
               a_rad, b_rad)
        nxt1 = (np.inf, np.inf, -1, -1, -1)
        if code & 1:                             # the block's next stream, if it can win
            nxt1, need = _next_stream(av, bv, blk, cur, v, exact, cap, capped)
            if last >= 0 and need > of[last, 2]:
                of[last, 2] = need
        r = 0.0 if exact else (av[i, 2] + rk) + bv[j, 2]
        if t >= v:                               # dominated by the last kept point
            if not exact:
                _raise(of, last, r + (v - t))
        elif last >= 0 and r + (v - t) <= budget + rel * v:   # thinned: the keeper stands for it
            gap = max(gap, v - t)
            _raise(of, last, r + (v - t))
        elif last >= 0 and of[last, 0] == m:         # same memory, faster: replaces it
            of[last, 2] = max(r, of[last, 2] + t - of[last, 1])
            of[last, 1] = t
            oi[last, 0], oi[last, 1], oi[last, 2] = i, j, k
            v = t
            lblk, lcur, lead = blk, cur, True
        else:
            of[nout, 0], of[nout, 1], of[nout, 2] = m, t, r
            oi[nout, 0], oi[nout, 1], oi[nout, 2] = i, j, k
            last = nout
            nout += 1
            v = t
            lblk, lcur, lead = blk, cur, True
        aend = blk[1]
        if capped and blk[1] - blk[0] > blk[3] - blk[2]:   # a stream walking a: its cap
            aend = min(aend, cap[j])
        nxt2, need = _next_in_stream(av, bv, blk, cur, v, exact, aend)
        if last >= 0 and need > of[last, 2]:
            of[last, 2] = need
        if lead and nxt2[2] >= 0 and (lcur[2] >> 1 != code >> 1 or lcur[3] != i
                                      or lcur[4] != j):
            nxt2 = _leap(av, bv, lblk, lcur, blk, nxt2, exact, aend)
        # Go on with the least of the successors and the queue, touching the queue only
        # when needed (a block often wins several times in a row). An entry of the
        # heap's bucket or before goes to the heap, a later one to its bucket's list.
        if key_lt(nxt2, nxt1):
            nxt1, nxt2 = nxt2, nxt1
        if nxt2[2] >= 0:
            hn = enqueue(hf, hx, hn, Q, nxt2, lo, scale, nb, cb)
        if nxt1[2] >= 0:
            if bucket_of(nxt1[0], lo, scale, nb) <= cb and (hn == 0 or key_lt(nxt1, root(hf, hx))):
                cur = nxt1                       # before every entry of the queue
                continue
            hn = enqueue(hf, hx, hn, Q, nxt1, lo, scale, nb, cb)
        hn, cb = refill(Q, hf, hx, hn, nb, cb)
        if hn == 0:
            break
        cur = root(hf, hx)
        hn = pop(hf, hx, hn)
    return nout, examined, gap


@jit
def _keep_single(layout, c, T, corner, live, budget, rel, exact, out):
    """Output cell c of a COMBINE of one-point cells (``single_cell``), appended to
    ``out = (of, oi, nout)``; returns (the new out, points found or -1, thinning gap)."""
    of, oi, nout = out
    h, g = single_cell(layout, c, T, corner, live, budget, rel, exact)
    if h < 0:
        return out, h, 0.0
    if nout + h > len(of):
        of, oi = grow_rows(of, oi, nout + h)
    K, P = layout[1], layout[2]
    aoff, boff = T[0][1], T[1][1]
    w0, p0 = c // P, c % P
    for s in range(h):
        x = live[s]
        of[nout, 0], of[nout, 1] = corner[0, x], corner[1, x]
        of[nout, 2] = 0.0 if exact else corner[2, x]
        oi[nout, 0], oi[nout, 1], oi[nout, 2] = aoff[w0 * K + x], boff[p0 * K + x], x
        nout += 1
    return (of, oi, nout), h, g


@jit
def _sorted_cell(layout, bmap, c, T, nlive, live, small, state):
    """Output cell c from its few candidates, sorted (``small_candidates``), appended
    to ``state = (of, oi, nout, (budget, rel), exact, nf)``; returns (of, oi, nout, examined,
    gap)."""
    of, oi, nout, (budget, rel), exact, nf = state
    n = small_candidates(layout, bmap, c, T, live[:nlive], small, (exact, nf))
    if nout + n > len(of):
        of, oi = grow_rows(of, oi, nout + n)
    nout, gap = _keep_sorted((of, oi, nout), small, n, (budget, rel), exact)
    return of, oi, nout, n, gap


@jit_leaf
def _keep_sorted(out, small, n, bounds, exact):
    """Algorithm 1 with thinning on the n sorted candidates of ``small`` (see
    ``_sorted_cell``), appended to ``out = (of, oi, nout)`` (room assumed); returns
    (the new nout, gap)."""
    of, oi, nout = out
    budget, rel = bounds
    sf, si, order, _ = small
    gap = 0.0
    v = np.inf
    last = -1
    for s in range(n):
        x = order[s]
        m, t, r = sf[0, x], sf[1, x], sf[2, x]
        if last >= 0 and (t >= v or r + (v - t) <= budget + rel * v):
            if t < v:
                gap = max(gap, v - t)
            if not exact:
                _raise(of, last, r + (v - t))
            continue
        of[nout, 0], of[nout, 1], of[nout, 2] = m, t, r
        oi[nout, 0], oi[nout, 1], oi[nout, 2] = si[0, x], si[1, x], si[2, x]
        last = nout
        nout += 1
        v = t
    return nout, gap


@jit
def grid_table(vals, off, lo, delta, G, exact):
    """``(tt, tu)``, each (cells x G+2), for ``_stream_caps``: per cell of a table
    (``vals``, ``off`` as the kernels take it) and grid memory ``lo + g * delta`` (g <= G),
    the time of the cell's last point with no more memory than that (its staircase
    there: inf when none) and that point's time - radius (``exact``: its time). Column
    G+1 of ``tt`` is the cell's least time (inf when empty)."""
    n = len(off) - 1
    tt = np.full((n, G + 2), np.inf)
    tu = np.full((n, G + 2), np.inf)
    for c in range(n):
        x0, x1 = off[c], off[c + 1]
        x = x0
        for g in range(G + 1):
            m = lo + g * delta
            while x < x1 and vals[x, 0] <= m:
                x += 1
            if x > x0:
                tt[c, g] = vals[x - 1, 1]
                tu[c, g] = vals[x - 1, 1] if exact else vals[x - 1, 1] - vals[x - 1, 2]
        if x1 > x0:
            tt[c, G + 1] = vals[x1 - 1, 1]
            tu[c, G + 1] = tu[c, G]
    return tt, tu


@jit_leaf
def _stream_caps(where, T, grid, U, cap, exact, budget):
    """Retires the tails of output cell c's streams that walk a: writes to ``cap`` (by
    the stream's b row) the row of a where each ends; returns False when it did not
    (then no stream is capped). ``where = (layout, bmap, c, live)``; ``grid = (tt, tu,
    (lo, delta, G))`` from ``grid_table`` over a's cells; ``U`` scratch; ``budget``:
    the most grid rows of U to fill (times the grid's length).

    The output memory is cut into intervals ``[lo + h*delta, lo + (h+1)*delta)``. U[h]
    is the least ``t - r`` (exact: t) of the grid's sample candidates (a sample point of
    a live block's a cell with about ``U_SAMPLES`` of its b points: any real candidates
    make a valid U, and these cost a grid row each) that have memory below
    ``lo + (h-1)*delta``, i.e. at least delta below every candidate of interval h. A
    stream's candidates in interval h have time at least its staircase at the grid
    point above them and radius at most a's largest plus the b point's and mid's; when
    even so ``t - r`` is at least U[h] (exact: t above U[h]), some candidate z with less
    memory has ``r + t_z - t <= r_z`` (exact: is faster), so z stands for every
    candidate of the interval as the keepers stand for the points they drop (see
    ``f0_covers``). A stream is cut where every interval from there on is covered; z
    has less memory than the candidate it covers, so chains of such covers end at a
    candidate that is merged. Exact, the kept points are those of the full merge."""
    layout, bmap, c, live = where
    tt, tu, prm = grid
    lo, delta, G = prm[0], prm[1], int(prm[2])
    av, aoff, bv, boff, mid = T[0][0], T[0][1], T[1][0], T[1][1], T[2]
    asum = T[0][2]
    has_mid = mid.shape[1] > 0
    wq = cell_row(layout, c)
    maxdm = 0.0
    nbp = 0
    for s in range(len(live)):
        acell, bcell, k = block_in(layout, bmap, c, wq, live[s])
        mk = mid[0, k] if has_mid else 0.0
        for j in range(boff[bcell], boff[bcell + 1]):
            maxdm = max(maxdm, bv[j, 0] + mk)
        nbj = boff[bcell + 1] - boff[bcell]
        stp = max(1, nbj // U_SAMPLES)              # as the rows of U are filled below
        nbp += (nbj + stp - 1) // stp
    if not (maxdm >= 0.0 and maxdm / delta < len(U)):
        return False
    H = G + int(maxdm / delta) + 4
    if H > len(U) or nbp * H > budget:
        return False
    for h in range(H):
        U[h] = np.inf
    for s in range(len(live)):
        acell, bcell, k = block_in(layout, bmap, c, wq, live[s])
        mk, tk, rk = 0.0, 0.0, 0.0
        if has_mid:
            mk, tk, rk = mid[0, k], mid[1, k], mid[2, k]
        nbj = boff[bcell + 1] - boff[bcell]
        stp = max(1, nbj // U_SAMPLES)
        for j in range(boff[bcell], boff[bcell + 1], stp):
            dm = bv[j, 0] + mk
            sy = int(np.ceil(dm / delta)) + 1
            if exact:
                add1, add2 = tk, bv[j, 1]
            else:
                add1, add2 = tk - rk, bv[j, 1] - bv[j, 2]
            h0 = max(sy, 0)
            h1 = min(H, sy + G + 1)
            for h in range(h0, h1):         # g = h - sy <= G
                val = (tu[acell, h - sy] + add1) + add2
                U[h] = min(U[h], val)
            if h1 < H:
                val = (tu[acell, G] + add1) + add2
                for h in range(h1, H):
                    U[h] = min(U[h], val)
    for s in range(len(live)):
        acell, bcell, k = block_in(layout, bmap, c, wq, live[s])
        a0, a1 = aoff[acell], aoff[acell + 1]
        b0, b1 = boff[bcell], boff[bcell + 1]
        if a1 - a0 <= b1 - b0:                  # its streams walk b: not capped
            continue
        mk, tk, rk = 0.0, 0.0, 0.0
        if has_mid:
            mk, tk, rk = mid[0, k], mid[1, k], mid[2, k]
        for j in range(b0, b1):
            dm = bv[j, 0] + mk
            f = int(np.floor(dm / delta))
            tb = bv[j, 1]
            marg = 0.0 if exact else (asum[6, acell] + rk) + bv[j, 2]
            h = H - 1
            while h >= 0:
                g2 = h + 2 - f
                if g2 < 0:                      # no point of the stream this low
                    h = -1
                    break
                lb = (tt[acell, min(g2, G + 1)] + tk) + tb
                # Intervals h-STRIDE+1 .. h at once: lb and U fall as h grows, so the
                # interval's own lb is at least this one and its U at most U[h2].
                h2 = h - CAP_STRIDE + 1
                if h2 >= 0 and (lb > U[h2] if exact else lb - marg >= U[h2]):
                    h = h2 - 1
                    continue
                if exact:
                    if not lb > U[h]:
                        break
                elif not lb - marg >= U[h]:
                    break
                h -= 1
            if h + 1 >= H:
                cap[j] = a1
                continue
            m0 = lo + (h + 2) * delta           # every candidate from here is covered
            x0, x1 = a0, a1                     # the first row of a at or above m0
            while x0 < x1:
                xm = (x0 + x1) >> 1
                if (av[xm, 0] + mk) + bv[j, 0] >= m0:
                    x1 = xm
                else:
                    x0 = xm + 1
            cap[j] = x0
    return True


@jit
def _buckets(want, corner, live, nlive):
    """``(nb, lo, scale)``: about ``want`` buckets (at least 1, at most
    ``MAX_BUCKETS``) over the memory of the live blocks' candidates, from their least
    (``corner`` row 0) to their largest (row 4)."""
    lo, hi = np.inf, -np.inf
    for s in range(nlive):
        lo = min(lo, corner[0, live[s]])
        hi = max(hi, corner[4, live[s]])
    nb = max(1, min(want, MAX_BUCKETS))
    scale = 0.0
    if nb > 1 and hi > lo and hi - lo < np.inf:
        scale = nb / (hi - lo)
    if not scale < np.inf:                   # a span too small to divide: one bucket
        scale = 0.0
    if scale == 0.0:
        nb = 1
    return nb, lo, scale


@jit_leaf
def _warm_rows(T, layout, c, first):
    """Reads the rows of b's cells that COMBINE's output cell c multiplies (and of a's,
    at a new row w of output cells or when ``first``), a cache line at a time, in order;
    returns their sum of memories, to be kept. The merge then finds them in cache: it
    takes its blocks in the order of their candidates' memory, and a miss at each
    block's first row took about a fifth of a node elimination's CPU time. b's rows
    change with every cell; a's stay for P cells, the same row w."""
    K, P = layout[1], layout[2]
    w = c // P
    q = c - w * P
    s = 0.0
    bv, boff = T[1][0], T[1][1]
    for r in range(boff[q * K], boff[q * K + K], 2):     # two rows of four per line
        s += bv[r, 0]
    if q == 0 or first:
        av, aoff = T[0][0], T[0][1]
        for r in range(aoff[w * K], aoff[w * K + K], 2):
            s += av[r, 0]
    return s


@jit
def merge_range(layout, bmap, T, budget, rel, exact, grid):
    """Output cells ``layout[3]`` .. ``layout[4] - 1`` of a merge (see module doc).

    Args:
        layout: int array ``(mode, K, P, c0, c1, single, small, single_max, a_rad,
            b_rad, buckets)``; ``bmap``: see ``block_of``. grid: ``(tt, tu, (lo,
            delta, G))`` from ``grid_table`` over a's cells, to retire streams' tails
            (``_stream_caps``; COMBINE only), or G = 0: none. single: 1 when every cell of a and b
            holds one point (COMBINE only); then cells whose frontier has at most
            ``single_max`` points are solved by repeated minima. Cells with at most
            ``small`` candidates (<= ``SMALL_BUFFER``) are sorted instead of heaped.
            a_rad, b_rad: 1 when a's (b's) points have radii. buckets: memory buckets
            per stream and block of a heaped cell (``_heap``; 0: the heap alone).
        T: ``(A, B, mid)``, tables ``(vals, off, summary)`` and the mid rows (see the
            module doc).
        budget, rel: a faster candidate is dropped when its keeper's radius stays
            within ``budget + rel * (the keeper's time)`` (seconds). exact: no radii
            anywhere, budget 0 and rel 0.

    Returns:
        ``(f, i, off, counts, gap)``: per kept point (memory, time, radius) and (index
        in a, index in b, mid index); the offsets of the cells; candidates examined and
        blocks merged; the largest ``t_keeper - t`` of a faster candidate dropped within
        the budget.
    """
    K, c0, c1 = layout[1], layout[3], layout[4]
    aoff, boff = T[0][1], T[1][1]
    of = np.empty((256, 3))
    oi = np.empty((256, 3), dtype=np.int64)
    ooff = np.zeros(c1 - c0 + 1, dtype=np.int64)
    H = new_heap(max(64, 2 * K + 2))
    Q = new_buckets(len(H[0]), 64)
    live = np.empty(K, dtype=np.int64)
    stair = np.empty((3, 2 * K))                # scratch of F0 (``f0_minima``)
    corner = np.empty((7, K))
    warm = np.zeros(1)                          # what _warm_rows read (kept: not dead code)
    small = (np.empty((3, SMALL_BUFFER)), np.empty((3, SMALL_BUFFER), dtype=np.int64),
             np.empty(SMALL_BUFFER, dtype=np.int64), np.empty((3, SMALL_BUFFER)))
    G = int(grid[2][2])
    use_grid = layout[0] == COMBINE and G > 0
    U = np.empty(4 * G + 8 if use_grid else 1)
    cap = np.empty(len(T[1][0]) if use_grid else 1, dtype=np.int64)
    nout = 0
    examined = 0
    merged = 0
    gap = 0.0
    single = layout[0] == COMBINE and layout[5] == 1
    for c in range(c0, c1):
        if single:
            (of, oi, nout), h, g = _keep_single(layout, c, T, corner, live, budget, rel,
                                                exact, (of, oi, nout))
            if h >= 0:
                examined += K
                merged += K
                gap = max(gap, g)
                ooff[c - c0 + 1] = nout
                continue
        if layout[0] == COMBINE:
            warm[0] += _warm_rows(T, layout, c, c == c0)
        nlive, nf = live_blocks(layout, bmap, c, T, exact, live, corner, (small[3], stair))
        merged += nlive
        total, streams = _cell_size(layout, bmap, c, (aoff, boff), live, nlive)
        if total <= min(layout[6], SMALL_BUFFER):   # few candidates: sort, no heap
            of, oi, nout, n, g = _sorted_cell(layout, bmap, c, T, nlive, live, small,
                                              (of, oi, nout, (budget, rel), exact, nf))
        else:
            # Room for every candidate's output, and a heap entry per stream and block.
            if nout + total > len(of):
                of, oi = grow_rows(of, oi, nout + total)
            if streams + nlive + 2 > len(H[0]):
                H = grow_heap(H[0], H[1], streams + nlive + 2)
            nb, lo, scale = _buckets(layout[10] * (streams + nlive), corner, live, nlive)
            if len(H[0]) > len(Q[0]) or nb > len(Q[3]):
                Q = new_buckets(len(H[0]), max(nb, len(Q[3])))
            clear_buckets(Q[4], nb, Q[2], streams + nlive + 2)
            capped = False
            if use_grid:                            # grid steps: at most twice the candidates
                capped = _stream_caps((layout, bmap, c, live[:nlive]), T, grid, U, cap,
                                      exact, 2 * total)
            nout, n, g = _merge_cell((layout, bmap, c, live[:nlive], corner, cap, capped), T,
                                     (H, Q, of, oi), (nout, (budget, rel), exact, (lo, scale, nb)))
        examined += n
        gap = max(gap, g)
        ooff[c - c0 + 1] = nout
    return of[:nout], oi[:nout], ooff, np.array([examined, merged]), gap
