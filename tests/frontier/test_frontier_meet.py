"""``_meet.meet``: the union over configurations of two frontiers' products, in one merge
(where LDP's two folded halves meet). Exact, it must give the frontier of every pair's
sum; with a budget, every exact point must be covered by a returned point with no more
memory within that point's radius, and no radius may pass the budget. Split over
threads, the same. End to end, ``track`` on paths long enough to meet stays exact."""

import numpy as np
import pytest

from frontier import track
from frontier._meet import meet
from frontier._table import IDX, Table
from frontier.brute_force import brute_force, cost_of
from frontier.synthetic import hard_graph


def _frontier(m, t):
    """The Pareto points of (m, t), memory ascending, time strictly descending."""
    order = np.lexsort((t, m))
    keep, best = [], np.inf
    for x in order:
        if t[x] < best:
            keep.append(x)
            best = t[x]
    return np.array(keep, dtype=IDX)


def _table(rng, K, n, radius):
    mems, times, off = [], [], [0]
    for _ in range(K):
        m = rng.random(int(rng.integers(1, n))) * 10
        t = rng.random(len(m)) * 10
        keep = _frontier(m, t)
        mems.append(m[keep])
        times.append(t[keep])
        off.append(off[-1] + len(keep))
    mem, time = np.concatenate(mems), np.concatenate(times)
    rad = rng.random(len(mem)) * radius if radius else None
    return Table(mem, time, np.array(off, dtype=IDX), rad)


def _pairs(a, b):
    """Every sum a[k] + b[k] over the configurations: memory, time, radius."""
    out = []
    for k in range(a.ncells):
        for i in range(a.off[k], a.off[k + 1]):
            for j in range(b.off[k], b.off[k + 1]):
                out.append((a.mem[i] + b.mem[j], a.time[i] + b.time[j],
                            a.radii()[i] + b.radii()[j]))
    return np.array(out).T


@pytest.mark.parametrize("threads", [1, 2])
def test_exact_meet_is_the_frontier_of_every_pair(threads, monkeypatch):
    import frontier._meet as M
    monkeypatch.setattr(M, "_SPLIT_MIN_WORK", 0)
    rng = np.random.default_rng(11)
    for _ in range(20):
        K = int(rng.integers(1, 12))
        a, b = _table(rng, K, 40, 0), _table(rng, K, 40, 0)
        t, ia, ib = meet(a, b, threads=threads)
        m, tt, _ = _pairs(a, b)
        keep = _frontier(m, tt)
        assert t.ncells == 1 and t.radius is None
        assert np.array_equal(t.mem, m[keep]) and np.array_equal(t.time, tt[keep])
        assert np.array_equal(t.mem, a.mem[ia] + b.mem[ib])
        assert np.array_equal(t.time, a.time[ia] + b.time[ib])
        cell_a = np.searchsorted(a.off, ia, side="right") - 1
        cell_b = np.searchsorted(b.off, ib, side="right") - 1
        assert np.array_equal(cell_a, cell_b)         # one configuration per point


@pytest.mark.parametrize("threads", [1, 2])
def test_thinned_meet_covers_every_pair_within_its_radius_and_the_budget(threads,
                                                                        monkeypatch):
    import frontier._meet as M
    monkeypatch.setattr(M, "_SPLIT_MIN_WORK", 0)
    rng = np.random.default_rng(12)
    thinned = 0
    for _ in range(20):
        K = int(rng.integers(2, 12))
        a, b = _table(rng, K, 40, 0.2), _table(rng, K, 40, 0.1)
        budget = 0.3 + 1.5 * rng.random()
        t, ia, ib = meet(a, b, budget=budget, threads=threads)
        r = t.radii()
        assert r.max() <= budget
        assert np.all(r >= a.radii()[ia] + b.radii()[ib])
        m, tt, rr = _pairs(a, b)
        for q in range(len(m)):                      # each pair, stood for
            p = np.searchsorted(t.mem, m[q], side="right") - 1
            assert p >= 0 and t.time[p] - r[p] <= tt[q] - rr[q] + 1e-12
        thinned += t.npoints < len(_frontier(m, tt))
    assert thinned >= 10                             # the budget was used


@pytest.mark.parametrize("shape", ["chain", "shortcut"])
def test_track_on_paths_that_meet_stays_exact(shape):
    """Exact tracking of small random hard graphs (their paths meet in the middle)
    equals brute force."""
    g = hard_graph(shape, 7, 3, seed=4, reuse_fraction=0.3)
    res = track(g)
    ref = brute_force(g)
    assert len(res.points) == len(ref)
    np.testing.assert_allclose(res.points, ref, rtol=1e-12)   # sums in another order
    for i, p in enumerate(res.points):
        assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)
