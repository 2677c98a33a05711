"""The elimination order: series nodes whose product is large wait for the heuristic
eliminations that are due (``frontier._series``, issue 14's InceptionV3 tail), waiting
chains scored without multiplying them (``_chains``), backbone triangles (``_triangles``).

Waiting must change only the cost: the same nodes are fixed to the same configurations,
and the frontier is the same (exact where no heuristic ran, as brute force says).
"""

import numpy as np
import pytest

from frontier import CostGraph, _chains, _series, _triangles, track
from frontier.brute_force import brute_force
from frontier.synthetic import SMALL_SHAPES, hard_graph, model_graph, random_graph


def _tail_graph(seed: int, k: int = 8, tail: int = 4) -> CostGraph:
    """Two clusters that need a heuristic elimination each (a source s feeding p, q, r,
    with p -> q -> r and p -> r), joined by a concat whose rich tail (a chain of leaves)
    folds into it: the concat is a series node between the clusters' r nodes, as
    InceptionV3's last concat is between two batch norms."""
    rng = np.random.default_rng(seed)
    g = CostGraph()

    def node(name, kk=k):
        return g.add_node(name, rng.random((kk, 2)))

    def edge(u, v):
        g.add_edge(u, v, rng.random((g.num_configs(u), g.num_configs(v), 2, 2)))

    ends = []
    for c in "ab":
        s, p, q, r = (node(f"{c}_{x}", 3 if x == "s" else k) for x in "spqr")
        for u, v in ((s, p), (s, q), (s, r), (p, q), (p, r), (q, r)):
            edge(u, v)
        ends.append(r)
    prev = node("concat")
    edge(ends[0], prev)
    edge(ends[1], prev)
    for i in range(tail):
        t = node(f"tail{i}")
        edge(prev, t)
        prev = t
    return g


def _both(g, method, monkeypatch, **kw):
    """track(g) as the paper orders it (no series node waits, no backbone node is
    eliminated), and with every series node that may wait waiting and backbone
    triangles eliminated where estimated cheaper."""
    monkeypatch.setattr(_series, "DEFER_CANDIDATES", None)
    monkeypatch.setattr(_triangles, "BACKBONE_TRIANGLES", False)
    plain = track(g, method=method, **kw)
    monkeypatch.setattr(_series, "DEFER_CANDIDATES", 0.0)
    monkeypatch.setattr(_triangles, "BACKBONE_TRIANGLES", True)
    waiting = track(g, method=method, **kw)
    return plain, waiting


def _same(plain, waiting):
    assert waiting.stats.heuristic_choices == plain.stats.heuristic_choices
    assert len(waiting.points) == len(plain.points)
    np.testing.assert_allclose(waiting.points, plain.points, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["ldp", "elimination"])
def test_waiting_keeps_choices_and_frontier_on_larger_graphs(method, monkeypatch):
    waited = scored = heuristic = triangles = 0
    for g in _larger_graphs():
        plain, waiting = _both(g, method, monkeypatch)
        _same(plain, waiting)
        assert plain.stats.waited_series == 0
        waited += waiting.stats.waited_series
        scored += waiting.stats.scored_chains
        heuristic += waiting.stats.heuristic_eliminations
        triangles += waiting.stats.backbone_triangles
    assert waited > 0 and heuristic > 0, "the graphs should exercise waiting and heuristics"
    if method == "ldp":
        assert triangles > 0, "some backbone triangle should be eliminated"
    assert scored > 0, "some waiting chain should be scored before a heuristic"


def _larger_graphs() -> list[CostGraph]:
    graphs = [model_graph("transformer", 60, 8, seed=s) for s in range(3)]
    graphs += [model_graph("transformer", 30, 8, seed=1)]     # a backbone triangle
    graphs += [model_graph("residual", 60, 8, seed=0), hard_graph("shortcut", 40, 6, seed=1)]
    return graphs + [_tail_graph(s) for s in range(4)]


