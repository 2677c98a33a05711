"""Heuristic elimination on a graph that needs it: a mask node feeding every block."""

import numpy as np
import pytest

from frontier import CostGraph, track
from frontier.brute_force import brute_force, cost_of


def _mask_graph(seed, blocks=3, k=3):
    """x0 -> attn_i <- mask; attn_i -> add_i <- x_i; the mask feeds every block (BERT)."""
    rng = np.random.default_rng(seed)
    g = CostGraph()

    def node(name):
        d = np.sort(rng.random(k))
        return g.add_node(name, np.stack([10 * (1 - d), 10 * d], 1) + rng.random((k, 2)))

    def edge(u, v):
        c = rng.random((k, k, 2)) * 3
        c[np.arange(k), np.arange(k)] = 0.0
        g.add_edge(u, v, c)

    x = node("x0")
    mask = node("mask")
    for b in range(blocks):
        attn = node(f"attn{b}")
        add = node(f"add{b}")
        edge(x, attn)
        edge(mask, attn)
        edge(attn, add)
        edge(x, add)
        x = add
    return g


def _distance(points, ref):
    """Largest relative excess in time over the true frontier at equal or less memory."""
    worst = 0.0
    for m, t in points:
        best = min(rt for rm, rt in ref if rm <= m + 1e-12)
        worst = max(worst, (t - best) / best)
    return worst


@pytest.mark.parametrize("heuristic", ["min_memory", "min_time", ("weighted", 0.5)])
def test_mask_graph_needs_heuristic_and_stays_close(heuristic, capsys):
    dists, covered = [], []
    for seed in range(8):
        g = _mask_graph(seed)
        ref = brute_force(g)
        for method in ("ldp", "elimination"):
            res = track(g, method=method, heuristic=heuristic)
            assert res.stats.heuristic_eliminations >= 1
            assert not res.exact
            assert res.stats.heuristic_choices[0][0] == 1, "the mask should be fixed"
            for i, p in enumerate(res.points):
                assert cost_of(g, *res.choice(i)) == pytest.approx(p, rel=1e-12)
                assert any(rm <= p[0] + 1e-9 and rt <= p[1] + 1e-9 for rm, rt in ref)
            dists.append(_distance(res.points, ref))
            covered.append(len(res.points) / len(ref))
    with capsys.disabled():
        print(f"\n[heuristic {heuristic}] max time excess over true frontier "
              f"{max(dists):.1%}, mean {np.mean(dists):.1%}; points found / true "
              f"{np.mean(covered):.2f}")
    assert max(dists) < 1.0


def test_heuristic_rules_differ():
    g = _mask_graph(1)
    lo = track(g, heuristic="min_memory")
    hi = track(g, heuristic="min_time")
    k_lo = lo.stats.heuristic_choices[0][1]
    k_hi = hi.stats.heuristic_choices[0][1]
    # min_memory fixes the mask where its memory score is least, min_time where its
    # time score is least; on this graph they are different configurations.
    assert k_lo != k_hi
    assert lo.points[0][0] <= hi.points[0][0]
