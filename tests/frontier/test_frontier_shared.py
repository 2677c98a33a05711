"""``cell_product_shared`` with a table of one point per cell (an original edge beside a
node elimination's rich edge table): the other table shifted cell by cell, without the
grouping's transposes and gathers, which copied tables of 100M+ points."""

import numpy as np
import pytest

import frontier._shared as shared
from frontier._shared import cell_product_shared
from frontier._table import IDX, Table
from frontier._values import cell_product


def _rich(rng, ncells, radius=True):
    counts = rng.integers(1, 6, ncells)
    off = np.r_[0, np.cumsum(counts)].astype(IDX)
    mem = np.concatenate([np.sort(rng.random(c)) for c in counts])
    time = np.concatenate([np.sort(rng.random(c))[::-1] for c in counts])
    return Table(mem, time, off, rng.random(len(mem)) * 0.01 if radius else None)


def _single(rng, ncells, radius=False):
    return Table(rng.random(ncells), rng.random(ncells), np.arange(ncells + 1, dtype=IDX),
                 rng.random(ncells) * 0.01 if radius else None)


@pytest.mark.parametrize("single_side", ["a", "b"])
@pytest.mark.parametrize("kw", [dict(), dict(budget=0.05), dict(rel=0.02)])
def test_a_one_point_side_shifts_the_other_without_grouping(single_side, kw, monkeypatch):
    rng = np.random.default_rng(3)
    R, C = 6, 5
    rich, one = _rich(rng, R * C), _single(rng, R * C, radius=True)
    a, b = (one, rich) if single_side == "a" else (rich, one)

    def refuse(*args, **kwargs):
        raise AssertionError("grouped (copied) a product that is a shift")
    monkeypatch.setattr(shared, "col_groups", refuse)
    monkeypatch.setattr(shared, "row_groups", refuse)
    monkeypatch.setattr(shared, "gather", refuse)
    t, ia, ib = cell_product_shared(a, b, R, C, **kw)
    cells = np.repeat(np.arange(R * C), rich.counts())
    assert np.array_equal(t.off, rich.off)
    np.testing.assert_array_equal(t.mem, rich.mem + one.mem[cells])
    np.testing.assert_array_equal(t.time, rich.time + one.time[cells])
    np.testing.assert_array_equal(t.radius, rich.radius + one.radius[cells])
    np.testing.assert_array_equal(a.mem[ia] + b.mem[ib], t.mem)     # back pointers
    exact, _, _ = cell_product(a, b, np.arange(R * C))
    np.testing.assert_array_equal(exact.mem, t.mem)


def test_two_rich_tables_are_still_grouped():
    """Rows repeated in both tables: the grouping runs (and gives the plain product)."""
    rng = np.random.default_rng(4)
    R, C = 6, 4
    row_a, row_b = _rich(rng, C, radius=False), _rich(rng, C, radius=False)

    def tile(t):
        return Table(np.tile(t.mem, R), np.tile(t.time, R),
                     np.r_[0, np.cumsum(np.tile(t.counts(), R))].astype(IDX))
    a, b = tile(row_a), tile(row_b)
    calls = []
    real = shared.row_groups
    shared_row_groups = lambda *args: calls.append(1) or real(*args)   # noqa: E731
    mp = pytest.MonkeyPatch()
    mp.setattr(shared, "row_groups", shared_row_groups)
    try:
        t, _, _ = cell_product_shared(a, b, R, C)
    finally:
        mp.undo()
    assert calls, "two tables of repeated rows were not grouped"
    plain, _, _ = cell_product(a, b, np.arange(R * C))
    np.testing.assert_array_equal(plain.mem, t.mem)
    np.testing.assert_array_equal(plain.time, t.time)