@pytest.mark.parametrize("method", ["ldp", "elimination"])
def test_scored_chains_keep_choices_and_frontier(method, monkeypatch):
    """A heuristic elimination scores waiting chains as contracted (``chain_minima``)
    instead of contracting them first: the same configurations are fixed, to the bit,
    and the frontier is the same; the chains' nodes fold afterwards instead."""
    monkeypatch.setattr(_series, "DEFER_CANDIDATES", 0.0)
    contracted = scored = 0
    for g in _larger_graphs():
        monkeypatch.setattr(_chains, "VIRTUAL_CHAINS", False)
        real = track(g, method=method)
        monkeypatch.setattr(_chains, "VIRTUAL_CHAINS", True)
        virtual = track(g, method=method)
        _same(real, virtual)
        assert real.stats.scored_chains == 0
        contracted += real.stats.deferred_contractions
        scored += virtual.stats.scored_chains
    assert contracted > 0 and scored > 0


def test_chain_minima_are_the_contracted_edges_least_points(monkeypatch):
    """``chain_minima`` equals, bit for bit, the least memory and least time per cell of
    the edge that contracting the chain makes (``contract_next_to``)."""
    from frontier._eliminate import Options, Work
    from frontier._store import Store
    from frontier.stats import Tally

    checked = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        g = CostGraph()
        ks = [3, 5, 4, 6, 2, 5]            # hub, chain of four, end
        for i, k in enumerate(ks):
            g.add_node(f"n{i}", rng.random((k, 2)) * 10)
        for u, v in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5)):
            g.add_edge(u, v, rng.random((ks[u], ks[v], 3, 2)) * 10)
        order = g.topological_order()
        work = Work(g, order, Store(g.num_nodes, g.num_edges), Tally(), Options())
        series = {1, 2, 3, 4}
        x, mem, time = _chains.chain_minima(work, 0, 1, series)
        _chains.contract_next_to(work, 0, series)
        assert x == 5 and list(work.adj[0]) == [5]
        (wid,) = work.adj[0][5]
        t = work.st.table(work.edges[wid][2])
        assert np.array_equal(mem, t.mem[t.off[:-1]].reshape(3, 5))
        assert np.array_equal(time, t.time[t.off[1:] - 1].reshape(3, 5))
        checked += 1
    assert checked == 6


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_series_order_by_estimate_keeps_exact_frontiers(shape, monkeypatch):
    """Choosing the next series node by its estimated product (``SERIES_BY_ESTIMATE``)
    instead of its blocks changes only the cost: brute force's frontier where no
    heuristic ran, the same choices and frontier otherwise."""
    for seed in range(12):
        g = random_graph(np.random.default_rng([seed, SMALL_SHAPES.index(shape), 11]), shape)
        ref = brute_force(g)
        for method in ("ldp", "elimination"):
            monkeypatch.setattr(_series, "SERIES_BY_ESTIMATE", False)
            blocks = track(g, method=method)
            monkeypatch.setattr(_series, "SERIES_BY_ESTIMATE", True)
            estimate = track(g, method=method)
            _same(blocks, estimate)
            if estimate.stats.heuristic_eliminations == 0:
                np.testing.assert_allclose(estimate.points, ref, rtol=1e-9, atol=1e-12)


def test_series_order_by_estimate_keeps_choices_on_larger_graphs(monkeypatch):
    for g in _larger_graphs():
        for method in ("ldp", "elimination"):
            monkeypatch.setattr(_series, "SERIES_BY_ESTIMATE", False)
            blocks = track(g, method=method)
            monkeypatch.setattr(_series, "SERIES_BY_ESTIMATE", True)
            _same(blocks, track(g, method=method))


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_waiting_matches_brute_force(shape, monkeypatch):
    for seed in range(12):
        g = random_graph(np.random.default_rng([seed, SMALL_SHAPES.index(shape), 7]), shape)
        ref = brute_force(g)
        for method in ("ldp", "elimination"):
            plain, waiting = _both(g, method, monkeypatch)
            _same(plain, waiting)
            if waiting.stats.heuristic_eliminations == 0:
                np.testing.assert_allclose(waiting.points, ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["ldp", "elimination"])
