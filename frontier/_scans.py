"""Linear scans over sorted frontier lists (numba): Algorithm 1, thinning, suffix maxima.

* ``reduce_sorted`` runs Algorithm 1 on candidates already sorted by (cell, memory, time)
  (equal memories come fastest first, so the later ones are dominated).
* ``thin_cells`` keeps, per cell, a point only when it is at least ``delta`` faster than
  the last kept one.
* ``suffix_max`` gives, per point, the largest ``radius - time`` from it to its cell's
  end (``_kernels`` bounds the radii of skipped candidates with it).
* ``sort_runs`` orders candidates already grouped by cell by (memory, time) within each
  cell, as ``np.lexsort`` would (stably), without sorting the cells again.

Radii move as in ``_kernels``: a dropped point hands its keeper
``max(r_keeper, r + t_keeper - t)``. An empty ``radius`` array means zeros.

Usage::

    keep, radius = reduce_sorted(cell, mem, time, radius)
    keep, radius, gap = thin_cells(time, radius, off, delta)
    suffix = suffix_max(radius, time, off)
    order = sort_runs(start, mem, time)
"""

from __future__ import annotations

import numpy as np

from frontier._jit import jit

__all__ = ["reduce_sorted", "thin_cells", "suffix_max", "sort_runs", "RUN_INSERTION_MAX"]

RUN_INSERTION_MAX = 32   # runs up to this long are sorted by insertion, longer ones merged


@jit
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


@jit
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


@jit
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


@jit
def sort_runs(start, mem, time):
    """The positions of the candidates ordered by (run, memory, time), stably (the
    order ``np.lexsort((time, mem, run))`` gives), where run r holds the positions
    ``start[r] .. start[r + 1] - 1`` (``start`` ascending, from 0 to the number of
    candidates). Short runs (most cells of an edge hold one or two points) are sorted by
    insertion, long ones by two stable merge sorts."""
    order = np.arange(len(mem))
    for r in range(len(start) - 1):
        lo, hi = start[r], start[r + 1]
        if hi - lo <= RUN_INSERTION_MAX:
            for x in range(lo + 1, hi):
                m, t = mem[x], time[x]
                y = x
                while y > lo and (mem[order[y - 1]] > m or (mem[order[y - 1]] == m
                                                            and time[order[y - 1]] > t)):
                    order[y] = order[y - 1]
                    y -= 1
                order[y] = x
        else:
            by_time = np.argsort(time[lo:hi], kind="mergesort")
            by_mem = np.argsort(mem[lo:hi][by_time], kind="mergesort")
            for y in range(hi - lo):
                order[lo + y] = lo + by_time[by_mem[y]]
    return order
