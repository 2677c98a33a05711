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
is heaped; a bit per bucket, set while its list is not empty, finds it a word (64
buckets) at a time. The entries still come out in exactly the heap's order, but the
heap holds a few entries instead of one per stream: fewer levels, fewer mispredicted
branches.

Usage (inside compiled code)::

    hf, hx = new_heap(64)
    n = 0
    if n + 1 > len(hf):
        hf, hx = grow_heap(hf, hx, n + 1)
    push(hf, hx, n, (m, t, code, i, j)); n += 1
    top = root(hf, hx); n = pop(hf, hx, n)

    Q = new_buckets(cap, nb)       # (lf, lx, nxt, head, bits): entries, links, first, bits
    clear_buckets(Q[4], nb, Q[2], n)              # before each merge: lists empty, n free
    n = enqueue(hf, hx, n, Q, key, lo, scale, nb, cb)  # to the heap, or a later bucket's list
    n, cb = refill(Q, hf, hx, n, nb, cb)          # heap empty: the next listed bucket's list
"""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from frontier._jit import jit, jit_inline, jit_leaf, jit_leaf_inline

__all__ = ["enqueue", "refill", "key_lt", "root", "push", "pop", "new_heap", "grow_heap",
           "grow_rows", "new_buckets", "clear_buckets", "bucket_of", "add", "heap_bucket",
           "next_bucket"]


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


@jit_leaf_inline
def root(hf, hx):
    """The least entry of a non-empty heap."""
    return (hf[0, 0], hf[0, 1], hx[0, 0], hx[0, 1], hx[0, 2])


@jit_leaf_inline
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


@jit_leaf_inline
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
    """Room for ``cap`` listed entries over ``nb`` buckets: ``(lf, lx, nxt, head,
    bits)``, entries as in the heap, the next entry of each entry's list, the first
    entry of each bucket's and a bit per bucket, set while its list is not empty
    (``head`` counts only then). ``nxt[cap]`` heads the list of free entries."""
    return (np.empty((cap, 2)), np.empty((cap, 3), dtype=np.int64),
            np.empty(cap + 1, dtype=np.int64), np.empty(nb, dtype=np.int64),
            np.zeros((nb >> 6) + 1, dtype=np.int64))


@jit_leaf
def clear_buckets(bits, nb, nxt, n):
    """Empties the first nb buckets and frees entries 0 .. n-1 (n >= 1, at most the
    room ``new_buckets`` made): only they can be listed until the next clear. The
    arrays keep the room of the largest merge so far; clearing all of it for every
    later, smaller cell once took a third of the merge time."""
    for w in range((nb >> 6) + 1):
        bits[w] = 0
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


@jit_leaf_inline
def add(lf, lx, nxt, head, bits, b, key):
    """Adds ``key`` to bucket b's list (a free entry assumed)."""
    e = nxt[len(nxt) - 1]
    nxt[len(nxt) - 1] = nxt[e]
    lf[e, 0], lf[e, 1] = key[0], key[1]
    lx[e, 0], lx[e, 1], lx[e, 2] = key[2], key[3], key[4]
    bit = np.int64(1) << (b & 63)
    nxt[e] = head[b] if bits[b >> 6] & bit else -1
    bits[b >> 6] |= bit
    head[b] = e


@jit_leaf_inline
def heap_bucket(lf, lx, nxt, head, bits, b, hf, hx, n):
    """Moves bucket b's entries into the heap of n entries (room assumed) and frees
    them; returns the heap's new size."""
    bit = np.int64(1) << (b & 63)
    if not bits[b >> 6] & bit:
        return n
    bits[b >> 6] &= ~bit
    e = head[b]
    free = len(nxt) - 1
    while e >= 0:
        push(hf, hx, n, (lf[e, 0], lf[e, 1], lx[e, 0], lx[e, 1], lx[e, 2]))
        n += 1
        e2 = nxt[e]
        nxt[e] = nxt[free]
        nxt[free] = e
        e = e2
    return n


@jit_leaf_inline
def enqueue(hf, hx, hn, Q, key, lo, scale, nb, cb):
    """Queues ``key``: into the heap of hn entries when its bucket is the heap's (cb) or
    an earlier one, else into its bucket's list (``Q = (lf, lx, nxt, head, bits)``);
    returns the heap's new size."""
    b = bucket_of(key[0], lo, scale, nb)
    if b <= cb:
        push(hf, hx, hn, key)
        return hn + 1
    add(Q[0], Q[1], Q[2], Q[3], Q[4], b, key)
    return hn


@jit_leaf_inline
def next_bucket(bits, nb, b):
    """The first bucket after b whose list is not empty, else nb - 1."""
    b += 1
    if b >= nb:
        return nb - 1
    w = b >> 6
    word = bits[w] & (np.int64(-1) << (b & 63))
    last = (nb - 1) >> 6
    while word == 0 and w < last:
        w += 1
        word = bits[w]
    if word == 0:
        return nb - 1
    return (w << 6) + trailing_zeros(word)


@jit_leaf_inline
def refill(Q, hf, hx, hn, nb, cb):
    """When the heap is empty, heaps the next non-empty bucket's list
    (``Q = (lf, lx, nxt, head, bits)``); returns ``(hn, cb)``, the heap's size and the
    bucket it now holds (hn 0: all drained, cb the last bucket)."""
    if hn == 0 and cb < nb - 1:
        cb = next_bucket(Q[4], nb, cb)
        hn = heap_bucket(Q[0], Q[1], Q[2], Q[3], Q[4], cb, hf, hx, hn)
    return hn, cb
