"""Frontier-Tracking vs brute force on seeded random graphs (both methods, 1-2 threads).

Exact where no heuristic elimination ran; at or above the true frontier otherwise; and
every returned strategy re-costs by hand to exactly its point.
"""

import numpy as np
import pytest

from frontier import CostGraph, track
from frontier.brute_force import brute_force, cost_of
from frontier.synthetic import SMALL_SHAPES, hard_graph, random_graph

SEEDS = range(30)


def _check(g, res, ref):
    pts = np.array(res.points)
    assert np.all(np.diff(pts[:, 0]) > 0) and np.all(np.diff(pts[:, 1]) < 0), \
        "points must have memory ascending, time strictly descending"
    for i, p in enumerate(res.points):
        nodes, edges = res.choice(i)
        assert set(nodes) == set(range(g.num_nodes))
        assert set(edges) == set(range(g.num_edges))
        np.testing.assert_allclose(cost_of(g, nodes, edges), p, rtol=1e-12, atol=1e-12)
    if res.stats.heuristic_eliminations == 0:
        assert len(res.points) == len(ref), (res.points, ref)
        np.testing.assert_allclose(res.points, ref, rtol=1e-9, atol=1e-12)
        return True
    for m, t in res.points:
        assert any(rm <= m + 1e-9 and rt <= t + 1e-9 for rm, rt in ref)
    return False


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_matches_brute_force(shape):
    exact = inexact = 0
    for seed in SEEDS:
        g = random_graph(np.random.default_rng([seed, SMALL_SHAPES.index(shape)]), shape)
        ref = brute_force(g)
        for method, threads in (("ldp", 1), ("elimination", 1), ("ldp", 2),
                                ("elimination", 2)):
            res = track(g, method=method, threads=threads)
            if _check(g, res, ref):
                exact += 1
            else:
                inexact += 1
    # Shapes that exact eliminations reduce must never need a heuristic.
    if shape in ("chain", "series_parallel", "residual", "diamond", "multi"):
        assert inexact == 0
    assert exact + inexact == 4 * len(SEEDS)


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_general_heap_merge_matches_brute_force(shape, monkeypatch):
    """With the small-cell sort and the one-point shortcut turned off, every merge runs
    the heap over streams (both orientations: short a or short b): exact where FT is,
    and within the radii with epsilon or a candidate cap."""
    import frontier._values as values
    monkeypatch.setattr(values, "SMALL_CELL_CANDIDATES", 0)
    monkeypatch.setattr(values, "SINGLE_CELL_POINTS", 0)
    for seed in range(8):
        g = random_graph(np.random.default_rng([seed, 3, SMALL_SHAPES.index(shape)]), shape)
        ref = brute_force(g)
        for method in ("ldp", "elimination"):
            exact = _check(g, track(g, method=method), ref)
            for kw in (dict(epsilon=0.3), dict(max_candidates=4)):
                res = track(g, method=method, **kw)
                for i, p in enumerate(res.points):
                    assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)
                if exact:
                    for m, t in ref:
                        assert any(am <= m + 1e-9 and at <= t + r + 1e-9
                                   for (am, at), r in zip(res.points, res.radii))


def _duplicated(rng, n_blocks=3, k=6, groups=2):
    """A residual chain whose configurations come in groups with identical costs, so the
    shared-work paths (identical rows/columns) are taken."""
    base_nodes = [rng.integers(0, 6, size=(groups, 2)).astype(float) for _ in range(8)]
    g = CostGraph()
    gid = rng.integers(0, groups, size=k)
    gid[:groups] = np.arange(groups)

    def node(i):
        return g.add_node(f"n{i}", base_nodes[i % 8][gid] + (rng.random() < 0.3) *
                          rng.integers(0, 2, size=(k, 2)))

    def edge(u, v):
        a = int(rng.integers(1, 3))
        small = rng.integers(-2, 6, size=(groups, groups, a, 2)).astype(float)
        return g.add_edge(u, v, small[gid][:, gid])

    x = node(0)
    for b in range(n_blocks):
        a_ = node(3 * b + 1)
        add = node(3 * b + 2)
        edge(x, a_)
        edge(a_, add)
        edge(x, add)
        x = add
    return g


def test_shared_configurations_match_brute_force():
    used = 0
    for seed in range(12):
        g = _duplicated(np.random.default_rng(seed), n_blocks=2, k=4)
        ref = brute_force(g)
        for method in ("ldp", "elimination"):
            res = track(g, method=method)
            assert _check(g, res, ref)
            used += res.stats.row_groups < res.stats.rows
    assert used > 0, "the shared-configuration path was never exercised"


def test_large_frontier_recosts_exactly():
    """A bigger graph (no brute force): every point re-costs exactly; both methods agree."""
    from frontier.synthetic import model_graph
    g = model_graph("residual", 13, 8, seed=3, alternatives=3)
    a = track(g, method="ldp")
    b = track(g, method="elimination", threads=2)
    assert a.stats.heuristic_eliminations == 0
    np.testing.assert_allclose(a.points, b.points, rtol=1e-12)
    for res in (a, b):
        for i, p in enumerate(res.points):
            assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)


