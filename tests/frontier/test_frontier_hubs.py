"""Hubs fixed first (``frontier._hubs``): before a series elimination estimated huge, a
node of the irreducible core at its chain's end is fixed (the PaSE Transformer's
``encoder_norm``, which fans out to every decoder layer), and the series node folds.

Exact runs stay exact (a series-parallel graph has no core), the hub is scored as if
the chains at it were contracted and merged, without multiplying them.
"""

import numpy as np
import pytest

from frontier import CostGraph, _hubs, _series, track
from frontier.brute_force import brute_force
from frontier.synthetic import SMALL_SHAPES, random_graph


def _hub_graph(seed: int, layers: int = 4, k: int = 4, prefix: int = 3) -> CostGraph:
    """A hub H (after a diamond e0 -> x -> H, e0 -> H, like ``encoder_norm`` after the
    encoder) feeding two nodes m_i -> n_i of each
    layer; layer 0 has a rich prefix chain into m0 (decoder 0's query side) and no
    residual, the later layers a residual edge r_i -> r_(i+1) around m_i -> n_i. H is
    in the irreducible core; after the prefix folds, m0 is a series node between H and
    n0 that closes (H - n0), carrying the prefix onto H's cells."""
    rng = np.random.default_rng(seed)
    g = CostGraph()

    def node(name):
        return g.add_node(name, rng.random((k, 2)) * 10)

    def edge(u, v, alts=1):
        g.add_edge(u, v, rng.random((k, k, alts, 2)) * 10)

    e0, x, hub = node("e0"), node("x"), node("hub")     # the encoder: a diamond
    edge(e0, x)
    edge(x, hub)
    edge(e0, hub)
    prev = node("p0")
    for i in range(1, prefix):
        p = node(f"p{i}")
        edge(prev, p, alts=2)
        prev = p
    r = None
    for i in range(layers):
        m, n = node(f"m{i}"), node(f"n{i}")
        edge(hub, m)
        edge(hub, n)
        edge(prev if i == 0 else r, m, alts=2 if i == 0 else 1)
        edge(m, n)
        nxt = node(f"r{i + 1}")
        edge(n, nxt)
        if r is not None:
            edge(r, nxt)
        r = nxt
    return g


def _names(g, nodes):
    return [g.node_name(v) for v in nodes]


def test_irreducible_is_empty_on_series_parallel_graphs_and_holds_a_hub():
    fan = {0: {1: [0], 2: [1], 3: [2]}, 1: {0: [0], 2: [3]}, 2: {0: [1], 1: [3], 3: [4]},
           3: {0: [2], 2: [4]}}                          # hub 0 and the path 1 - 2 - 3
    assert _hubs.irreducible(fan) == set()
    k4 = {x: {y: [0] for y in range(4) if y != x} for x in range(4)}
    assert _hubs.irreducible(k4) == {0, 1, 2, 3}
    g = _hub_graph(0)
    adj: dict = {v: {} for v in range(g.num_nodes)}
    for e in range(g.num_edges):
        ec = g.edge(e)
        adj[ec.src].setdefault(ec.dst, []).append(e)
        adj[ec.dst].setdefault(ec.src, []).append(e)
    core = _names(g, _hubs.irreducible(adj))
    assert "hub" in core and "m0" not in core and "p1" not in core


def _run(g, method, monkeypatch, huge: int):
    """track(g) with ``huge``'s series elimination estimated above the threshold (and
    no other), and its eliminations in order: ``(kind, node, its neighbours)``."""
    from frontier._eliminate import Work
    seen = []
    for kind in ("node_elim", "heuristic_elim", "fold"):
        real = getattr(Work, kind)

        def spy(self, v, *a, _real=real, _kind=kind, **kw):
            seen.append((_kind, v, set(self.adj[v])))
            return _real(self, v, *a, **kw)
        monkeypatch.setattr(Work, kind, spy)
    real_estimate = _series._series_candidates
    monkeypatch.setattr(_series, "_series_candidates",
                        lambda w, v: 1e13 if v == huge else real_estimate(w, v))
    monkeypatch.setattr(_series, "DEFER_CANDIDATES", None)
    res = track(g, method=method)
    monkeypatch.undo()
    return res, seen