def test_the_tail_waits_for_the_heuristic_and_multiplies_less(method, monkeypatch):
    """Without waiting the concat (a series node) is eliminated first, making a K x K
    table of its rich tail; waiting, the clusters' heuristic eliminations come first
    and the concat ends up a leaf: same frontier, far fewer candidate points."""
    for seed in range(3):
        plain, waiting = _both(_tail_graph(seed), method, monkeypatch)
        _same(plain, waiting)
        assert waiting.stats.heuristic_eliminations == 2
        assert waiting.stats.waited_series >= 1
        assert waiting.stats.candidates < 0.5 * plain.stats.candidates, \
            (waiting.stats.candidates, plain.stats.candidates)


def _triangle_graph(seed: int, k: int = 8, tail: int = 4) -> CostGraph:
    """InceptionV3's last batch norm: a conv (the backbone's first node, 4 configurations)
    feeds mean and subtract (k each, joined), both feed a multiply (2 configurations)
    that carries the network's tail (a chain of leaves, rich frontiers)."""
    rng = np.random.default_rng(seed)
    g = CostGraph()

    def node(name, kk):
        return g.add_node(name, rng.random((kk, 2)))

    def edge(u, v):
        g.add_edge(u, v, rng.random((g.num_configs(u), g.num_configs(v), 2)))

    conv, mean, sub, mul = node("conv", 4), node("mean", k), node("sub", k), node("mul", 2)
    for u, v in ((conv, mean), (conv, sub), (mean, sub), (mean, mul), (sub, mul)):
        edge(u, v)
    prev = mul
    for i in range(tail):
        t = node(f"tail{i}", 3)
        edge(prev, t)
        prev = t
    return g


def test_a_backbone_triangle_goes_first_when_cheaper(monkeypatch):
    """Without the rule the multiply (free) is eliminated, spreading the tail's points
    over mean x subtract; with it the conv (backbone, its neighbours joined) goes first
    and the tail stays on 2 configurations: the same exact frontier for less work."""
    for seed in range(3):
        g = _triangle_graph(seed)
        plain, waiting = _both(g, "ldp", monkeypatch)
        _same(plain, waiting)          # no heuristic ran: both exact
        assert plain.stats.heuristic_eliminations == 0
        assert plain.stats.backbone_triangles == 0 and waiting.stats.backbone_triangles == 1
        assert waiting.stats.candidates < 0.7 * plain.stats.candidates


def test_the_default_threshold_lets_small_products_go_first(monkeypatch):
    """With the shipped threshold, products of a few thousand candidates never wait."""
    assert _series.DEFER_CANDIDATES is not None and _series.DEFER_CANDIDATES >= 1e4
    res = track(_tail_graph(0))
    assert res.stats.waited_series == 0


def test_closes_sees_an_edge_or_a_chain_between_the_ends():
    """A series chain whose ends are already joined (by an edge, or by another chain)
    must not wait: contracting it makes parallel edges, which exact eliminations use."""
    from frontier._eliminate import Options, Work
    from frontier._store import Store
    from frontier.stats import Tally

    def work_of(edges, n):
        g = CostGraph()
        for v in range(n):
            g.add_node(f"n{v}", [(1.0, 1.0), (2.0, 0.5)])
        for u, v in edges:
            g.add_edge(u, v, np.ones((2, 2, 2)))
        order = g.topological_order()
        return Work(g, order, Store(g.num_nodes, g.num_edges), Tally(), Options())

    def closes(work, v):
        series = {x for x in work.adj if work.degree(x) == 2}
        return _series.closes(work, v, series)[0]

    # 0 - 1 - 2 and 0 - 2 (triangle): 1 closes.
    assert closes(work_of([(0, 1), (1, 2), (0, 2)], 3), 1)
    # 0 - 1 - 2 and 0 - 3 - 2 (two chains between 0 and 2): both close.
    w = work_of([(0, 1), (1, 2), (0, 3), (3, 2), (0, 4), (2, 4)], 5)
    assert closes(w, 1) and closes(w, 3)
    # 0 - 1 - 2 - 3 with 0, 3 of degree 3 but not joined: does not close.
    w = work_of([(0, 1), (1, 2), (2, 3), (4, 0), (5, 0), (3, 6), (3, 7)], 8)
    assert not closes(w, 1) and not closes(w, 2)
    # ... and does once 0 and 3 are joined.
    w = work_of([(0, 1), (1, 2), (2, 3), (4, 0), (0, 3), (3, 6)], 7)
    assert closes(w, 1) and closes(w, 2)