def test_union_groups_split_over_threads_give_the_same_table(monkeypatch):
    """``union_groups`` estimates each output cell's candidates and splits the cells over
    threads as ``combine`` does: the same points, radii and back pointers as one thread."""
    import frontier._values as values
    from frontier._values import Shape, union_groups
    rng = np.random.default_rng(5)
    W, K = 7, 9
    a, mid = _rich(rng, W * K), _single(rng, K, radius=True)
    group = rng.integers(0, 4, K)
    group = np.unique(group, return_inverse=True)[1].astype(IDX)
    G = int(group.max()) + 1
    one = union_groups(a, Shape(W, K, G), group, mid=mid)
    seen = []
    chunks = values._chunks

    def spy(spec, threads):
        seen.append((spec.work, chunks(spec, threads)))
        return seen[-1][1]
    monkeypatch.setattr(values, "_THREAD_MIN_WORK", 0)
    monkeypatch.setattr(values, "_chunks", spy)
    two = union_groups(a, Shape(W, K, G), group, mid=mid, threads=2)
    work, ranges = seen[-1]
    assert len(ranges) > 1                          # the cells were split
    want = [sum(a.counts()[w * K + k] for k in range(K) if group[k] == g)
            for w in range(W) for g in range(G)]
    assert work.tolist() == want                    # a's points in each cell's blocks
    for x, y in zip(one, two):
        if isinstance(x, Table):
            for f in ("mem", "time", "off", "radius"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
        else:
            np.testing.assert_array_equal(x, y)


def test_split_merges_reuse_one_pool_of_threads(monkeypatch):
    """Merges split over threads run on worker threads started once per thread count
    (starting threads per merge cost more than the small merges gained)."""
    import threading

    import frontier._values as values
    from frontier._values import Shape, union_groups
    rng = np.random.default_rng(6)
    a, group = _rich(rng, 5 * 8), np.arange(8, dtype=IDX) % 3
    monkeypatch.setattr(values, "_THREAD_MIN_WORK", 0)
    workers = []
    run = values.K_.merge_range

    def spy(*args):
        workers.append(threading.current_thread())
        return run(*args)
    monkeypatch.setattr(values.K_, "merge_range", spy)
    union_groups(a, Shape(5, 8, 3), group, threads=2)
    union_groups(a, Shape(5, 8, 3), group, threads=2)
    # both calls ran on the kept pool's threads (the pool starts them lazily, so the first
    # call may have used one of the two and the second the other)
    pool_threads = set(values._pool(2)._threads)
    assert workers and threading.main_thread() not in workers
    assert set(workers) <= pool_threads and len(pool_threads) <= 2
    assert values._pool(2) is values._pool(2) and values._pool(2) is not values._pool(3)


@pytest.mark.parametrize("block", [1, 3, 1 << 22])
@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_product_maps_pointers_block_by_block(block, threads, monkeypatch):
    """The grouped product's back pointers, mapped a block of points at a time (blocks
    that start and end inside cells, and empty cells), are the plain product's; so are
    its values, whether the kernels' rows came in one part or several."""
    rng = np.random.default_rng(5)
    R, C = 6, 4
    rows = [_rich(rng, C, radius=False) for _ in range(2)]

    def tile(t, empty):
        counts = np.tile(t.counts(), R)
        keep = np.ones(len(counts), bool)
        keep[empty] = False                  # an empty cell in every repeated row
        pick = np.repeat(np.tile(keep.reshape(R, C)[0], R), counts)
        counts = np.where(np.tile(keep.reshape(R, C)[0], R), counts, 0)
        return Table(np.tile(t.mem, R)[pick], np.tile(t.time, R)[pick],
                     np.r_[0, np.cumsum(counts)].astype(IDX))
    a, b = tile(rows[0], 1), tile(rows[1], 2)
    monkeypatch.setattr(shared, "POINTER_BLOCK", block)
    t, ia, ib = cell_product_shared(a, b, R, C, threads=threads)
    plain, pa, pb = cell_product(a, b, np.arange(R * C), threads=threads)
    np.testing.assert_array_equal(plain.off, t.off)
    np.testing.assert_array_equal(plain.mem, t.mem)
    np.testing.assert_array_equal(plain.time, t.time)
    np.testing.assert_array_equal(pa, ia)
    np.testing.assert_array_equal(pb, ib)
    assert ia.dtype == ib.dtype == IDX and t.mem.flags.c_contiguous
