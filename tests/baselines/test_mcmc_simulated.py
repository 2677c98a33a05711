"""MCMC priced by the simulator (FlexFlow's cost): the delta-simulated time of a strategy
is the full simulation of the Plan it stands for, and the chain optimizes it."""

import numpy as np
import pytest

from tensoropt.cluster import Cluster, Link
from tensoropt.configs import config_of
from tensoropt.search.baselines import MinTimeTables, mcmc_search
from tensoropt.simulator import PlanSimulator
from tensoropt.simulator.strategy_cost import SimulatedCost

CLUSTER = Cluster("test", 2, 2, 16e9, 1e13, Link(1e10, 1e-6), Link(1e9, 5e-6))


def _random_choices(tables, count, seed):
    rng = np.random.default_rng(seed)
    return [np.array([rng.integers(k) for k in tables.num_configs]) for _ in range(count)]


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_a_strategy_costs_the_full_simulation_of_its_plan(space_of, name):
    graph, result = space_of(name)
    tables = MinTimeTables(result.space)
    cost = SimulatedCost(tables, CLUSTER)
    reference = PlanSimulator(graph, result.space.model, CLUSTER, window=1)
    choices = [tables.data_parallel_choice()] + _random_choices(tables, 6, seed=1)
    for choice in choices:
        plan = tables.plan(choice, "mcmc")
        memory, seconds = cost.total(choice)
        assert seconds == reference.plan_result(plan).makespan_s       # exact: integer picoseconds
        assert memory == pytest.approx(plan.memory_bytes, rel=1e-12)
    # the chain's costs are not the additive ones: the simulator overlaps and orders
    additive = [tables.price(c)[1] for c in choices]
    assert [cost.time_s(c) for c in choices] != pytest.approx(additive, rel=1e-6)


def test_a_proposal_is_delta_simulated_and_equals_a_full_simulation(space_of):
    graph, result = space_of("transformer")
    tables = MinTimeTables(result.space)
    cost = SimulatedCost(tables, CLUSTER)
    rng = np.random.default_rng(3)
    choice = tables.data_parallel_choice()
    for _ in range(25):
        op = int(rng.integers(len(choice)))
        config = int(rng.integers(tables.num_configs[op]))
        d_memory, d_seconds = cost.delta(choice, op, config)
        moved = choice.copy()
        moved[op] = config
        full = cost.simulator.simulate_full(
            cost.simulator.choice_versions(result.space, moved, np.full(len(result.space.edges), -1)))
        assert cost.time_s(choice) + d_seconds == pytest.approx(full.makespan_s, rel=1e-12)
        assert d_memory == pytest.approx(tables.price(moved)[0] - tables.price(choice)[0], rel=1e-9, abs=1e-6)
        choice = moved
    assert cost.simulations > 0 and cost.cache_hits > 0


def test_mcmc_on_the_simulator_improves_its_simulated_time_within_the_limit(space_of):
    _, result = space_of("cnn")
    tables = MinTimeTables(result.space)
    cost = SimulatedCost(tables, CLUSTER)
    limit = result.plans.points[-1][0] * 1.5
    found = mcmc_search(tables, limit, proposals=600, seed=0, cost=cost)
    best = found.stats["best_time_s"]
    assert found.stats["cost"] == "SimulatedCost" and found.stats["simulations"] > 0
    chosen = tables.choice_of({op: config_of(found.plan, op) for op in tables.ops})
    assert best == cost.time_s(chosen)
    assert best <= cost.time_s(tables.data_parallel_choice())
    assert found.trace_s[-1][1] == best
    assert found.plan.memory_bytes <= limit


def test_tables_without_a_space_are_refused():
    from frontier import CostGraph

    graph = CostGraph()
    graph.add_node("a", np.array([[1.0, 1.0]]))
    with pytest.raises(ValueError, match="priced SearchSpace"):
        SimulatedCost(MinTimeTables.from_cost_graph(graph), CLUSTER)

