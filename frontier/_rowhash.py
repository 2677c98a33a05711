"""Compiled grouping of identical rows of a frontier table (numba), for
``_table.row_groups``.

A row of an R x C table is cells ``r*C .. r*C + C - 1``: its points per cell and the
bit patterns of its memories, times and radii (a column, cells ``c, C + c, ...``, the
same with other strides). ``group_rows`` hashes every row in one
pass, compares rows of equal hash bit for bit, and numbers the groups in the order of
their first rows: the same groups, numbers and representatives as comparing the rows'
bytes one by one.

These functions call no compiled function of another file, so numba's own disk cache
(stamped with this file alone) stays right; they are not in ``_jit.KERNEL_FILES``.

Usage::

    gid, reps = group_rows(off, R, C, (C, 1), cols)   # cols: (mem, time[, radius]) as bits
    gid, reps = group_rows(off, C, R, (1, C), cols)   # the columns of the same table
"""

from __future__ import annotations

import numpy as np

from frontier._jit import jit

__all__ = ["group_rows"]

_PRIME = np.uint64(0x100000001B3)
_BASIS = np.uint64(0xCBF29CE484222325)


@jit
def _row_hashes(off, R, C, stride, cols):
    """A 64-bit hash per row of (points per cell, each column's bits), FNV-1a-like on
    whole words; row r is cells ``r*stride[0] + j*stride[1]``, j < C."""
    out = np.empty(R, dtype=np.uint64)
    for r in range(R):
        h = _BASIS
        for j in range(C):
            c = r * stride[0] + j * stride[1]
            h = (h ^ np.uint64(off[c + 1] - off[c])) * _PRIME
            for q in range(len(cols)):
                col = cols[q]
                for x in range(off[c], off[c + 1]):
                    h = (h ^ np.uint64(col[x])) * _PRIME
        out[r] = h
    return out


@jit
def _rows_equal(off, C, stride, r, s, cols):
    """Whether rows r and s have the same points per cell and the same bits in every
    column."""
    for j in range(C):
        c, d = r * stride[0] + j * stride[1], s * stride[0] + j * stride[1]
        n = off[c + 1] - off[c]
        if off[d + 1] - off[d] != n:
            return False
        for q in range(len(cols)):
            col = cols[q]
            for x in range(n):
                if col[off[c] + x] != col[off[d] + x]:
                    return False
    return True


@jit
def group_rows(off, R, C, stride, cols):
    """``(gid, reps)``: the group of every row (cells ``r*stride[0] + j*stride[1]``,
    j < C), and the first row of each group, groups numbered in the order of their first
    rows."""
    h = _row_hashes(off, R, C, stride, cols)
    order = np.argsort(h, kind="mergesort")        # equal hashes keep the row order
    first = np.empty(R, dtype=np.int64)            # the first row identical to each
    found = np.empty(R, dtype=np.int64)            # first rows of the current hash
    i = 0
    while i < R:
        j = i
        while j < R and h[order[j]] == h[order[i]]:
            j += 1
        n = 0
        for x in range(i, j):
            r = order[x]
            first[r] = r
            for q in range(n):
                if _rows_equal(off, C, stride, found[q], r, cols):
                    first[r] = found[q]
                    break
            if first[r] == r:
                found[n] = r
                n += 1
        i = j
    gid = np.empty(R, dtype=np.int64)
    reps = np.empty(R, dtype=np.int64)
    ng = 0
    for r in range(R):
        if first[r] == r:
            reps[ng] = r
            gid[r] = ng
            ng += 1
        else:
            gid[r] = gid[first[r]]
    return gid, reps[:ng]
