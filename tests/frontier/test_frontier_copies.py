"""The compiled cell copies and row grouping (``_copies``, ``_rowhash``) against plain
numpy references: ``gather`` point for point, and ``row_groups`` as comparing every
row's bytes (the groups, their numbers and their first rows)."""

import numpy as np
import pytest

from frontier._table import IDX, Table, col_groups, gather, row_groups, transpose
from frontier._values import _kernel_table


def _table(rng, counts, radius):
    off = np.r_[0, np.cumsum(counts)].astype(IDX)
    n = int(off[-1])
    return Table(rng.normal(size=n), rng.normal(size=n), off,
                 rng.random(n) if radius else None)


def _gather_reference(a, cells):
    idx = np.concatenate([np.arange(a.off[c], a.off[c + 1]) for c in cells] + [np.zeros(0, int)])
    off = np.r_[0, np.cumsum(a.counts()[cells])]
    return idx, off


@pytest.mark.parametrize("radius", [False, True])
def test_gather_matches_numpy(radius):
    rng = np.random.default_rng(3)
    for _ in range(50):
        a = _table(rng, rng.integers(0, 4, rng.integers(1, 12)), radius)
        cells = rng.integers(0, a.ncells, rng.integers(0, 15))
        got, idx = gather(a, cells)
        want_idx, want_off = _gather_reference(a, cells)
        assert np.array_equal(idx, want_idx) and np.array_equal(got.off, want_off)
        assert np.array_equal(got.mem, a.mem[want_idx])
        assert np.array_equal(got.time, a.time[want_idx])
        assert (got.radius is None) == (not radius)
        if radius:
            assert np.array_equal(got.radius, a.radius[want_idx])


def test_transpose_moves_cells():
    rng = np.random.default_rng(4)
    a = _table(rng, rng.integers(0, 3, 12), True)
    t, idx = transpose(a, 3, 4)
    for r in range(3):
        for c in range(4):
            s = slice(t.off[c * 3 + r], t.off[c * 3 + r + 1])
            assert np.array_equal(t.mem[s], a.mem[a.off[r * 4 + c]:a.off[r * 4 + c + 1]])
            assert np.array_equal(idx[s], np.arange(a.off[r * 4 + c], a.off[r * 4 + c + 1]))


def _groups_reference(t, R, C):
    seen, gid, reps = {}, [], []
    for r in range(R):
        o = t.off[r * C:(r + 1) * C + 1]
        key = (o - o[0]).tobytes() + b"".join(
            x[o[0]:o[-1]].tobytes() for x in (t.mem, t.time, t.radius) if x is not None)
        g = seen.setdefault(key, len(seen))
        if g == len(reps):
            reps.append(r)
        gid.append(g)
    return gid, reps


@pytest.mark.parametrize("radius", [False, True])
def test_row_groups_match_byte_comparison(radius):
    rng = np.random.default_rng(5)
    grouped = 0
    for _ in range(300):
        R, C = int(rng.integers(1, 9)), int(rng.integers(1, 5))
        kinds = [rng.integers(0, 3, C) for _ in range(3)]
        counts = np.concatenate([kinds[rng.integers(3)] for _ in range(R)])
        t = _table(rng, counts, radius)
        n = t.npoints                                          # few distinct values
        t.mem, t.time = rng.integers(0, 2, n) * 1.0, rng.integers(0, 2, n) * 1.0
        if radius:
            t.radius = rng.integers(0, 2, n) * 0.5
        gid, reps = row_groups(t, R, C)
        want_gid, want_reps = _groups_reference(t, R, C)
        assert gid.tolist() == want_gid and reps.tolist() == want_reps
        gid, reps = col_groups(t, R, C)                  # the columns, without a copy
        want_gid, want_reps = _groups_reference(transpose(t, R, C)[0], C, R)
        assert gid.tolist() == want_gid and reps.tolist() == want_reps
        grouped += len(want_reps) < R
    assert grouped > 50                    # the cases do have equal rows


