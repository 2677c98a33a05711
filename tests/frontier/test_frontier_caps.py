"""Streams' tails retired by a memory grid (``_kernels._stream_caps``, ``_values._grid``).

In a COMBINE whose streams walk long cells of a, a stream's candidates from some memory
on are left out when, interval by interval of a grid over a's memory, a sample candidate
of the cell with less memory stands for all of them (exact: is faster). Exact, the
frontier must be that of every candidate, with the same back pointers; with radii every
candidate must still be covered by an output point of no more memory within that
point's radius; and on whole graphs the exact frontier must not change and an epsilon
run must cover every exact point within its bound. Each test also checks that the grid
acted (fewer candidates examined than without it), which fails on the code before it.
"""

import importlib.util
import pathlib

import numpy as np
import pytest

from frontier import track
from frontier import _values
from frontier._table import Table
from frontier._values import MergeCounts, Shape, combine
from frontier.synthetic import hard_graph

_HELPERS = importlib.util.spec_from_file_location("frontier_staircases",
                                                  pathlib.Path(__file__).with_name("staircases.py"))
_staircase_module = importlib.util.module_from_spec(_HELPERS)
_HELPERS.loader.exec_module(_staircase_module)
_staircases, _candidates = _staircase_module.staircases, _staircase_module.candidates


def _force_grid(monkeypatch, on=True):
    """The grid on every COMBINE (on) or on none."""
    monkeypatch.setattr(_values, "GRID_MIN_POINTS", 1 if on else 10 ** 12)
    monkeypatch.setattr(_values, "GRID_MIN_USES", 1)
    monkeypatch.setattr(_values, "GRID_MAX_SHORT", 10 ** 6)


def _combine(monkeypatch, on, a, b, shape, budget=0.0):
    _force_grid(monkeypatch, on)
    counts = MergeCounts()
    out = combine(a, b, shape, budget=budget, counts=counts)
    return out, counts.candidates


@pytest.mark.parametrize("radius", [0.0, 0.5, 3.0])
@pytest.mark.parametrize("budget", [0.0, 0.4])
@pytest.mark.parametrize("nb", [2, 12])     # 12: U samples some of a b cell's points
def test_cut_streams_keep_every_candidate_covered(monkeypatch, radius, budget, nb):
    rng = np.random.default_rng(5)
    W, K, P = 2, 12, 4
    fewer = 0
    for _ in range(5):
        a = _staircases(rng, W * K, 120, radius, 6.0)
        b = _staircases(rng, K * P, nb, 0.0, 3.0)
        (t, ia, ib, kk), n_on = _combine(monkeypatch, True, a, b, Shape(W, K, P), budget)
        (t0, ia0, ib0, kk0), n_off = _combine(monkeypatch, False, a, b, Shape(W, K, P),
                                               budget)
        fewer += n_on < n_off
        assert np.array_equal(t.mem, a.mem[ia] + b.mem[ib])
        assert np.array_equal(t.time, a.time[ia] + b.time[ib])
        exact = radius == 0.0 and budget == 0.0
        if exact:                                 # the same table, to the bit
            assert np.array_equal(t.off, t0.off) and np.array_equal(ia, ia0)
            assert np.array_equal(ib, ib0) and np.array_equal(kk, kk0)
        r = t.radii()
        for w in range(W):
            for p in range(P):
                c = w * P + p
                sl = slice(t.off[c], t.off[c + 1])
                om, ot, orr = t.mem[sl], t.time[sl], r[sl]
                cand = _candidates(a, b, K, P, w, p)
                if exact:                         # the frontier of the candidates
                    o = np.lexsort((cand[:, 1], cand[:, 0]))
                    m, tt = cand[o, 0], cand[o, 1]
                    keep = tt < np.minimum.accumulate(np.r_[np.inf, tt[:-1]])
                    assert np.array_equal(om, m[keep]) and np.array_equal(ot, tt[keep])
                    continue
                assert np.all(orr <= max(budget, radius) + 1e-9)
                x = np.searchsorted(om, cand[:, 0], side="right") - 1
                assert np.all(x >= 0)
                low = np.minimum.accumulate(ot - orr)[x]   # any point of no more memory
                assert np.all(low <= cand[:, 1] - cand[:, 2] + 1e-9), \
                    "a candidate's exact points are no longer stood for"
    assert fewer > 0, "the grid never cut a stream"


def test_exact_frontier_of_hard_graphs_is_unchanged(monkeypatch):
    fewer = 0
    for shape, n, k in (("chain", 14, 12), ("shortcut", 13, 8)):
        g = hard_graph(shape, n, k, seed=3, reuse_fraction=0.3)
        _force_grid(monkeypatch, False)
        ref = track(g)
        _force_grid(monkeypatch, True)
        res = track(g)
        assert res.points == ref.points
        assert np.array_equal(res.node_configs, ref.node_configs)
        fewer += res.stats.candidates < ref.stats.candidates
    assert fewer > 0, "the grid never cut a stream"


