"""``reduce_cells`` on candidates grouped by cell (an edge's CSR) sorts within the cells
(``_scans.sort_runs``) and must give exactly what the general lexsort path gives."""

import numpy as np

from frontier._scans import RUN_INSERTION_MAX, sort_runs
from frontier._values import reduce_cells


def _candidates(rng, sizes):
    cell = np.repeat(np.arange(len(sizes)), sizes)
    mem = rng.integers(0, 5, len(cell)).astype(float)      # integer: many ties
    time = rng.integers(0, 5, len(cell)).astype(float)
    return cell, mem, time


def test_sort_runs_orders_as_lexsort_with_ties_short_and_long_runs():
    rng = np.random.default_rng(0)
    sizes = np.r_[rng.integers(1, 4, 50), [RUN_INSERTION_MAX + 1, 200], 0, 1, 0]
    cell, mem, time = _candidates(rng, sizes)
    start = np.r_[0, np.cumsum(sizes)]
    assert np.array_equal(sort_runs(start, mem, time), np.lexsort((time, mem, cell)))


def test_grouped_cells_reduce_as_the_general_path():
    rng = np.random.default_rng(1)
    sizes = rng.integers(0, 60, 40)
    cell, mem, time = _candidates(rng, sizes)
    rad = rng.random(len(cell))
    idx, off, r = reduce_cells(cell, mem, time, 41, rad)      # grouped: sort_runs
    perm = rng.permutation(len(cell))
    idx2, off2, r2 = reduce_cells(cell[perm], mem[perm], time[perm], 41, rad[perm])
    assert np.array_equal(off, off2)
    assert np.array_equal(mem[idx], mem[perm][idx2]) and np.array_equal(time[idx],
                                                                       time[perm][idx2])
    assert np.array_equal(r, r2)
    assert len(idx) < len(cell)