@pytest.mark.parametrize("method", ["ldp", "elimination"])
def test_the_hub_is_fixed_before_the_rich_series_node(method, monkeypatch):
    """m0 carries the folded prefix and closes (hub - n0). With the rule off it is
    eliminated exactly onto the hub's cells; with it, when m0's elimination is
    estimated huge, the hub is fixed first (scored without contracting m0), and m0 is
    never eliminated next to the hub."""
    for seed in range(4):
        g = _hub_graph(seed)
        hub, m0 = (_names(g, range(g.num_nodes)).index(n) for n in ("hub", "m0"))
        monkeypatch.setattr(_hubs, "HUB_CANDIDATES", None)
        plain, plain_steps = _run(g, method, monkeypatch, m0)
        monkeypatch.setattr(_hubs, "HUB_CANDIDATES", 1e12)
        hubbed, steps = _run(g, method, monkeypatch, m0)
        assert ("node_elim", m0, {hub, _names(g, range(g.num_nodes)).index("n0")}) \
            in plain_steps
        assert plain.stats.hubs_fixed == 0
        assert hubbed.stats.hubs_fixed == 1
        fixed = [v for kind, v, _ in steps if kind == "heuristic_elim"]
        assert hub in fixed
        assert not any(v == m0 and hub in nbrs for kind, v, nbrs in steps
                       if kind != "heuristic_elim")
        assert len(hubbed.stats.heuristic_choices) <= len(plain.stats.heuristic_choices)


def test_below_the_threshold_nothing_changes(monkeypatch):
    """The default threshold leaves small graphs as they were, to the bit."""
    for seed in range(4):
        g = _hub_graph(seed)
        monkeypatch.setattr(_hubs, "HUB_CANDIDATES", None)
        off = track(g, method="ldp")
        monkeypatch.setattr(_hubs, "HUB_CANDIDATES", 1e12)
        on = track(g, method="ldp")
        assert on.stats.hubs_fixed == 0
        assert on.stats.heuristic_choices == off.stats.heuristic_choices
        np.testing.assert_array_equal(on.points, off.points)


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_every_series_node_next_to_the_core_keeps_exact_frontiers(shape, monkeypatch):
    """With the rule on every series elimination (threshold 0): brute force's frontier
    wherever no heuristic elimination ran (a series-parallel graph has no core, so the
    rule never fixes anything there), and each returned point is a real strategy's."""
    fixed = 0
    for seed in range(12):
        g = random_graph(np.random.default_rng([seed, SMALL_SHAPES.index(shape), 5]), shape)
        ref = brute_force(g)
        for method in ("ldp", "elimination"):
            monkeypatch.setattr(_hubs, "HUB_CANDIDATES", None)
            off = track(g, method=method)
            monkeypatch.setattr(_hubs, "HUB_CANDIDATES", 0.0)
            on = track(g, method=method)
            fixed += on.stats.hubs_fixed
            if off.stats.heuristic_eliminations == 0:
                assert on.stats.hubs_fixed == 0
                np.testing.assert_allclose(on.points, ref, rtol=1e-9, atol=1e-12)
            for (mem, time) in on.points:      # dominated by or on the exact frontier
                assert any(m <= mem + 1e-9 and t <= time + 1e-9 for m, t in ref)
    if shape == "mask":             # a mask feeds every layer, as encoder_norm does
        assert fixed > 0, "the rule should fix some hub on these graphs"


@pytest.mark.parametrize("heuristic", ["min_memory", "min_time", ("weighted", 0.3)])
def test_shared_ends_score_as_the_merged_edge(heuristic):
    """A hub whose chain of series nodes ends where one of its edges ends is scored
    (``virtual_chains(shared_ends=True)``) as after contracting the chain and merging
    the parallel edges for real: the same configuration."""
    from frontier._chains import contract_next_to, virtual_chains
    from frontier._eliminate import Options, Work
    from frontier._store import Store
    from frontier.stats import Tally

    for seed in range(8):
        rng = np.random.default_rng([seed, 3])
        g = CostGraph()
        ks = [5, 4, 6, 3, 4]            # hub 0; chain 0 - 1 - 2 - 3; edge 0 - 3; 0 - 4
        for i, k in enumerate(ks):
            g.add_node(f"n{i}", rng.random((k, 2)) * 10)
        for u, v in ((0, 1), (1, 2), (2, 3), (0, 3), (0, 4), (3, 4)):
            g.add_edge(u, v, rng.random((ks[u], ks[v], 2, 2)) * 10)

        def work():
            return Work(g, g.topological_order(), Store(g.num_nodes, g.num_edges), Tally(),
                        Options())
        series = {1, 2}
        w = work()
        chains = virtual_chains(w, 0, series, shared_ends=True)
        assert chains is not None and chains[1][0] == 3
        assert virtual_chains(w, 0, series) is None          # without: contracted
        virtual = w.choose_config(0, heuristic, chains, shared_ends=True)
        w = work()
        contract_next_to(w, 0, series)
        w.edge_elim(0, 3)
        assert list(w.adj[0][3]) and len(w.adj[0][3]) == 1
        assert w.choose_config(0, heuristic) == virtual
