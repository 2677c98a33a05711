"""FlexFlow's MCMC: reproducible for a seed, memory limit hard, deltas exact."""

import numpy as np
import pytest

from tensoropt.search.baselines import AdditiveCost, MinTimeTables, mcmc_search


def test_a_fixed_seed_and_proposal_count_reproduce_the_search(space_of):
    tables = MinTimeTables(space_of("cnn")[1].space)
    runs = [mcmc_search(tables, proposals=2000, seed=5) for _ in range(2)]
    assert runs[0].plan == runs[1].plan
    assert [t for _, t in runs[0].trace_s] == [t for _, t in runs[1].trace_s]
    assert runs[0].stats == runs[1].stats
    other = mcmc_search(tables, proposals=2000, seed=6)
    assert other.stats["accepted"] != runs[0].stats["accepted"] or other.plan != runs[0].plan


def test_the_trace_is_best_so_far_and_ends_at_the_plan(space_of):
    tables = MinTimeTables(space_of("cnn")[1].space)
    found = mcmc_search(tables, proposals=4000, seed=0)
    times = [t for _, t in found.trace_s]
    seconds = [s for s, _ in found.trace_s]
    assert len(times) >= 2 and times == sorted(times, reverse=True) and seconds == sorted(seconds)
    assert times[-1] == pytest.approx(found.plan.time_s, rel=1e-9)
    dp = tables.price(tables.data_parallel_choice())[1]
    assert found.plan.time_s < dp   # it improves on its data-parallel start


def test_the_memory_limit_is_hard(space_of):
    _, result = space_of("cnn")
    tables = MinTimeTables(result.space)
    limit = result.plans.points[0][0] * 1.1
    found = mcmc_search(tables, limit, proposals=4000, seed=2)
    assert found.plan.memory_bytes <= limit
    assert found.stats["rejected_memory"] > 0


def test_additive_delta_equals_the_difference_of_totals(space_of):
    tables = MinTimeTables(space_of("transformer")[1].space)
    cost = AdditiveCost(tables)
    rng = np.random.default_rng(0)
    choice = np.array([rng.integers(k) for k in tables.num_configs])
    for _ in range(200):
        op = int(rng.integers(len(choice)))
        config = int(rng.integers(tables.num_configs[op]))
        d_memory, d_seconds = cost.delta(choice, op, config)
        before = cost.total(choice)
        moved = choice.copy()
        moved[op] = config
        after = cost.total(moved)
        assert d_seconds == pytest.approx(after[1] - before[1], rel=1e-9, abs=1e-15)
        assert d_memory == pytest.approx(after[0] - before[0], rel=1e-9, abs=1e-6)
        choice = moved


def test_a_budget_is_required(space_of):
    tables = MinTimeTables(space_of("mlp")[1].space)
    with pytest.raises(ValueError, match="proposals=N"):
        mcmc_search(tables)
    with pytest.raises(ValueError, match="positive"):
        mcmc_search(tables, proposals=0)
