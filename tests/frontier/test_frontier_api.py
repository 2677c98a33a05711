"""Interface, validation (ValueError naming what is wrong), epsilon, progress."""

import numpy as np
import pytest

from frontier import CostGraph, track
from frontier._table import Table
from frontier._values import thin
from frontier.brute_force import brute_force, cost_of
from frontier.synthetic import model_graph, random_graph


def _two():
    g = CostGraph()
    a = g.add_node("a", [(4.0, 1.0), (2.0, 3.0)])
    b = g.add_node("b", np.array([[1.0, 1.0], [0.5, 2.0]]))
    return g, a, b


def test_hand_computed_example():
    g, a, b = _two()
    e = g.add_edge(a, b, [[[(0, 0)], [(1, 1)]], [[(1, 1)], [(0, 0), (-1, 2)]]])
    res = track(g)
    # strategies: (a0,b0)=(5,2) (a0,b1)=(5.5,4) (a1,b0)=(4,5) (a1,b1)=(2.5,5) or (1.5,7)
    assert res.points == [(1.5, 7.0), (2.5, 5.0), (5.0, 2.0)]
    assert res.choice(0) == ({a: 1, b: 1}, {e: 1})
    assert res.choice(2) == ({a: 0, b: 0}, {e: 0})
    assert res.stats.num_points == 3 and res.stats.total_s >= res.stats.ldp_s >= 0
    assert res.exact and res.stats.time_error_bound_s == 0.0 and not np.any(res.radii)


def test_array_edge_forms_equal_lists():
    rng = np.random.default_rng(0)
    arr = rng.random((2, 2, 3, 2))
    g1, a, b = _two()
    g1.add_edge(a, b, arr)
    g2, a, b = _two()
    g2.add_edge(a, b, [[[tuple(x) for x in arr[k, p]] for p in range(2)] for k in range(2)])
    assert track(g1).points == track(g2).points
    g3, a, b = _two()
    g3.add_edge(a, b, arr[:, :, 0, :])            # (Ka, Kb, 2): one alternative
    g4, a, b = _two()
    g4.add_edge(a, b, arr[:, :, :1, :])
    assert track(g3).points == track(g4).points


def test_disconnected_components_multiply():
    g = CostGraph()
    g.add_node("a", [(1.0, 3.0), (3.0, 1.0)])
    g.add_node("b", [(1.0, 2.0), (2.0, 1.0)])
    for method in ("ldp", "elimination"):
        res = track(g, method=method)
        assert res.points == brute_force(g) == [(2.0, 5.0), (3.0, 4.0), (4.0, 3.0),
                                                (5.0, 2.0)]


@pytest.mark.parametrize("bad, match", [
    ([], "node 0 .*empty"),
    ([(1.0,)], r"shape \(K, 2\)"),
    ([(1.0, float("nan"))], "NaN or infinite"),
    ([(1.0, float("inf"))], "NaN or infinite"),
])
def test_bad_node_costs(bad, match):
    with pytest.raises(ValueError, match=match):
        CostGraph().add_node("x", bad)


def test_bad_edges():
    g, a, b = _two()
    with pytest.raises(ValueError, match="edge 0: unknown destination node 7"):
        g.add_edge(a, 7, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="unknown source node"):
        g.add_edge(-1, b, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"'a' -> 'b'.*\(2, 2, A, 2\)"):
        g.add_edge(a, b, np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="costs has 1 rows .* 2 configurations"):
        g.add_edge(a, b, [[[(0, 0)], [(0, 0)]]])
    with pytest.raises(ValueError, match=r"costs\[1\] has 1 entries"):
        g.add_edge(a, b, [[[(0, 0)], [(0, 0)]], [[(0, 0)]]])
    with pytest.raises(ValueError, match=r"costs\[0\]\[1\] is empty"):
        g.add_edge(a, b, [[[(0, 0)], []], [[(0, 0)], [(0, 0)]]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        g.add_edge(a, b, np.full((2, 2, 1, 2), np.nan))
    with pytest.raises(ValueError, match="no alternatives"):
        g.add_edge(a, b, np.zeros((2, 2, 0, 2)))
    with pytest.raises(ValueError, match="self loop"):
        g.add_edge(a, a, np.zeros((2, 2, 2)))
    assert g.num_edges == 0


def test_cycle_is_named():
    g = CostGraph()
    ids = [g.add_node(n, [(1.0, 1.0)]) for n in ("p", "q", "r", "s")]
    g.add_edge(ids[0], ids[1], [[[(0, 0)]]])
    g.add_edge(ids[1], ids[2], [[[(0, 0)]]])
    g.add_edge(ids[2], ids[3], [[[(0, 0)]]])
    g.add_edge(ids[3], ids[1], [[[(0, 0)]]])
    with pytest.raises(ValueError, match="cycle") as err:
        track(g)
    assert all(f"'{n}'" in str(err.value) for n in "qrs") and "'p'" not in str(err.value)


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="dp"), "unknown method"),
    (dict(threads=0), "threads"),
    (dict(heuristic="fastest"), "unknown heuristic"),
    (dict(heuristic=("weighted", 2.0)), "unknown heuristic"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(progress=3), "progress"),
])
def test_bad_track_arguments(kwargs, match):
    g, a, b = _two()
    with pytest.raises(ValueError, match=match):
        track(g, **kwargs)