def test_epsilon_covers_every_exact_point_with_cut_streams(monkeypatch):
    g = hard_graph("chain", 16, 12, seed=4, reuse_fraction=0.3)
    _force_grid(monkeypatch, False)
    ref = track(g).points
    off = track(g, epsilon=0.05)
    _force_grid(monkeypatch, True)
    res = track(g, epsilon=0.05)
    s = res.stats
    assert res.stats.candidates < off.stats.candidates
    assert s.time_error_bound_s <= 0.05 * s.time_lower_bound_s * (1 + 1e-12)
    assert np.all(res.radii <= s.time_error_bound_s)
    for m, t in ref:
        assert any(am <= m * (1 + 1e-12) and at <= t + r + 1e-12
                   for (am, at), r in zip(res.points, res.radii))


def test_next_stream_passes_over_streams_cut_at_their_first_row():
    """A block whose streams walk a: the next stream after b point 0 is b point 1,
    unless ``cap`` ends b point 1's stream at a's first row (then 2), and only when
    the caps are in use."""
    from frontier._kernels import _next_stream

    av = np.array([[float(i), 10.0 - i, 0.0, 0.0] for i in range(6)])
    bv = np.array([[0.0, 3.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0], [2.0, 1.0, 0.0, 0.0]])
    blk = (0, 6, 0, 3, 0.0, 0.0, 0.0, False, False)
    cur = (0.0, 13.0, 1, 0, 0)
    cap = np.array([6, 0, 6], dtype=np.int64)
    for exact in (True, False):
        assert _next_stream(av, bv, blk, cur, np.inf, exact, cap, False)[0][4] == 1
        assert _next_stream(av, bv, blk, cur, np.inf, exact, cap, True)[0][4] == 2
        cap[2] = 0                                  # both cut: no next stream
        assert _next_stream(av, bv, blk, cur, np.inf, exact, cap, True)[0][2] == -1
        cap[2] = 6


def test_no_grid_with_a_relative_budget(monkeypatch):
    """With a relative budget the radii grow with time and a cut would take a cell's
    largest radius everywhere: the grid is not used (the same candidates as without
    it), while the same COMBINE with an absolute budget uses it."""
    rng = np.random.default_rng(8)
    W, K, P = 1, 12, 4
    a = _staircases(rng, W * K, 120, 0.5, 6.0)
    b = _staircases(rng, K * P, 2, 0.0, 3.0)
    counts = {}
    for on in (True, False):
        for rel in (0.0, 0.05):
            _force_grid(monkeypatch, on)
            mc = MergeCounts()
            combine(a, b, Shape(W, K, P), budget=0.4, rel=rel, counts=mc)
            counts[on, rel] = mc.candidates
    assert counts[True, 0.05] == counts[False, 0.05]
    assert counts[True, 0.0] < counts[False, 0.0]


def test_no_grid_past_its_size_limit(monkeypatch):
    """The grid's tables (cells x grid points) stay within GRID_MAX_ENTRIES: past it the
    merge runs without them (the same candidates as with the grid off)."""
    rng = np.random.default_rng(9)
    a = _staircases(rng, 12, 120, 0.5, 6.0)
    b = _staircases(rng, 12 * 4, 2, 0.0, 3.0)
    counts = []
    for on, limit in ((True, 1 << 22), (True, 12 * 50), (False, 1 << 22)):
        _force_grid(monkeypatch, on)
        monkeypatch.setattr(_values, "GRID_MAX_ENTRIES", limit)
        mc = MergeCounts()
        combine(a, b, Shape(1, 12, 4), budget=0.4, counts=mc)
        counts.append(mc.candidates)
    assert counts[0] < counts[1] == counts[2]


@pytest.mark.parametrize("radius", [0.0, 0.5])
def test_column_blocks_make_the_grid_once_and_give_the_same_table(monkeypatch, radius):
    """``combine`` over b in blocks of output columns keeps a's grid across the blocks
    (it depends on a alone), and each output cell comes out as with one block."""
    rng = np.random.default_rng(9)
    W, K, P = 2, 12, 6
    a = _staircases(rng, W * K, 120, radius, 6.0)
    b = _staircases(rng, K * P, 3, 0.0, 3.0)
    _force_grid(monkeypatch, True)
    made = []
    real = _values.K_.grid_table
    monkeypatch.setattr(_values.K_, "grid_table", lambda *args: made.append(1) or real(*args))
    whole = combine(a, b, Shape(W, K, P), budget=0.3)
    assert len(made) == 1
    monkeypatch.setattr(_values, "COMBINE_BLOCK_POINTS", 2 * K * 3)   # blocks of about two columns
    made.clear()
    blocked = combine(a, b, Shape(W, K, P), budget=0.3)
    assert len(made) == 1, f"the grid was made {len(made)} times over the blocks"
    for x, y in zip(whole, blocked):
        if isinstance(x, Table):
            assert np.array_equal(x.off, y.off) and np.array_equal(x.mem, y.mem)
            assert np.array_equal(x.time, y.time) and np.array_equal(x.radii(), y.radii())
        else:
            assert np.array_equal(x, y)
