"""Minimum-time tables of a priced search space, shared by the baselines.

Every baseline here searches for the least time per iteration only (as OptCNN, ToFu and
PaSE do), so each data edge is reduced to its fastest tensor-reuse alternative, exactly
as ``tensoropt.search.plan_from_configs`` picks it when given no alternative: least
time, then least memory. A strategy is then one configuration index per op, and its
(memory, time) is a sum of table entries, equal to the ``Plan`` that
``plan_from_configs`` builds from it.

Usage::

    tables = MinTimeTables(space)                 # space: tensoropt.search_space.SearchSpace
    choice = tables.data_parallel_choice()        # np.ndarray, one config index per op
    memory_bytes, time_s = tables.price(choice)
    plan = tables.plan(choice, "optcnn")          # an ordinary, executable Plan
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensoropt.plan import Plan
from tensoropt.search.driver import data_parallel_configs, plan_from_configs
from tensoropt.search.space import SearchSpace

__all__ = ["EdgeMinTime", "MinTimeTables"]


@dataclass(frozen=True)
class EdgeMinTime:
    """One data edge reduced to its fastest alternative per configuration pair.

    Attributes:
        producer: index of the producing op in ``MinTimeTables.ops``.
        consumer: index of the consuming op.
        time_s: (K producer, K consumer) seconds of the fastest alternative.
        memory_bytes: (K producer, K consumer) bytes of that alternative.
    """

    producer: int
    consumer: int
    time_s: np.ndarray
    memory_bytes: np.ndarray


class MinTimeTables:
    """Per op its configurations' (memory, time); per edge its fastest alternatives.

    Attributes:
        space: the priced search space.
        ops: ``space.ops`` (index i is op i of every choice vector).
        node_time_s, node_memory_bytes: per op, an array over its configurations.
        edges: ``EdgeMinTime`` per data edge, in ``space.edges`` order.
        neighbors: per op, the indices (into ``edges``) of the edges that touch it.
    """

    def __init__(self, space: SearchSpace):
        self.space = space
        self.ops = list(space.ops)
        self.index = {op: i for i, op in enumerate(self.ops)}
        costs = [space.node_costs(op) for op in self.ops]
        self.node_memory_bytes = [c[:, 0] for c in costs]
        self.node_time_s = [c[:, 1] for c in costs]
        reduced: dict = {}
        self.edges: list[EdgeMinTime] = []
        self.neighbors: list[list[int]] = [[] for _ in self.ops]
        for e, table in enumerate(space.edges):
            grid = space.edge_costs(table)
            if id(grid) not in reduced:
                reduced[id(grid)] = (grid, *_fastest(grid))   # keep grid alive: ids stay unique
            _, time_s, memory_bytes = reduced[id(grid)]
            u, v = self.index[table.producer], self.index[table.consumer]
            self.edges.append(EdgeMinTime(u, v, time_s, memory_bytes))
            self.neighbors[u].append(e)
            self.neighbors[v].append(e)

    @classmethod
    def from_cost_graph(cls, graph) -> "MinTimeTables":
        """The tables of a bare ``frontier.CostGraph`` (no search space behind it: ``plan``
        and ``data_parallel_choice`` are not available); for differential tests."""
        self = cls.__new__(cls)
        self.space = None
        self.ops = [graph.node_name(v) for v in range(graph.num_nodes)]
        self.index = {v: v for v in range(graph.num_nodes)}
        costs = [graph.node_costs(v) for v in range(graph.num_nodes)]
        self.node_memory_bytes = [np.asarray(c[:, 0], dtype=np.float64) for c in costs]
        self.node_time_s = [np.asarray(c[:, 1], dtype=np.float64) for c in costs]
        self.edges, self.neighbors = [], [[] for _ in self.ops]
        for e in range(graph.num_edges):
            edge = graph.edge(e)
            ka, kb = edge.shape
            time_s, memory_bytes = np.empty((ka, kb)), np.empty((ka, kb))
            for k in range(ka):
                for p in range(kb):
                    alts = edge.alternatives(k, p)
                    least = alts[:, 1].min()
                    time_s[k, p] = least
                    memory_bytes[k, p] = alts[alts[:, 1] == least, 0].min()
            self.edges.append(EdgeMinTime(edge.src, edge.dst, time_s, memory_bytes))
            self.neighbors[edge.src].append(e)
            self.neighbors[edge.dst].append(e)
        return self

    @property
    def num_configs(self) -> list[int]:
        """Configurations per op."""
        return [len(t) for t in self.node_time_s]

    def price(self, choice) -> tuple[float, float]:
        """(memory bytes, seconds) of the strategy ``choice`` (a config index per op)."""
        memory = sum(float(m[k]) for m, k in zip(self.node_memory_bytes, choice))
        time = sum(float(t[k]) for t, k in zip(self.node_time_s, choice))
        for edge in self.edges:
            k, p = choice[edge.producer], choice[edge.consumer]
            memory += float(edge.memory_bytes[k, p])
            time += float(edge.time_s[k, p])
        return memory, time

    def price_many(self, choices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``price`` of every row of ``choices`` (shape (strategies, ops)), vectorized."""
        choices = np.asarray(choices, dtype=np.int64)
        memory = np.zeros(len(choices))
        time = np.zeros(len(choices))
        for i in range(len(self.ops)):
            memory += self.node_memory_bytes[i][choices[:, i]]
            time += self.node_time_s[i][choices[:, i]]
        for edge in self.edges:
            k, p = choices[:, edge.producer], choices[:, edge.consumer]
            memory += edge.memory_bytes[k, p]
            time += edge.time_s[k, p]
        return memory, time

    def configs_of(self, choice) -> dict:
        """op -> Config of the strategy ``choice``."""
        return {op: self.space.configs[op][int(k)] for op, k in zip(self.ops, choice)}

    def choice_of(self, configs: dict) -> np.ndarray:
        """The config index per op of ``configs`` (op -> Config)."""
        return np.array([self.space.config_index(op, configs[op]) for op in self.ops], dtype=np.int64)

    def plan(self, choice, option: str) -> Plan:
        """The strategy as a Plan, each edge on its fastest alternative."""
        return plan_from_configs(self.space, self.configs_of(choice), None, option)

    def data_parallel_choice(self) -> np.ndarray:
        """The data-parallel strategy (``tensoropt.search.data_parallel_configs``)."""
        return self.choice_of(data_parallel_configs(self.space))


def _fastest(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell of a (Ka, Kb, A, 2) (memory, time) grid: the least time, and the least
    memory among the alternatives with that time."""
    time = grid[..., 1]
    least = time.min(axis=-1)
    memory = np.where(time == least[..., None], grid[..., 0], np.inf).min(axis=-1)
    return np.ascontiguousarray(least), np.ascontiguousarray(memory)
