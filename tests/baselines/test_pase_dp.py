"""PaSE's DP finds the same minimum time as Frontier-Tracking's fastest point: both are
exact on the same cost graph."""

import numpy as np
import pytest

from frontier import track
from frontier.brute_force import brute_force
from frontier.synthetic import SMALL_SHAPES, model_graph, random_graph
from tensoropt.search.baselines import MinTimeTables, generate_seq, min_time_choice, pase_search
from tensoropt.search.driver import price_plan


@pytest.mark.parametrize("shape", SMALL_SHAPES)
def test_min_time_equals_ft_fastest_on_random_small_graphs(shape):
    rng = np.random.default_rng(17)
    exact = 0
    for _ in range(25):
        graph = random_graph(rng, shape)
        result = track(graph)
        tables = MinTimeTables.from_cost_graph(graph)
        choice, stats = min_time_choice(tables)
        memory, seconds = tables.price(choice)
        assert stats["time_s"] == pytest.approx(seconds, rel=1e-9, abs=1e-12)
        assert seconds == pytest.approx(brute_force(graph)[-1][1], rel=1e-9, abs=1e-12)
        if result.exact:
            exact += 1
            assert seconds == pytest.approx(result.points[-1][1], rel=1e-9, abs=1e-12)
    assert exact >= 10, f"FT was exact on only {exact} of 25 {shape} graphs"


@pytest.mark.parametrize("shape", ["residual", "transformer"])
def test_min_time_equals_ft_on_model_shaped_graphs(shape):
    graph = model_graph(shape, n=40, k=12, seed=3)
    result = track(graph)
    tables = MinTimeTables.from_cost_graph(graph)
    seconds = tables.price(min_time_choice(tables)[0])[1]
    if result.exact:
        assert seconds == pytest.approx(result.points[-1][1], rel=1e-9)
    else:   # FT's heuristic eliminations can only lose time; PaSE is exact
        assert seconds <= result.points[-1][1] * (1 + 1e-9)


@pytest.mark.parametrize("name,seed", [("mlp", None), ("cnn", None), ("lstm", None), ("transformer", None),
                                       ("generated", 1), ("generated", 4), ("generated", 9)])
def test_pase_equals_ft_min_time_on_tiny_models(space_of, name, seed):
    _, result = space_of(name, seed)
    found = pase_search(MinTimeTables(result.space))
    fastest = result.plans.points[-1][1]
    again = price_plan(result.space, found.plan)   # an ordinary plan, re-priced alike
    assert again.time_s == pytest.approx(found.plan.time_s, rel=1e-12)
    assert again.memory_bytes == pytest.approx(found.plan.memory_bytes, rel=1e-12)
    if result.track.exact:
        assert found.plan.time_s == pytest.approx(fastest, rel=1e-9)
    else:
        assert found.plan.time_s <= fastest * (1 + 1e-9)


def test_generate_seq_sequences_a_hub_after_its_leaves():
    # a star: hub 0 with leaves 1..5, plus a path 5-6-7
    neighbors = [{1, 2, 3, 4, 5}, {0}, {0}, {0}, {0}, {0, 6}, {5, 7}, {6}]
    order, widths = generate_seq(neighbors, [3] * 8)
    assert sorted(order) == list(range(8))
    assert order.index(0) > max(order.index(v) for v in (1, 2, 3, 4))
    assert max(widths) == 1   # every dependent set stays a single vertex


def test_a_table_over_the_limit_is_refused_with_its_size(space_of):
    from tensoropt.search.baselines import BaselineError

    _, result = space_of("transformer")
    with pytest.raises(BaselineError, match="table of .* entries at op"):
        min_time_choice(MinTimeTables(result.space), max_table_entries=10)