def test_steps_are_recorded_per_elimination():
    """``seconds_by_step`` counts every elimination by kind; ``slowest_steps`` are the
    slowest of them, slowest first, naming the node each eliminated."""
    g = _tail_graph(1)
    for method in ("ldp", "elimination"):
        s = track(g, method=method).stats
        counts = {k: n for k, n, _ in s.seconds_by_step}
        assert counts.get("node", 0) == s.node_eliminations
        assert counts.get("edge", 0) == s.edge_eliminations
        assert counts.get("heuristic", 0) == s.heuristic_eliminations == 2
        assert counts["fold"] == s.branch_eliminations + s.ldp_steps + s.enumerations
        secs = [x[0] for x in s.slowest_steps]
        assert secs == sorted(secs, reverse=True) and len(secs) == min(10, sum(counts.values()))
        assert sum(t for _, _, t in s.seconds_by_step) <= s.eliminate_s + s.ldp_s
        fixed = {v for v, _ in s.heuristic_choices}
        assert all(nodes[0] in fixed for _, kind, nodes, _, _ in s.slowest_steps
                   if kind == "heuristic")


def test_backbone_triangles_alone_keep_choices_and_frontier(monkeypatch):
    """Only where the rest of the component needs no heuristic (``_reducible_without``):
    on this transformer graph, eliminating the backbone's first node (in a triangle)
    would start a new backbone on the node the heuristic fixes, and it would fix
    another one."""
    monkeypatch.setattr(_series, "DEFER_CANDIDATES", None)
    for g in [model_graph("transformer", 30, 8, seed=1), _triangle_graph(0), _tail_graph(0)]:
        monkeypatch.setattr(_triangles, "BACKBONE_TRIANGLES", False)
        plain = track(g)
        monkeypatch.setattr(_triangles, "BACKBONE_TRIANGLES", True)
        _same(plain, track(g))


