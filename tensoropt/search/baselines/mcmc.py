"""FlexFlow's search (Jia et al., SysML 2019, ``papers/flexflow.txt`` §6): Markov chain
Monte Carlo over whole strategies, with the Metropolis-Hastings rule.

- A proposal changes one op's configuration (an op drawn uniformly among those with
  more than one, a configuration drawn uniformly among its others).
- A proposal that makes the strategy cheaper is accepted; a dearer one with probability
  ``exp(-beta * (cost' - cost) / cost_dp)``, with ``cost_dp`` the data-parallel time (the
  default ``beta`` = 1000 accepts a move 0.1% of data parallel slower with probability
  1/e; on ``paper_rnn`` with 8 devices and 40,000 proposals, beta 100 ended 8% above
  beta 1000, which ended 0.5% above beta 10,000).
- The memory limit is hard: a proposal over the limit is rejected. A chain that starts
  over the limit (data parallel or a random start can) first repairs: it accepts
  exactly the proposals that need less memory, whatever their time, until it fits.
- Two chains, as FlexFlow's §6.2 starts it: one from data parallelism, one from a random
  strategy; each gets half of the budget, ``proposals`` (reproducible for a seed) or
  ``budget_s`` seconds (whichever ends first when both are given).

The cost is pluggable: any object with ``total(choice) -> (memory, time)`` and
``delta(choice, op_index, new_config) -> (memory change, time change)``.
``AdditiveCost`` (the default here) is the cost model's own sum of op and edge costs,
whose delta touches only the changed op and its edges. FlexFlow prices with its
simulator's delta simulation: ``tensoropt.simulator.strategy_cost.SimulatedCost`` does
that (the simulated step time, memory still the additive estimate), and ``tensoropt
compare`` uses it unless told ``--mcmc-cost additive``. ``stats["best_time_s"]`` is the
best plan's time under the chain's cost (the simulated time with ``SimulatedCost``);
the plan's own ``time_s`` is the cost model's additive time, as for every other method.

Usage::

    result = mcmc_search(tables, memory_limit_bytes=14.5e9, proposals=20_000, seed=0)
    result.plan, result.trace_s          # best plan; (seconds, best time so far) ...
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from tensoropt.search.baselines._result import BaselineResult
from tensoropt.search.baselines._tables import MinTimeTables

__all__ = ["StrategyCost", "AdditiveCost", "mcmc_search"]


class StrategyCost(Protocol):
    """What MCMC prices a strategy (a config index per op) with."""

    def total(self, choice: np.ndarray) -> tuple[float, float]: ...

    def delta(self, choice: np.ndarray, op: int, config: int) -> tuple[float, float]: ...


class AdditiveCost:
    """The cost model's (memory, time): op costs plus each edge's fastest alternative."""

    def __init__(self, tables: MinTimeTables):
        self.tables = tables

    def total(self, choice: np.ndarray) -> tuple[float, float]:
        return self.tables.price(choice)

    def delta(self, choice: np.ndarray, op: int, config: int) -> tuple[float, float]:
        t = self.tables
        old = int(choice[op])
        memory = float(t.node_memory_bytes[op][config] - t.node_memory_bytes[op][old])
        seconds = float(t.node_time_s[op][config] - t.node_time_s[op][old])
        for e in t.neighbors[op]:
            edge = t.edges[e]
            k, p = int(choice[edge.producer]), int(choice[edge.consumer])
            k2, p2 = (config, p) if edge.producer == op else (k, config)
            memory += float(edge.memory_bytes[k2, p2] - edge.memory_bytes[k, p])
            seconds += float(edge.time_s[k2, p2] - edge.time_s[k, p])
        return memory, seconds


@dataclass(frozen=True)
class _Walk:
    """What every chain shares: the ops it may move, their configuration counts, the
    memory limit, the acceptance temperature and its time scale, and the clock."""

    movable: np.ndarray
    sizes: list
    limit: float
    beta: float
    scale_s: float
    clock: Callable[[], float]


def _chain(cost: StrategyCost, start: np.ndarray, rng: np.random.Generator, walk: _Walk,
           proposals: int | None, deadline: float | None, best: dict, stats: dict) -> None:
    movable, sizes, limit, beta, scale_s, clock = (walk.movable, walk.sizes, walk.limit, walk.beta,
                                                    walk.scale_s, walk.clock)
    current = start.copy()
    memory, seconds = cost.total(current)

    def record(memory: float, seconds: float) -> None:
        if memory <= limit and seconds < best["time_s"]:
            best.update(time_s=seconds, choice=current.copy())
            best["trace"].append((clock(), seconds))

    record(memory, seconds)
    done = 0
    while (proposals is None or done < proposals) and (deadline is None or clock() < deadline):
        done += 1
        op = int(movable[rng.integers(len(movable))])
        config = int(rng.integers(sizes[op] - 1))
        config += config >= current[op]
        d_memory, d_seconds = cost.delta(current, op, config)
        new_memory = memory + d_memory
        if memory > limit:               # repairing a start over the limit: memory must fall
            if new_memory >= memory:
                stats["rejected_memory"] += 1
                continue
        elif new_memory > limit:
            stats["rejected_memory"] += 1
            continue
        elif d_seconds > 0 and rng.random() >= math.exp(-beta * d_seconds / scale_s):
            continue
        stats["accepted"] += 1
        current[op] = config
        memory, seconds = new_memory, seconds + d_seconds
        record(memory, seconds)
    stats["proposals"] += done


def mcmc_search(tables: MinTimeTables, memory_limit_bytes: float | None = None, *, proposals: int | None = None,
                budget_s: float | None = None, seed: int = 0, beta: float = 1000.0,
                cost: StrategyCost | None = None) -> BaselineResult:
    """FlexFlow's MCMC: the best plan the two chains visit within the memory limit.

    Raises:
        ValueError: neither ``proposals`` nor ``budget_s`` is given, or one is not positive.
    """
    if proposals is None and budget_s is None:
        raise ValueError("mcmc_search: give proposals=N (reproducible) or budget_s=S (seconds), or both")
    if (proposals is not None and proposals < 1) or (budget_s is not None and budget_s <= 0):
        raise ValueError(f"mcmc_search: proposals ({proposals}) and budget_s ({budget_s}) must be positive")
    start = time.perf_counter()

    def clock() -> float:
        return time.perf_counter() - start

    cost = cost or AdditiveCost(tables)
    rng = np.random.default_rng(seed)
    sizes = tables.num_configs
    movable = np.array([i for i, k in enumerate(sizes) if k > 1], dtype=np.int64)
    limit = np.inf if memory_limit_bytes is None else float(memory_limit_bytes)
    data_parallel = tables.data_parallel_choice()
    scale_s = cost.total(data_parallel)[1] or 1.0
    random_start = np.array([rng.integers(k) for k in sizes], dtype=np.int64)
    best: dict = {"time_s": np.inf, "choice": None, "trace": []}
    stats = {"proposals": 0, "accepted": 0, "rejected_memory": 0, "seed": seed, "beta": beta,
             "cost": type(cost).__name__}
    half = None if proposals is None else max(1, proposals // 2)
    for chain, first in enumerate((data_parallel, random_start)):
        deadline = None if budget_s is None else budget_s * (chain + 1) / 2
        if len(movable):
            _chain(cost, first, rng, _Walk(movable, sizes, limit, beta, scale_s, clock), half, deadline,
                   best, stats)
    stats["best_time_s"] = None if best["choice"] is None else float(best["time_s"])
    if best["choice"] is None:   # nothing visited fits: report data parallel, which does not
        best["choice"] = data_parallel
        stats["fits_found"] = False
    for name in ("simulations", "cache_hits"):
        if hasattr(cost, name):
            stats[name] = getattr(cost, name)
    plan = tables.plan(best["choice"], "mcmc")
    trace = tuple((round(s, 6), float(t)) for s, t in best["trace"])
    return BaselineResult("mcmc", plan, clock(), stats, trace)
