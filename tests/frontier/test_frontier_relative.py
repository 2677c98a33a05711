"""``track(..., epsilon=e, relative=True)``: each exact point's error bounded by its own time.

Unit: a keeper may stand for a faster point while its radius stays within ``e / (1 + e)``
of its own time, in each kernel path (sorted small cells, the heap, one-point cells).
Differential: on every small shape, each brute-force point has a returned point with no
more memory and at most ``(1 + e)`` times its time.
"""

import numpy as np
import pytest

from frontier import track
from frontier._table import IDX, Table
from frontier._values import Shape, combine, union_all
from frontier.brute_force import brute_force, cost_of
from frontier.synthetic import SMALL_SHAPES, hard_graph, random_graph

# One cell: (memory 1, time 10) and (memory 2, time 9.6). Dropping the second costs the
# keeper a radius of 0.4 s: within 5% of its 10 s, not within 3% (0.3 s).
MEM, TIME = np.array([1.0, 2.0]), np.array([10.0, 9.6])


def _one_cell() -> Table:
    return Table(MEM.copy(), TIME.copy(), np.array([0, 2], dtype=IDX), np.zeros(2))


def _two_single_cells(rel):
    """A COMBINE whose cells all hold one point (``_blocks.single_cell``): a has K = 2
    cells, one point each, b is K x 1 zeros; its one output cell is their union."""
    a = Table(MEM.copy(), TIME.copy(), np.array([0, 1, 2], dtype=IDX), np.zeros(2))
    b = Table(np.zeros(2), np.zeros(2), np.array([0, 1, 2], dtype=IDX))
    return combine(a, b, Shape(1, 2, 1), rel=rel)[0]


def _union(rel, budget=0.0):
    return union_all(_one_cell(), budget=budget, rel=rel)[0]


@pytest.mark.parametrize("path", ["sorted", "heap", "single"])
def test_a_keeper_stands_for_a_faster_point_within_its_own_share(path, monkeypatch):
    import frontier._values as values
    if path == "heap":
        monkeypatch.setattr(values, "SMALL_CELL_CANDIDATES", 0)
    if path != "single":
        monkeypatch.setattr(values, "SINGLE_CELL_POINTS", 0)

    def run(rel):
        return _two_single_cells(rel) if path == "single" else _union(rel)

    kept = run(0.05 / 1.05 * 1.0001)          # 0.4 <= 0.0476... * 10 (a hair over)
    assert kept.npoints == 1
    assert kept.mem[0] == 1.0 and kept.time[0] == 10.0
    assert kept.radii()[0] == pytest.approx(0.4)
    both = run(0.03)                           # 0.4 > 0.3: the faster point stays
    assert both.npoints == 2
    assert np.all(both.radii() == 0.0)


def test_the_absolute_budget_alone_keeps_both():
    """The same cell with an absolute budget of 0.3 s and no share: both points stay, so
    the single drop above is the share's doing."""
    assert _union(0.0, budget=0.3).npoints == 2
    assert _union(0.0, budget=0.41).npoints == 1


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_relative_epsilon_covers_every_exact_point_within_its_own_share(shape):
    eps, thinned = 0.3, 0
    for seed in range(10):
        g = random_graph(np.random.default_rng([seed, 11, SMALL_SHAPES.index(shape)]), shape)
        for method in ("ldp", "elimination"):
            res = track(g, method=method, epsilon=eps, relative=True)
            s = res.stats
            assert s.relative and s.relative_error_bound <= eps * (1 + 1e-12)
            t = np.array([p[1] for p in res.points])
            assert np.all(res.radii <= eps / (1 + eps) * t * (1 + 1e-12) + 1e-15)
            for i, p in enumerate(res.points):
                assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)
            if s.heuristic_eliminations:
                continue
            ref = brute_force(g)
            thinned += len(res.points) < len(ref)
            for m, tm in ref:
                assert any(am <= m + 1e-9 and at <= (1 + eps) * tm * (1 + 1e-12)
                           and at <= tm + r + 1e-9
                           for (am, at), r in zip(res.points, res.radii))
    assert thinned > 0, "nothing was thinned: the shares were not exercised"


def test_relative_epsilon_on_a_random_chain_covers_a_direct_frontier():
    """A random-cost chain (cells of about a hundred points: the heap runs) against its
    exact frontier: every exact point within (1 + e) of its own time, with fewer points
    than the absolute bound keeps (its times span 4.5x: slow points get wider shares).
    Long enough that each folded half's cells pass 20 points."""
    g = hard_graph("chain", 16, 12, seed=4, reuse_fraction=0.3)
    ref = track(g).points
    res = track(g, epsilon=0.05, relative=True)
    assert res.stats.max_cell_points > 20
    assert len(res.points) < len(track(g, epsilon=0.05).points) < len(ref)
    for m, t in ref:
        assert any(am <= m * (1 + 1e-12) and at <= 1.05 * t * (1 + 1e-12)
                   for am, at in res.points)


def test_relative_without_epsilon_is_refused_by_name():
    g = hard_graph("chain", 3, 4, seed=0)
    with pytest.raises(ValueError, match="relative=True .* give epsilon too"):
        track(g, relative=True)
