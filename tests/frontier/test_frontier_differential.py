"""Frontier-Tracking vs brute force on seeded random graphs (both methods, 1-2 threads).

Exact where no heuristic elimination ran; at or above the true frontier otherwise; and
every returned strategy re-costs by hand to exactly its point.
"""

import numpy as np
import pytest

from frontier import CostGraph, track
from frontier.brute_force import brute_force, cost_of
from frontier.synthetic import SMALL_SHAPES, random_graph

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
    if res.stats["heuristic_eliminations"] == 0:
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
            used += res.stats.get("row_groups", 0) < res.stats.get("rows", 0)
    assert used > 0, "the shared-configuration path was never exercised"


def test_large_frontier_recosts_exactly():
    """A bigger graph (no brute force): every point re-costs exactly; both methods agree."""
    from frontier.synthetic import model_graph
    g = model_graph("residual", 13, 8, seed=3, alternatives=3)
    a = track(g, method="ldp")
    b = track(g, method="elimination", threads=2)
    assert a.stats["heuristic_eliminations"] == 0
    np.testing.assert_allclose(a.points, b.points, rtol=1e-12)
    for res in (a, b):
        for i, p in enumerate(res.points):
            assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("budget", [1, 7, 64])
def test_candidate_batches_stay_exact(monkeypatch, budget):
    """Products materialized a few cells at a time (as on big graphs) give the same
    frontier as all at once."""
    import frontier._values as values
    graphs = [random_graph(np.random.default_rng([seed, 99]), shape)
              for seed in range(4) for shape in ("residual", "diamond", "multi")]
    whole = [track(g, method=m).points for g in graphs for m in ("ldp", "elimination")]
    batches = []
    real = values._whole_cell_batches
    monkeypatch.setattr(values, "_CANDIDATE_BUDGET", budget)
    monkeypatch.setattr(values, "_whole_cell_batches",
                        lambda *a: batches.append(len(real(*a))) or real(*a))
    assert [track(g, method=m).points for g in graphs for m in ("ldp", "elimination")] == whole
    assert max(batches) > 1, "no product was split into batches"


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_epsilon_covers_the_exact_frontier_within_its_bound(shape):
    """On every shape the accumulated bound stays within epsilon * T (so the bound on the
    number of reductions holds), and, where FT is exact, covers brute force."""
    eps = 0.3
    for seed in range(10):
        g = random_graph(np.random.default_rng([seed, 7, SMALL_SHAPES.index(shape)]), shape)
        for method in ("ldp", "elimination"):
            res = track(g, method=method, epsilon=eps)
            s = res.stats
            assert s["time_error_bound"] <= eps * s["time_lower_bound"] * (1 + 1e-12)
            if s["heuristic_eliminations"]:
                continue
            for m, t in brute_force(g):
                assert any(am <= m + 1e-9 and at <= t + s["time_error_bound"] + 1e-9
                           for am, at in res.points)
