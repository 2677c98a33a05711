"""Several heuristic rules, one frontier (``frontier._union``): ``track`` runs each rule
when the graph needed a heuristic elimination and returns the runs' Pareto union, so the
fast end that ``min_memory`` alone gives up and the small end that ``min_time`` alone
gives up are both there."""

import numpy as np
import pytest

from frontier import heuristic_rules, track
from frontier._union import pareto_union
from frontier.brute_force import brute_force, cost_of
from frontier.synthetic import random_graph
from tests.frontier.test_frontier_heuristic import _mask_graph


def _frontier(points, radii=None, nodes=2, edges=1):
    n = len(points)
    cfg = np.arange(n * nodes).reshape(n, nodes)
    alt = np.zeros((n, edges), dtype=int)
    return points, cfg, alt, np.zeros(n) if radii is None else np.array(radii, dtype=float)


# ------------------------------------------------------------------ the union itself
def test_union_keeps_the_non_dominated_points_in_frontier_order():
    a = _frontier([(1.0, 9.0), (3.0, 5.0), (6.0, 4.0)])
    b = _frontier([(2.0, 6.0), (3.0, 4.5), (7.0, 1.0)])
    points, cfg, alt, radii = pareto_union([a, b])
    # (3, 5) is beaten by (3, 4.5); (6, 4) is not, it is faster than every smaller point
    assert points == [(1.0, 9.0), (2.0, 6.0), (3.0, 4.5), (6.0, 4.0), (7.0, 1.0)]
    # each kept point brings its own row of configurations
    rows = [a[1][0], b[1][0], b[1][1], a[1][2], b[1][2]]
    assert cfg.tolist() == [r.tolist() for r in rows]
    assert alt.shape == (5, 1)
    assert radii.tolist() == [0.0] * 5


def test_a_dropped_point_hands_its_radius_to_its_keeper():
    # (3, 5) with radius 2 stands for exact points down to time 3; its keeper (3, 4.5)
    # must cover them: max(0.5, 2 + 4.5 - 5) = 1.5
    a = _frontier([(1.0, 9.0), (3.0, 5.0)], radii=[0.0, 2.0])
    b = _frontier([(3.0, 4.5)], radii=[0.5])
    points, _, _, radii = pareto_union([a, b])
    assert points == [(1.0, 9.0), (3.0, 4.5)]
    assert radii.tolist() == [0.0, 1.5]
    assert 4.5 - radii[1] <= 5.0 - 2.0


def test_equal_points_keep_one():
    points, _, _, _ = pareto_union([_frontier([(2.0, 3.0)]), _frontier([(2.0, 3.0)])])
    assert points == [(2.0, 3.0)]


def test_frontiers_of_different_graphs_are_refused():
    with pytest.raises(ValueError, match="different graphs"):
        pareto_union([_frontier([(1.0, 1.0)], nodes=2), _frontier([(1.0, 1.0)], nodes=3)])
    with pytest.raises(ValueError, match="at least one"):
        pareto_union([])


# ------------------------------------------------------------------ track with several rules
def test_several_rules_dominate_each_rule_alone_and_stay_real_strategies():
    gained = 0
    for seed in range(8):
        g = _mask_graph(seed)
        ref = brute_force(g)
        alone = {h: track(g, heuristic=h) for h in ("min_memory", "min_time")}
        both = track(g, heuristic=["min_memory", "min_time"])
        assert both.stats.heuristic == ("min_memory", "min_time")
        assert [r[0] for r in both.stats.heuristic_runs] == ["min_memory", "min_time"]
        assert both.stats.num_points == len(both.points)
        mem = [m for m, _ in both.points]
        tim = [t for _, t in both.points]
        assert mem == sorted(mem) and all(a > b for a, b in zip(tim, tim[1:]))
        for i, p in enumerate(both.points):
            assert cost_of(g, *both.choice(i)) == pytest.approx(p, rel=1e-12)
            assert any(rm <= p[0] + 1e-9 and rt <= p[1] + 1e-9 for rm, rt in ref)
        for res in alone.values():       # every point of either rule is matched or beaten
            for m, t in res.points:
                assert any(bm <= m + 1e-12 and bt <= t + 1e-12 for bm, bt in both.points)
        assert both.points[-1][1] == pytest.approx(min(r.points[-1][1] for r in alone.values()))
        assert both.points[0][0] == pytest.approx(min(r.points[0][0] for r in alone.values()))
        gained += both.points != alone["min_memory"].points
    assert gained, "on these graphs min_time must add plans min_memory alone missed"


def test_a_graph_without_heuristic_elimination_is_tracked_once():
    rng = np.random.default_rng(3)
    g = random_graph(rng, "series_parallel")
    res = track(g, heuristic=["min_memory", "min_time"])
    assert res.exact
    assert res.stats.heuristic_runs == ()
    assert res.points == brute_force(g)


def test_rules_are_checked_one_by_one():
    assert heuristic_rules("min_time") == ["min_time"]
    assert heuristic_rules(("weighted", 1)) == [("weighted", 1.0)]
    assert heuristic_rules(["min_memory", ("weighted", 0.5)]) == ["min_memory", ("weighted", 0.5)]
    with pytest.raises(ValueError, match="'fastest'"):
        heuristic_rules(["min_memory", "fastest"])
    with pytest.raises(ValueError, match="empty list"):
        heuristic_rules([])


def test_with_epsilon_the_union_stays_within_epsilon_of_the_least_T(monkeypatch):
    # Each rule's run thins within epsilon of its own T; min_time's finds faster plans,
    # so min_memory's radii would pass epsilon times the union's T unless it is run again.
    import importlib
    track_module = importlib.import_module("frontier.track")
    eps = 0.1
    graphs = [_mask_graph(seed, blocks=4, k=4) for seed in range(6)]
    for g in graphs:
        res = track(g, heuristic=["min_memory", "min_time"], epsilon=eps)
        assert res.stats.epsilon == eps
        assert res.stats.time_lower_bound_s == min(r[3] for r in res.stats.heuristic_runs)
        assert res.stats.time_error_bound_s <= eps * res.stats.time_lower_bound_s
        for i, p in enumerate(res.points):
            assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)
    monkeypatch.setattr(track_module, "_within_least_scale", lambda *args: args[-1])
    over = [track(g, heuristic=["min_memory", "min_time"], epsilon=eps) for g in graphs]
    assert any(r.stats.time_error_bound_s > eps * r.stats.time_lower_bound_s for r in over)
