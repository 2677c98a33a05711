"""A binary min-heap of merge candidates in five parallel arrays, and growable outputs.

A heap entry is ``(memory, time, code, i, j)``: a candidate point, its block and stream
(``code``, see ``_kernels.merge_range``) and its indices into the two tables. Entries
are ordered by memory, then time, then code, so that equal points come from the lowest
block first and the merge is deterministic.

Usage (inside compiled code)::

    H = new_heap(64)
    n = 0
    if n + 1 > len(H[0]):
        H = grow_heap(H, n + 1)
    push(H, n, (m, t, code, i, j)); n += 1
    top = root(H); n = pop(H, n)
"""

from __future__ import annotations

import numpy as np

from frontier._jit import jit

__all__ = ["key_lt", "root", "push", "pop", "new_heap", "grow_heap", "grow_rows"]


@jit
def _lt(m1, t1, c1, m2, t2, c2):
    """Heap order: memory, then time, then code (lower blocks first)."""
    if m1 != m2:
        return m1 < m2
    if t1 != t2:
        return t1 < t2
    return c1 < c2


@jit
def key_lt(x, y):
    """Whether entry x comes before entry y."""
    return _lt(x[0], x[1], x[2], y[0], y[1], y[2])


@jit
def root(H):
    """The least entry of a non-empty heap."""
    return (H[0][0], H[1][0], H[2][0], H[3][0], H[4][0])


@jit
def push(H, n, key):
    """Adds ``key = (memory, time, code, i, j)`` to the heap ``H`` of n entries (room
    assumed); the entries on the way up move down into the hole."""
    hm, ht, hc, hi, hj = H
    m, t, c = key[0], key[1], key[2]
    while n > 0:
        p = (n - 1) >> 1
        if not _lt(m, t, c, hm[p], ht[p], hc[p]):
            break
        hm[n], ht[n], hc[n], hi[n], hj[n] = hm[p], ht[p], hc[p], hi[p], hj[p]
        n = p
    hm[n], ht[n], hc[n], hi[n], hj[n] = m, t, c, key[3], key[4]


@jit
def pop(H, n):
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


@jit
def new_heap(cap):
    """An empty heap with room for ``cap`` entries."""
    return (np.empty(cap), np.empty(cap), np.empty(cap, dtype=np.int64),
            np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64))


@jit
def grow_heap(H, need):
    """``H`` copied into arrays with room for at least ``need`` entries."""
    G = new_heap(max(2 * len(H[0]), need))
    for x in range(len(H[0])):           # loops, not slices: slices compile slowly
        G[0][x], G[1][x], G[2][x] = H[0][x], H[1][x], H[2][x]
        G[3][x], G[4][x] = H[3][x], H[4][x]
    return G


@jit
def grow_rows(f, i, need):
    """Copies of the output rows (floats, ints) with room for at least ``need`` rows."""
    cap = max(2 * len(f), need)
    f2 = np.empty((cap, f.shape[1]))
    i2 = np.empty((cap, i.shape[1]), dtype=np.int64)
    for x in range(len(f)):
        for y in range(f.shape[1]):
            f2[x, y] = f[x, y]
        for y in range(i.shape[1]):
            i2[x, y] = i[x, y]
    return f2, i2
