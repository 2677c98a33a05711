"""The memory buckets in front of the merge heap (``_heap``, ``_kernels._merge_cell``).

The buckets only change how the queue holds its entries, never which candidate comes
next: the frontier, its radii and its strategies must be the same bit for bit with one
bucket (the heap alone) and with many, on graphs with tied memories and without.
"""

import numpy as np
import pytest

from frontier import track
from frontier._heap import (add, bucket_of, clear_buckets, heap_bucket, new_buckets,
                            new_heap, pop, push, root)
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
    lf, lx, nxt, head = new_buckets(3, 4)
    clear_buckets(head, 4, nxt, 3)
    out = []
    for _ in range(10):
        keys = [(float(rng.integers(0, 3)), float(rng.random()), int(c), int(c), 0)
                for c in rng.integers(0, 100, 3)]
        for key in keys:
            add(lf, lx, nxt, head, 2, key)
        n = heap_bucket(lf, lx, nxt, head, 2, hf, hx, 0)
        assert n == 3 and head[2] == -1
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
