"""``combine`` reads b a block of output columns at a time (``COMBINE_BLOCK_POINTS``),
and ``combine_grouped`` hands it b's representative cells in place (``b_cells``)
instead of a gathered copy: a fold of 394 configurations against an 88M-point edge
table (PaSE's Transformer on 64 devices) had copied 62M of its points, then transposed
the copy and laid it out for the kernels, about 6 GB beside the table. The results,
radii and back pointers are the same to the bit."""

import tracemalloc

import numpy as np
import pytest

import frontier._shared as shared
import frontier._values as values
from frontier._shared import combine_grouped, combine_shared
from frontier._table import IDX, Table, gather
from frontier._values import Shape, combine


def _rich(rng, ncells, radius, most=6):
    counts = rng.integers(1, most, ncells)
    off = np.r_[0, np.cumsum(counts)].astype(IDX)
    mem = np.concatenate([np.sort(rng.random(c)) for c in counts])
    time = np.concatenate([np.sort(rng.random(c))[::-1] for c in counts])
    return Table(mem, time, off, rng.random(len(mem)) * 0.01 if radius else None)


def _single(rng, ncells, radius):
    return Table(rng.random(ncells), rng.random(ncells), np.arange(ncells + 1, dtype=IDX),
                 rng.random(ncells) * 0.01 if radius else None)


def _same(x, y):
    tx, ty = x[0], y[0]
    for p, q in zip((tx.mem, tx.time, tx.off, tx.radius, *x[1:]),
                    (ty.mem, ty.time, ty.off, ty.radius, *y[1:])):
        assert (p is None) == (q is None)
        if p is not None:
            assert p.dtype == q.dtype
            np.testing.assert_array_equal(p, q)


def _repeated(rng, W, K, P, radius):
    """a with rows w repeated (two distinct), b with rows k and columns p repeated."""
    a = _rich(rng, 2 * K, radius)
    a = gather(a, np.array([(w % 2) * K + k for w in range(W) for k in range(K)]))[0]
    b = _rich(rng, 2 * 3, radius, most=9)
    b = gather(b, np.array([(k % 2) * 3 + (p % 3) for k in range(K) for p in range(P)]))[0]
    return a, b


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("block", [1, 7, 40])
def test_blocks_of_columns_give_the_same_result_to_the_bit(seed, block, monkeypatch):
    rng = np.random.default_rng(seed)
    W, K, P = 1 + seed % 3, 2 + seed % 5, 3 + seed % 7
    radius = bool(seed % 2)
    kw = [dict(), dict(budget=0.05), dict(rel=0.02)][seed % 3]
    mid = _single(rng, K, radius) if seed % 4 == 0 else None
    post = _single(rng, P, radius) if seed % 4 == 1 else None
    a, b = _rich(rng, W * K, radius), _rich(rng, K * P, radius, most=9)
    ga, gb = _repeated(rng, W, K, P, radius)
    calls = [(combine, a, b), (combine_grouped, ga, gb), (combine_shared, ga, gb)]
    whole = [f(x, y, Shape(W, K, P), mid=mid, post=post, threads=1 + seed % 2, **kw)
             for f, x, y in calls]
    monkeypatch.setattr(values, "COMBINE_BLOCK_POINTS", block)
    for (f, x, y), one in zip(calls, whole):
        _same(f(x, y, Shape(W, K, P), mid=mid, post=post, threads=1 + seed % 2, **kw), one)


def test_grouping_reads_b_in_place(monkeypatch):
    """``combine_grouped`` gathers no copy of b's representative cells."""
    rng = np.random.default_rng(5)
    W, K, P = 2, 6, 8
    a, b = _repeated(rng, W, K, P, True)
    real = shared.gather

    def no_copy_of_b(t, cells):
        assert t is not b, "combine_grouped gathered a copy of b"
        return real(t, cells)
    monkeypatch.setattr(shared, "gather", no_copy_of_b)
    t, ia, ib, kk = combine_grouped(a, b, Shape(W, K, P), rel=0.02)
    assert t.npoints
    cells = np.searchsorted(b.off, ib, side="right") - 1
    np.testing.assert_array_equal(cells // P, kk)                   # b's cell (k, p)
    np.testing.assert_array_equal(cells % P, np.repeat(np.arange(W * P), t.counts()) % P)


def test_a_fold_against_a_large_table_copies_only_a_block_of_it(monkeypatch):
    """A fold (one row of a) against a grouped table of about 490K points (30 distinct
    rows of 40, 380 distinct columns of 400): a block's copy is held at a time, a
    quarter of the table (before: a gathered copy of 71% of it, its transpose and the
    kernels' rows of it, 3.1 times the table; 36.7 against 2.8 MB measured)."""
    rng = np.random.default_rng(8)
    K, P = 40, 400
    a = _rich(rng, K, True)
    b = _rich(rng, 30 * 380, True, most=60)
    b, _ = gather(b, np.array([(k % 30) * 380 + (p % 380) for k in range(K) for p in range(P)]))
    table_bytes = b.mem.nbytes + b.time.nbytes + b.radius.nbytes + b.off.nbytes
    monkeypatch.setattr(values, "COMBINE_BLOCK_POINTS", 1 << 40)
    whole = combine_shared(a, b, Shape(1, K, P), rel=0.02)
    monkeypatch.setattr(values, "COMBINE_BLOCK_POINTS", 20_000)
    tracemalloc.start()
    try:
        got = combine_shared(a, b, Shape(1, K, P), rel=0.02)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _same(got, whole)
    assert b.npoints > 400_000
    assert peak < 0.5 * table_bytes, (peak, table_bytes)
