"""The simulator as MCMC's cost: a strategy's time is its simulated step time.

FlexFlow (``papers/flexflow.txt`` §5-6) prices each MCMC proposal with its execution
simulator, by delta simulation from the current strategy. ``SimulatedCost`` does the
same for ``tensoropt.search.baselines.mcmc_search``: a strategy (one configuration index
per op, each edge on its fastest alternative, as ``MinTimeTables`` reduces it) becomes
the version vector of a ``PlanSimulator``, which simulates it by delta from the nearest
of its recent states (the current strategy is always among them), so a proposal
re-simulates only from the first task it changes.

Memory stays the cost model's additive estimate (``MinTimeTables.price``): the same
quantity every other method of ``tensoropt compare`` is judged by against the memory
limit, so MCMC's hard limit means what it means for the others.

Usage::

    from tensoropt.simulator.strategy_cost import SimulatedCost

    cost = SimulatedCost(tables, cluster)          # tables: MinTimeTables of a search space
    memory_bytes, step_s = cost.total(choice)      # step_s: simulated makespan
    d_memory, d_seconds = cost.delta(choice, op, config)
    found = mcmc_search(tables, limit, budget_s=10, cost=cost)
    cost.simulations, cost.cache_hits              # how much it simulated
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional

import numpy as np

from tensoropt.simulator.plan_options import SimOptions
from tensoropt.simulator.plan_sim import PlanSimulator

__all__ = ["SimulatedCost"]


class SimulatedCost:
    """(additive memory, simulated step time) of a strategy, for ``mcmc_search``.

    Args:
        tables: the ``MinTimeTables`` of a priced ``SearchSpace`` (its graph and cost
            model are simulated).
        cluster: the ``Cluster`` (which ranks share a machine).
        options: ``SimOptions`` (default: chained collectives, one representative rank).
        window: recent states the delta simulation may start from.
        cache_size: strategies whose simulated time is remembered (a rejected proposal
            is often proposed again).

    Raises:
        ValueError: ``tables`` has no search space behind it (``from_cost_graph``).
    """

    def __init__(self, tables, cluster, options: Optional[SimOptions] = None, *,
                 window: int = 4, cache_size: int = 4096) -> None:
        if tables.space is None:
            raise ValueError("SimulatedCost needs MinTimeTables(space) of a priced SearchSpace; "
                             "tables made from a bare CostGraph have no plan to simulate")
        self.tables = tables
        space = tables.space
        self.simulator = PlanSimulator(space.graph, space.model, cluster, options, window=window)
        self._fastest = np.full(len(space.edges), -1, dtype=np.int64)   # -1: fastest alternative
        self._times: OrderedDict[bytes, float] = OrderedDict()
        self._cache_size = cache_size
        self.simulations = 0
        self.cache_hits = 0

    def time_s(self, choice) -> float:
        """The simulated step time (makespan) of the strategy ``choice``."""
        choice = np.asarray(choice, dtype=np.int64)
        key = choice.tobytes()
        seconds = self._times.get(key)
        if seconds is not None:
            self.cache_hits += 1
            self._times.move_to_end(key)
            return seconds
        versions = self.simulator.choice_versions(self.tables.space, choice, self._fastest)
        seconds = self.simulator.simulate(versions).makespan_s
        self.simulations += 1
        self._times[key] = seconds
        if len(self._times) > self._cache_size:
            self._times.popitem(last=False)
        return seconds

    def total(self, choice) -> tuple[float, float]:
        """(additive memory bytes, simulated seconds) of ``choice``."""
        return self.tables.price(choice)[0], self.time_s(choice)

    def delta(self, choice, op: int, config: int) -> tuple[float, float]:
        """The change of ``total`` when op ``op`` moves to configuration ``config``."""
        moved = np.array(choice, dtype=np.int64)
        moved[op] = config
        memory = self.tables.price(moved)[0] - self.tables.price(choice)[0]
        return memory, self.time_s(moved) - self.time_s(choice)
