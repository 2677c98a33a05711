"""A binary min-heap of merge candidates in two arrays, bucket lists in front of it,
and growable output rows.

A heap entry is ``(memory, time, code, i, j)``: a candidate point, its block and stream
(``code``, see ``_kernels._merge_cell``) and its indices into the two tables; ``hf``
holds (memory, time) and ``hx`` (code, i, j) per entry. Entries are ordered by memory,
then time, then code, so that equal points come from the lowest block first and the
merge is deterministic.

A merge takes its candidates in ascending memory and every entry it adds has at least
the memory of the one it took, so the queue is *monotone*: it can keep only the entries
of the current memory bucket in the heap and the later ones in unsorted lists, one per
bucket (``Buckets``: the bucket of a memory m is ``floor((m - lo) * scale)``, which
never decreases with m). When the heap runs empty, the next non-empty bucket's list
is heaped. The entries still come out in exactly the heap's order, but the heap holds a
few entries instead of one per stream: fewer levels, fewer mispredicted branches.

Usage (inside compiled code)::

    hf, hx = new_heap(64)
    n = 0
    if n + 1 > len(hf):
        hf, hx = grow_heap(hf, hx, n + 1)
    push(hf, hx, n, (m, t, code, i, j)); n += 1
    top = root(hf, hx); n = pop(hf, hx, n)

    lf, lx, nxt, head = new_buckets(cap, nb)     # lists: entries, links, first per bucket
    clear_buckets(head, nb, nxt, n)               # before each merge: lists empty, n free
    b = bucket_of(m, lo, scale, nb)
    add(lf, lx, nxt, head, b, key)                # (room assumed: <= cap entries listed)
    n = heap_bucket(lf, lx, nxt, head, b, hf, hx, n)   # bucket b's list into the heap
"""

from __future__ import annotations

import numpy as np

from frontier._jit import jit, jit_inline, jit_leaf

__all__ = ["enqueue", "refill", "key_lt", "root", "push", "pop", "new_heap", "grow_heap", "grow_rows",
           "new_buckets", "clear_buckets", "bucket_of", "add", "heap_bucket"]


@jit_inline
def _lt(m1, t1, c1, m2, t2, c2):
    """Heap order: memory, then time, then code (lower blocks first)."""
    if m1 != m2:
        return m1 < m2
    if t1 != t2:
        return t1 < t2
    return c1 < c2


@jit_inline
def key_lt(x, y):
    """Whether entry x comes before entry y."""
    return _lt(x[0], x[1], x[2], y[0], y[1], y[2])


@jit_leaf
def root(hf, hx):
    """The least entry of a non-empty heap."""
    return (hf[0, 0], hf[0, 1], hx[0, 0], hx[0, 1], hx[0, 2])


@jit_leaf
def push(hf, hx, n, key):
    """Adds ``key = (memory, time, code, i, j)`` to the heap of n entries (room
    assumed); the entries on the way up move down into the hole."""
    m, t, c = key[0], key[1], key[2]
    while n > 0:
        p = (n - 1) >> 1
        if not _lt(m, t, c, hf[p, 0], hf[p, 1], hx[p, 0]):
            break
        hf[n, 0], hf[n, 1] = hf[p, 0], hf[p, 1]
        hx[n, 0], hx[n, 1], hx[n, 2] = hx[p, 0], hx[p, 1], hx[p, 2]
        n = p
    hf[n, 0], hf[n, 1] = m, t
    hx[n, 0], hx[n, 1], hx[n, 2] = c, key[3], key[4]


@jit_leaf
def pop(hf, hx, n):
    """Removes the root of a heap of n entries; returns the new size."""
    n -= 1
    if n == 0:
        return n
    m, t, c, i, j = hf[n, 0], hf[n, 1], hx[n, 0], hx[n, 1], hx[n, 2]
    x = 0
    while True:
        y = 2 * x + 1
        if y >= n:
            break
        if y + 1 < n and _lt(hf[y + 1, 0], hf[y + 1, 1], hx[y + 1, 0],
                             hf[y, 0], hf[y, 1], hx[y, 0]):
            y += 1
        if not _lt(hf[y, 0], hf[y, 1], hx[y, 0], m, t, c):
            break
        hf[x, 0], hf[x, 1] = hf[y, 0], hf[y, 1]
        hx[x, 0], hx[x, 1], hx[x, 2] = hx[y, 0], hx[y, 1], hx[y, 2]
        x = y
    hf[x, 0], hf[x, 1] = m, t
    hx[x, 0], hx[x, 1], hx[x, 2] = c, i, j
    return n