def test_empty_graph_and_bad_choice():
    with pytest.raises(ValueError, match="no nodes"):
        track(CostGraph())
    g, a, b = _two()
    res = track(g)
    with pytest.raises(ValueError, match="out of range"):
        res.choice(len(res.points))


def _assert_covers_with_real_strategies(g, exact, approx):
    bound = approx.stats.time_error_bound_s
    assert bound == pytest.approx(max(approx.radii)) and bound <= approx.stats.summed_bound_s
    for m, t in exact.points:          # every exact point is covered within a radius
        assert any(am <= m and at <= t + r * (1 + 1e-12)
                   for (am, at), r in zip(approx.points, approx.radii))
    for i, p in enumerate(approx.points):   # still real strategies
        assert cost_of(g, *approx.choice(i)) == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("method", ["ldp", "elimination"])
def test_epsilon_frontier_is_within_its_guarantee(method):
    g = model_graph("transformer", 30, 8, seed=1)
    exact = track(g, method=method)
    eps = 0.2
    approx = track(g, method=method, epsilon=eps)
    s = approx.stats
    assert not approx.exact and s.epsilon == eps
    assert len(approx.points) < len(exact.points)
    least = sum(g.node_costs(v)[:, 1].min() for v in range(g.num_nodes)) + sum(
        g.edge(e).time.min() for e in range(g.num_edges))
    # T: at least the sum of least times, and no exact strategy is faster
    assert least * (1 - 1e-12) <= s.time_lower_bound_s <= exact.points[-1][1] * (1 + 1e-12)
    # The guarantee is e * T (track's doc); T is at least the sum of least times, and
    # how far above it lies depends on the elimination order (Store.lower).
    assert 0 < s.time_error_bound_s <= eps * s.time_lower_bound_s * (1 + 1e-12)
    _assert_covers_with_real_strategies(g, exact, approx)
    tiny = track(g, method=method, epsilon=1e-15)
    assert tiny.points == exact.points and tiny.stats.time_error_bound_s <= 1e-15 * least


@pytest.mark.parametrize("method", ["ldp", "elimination"])
def test_candidate_cap_bounds_the_work_and_reports_a_rigorous_bound(method):
    g = model_graph("transformer", 30, 8, seed=1)
    exact = track(g, method=method)
    capped = track(g, method=method, max_candidates=40)
    s = capped.stats
    assert s.capped_products > 0 and not capped.exact and s.max_candidates == 40
    assert s.candidates < exact.stats.candidates
    assert 0 < s.cap_delta_max_s <= s.time_lower_bound_s
    assert 0 < s.time_error_bound_s
    _assert_covers_with_real_strategies(g, exact, capped)
    assert capped.points[0][0] == exact.points[0][0]   # the least memory stays exact
    roomy = track(g, method=method, max_candidates=10**12)
    assert roomy.points == exact.points and roomy.stats.capped_products == 0


@pytest.mark.parametrize("bad", [0, -5, 2.5, "many"])
def test_bad_max_candidates_is_named(bad):
    g, _, _ = _two()
    with pytest.raises(ValueError, match="max_candidates must be None"):
        track(g, max_candidates=bad)


