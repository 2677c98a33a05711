"""The search space of one graph on one device count: every op's configurations, their
costs, and per data edge the layouts its ends imply and the ways to carry the tensor.

``SearchSpace`` prices lazily and shares work between repeated layers: ops with the same
signature have the same configurations and costs, and edges between ops of the same
signatures the same tables. ``build_space`` fills its edge tables and, unless told not
to, the ``frontier.CostGraph`` that Frontier-Tracking searches.

Usage::

    space, cg = build_space(graph, model)             # cg: frontier.CostGraph
    space.configs[op]                                 # [Config, ...] of op
    space.edge_entry(e, space.edges[e], (u, v), j)    # the EdgePlan of one choice
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from frontier import CostGraph
from tensoropt.configs import (Config, enumerate_configs, gradient_inputs, input_layout, op_config,
                               output_layout, partial_out_ok)
from tensoropt.costs.model import CostModel, EdgeAlternativeTable
from tensoropt.plan import EdgePlan, OpConfig

__all__ = ["SearchSpace", "EdgeTable", "build_space"]


@dataclass
class EdgeTable:
    """One data edge: which layout each config implies, and the alternatives per pair."""

    producer: object
    out_index: int
    consumer: object
    in_index: int
    src_ids: np.ndarray              # producer config -> unique src layout id
    dst_ids: np.ndarray              # consumer config -> unique dst layout id
    src_layouts: list
    dst_layouts: list                # per dst id: (layout, the consumer's re-run cost)
    alternatives: EdgeAlternativeTable  # (src id, dst id) -> list[EdgeAlternative]


def _keeps(op, index: int, output: bool) -> bool:
    space = op.space
    return index in (space.saved_outputs if output else space.saved_inputs)


class SearchSpace:
    """Configurations and tables of one graph on one device count.

    Ops with the same signature (kind, attributes, shapes, which inputs carry gradients,
    whether a variable is trained) have the same configurations and costs, and edges
    between ops of the same signatures the same tables: repeated layers are priced once.
    """

    def __init__(self, graph, model: CostModel):
        self.graph = graph
        self.model = model
        self.ops = list(graph.operations)
        self.signatures = {op: self._signature(op) for op in self.ops}
        by_signature: dict = {}
        self.configs = {op: by_signature.setdefault(self.signatures[op],
                                                    enumerate_configs(op, model.num_devices))
                        for op in self.ops}
        self.edges: list[EdgeTable] = []
        self._config_index: dict = {}
        self._edge_entries: dict = {}
        self._op_configs: dict = {}
        self._op_costs: dict = {}
        self._node_costs: dict = {}
        self._edge_parts: dict = {}
        self._src_lists: dict = {}
        self._dst_lists: dict = {}
        self._reruns: dict = {}
        self._edge_grids: dict = {}
        self.consumers: dict = {}
        for op in self.ops:
            for t in op.inputs:
                self.consumers.setdefault(t, [])
                if op not in self.consumers[t]:
                    self.consumers[t].append(op)

    def _signature(self, op) -> tuple:
        model = self.model
        return (op.kind, repr(sorted((k, repr(v)) for k, v in op.attrs.items() if k != "initializer")),
                tuple((tuple(t.shape), t.dtype.name, g)
                      for t, g in zip(op.inputs, gradient_inputs(op, model.grad))),
                tuple(tuple(t.shape) for t in op.outputs),
                op.kind == "variable" and op.outputs[0] in model.trained, partial_out_ok(op))

    def edge_entry(self, e: int, table: EdgeTable, pair: tuple, j: int) -> EdgePlan:
        """Edge e's EdgePlan for layout pair ``pair`` and alternative j. Plans of one search
        share these (a frontier can hold thousands of plans)."""
        key = (e, *pair, j)
        entry = self._edge_entries.get(key)
        if entry is None:
            alt = table.alternatives[pair][j]
            convs = self.model.conversions(table.producer.outputs[table.out_index], alt)

            def steps(conversion):
                return None if conversion is None else tuple(conversion.steps)

            entry = self._edge_entries[key] = EdgePlan(
                table.producer.name, table.out_index, table.consumer.name, table.in_index,
                alt.src, alt.dst, alt.reuse, steps(convs["forward"]), steps(convs["backward"]),
                steps(convs["rebuild"]))
        return entry

    def op_config(self, config: Config) -> OpConfig:
        """The Plan form of a configuration, one shared value per configuration."""
        if config not in self._op_configs:
            self._op_configs[config] = op_config(config)
        return self._op_configs[config]

    def config_index(self, op, config) -> int:
        """The position of ``config`` in ``self.configs[op]``."""
        key = self.signatures[op]
        if key not in self._config_index:
            self._config_index[key] = {c: i for i, c in enumerate(self.configs[op])}
        return self._config_index[key][config]

    def layout_pair(self, table: EdgeTable, chosen: dict) -> tuple[int, int]:
        """The (src, dst) layout ids an edge has when its ops take the ``chosen`` configs."""
        k = self.config_index(table.producer, chosen[table.producer])
        p = self.config_index(table.consumer, chosen[table.consumer])
        return int(table.src_ids[k]), int(table.dst_ids[p])

    def op_cost(self, op, config: Config):
        """``model.op_cost``, once per (signature, configuration)."""
        return self._per_signature(self._op_costs, self.model.op_cost, op, config)

    def rerun_cost(self, op, config: Config) -> tuple[float, float]:
        """``model.rerun_cost``, once per (signature, configuration)."""
        return self._per_signature(self._reruns, self.model.rerun_cost, op, config)

    def _per_signature(self, cache: dict, price, op, config: Config):
        key = (self.signatures[op], config)
        cost = cache.get(key)
        if cost is None:
            cost = cache[key] = price(op, config)
        return cost

    def node_costs(self, op) -> np.ndarray:
        key = self.signatures[op]
        if key not in self._node_costs:
            costs = [self.op_cost(op, c) for c in self.configs[op]]
            self._node_costs[key] = np.array([(c.memory_bytes, c.time_s) for c in costs], dtype=np.float64)
        return self._node_costs[key]

    def keepers(self, tensor) -> int:
        """How many consumers keep ``tensor`` for backward."""
        return sum(_keeps(c, i, False) for c in self.consumers.get(tensor, ()) for i, t in enumerate(c.inputs)
                   if t is tensor)

    def edge_table(self, producer, out_index, consumer, in_index) -> EdgeTable:
        sole = self.keepers(producer.outputs[out_index]) <= 1
        key = (self.signatures[producer], out_index, self.signatures[consumer], in_index, sole)
        parts = self._edge_parts.get(key)
        if parts is None:
            parts = self._edge_parts[key] = self._edge_parts_of(producer, out_index, consumer, in_index, sole)
        return EdgeTable(producer, out_index, consumer, in_index, *parts)

    def _edge_parts_of(self, producer, out_index, consumer, in_index, sole_keeper: bool):
        tensor = producer.outputs[out_index]
        consumer_keeps = _keeps(consumer, in_index, False)
        # per signature and index: edges of other consumers (producers) share them
        key = (self.signatures[producer], out_index)
        if key not in self._src_lists:
            self._src_lists[key] = _unique([output_layout(producer, c, out_index) for c in self.configs[producer]])
        src_list, src_ids = self._src_lists[key]
        # a consumer config's dst is its input layout and what it re-runs under keep_producer
        key = (self.signatures[consumer], in_index, consumer_keeps)
        if key not in self._dst_lists:
            self._dst_lists[key] = _unique([(input_layout(consumer, c, in_index),
                                             self.rerun_cost(consumer, c) if consumer_keeps else (0.0, 0.0))
                                            for c in self.configs[consumer]])
        dst_list, dst_ids = self._dst_lists[key]
        producer_keeps = _keeps(producer, out_index, True) or producer.kind == "variable"
        grad = gradient_inputs(consumer, self.model.grad)[in_index]
        alternatives = self.model.edge_alternative_table(
            tensor, src_list, dst_list, producer_keeps, consumer_keeps,
            producer_pinned=not producer.op_def.grad_from_output_ok, grad=grad,
            sole_keeper=sole_keeper)
        return src_ids, dst_ids, src_list, dst_list, alternatives

    def edge_costs(self, table: EdgeTable) -> np.ndarray:
        # shared by every edge with the same layouts and configuration -> layout maps
        key = (id(table.alternatives), table.src_ids.tobytes(), table.dst_ids.tobytes())
        if key not in self._edge_grids:
            grid = self._edge_grid(table)
            grid.flags.writeable = False   # lets CostGraph share it between those edges
            self._edge_grids[key] = grid
        return self._edge_grids[key]

    def edge_compute(self, table: EdgeTable) -> np.ndarray | None:
        """Per (src id, dst id, alternative): the compute seconds in the alternative's
        time (``EdgeAlternative.compute_s``, padded as ``edge_costs`` pads), or None when
        every one is 0."""
        compute = table.alternatives.compute
        return compute if compute.any() else None

    def _edge_grid(self, table: EdgeTable) -> np.ndarray:
        # per pair of layouts its alternatives' (memory, time), padded with its first
        # (duplicates are harmless), then per pair of configurations
        return table.alternatives.grid[table.src_ids[:, None], table.dst_ids[None, :]]


def _unique(layouts):
    index: dict = {}
    ids = np.array([index.setdefault(lay, len(index)) for lay in layouts], dtype=np.int64)
    return list(index), ids


def build_space(graph, model: CostModel, progress: Callable | None = None,
                cost_graph: bool = True) -> tuple[SearchSpace, CostGraph | None]:
    """The search space of ``graph`` under ``model`` with every edge table, and its
    Frontier-Tracking cost graph (None when ``cost_graph`` is False: nothing is priced
    beyond what the edge tables need)."""
    space = SearchSpace(graph, model)
    cg = CostGraph() if cost_graph else None
    node_of = {op: cg.add_node(op.name, space.node_costs(op)) for op in space.ops} if cg else {}
    total = sum(len(op.inputs) for op in space.ops)
    done = 0
    for consumer in space.ops:
        for in_index, t in enumerate(consumer.inputs):
            table = space.edge_table(t.op, t.value_index, consumer, in_index)
            space.edges.append(table)
            if cg is not None:
                cg.add_edge(node_of[t.op], node_of[consumer], space.edge_costs(table))
            done += 1
            if progress:
                progress("pricing edges", done, total)
    return space, cg


