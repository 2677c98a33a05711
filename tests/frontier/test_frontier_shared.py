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
    monkeypatch.setattr(shared, "transpose", refuse)
    monkeypatch.setattr(shared, "row_groups", refuse)
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
