"""The memory buckets in front of the merge heap (``_heap``, ``_kernels._merge_cell``).

The buckets only change how the queue holds its entries, never which candidate comes
next: the frontier, its radii and its strategies must be the same bit for bit with one
bucket (the heap alone) and with many, on graphs with tied memories and without.
"""

import numpy as np
import pytest

from frontier import track
from frontier._heap import (add, bucket_of, clear_buckets, heap_bucket, new_buckets,
                            new_heap, next_bucket, pop, push, refill, root)
from frontier.synthetic import hard_graph, model_graph


def test_bucket_of_never_decreases_with_memory():
    m = np.sort(np.r_[np.random.default_rng(0).uniform(-1, 12, 2000), 0.0, 10.0, np.inf])
    b = [bucket_of(x, 0.0, 7.3, 73) for x in m]
    assert b[0] == 0 and b[-1] == 72 and np.all(np.diff(b) >= 0)
    assert bucket_of(np.nan, 0.0, 7.3, 73) == 72


def test_bucket_lists_give_the_heap_their_entries_and_free_them():
    """Entries listed in a bucket come out of the heap in key order once the bucket is
    heaped, and their list entries are reused (a queue of 3 entries takes 30 keys)."""
    rng = np.random.default_rng(1)
    hf, hx = new_heap(8)
    lf, lx, nxt, head, bits = new_buckets(3, 4)
    clear_buckets(bits, 4, nxt, 3)
    out = []
    for _ in range(10):
        keys = [(float(rng.integers(0, 3)), float(rng.random()), int(c), int(c), 0)
                for c in rng.integers(0, 100, 3)]
        for key in keys:
            add(lf, lx, nxt, head, bits, 2, key)
        assert bits[0] == 4
        n = heap_bucket(lf, lx, nxt, head, bits, 2, hf, hx, 0)
        assert n == 3 and bits[0] == 0
        got = []
        while n:
            got.append(root(hf, hx)[:3])
            n = pop(hf, hx, n)
        assert got == sorted(k[:3] for k in keys)
        out += got
    assert len(out) == 30
    hf, hx = new_heap(8)
    push(hf, hx, 0, (1.0, 2.0, 3, 4, 5))
    assert root(hf, hx) == (1.0, 2.0, 3, 4, 5)


def test_refill_takes_the_next_listed_bucket_across_words():
    """A bit per bucket marks the listed ones (64 to a word, the 64th the sign bit):
    ``refill`` heaps the next listed bucket after the heap's, whichever word holds it,
    and ends on the last bucket when none is left."""
    nb = 300
    lf, lx, nxt, head, bits = new_buckets(8, nb)
    clear_buckets(bits, nb, nxt, 8)
    listed = [0, 5, 63, 64, 127, 128, 250, 299]
    for b in listed[::-1]:
        add(lf, lx, nxt, head, bits, b, (float(b), 0.0, b, 0, 0))
    assert next_bucket(bits, nb, -1) == 0 and next_bucket(bits, nb, 63) == 64
    assert next_bucket(bits, nb, 128) == 250 and next_bucket(bits, nb, 299) == nb - 1
    hf, hx = new_heap(8)
    Q = (lf, lx, nxt, head, bits)
    got, hn, cb = [], 0, 0
    hn, cb = refill(Q, hf, hx, hn, nb, -1)
    while hn:
        got.append((cb, root(hf, hx)[2]))
        hn = pop(hf, hx, hn)
        hn, cb = refill(Q, hf, hx, hn, nb, cb)
    assert got == [(b, b) for b in listed] and cb == nb - 1
    assert not bits.any()
    assert refill(Q, hf, hx, 0, nb, 10) == (0, nb - 1)


def _run(g, monkeypatch, buckets, **kw):
    import frontier._values as values
    monkeypatch.setattr(values, "HEAP_BUCKETS", buckets)
    monkeypatch.setattr(values, "SMALL_CELL_CANDIDATES", 0)
    monkeypatch.setattr(values, "SINGLE_CELL_POINTS", 0)
    return track(g, **kw)


@pytest.mark.parametrize("graph", ["hard", "tied"])
def test_buckets_leave_the_frontier_bit_identical(graph, monkeypatch):
    if graph == "hard":
        g = hard_graph("chain", 8, 16, seed=3, reuse_fraction=0.3)
    else:                           # integer costs: many candidates share a memory
        g = model_graph("transformer", 10, 8, seed=1)
    for kw in ({}, {"epsilon": 0.1}, {"method": "elimination", "epsilon": 0.2}):
        ref = _run(g, monkeypatch, 0, **kw)
        for buckets in (1, 4, 64):
            res = _run(g, monkeypatch, buckets, **kw)
            assert res.points == ref.points, (graph, kw, buckets)
            assert np.array_equal(res.radii, ref.radii)
            assert np.array_equal(res.node_configs, ref.node_configs)
            assert np.array_equal(res.edge_alternatives, ref.edge_alternatives)
        assert res.stats.candidates == ref.stats.candidates