def test_thin_keeps_a_cover_for_every_dropped_point():
    rng = np.random.default_rng(7)
    mem, time, off = [], [], [0]
    for _ in range(20):                 # 20 cells, each a frontier of up to 12 points
        n = int(rng.integers(1, 13))
        mem += list(np.sort(rng.random(n)))
        time += list(np.sort(rng.random(n))[::-1])
        off.append(len(mem))
    radius = rng.random(len(mem)) * 0.05
    t = Table(np.array(mem), np.array(time), np.array(off), radius)
    q = 0.1
    out, idx, gap = thin(t, q)
    assert out.ncells == t.ncells and out.npoints < t.npoints and 0 < gap < q
    assert np.array_equal(out.mem, t.mem[idx]) and np.array_equal(out.time, t.time[idx])
    worst = 0.0
    for c in range(t.ncells):
        s, e = out.off[c], out.off[c + 1]
        kept = list(zip(out.mem[s:e], out.time[s:e], out.radius[s:e]))
        assert kept[0][:2] == (t.mem[t.off[c]], t.time[t.off[c]])   # least memory kept
        assert np.all(-np.diff([kt for _, kt, _ in kept]) >= q)    # kept q apart
        for x in range(t.off[c], t.off[c + 1]):
            m, tm, r = t.mem[x], t.time[x], radius[x]
            # the last kept point with no more memory stands for x within its radius
            km, kt, kr = [k for k in kept if k[0] <= m][-1]
            assert kt <= tm + gap and kt - tm + r <= kr + 1e-15
            worst = max(worst, kt - tm)
    assert worst == pytest.approx(gap)      # the gap is the largest slow-down, not a bound
    same, _, none = thin(t, 1e-12)
    assert same.npoints == t.npoints and none == 0.0


def test_epsilon_on_zero_time_costs_thins_nothing():
    g = CostGraph()
    a = g.add_node("a", [(1.0, 0.0), (0.5, 0.0)])
    b = g.add_node("b", [(2.0, 0.0)])
    g.add_edge(a, b, np.zeros((2, 1, 2)))
    res = track(g, epsilon=0.5)
    assert res.stats.time_lower_bound_s == 0.0 and res.stats.time_error_bound_s == 0.0
    assert res.points == track(g).points


def test_progress_is_called():
    calls = []
    g = random_graph(np.random.default_rng(3), "residual")
    track(g, progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1] == g.num_nodes
    assert all(b[0] >= a[0] for a, b in zip(calls, calls[1:]))


def test_edges_given_one_read_only_array_share_it():
    rng = np.random.default_rng(5)
    costs = rng.random((3, 3, 2, 2))
    shared, copied = CostGraph(), CostGraph()
    for g in (shared, copied):
        for i in range(4):
            g.add_node(f"n{i}", rng.random((3, 2)) if g is shared else shared.node_costs(i))
    frozen = costs.copy()
    frozen.flags.writeable = False
    for i in range(3):
        shared.add_edge(i, i + 1, frozen)
        copied.add_edge(i, i + 1, costs)
    assert np.shares_memory(shared.edge(0).mem, shared.edge(2).mem)
    assert not np.shares_memory(copied.edge(0).mem, copied.edge(2).mem)
    assert track(shared).points == track(copied).points
    costs[0, 0, 0, 0] = -1.0            # a writable array is copied: later edits don't leak
    assert copied.edge(0).mem[0] != -1.0


def test_collecting_back_pointers_keeps_every_strategy(monkeypatch):
    """With the back-pointer collector running after every table, the frontier and
    every point's strategy are the same, and fewer pointers are kept. (Results reused
    by ``_memo`` share their pointers and keep them whole: off here, tested in
    ``test_frontier_memo``.)"""
    import frontier._memo as memo
    import frontier._store as store
    monkeypatch.setattr(memo, "MEMO_BYTES", 0)
    graphs = [random_graph(np.random.default_rng([s, 11]), shape)
              for s in range(3) for shape in ("residual", "dag", "mask")]
    graphs.append(model_graph("transformer", 30, 6, seed=2))
    runs = [dict(), dict(epsilon=0.2), dict(method="elimination")]
    before = [track(g, **kw) for g in graphs for kw in runs]
    monkeypatch.setattr(store, "COLLECT_MIN_BYTES", 0)
    after = [track(g, **kw) for g in graphs for kw in runs]
    for a, b in zip(before, after):
        assert a.points == b.points
        assert np.array_equal(a.node_configs, b.node_configs)
        assert np.array_equal(a.edge_alternatives, b.edge_alternatives)
        assert b.stats.stored_pointer_bytes <= a.stats.stored_pointer_bytes
    assert sum(b.stats.stored_pointer_bytes for b in after) < 0.7 * sum(
        a.stats.stored_pointer_bytes for a in before)