@jit
def new_heap(cap):
    """An empty heap with room for ``cap`` entries: ``(hf, hx)``."""
    return np.empty((cap, 2)), np.empty((cap, 3), dtype=np.int64)


@jit
def grow_heap(hf, hx, need):
    """The heap copied into arrays with room for at least ``need`` entries."""
    return grow_rows(hf, hx, need)


@jit
def grow_rows(f, i, need):
    """Copies of two row arrays (floats, ints) with room for at least ``need`` rows
    (loops, not slice assignment: that compiles numba's string formatting too)."""
    cap = max(2 * len(f), need)
    f2 = np.empty((cap, f.shape[1]))
    i2 = np.empty((cap, i.shape[1]), dtype=np.int64)
    for x in range(len(f)):
        for y in range(f.shape[1]):
            f2[x, y] = f[x, y]
        for y in range(i.shape[1]):
            i2[x, y] = i[x, y]
    return f2, i2


@jit
def new_buckets(cap, nb):
    """Room for ``cap`` listed entries over ``nb`` buckets: ``(lf, lx, nxt, head)``,
    entries as in the heap, the next entry of each entry's list and the first entry of
    each bucket's (-1: none). ``nxt[cap]`` heads the list of free entries."""
    return (np.empty((cap, 2)), np.empty((cap, 3), dtype=np.int64),
            np.empty(cap + 1, dtype=np.int64), np.empty(nb, dtype=np.int64))


@jit_leaf
def clear_buckets(head, nb, nxt, n):
    """Empties the first nb buckets and frees entries 0 .. n-1 (n >= 1, at most the
    room ``new_buckets`` made): only they can be listed until the next clear. The
    arrays keep the room of the largest merge so far; clearing all of it for every
    later, smaller cell once took a third of the merge time."""
    for b in range(nb):
        head[b] = -1
    for e in range(n - 1):
        nxt[e] = e + 1
    nxt[n - 1] = -1
    nxt[len(nxt) - 1] = 0


@jit_inline
def bucket_of(m, lo, scale, nb):
    """The bucket of memory m: ``floor((m - lo) * scale)`` within [0, nb - 1]. Never
    smaller for a larger m (both steps round monotonically)."""
    x = (m - lo) * scale
    if not x < nb - 1:                       # also inf and nan: the last bucket
        return nb - 1
    if x <= 0.0:
        return 0
    return int(x)


@jit_leaf
def add(lf, lx, nxt, head, b, key):
    """Adds ``key`` to bucket b's list (a free entry assumed)."""
    e = nxt[len(nxt) - 1]
    nxt[len(nxt) - 1] = nxt[e]
    lf[e, 0], lf[e, 1] = key[0], key[1]
    lx[e, 0], lx[e, 1], lx[e, 2] = key[2], key[3], key[4]
    nxt[e] = head[b]
    head[b] = e


@jit_leaf
def heap_bucket(lf, lx, nxt, head, b, hf, hx, n):
    """Moves bucket b's entries into the heap of n entries (room assumed) and frees
    them; returns the heap's new size."""
    e = head[b]
    free = len(nxt) - 1
    while e >= 0:
        push(hf, hx, n, (lf[e, 0], lf[e, 1], lx[e, 0], lx[e, 1], lx[e, 2]))
        n += 1
        e2 = nxt[e]
        nxt[e] = nxt[free]
        nxt[free] = e
        e = e2
    head[b] = -1
    return n


@jit_leaf
def enqueue(hf, hx, hn, lf, lx, nxt, head, key, lo, scale, nb, cb):
    """Queues ``key``: into the heap of hn entries when its bucket is the heap's (cb) or
    an earlier one, else into its bucket's list; returns the heap's new size."""
    b = bucket_of(key[0], lo, scale, nb)
    if b <= cb:
        push(hf, hx, hn, key)
        return hn + 1
    add(lf, lx, nxt, head, b, key)
    return hn


@jit_leaf
def refill(lf, lx, nxt, head, hf, hx, hn, nb, cb):
    """While the heap is empty and later buckets remain, heaps the next one; returns
    ``(hn, cb)``, the heap's size and the bucket it now holds (hn 0: all drained)."""
    while hn == 0 and cb < nb - 1:
        cb += 1
        if head[cb] >= 0:
            hn = heap_bucket(lf, lx, nxt, head, cb, hf, hx, hn)
    return hn, cb