def test_row_groups_tell_apart_what_bytes_tell_apart():
    # the same points split over cells differently; -0.0 against 0.0; one radius
    off = np.array([0, 1, 2, 2, 4, 4, 6], dtype=IDX)
    t = Table(np.array([1.0, 2.0, 1.0, 2.0, 1.0, 2.0]), np.array([0.0, 0.0, 0.0, 0.0, -0.0, 0.0]),
              off)
    gid, reps = row_groups(t, 3, 2)
    assert gid.tolist() == [0, 1, 2] and reps.tolist() == [0, 1, 2]
    t2 = Table(np.ones(4), np.zeros(4), np.array([0, 2, 4], dtype=IDX), np.array([0, 0, 0, 1e-300]))
    assert row_groups(t2, 2, 1)[0].tolist() == [0, 1]
    t3 = Table(np.ones(4), np.zeros(4), np.array([0, 2, 4], dtype=IDX), np.zeros(4))
    assert row_groups(t3, 2, 1)[0].tolist() == [0, 0]


@pytest.mark.parametrize("exact", [True, False])
def test_kernel_rows_are_columns_and_suffix_maxima(exact):
    rng = np.random.default_rng(6)
    a = _table(rng, rng.integers(0, 5, 9), not exact)
    vals, off, _ = _kernel_table(a, exact)
    assert np.array_equal(vals[:, 0], a.mem) and np.array_equal(vals[:, 1], a.time)
    assert np.array_equal(vals[:, 2], a.radii())
    want = np.zeros(a.npoints)
    if not exact:
        for c in range(a.ncells):
            for x in range(a.off[c], a.off[c + 1]):
                want[x] = max(a.radius[y] - a.time[y] for y in range(x, a.off[c + 1]))
    assert np.array_equal(vals[:, 3], want)


def test_rows_of_equal_hash_are_compared_bit_for_bit():
    # group_rows compares rows only when their hashes are equal; a collision is too rare
    # to provoke, so the comparison is checked on its own
    from frontier._rowhash import _rows_equal
    off = np.array([0, 1, 3, 4, 6, 7, 9], dtype=IDX)
    mem = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    time = np.array([5.0, 4.0, 3.0, 5.0, 4.0, 3.0, 5.0, 4.0, 2.0])
    cols = (mem.view(np.int64), time.view(np.int64))
    assert _rows_equal(off, 2, (2, 1), 0, 1, cols)
    assert not _rows_equal(off, 2, (2, 1), 0, 2, cols)            # the time of the last point
    assert not _rows_equal(off, 2, (2, 1), 0, 2, cols[1:])
    assert _rows_equal(off, 2, (2, 1), 0, 2, cols[:1])
    split = np.array([0, 2, 3, 4, 6], dtype=IDX)          # same points, other cells
    assert not _rows_equal(split, 2, (2, 1), 0, 1, cols)


@pytest.mark.parametrize("many", ["a", "b"])
@pytest.mark.parametrize("radius", ["a", "b", "both", "none"])
def test_translated_adds_each_pair_and_reads_a_missing_radius_as_zero(many, radius):
    from frontier._values import translated
    rng = np.random.default_rng(7)
    C = 6
    rich = _table(rng, rng.integers(0, 4, C), radius in (many, "both"))
    one = _table(rng, np.ones(C + 2, dtype=int), radius in ("both",) + (("a", "b")[many == "a"],))
    bmap = rng.permutation(C + 2)[:C] if many == "a" else np.arange(C)
    if many == "a":
        a, b = rich, one
    else:
        a, b = Table(one.mem[:C], one.time[:C], one.off[:C + 1],
                     None if one.radius is None else one.radius[:C]), rich
    t, ia, ib = translated(a, b, bmap)
    for c in range(C):
        s = slice(t.off[c], t.off[c + 1])
        walk_a = np.arange(a.off[c], a.off[c + 1])             # every point, in order
        walk_b = np.arange(b.off[bmap[c]], b.off[bmap[c] + 1])
        if many == "a":
            assert ia[s].tolist() == walk_a.tolist() and set(ib[s]) <= set(walk_b)
        else:
            assert ib[s].tolist() == walk_b.tolist() and set(ia[s]) <= set(walk_a)
    np.testing.assert_array_equal(t.mem, a.mem[ia] + b.mem[ib])
    np.testing.assert_array_equal(t.time, a.time[ia] + b.time[ib])
    if radius == "none":
        assert t.radius is None
    else:
        np.testing.assert_array_equal(t.radius, a.radii()[ia] + b.radii()[ib])