def test_cells_split_over_threads_give_the_same_frontier(monkeypatch):
    """Cell ranges run on two threads (as on big graphs) give the same frontier and the
    same strategies as one range."""
    import frontier._values as values
    graphs = [random_graph(np.random.default_rng([seed, 99]), shape)
              for seed in range(4) for shape in ("residual", "diamond", "multi")]
    whole = [track(g, method=m) for g in graphs for m in ("ldp", "elimination")]
    ranges = []
    real = values._chunks
    monkeypatch.setattr(values, "_THREAD_MIN_WORK", 0)
    monkeypatch.setattr(values, "_chunks", lambda *a: ranges.append(len(real(*a))) or real(*a))
    split = [track(g, method=m, threads=2) for g in graphs for m in ("ldp", "elimination")]
    assert max(ranges) > 1, "no merge was split over threads"
    for a, b in zip(whole, split):
        assert a.points == b.points
        assert np.array_equal(a.node_configs, b.node_configs)


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_epsilon_covers_the_exact_frontier_within_its_bound(shape):
    """On every shape the largest radius stays within epsilon * T and within the bound
    summed over reductions; where FT is exact, each brute-force point is covered by a
    returned point with no more memory, within that point's own radius."""
    eps, thinned = 0.3, 0
    for seed in range(10):
        g = random_graph(np.random.default_rng([seed, 7, SMALL_SHAPES.index(shape)]), shape)
        for method in ("ldp", "elimination"):
            for kw in (dict(epsilon=eps), dict(max_candidates=4),
                       dict(epsilon=eps, max_candidates=4)):
                res = track(g, method=method, **kw)
                s = res.stats
                bound = s.time_error_bound_s
                assert bound == (max(res.radii) if len(res.radii) else 0.0)
                assert bound <= s.summed_bound_s * (1 + 1e-12) + 1e-12
                if "max_candidates" not in kw:
                    assert bound <= eps * s.time_lower_bound_s * (1 + 1e-12) + 1e-12
                for i, p in enumerate(res.points):
                    assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)
                if s.heuristic_eliminations:
                    continue
                ref = brute_force(g)
                assert s.time_lower_bound_s <= ref[-1][1] + 1e-9   # no strategy beats T
                thinned += len(res.points) < len(ref)
                for m, t in ref:
                    assert any(am <= m + 1e-9 and at <= t + r + 1e-9
                               for (am, at), r in zip(res.points, res.radii))
    assert thinned > 0, "nothing was thinned: the radii were not exercised"


def _pareto(mem, time):
    o = np.lexsort((time, mem))
    mem, time = mem[o], time[o]
    keep = time < np.minimum.accumulate(np.r_[np.inf, time[:-1]])
    return mem[keep], time[keep]


@pytest.mark.parametrize("seed", range(3))
def test_hard_chain_matches_a_direct_pareto_dp(seed):
    """On chains with random costs (cells of about a hundred points, so the merge runs
    its heap, not its small-cell sort), the frontier equals a direct numpy DP that
    materializes every candidate; with epsilon, each DP point is covered within a
    returned point's radius."""
    n, k = 12, 12       # long enough that each half's cells pass 40 points
    g = hard_graph("chain", n, k, seed=seed, reuse_fraction=0.3)
    cf = [(g.node_costs(0)[p, :1], g.node_costs(0)[p, 1:]) for p in range(k)]
    for v in range(1, n):
        e, nc = g.edge(v - 1), g.node_costs(v)
        new = []
        for p in range(k):
            ms, ts = [], []
            for q in range(k):
                s, t = e.off[q * k + p], e.off[q * k + p + 1]
                ms.append((cf[q][0][:, None] + e.mem[None, s:t]).ravel() + nc[p, 0])
                ts.append((cf[q][1][:, None] + e.time[None, s:t]).ravel() + nc[p, 1])
            new.append(_pareto(np.concatenate(ms), np.concatenate(ts)))
        cf = new
    ref = np.stack(_pareto(np.concatenate([c[0] for c in cf]),
                           np.concatenate([c[1] for c in cf])), axis=1)
    res = track(g)
    assert res.stats.max_cell_points > 40
    np.testing.assert_allclose(res.points, ref, rtol=1e-12)
    approx = track(g, epsilon=0.05)
    assert len(approx.points) < len(ref)
    for m, t in ref:   # the DP sums in another order than the paths' two-sided folds
        assert any(am <= m * (1 + 1e-12) and at <= t + r * (1 + 1e-12) + 1e-15
                   for (am, at), r in zip(approx.points, approx.radii))


def test_count_groups_bounds_row_groups_from_below():
    """``count_groups`` (rows of points per cell) never exceeds ``row_groups``'s count,
    so skipping the grouping when it already leaves too few rows equal skips nothing
    the grouping would have shared; rows equal in counts but not in points count once,
    rows that differ in counts twice."""
    from frontier._table import Table, count_groups, row_groups
    rng = np.random.default_rng(5)
    tight = 0
    for _ in range(200):
        R, C = int(rng.integers(1, 6)), int(rng.integers(1, 4))
        pool = [rng.integers(0, 3, C) for _ in range(2)]
        cnt = np.stack([pool[rng.integers(2)] for _ in range(R)]).reshape(-1)
        off = np.zeros(R * C + 1, dtype=np.int64)
        np.cumsum(cnt, out=off[1:])
        n = int(off[-1])
        t = Table(rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float),
                  off)
        lower, (gid, reps) = count_groups(cnt.reshape(R, C)), row_groups(t, R, C)
        assert lower <= len(reps)
        assert lower <= len(np.unique(cnt.reshape(R, C), axis=0))
        tight += lower < len(reps)
    assert tight > 0
    a = np.array([[1, 2], [1, 2], [2, 1]])
    assert count_groups(a) == 2 and count_groups(a, np.array([[0], [1], [0]])) == 3