def test_a_backbone_triangle_node_does_not_go_when_it_leaves_more_cells(monkeypatch):
    """ResNet101's last batch norm: the conv (the backbone's first node, few
    configurations) and mean and subtract (many) form a triangle. Eliminating the conv
    would leave a mean x subtract table, the mean a conv x subtract one: the node that
    leaves fewer cells goes, whatever the estimates say (they bound the candidates from
    above, and on ResNet101 the mean made 5.5M where 2G were estimated, while the conv's
    15.6M-candidate product then had to be merged with a 9M-point edge). Exact either
    way: brute force's frontier."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        g = CostGraph()
        conv = g.add_node("conv", rng.random((3, 2)))
        mean = g.add_node("mean", rng.random((9, 2)))
        sub = g.add_node("sub", rng.random((6, 2)))
        for u, v, alts in ((conv, mean, 1), (conv, sub, 1), (mean, sub, 4)):
            g.add_edge(u, v, rng.random((g.num_configs(u), g.num_configs(v), alts, 2)))
        ref = brute_force(g)
        res = track(g, method="ldp")
        assert res.stats.heuristic_eliminations == 0 and res.stats.backbone_triangles == 0
        first = next(s for s in res.stats.slowest_steps if s[1] == "node")
        assert res.stats.node_eliminations == 1 and first[2][0] == mean
        np.testing.assert_allclose(res.points, ref, rtol=1e-9, atol=1e-12)


def _diamond_graph(seed: int) -> CostGraph:
    """The PaSE Transformer's decoder layer norm, late in the search: the residual add
    (the backbone's first node) carries the layer's rich frontier (folded in from two
    leaves, a coarse and a fine trade of memory for time: 20 points a configuration)
    and feeds mean and subtract (joined), which both feed multiply_1, a free node with
    a thinner frontier of its own (one leaf: 5 points) but a five-alternative edge from
    subtract. Both tips leave a mean x subtract table; the add spreads 20 + 1 + 1 points
    a configuration over it, the multiply 5 + 1 + 5, while the estimates (products, not
    sums) are 2 * (3 * 20 * 2) and 2 * (3 * 5 * 10)."""
    rng = np.random.default_rng(seed)
    g = CostGraph()

    def node(name, kk):
        return g.add_node(name, rng.random((kk, 2)) * 0.01)

    def trade(name, kk, step):      # every configuration on the frontier
        i = np.arange(kk, dtype=float)
        return g.add_node(name, np.stack([step * i, (step + 1) * (kk - 1 - i)], axis=1)
                          + rng.random((kk, 2)) * 0.01)

    def edge(u, v, alts=1):
        costs = rng.random((g.num_configs(u), g.num_configs(v), alts, 2)) * 0.01
        if alts > 1:                # alternatives that trade memory for time, too
            costs[..., 0] += np.arange(alts)
            costs[..., 1] += alts - 1 - np.arange(alts)
        g.add_edge(u, v, costs)

    add, mean, sub, mul = node("add", 2), node("mean", 3), node("sub", 2), node("mul", 2)
    for u, v, alts in ((add, mean, 1), (add, sub, 1), (mean, sub, 1), (mean, mul, 1),
                       (sub, mul, 5)):
        edge(u, v, alts)
    edge(add, trade("coarse", 4, 10.0))
    edge(add, trade("fine", 5, 1.0))
    edge(mul, trade("mul_leaf", 5, 1.0))
    return g


def test_a_backbone_triangle_node_that_spreads_more_points_stays(monkeypatch):
    """When both tips of the diamond leave as many cells, the one that spreads fewer
    points a configuration (``_triangles.spread``; here half as many) goes: the free
    multiply, though the estimates (a product of the parts' points, not a sum) favour
    the add. Ranking
    by the estimates instead (``spread`` made equal) eliminates the add and makes more
    candidates. Exact either way: brute force's frontier."""
    more = 0
    for seed in range(4):
        g = _diamond_graph(seed)
        ref = brute_force(g)
        res = track(g, method="ldp")
        assert res.stats.heuristic_eliminations == 0 and res.stats.backbone_triangles == 0
        np.testing.assert_allclose(res.points, ref, rtol=1e-9, atol=1e-12)
        monkeypatch.setattr(_triangles, "spread", lambda work, v: 0.0)
        by_estimate = track(g, method="ldp")
        monkeypatch.undo()
        assert by_estimate.stats.backbone_triangles == 1
        np.testing.assert_allclose(by_estimate.points, ref, rtol=1e-9, atol=1e-12)
        more += by_estimate.stats.candidates > res.stats.candidates
    assert more == 4


def test_close_spreads_leave_the_choice_to_the_estimate():
    """``_triangles._cheaper``: fewer cells first; on a tie, the spread only when one is
    ``SPREAD_RATIO`` times the other (the diamond above: 11 against 22); closer (ResNet101's
    conv3 against its batch norm's multiply: 13.9 against 15.6), the estimate."""
    cheaper = _triangles._cheaper
    assert cheaper((6, 11.0, 300.0), (6, 22.0, 240.0))
    assert not cheaper((6, 22.0, 240.0), (6, 11.0, 300.0))
    assert not cheaper((5529, 13.9, 1.46e7), (5529, 15.6, 1.28e7))
    assert cheaper((5529, 15.6, 1.28e7), (5529, 13.9, 1.46e7))
    assert cheaper((12, 99.0, 9e9), (16, 1.0, 1.0))          # cells first
    assert not cheaper((6, 0.0, 5.0), (6, 0.0, 5.0))         # a tie keeps the first
