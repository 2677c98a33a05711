"""Simulating plans: a saved ``Plan``, or Frontier-Tracking's choice arrays directly.

Usage::

    from tensoropt.simulator import PlanSimulator, SimOptions, simulate_plan

    result = simulate_plan(graph, plan, cluster, cost_model)     # SimResult of a saved plan
    result.makespan_s, result.peak_memory_bytes, result.exposed_network_s

    sim = PlanSimulator(graph, model, cluster, SimOptions(), window=8)
    for i in range(len(track.points)):               # a frontier, no Plan built per point
        v = sim.choice_versions(space, track.node_configs[i], track.edge_alternatives[i])
        timeline = sim.simulate(v)                   # delta from the nearest recent state
    sim.simulate_full(v)                             # the same timeline, from scratch
    sim.versions_for_plan(plan)                      # a Plan's version vector

The keys of the ``DeltaSimulator`` (``plan_tasks`` builds their fragments) are, op by op
in recording order: each input edge, the op, the op's backward rebuild. A key's version
is an interned id of its state: an op's configuration; an edge's plan and its consumer's
configuration (its partial gradients); an op's rebuild mode, configuration and first
keep_consumer out-edge. So a frontier point's version vector comes from its choice arrays
(configuration indices, alternative indices) without building a ``Plan``, and two points
share every fragment whose state they share.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from tensoropt.cluster import Cluster, get_cluster
from tensoropt.configs import config_of
from tensoropt.execution.schedule import check_plan_for_graph, edges_by_input
from tensoropt.search.strategy import make_cost_model
from tensoropt.simulator.delta import DeltaSimulator
from tensoropt.simulator.engine import Timeline
from tensoropt.simulator.graph import Fragment
from tensoropt.simulator.plan_options import SimOptions
from tensoropt.simulator.plan_tasks import EdgeChoice, PlanContext, RebuildChoice
from tensoropt.simulator.result import SimResult, summarize

__all__ = ["PlanSimulator", "simulate_plan", "check_plan_shape"]


def check_plan_shape(graph, plan, num_devices: int) -> None:
    """Checks that ``plan`` is for ``graph`` on ``num_devices`` devices.

    Raises:
        ValueError: naming the device count to pass (``--devices N``), or the op or edge
            of the graph the plan lacks.
    """
    if plan.parallelism != num_devices:
        raise ValueError(f"the plan is for {plan.parallelism} device(s), but the cluster has "
                         f"{num_devices}; simulate it with --devices {plan.parallelism} (or a "
                         f"cost model for {plan.parallelism} devices)")
    check_plan_for_graph(graph, plan)


class PlanSimulator:
    """Full and delta simulation of the plans of one graph under one cost model.

    Args:
        graph: the recorded graph.
        model: its ``CostModel`` (the device count is ``model.num_devices``).
        cluster: the ``Cluster`` (which ranks share a machine).
        options: ``SimOptions`` (default: chained, representative rank, no overheads).
        window: how many recent states ``simulate`` may delta from.
    """

    def __init__(self, graph, model, cluster, options: Optional[SimOptions] = None, *,
                 window: int = 8) -> None:
        self.options = options or SimOptions()
        if not isinstance(self.options, SimOptions):
            raise ValueError(f"options must be a SimOptions, got {self.options!r}")
        self.ctx = PlanContext(graph, model, cluster.devices_per_machine, self.options)
        keys = []
        in_edges: list[list[int]] = [[] for _ in self.ctx.ops]
        for e, (k, *_rest) in enumerate(self.ctx.edges):
            in_edges[k].append(e)
        for k in range(len(self.ctx.ops)):
            keys += [("edge", e) for e in in_edges[k]] + [("op", k), ("rebuild", k)]
        self.keys = keys
        self._pos = {key: p for p, key in enumerate(keys)}
        self._states: list[list] = [[] for _ in keys]
        self._ids: list[dict] = [{} for _ in keys]
        self.delta = DeltaSimulator(keys, self._build, self.ctx.resources,
                                    cycles=self.ctx.cycles, window=window)

    # -- fragments ---------------------------------------------------------------------------
    def _build(self, key, version: int) -> Fragment:
        state = self._states[self._pos[key]][version]
        f = self.delta.new_fragment()
        kind, k = key
        if kind == "op":
            self.ctx.op_fragment(f, k, state)
        elif kind == "edge":
            self.ctx.edge_fragment(f, k, state)
        else:
            self.ctx.rebuild_fragment(f, k, state)
        return f

    def _intern(self, key, code, make) -> int:
        p = self._pos[key]
        ids = self._ids[p]
        v = ids.get(code)
        if v is None:
            v = ids[code] = len(self._states[p])
            self._states[p].append(make())
        return v

    def _versions(self, configs: Sequence, edges: Sequence, codes: Sequence) -> np.ndarray:
        """Versions from per-op Configs, per-edge EdgePlans and per-edge intern codes."""
        ctx = self.ctx
        out = np.zeros(len(self.keys), dtype=np.int64)
        kc_first: dict[int, int] = {}
        dropped: dict[int, set] = {}
        inside = set()
        for e, (k, i, p, j) in enumerate(ctx.edges):
            ep = edges[e]
            out[self._pos[("edge", e)]] = self._intern(
                ("edge", e), codes[e], lambda: EdgeChoice(ep, configs[k]))
            if ep.reuse == "keep_consumer":
                kc_first.setdefault(p, e)
                dropped.setdefault(p, set()).add(j)
            elif ep.reuse == "keep_producer" and ep.forward_steps:
                inside.add(k)
        for k, config in enumerate(configs):
            out[self._pos[("op", k)]] = self._intern(("op", k), config, lambda: config)
            e = kc_first.get(k)
            mode = "inside" if k in inside else ("keep_consumer" if e is not None else "none")
            edge = (e, edges[e]) if e is not None else None
            drop = frozenset(dropped.get(k, ()))
            code = (mode, config, e, codes[e] if e is not None else None, drop)
            out[self._pos[("rebuild", k)]] = self._intern(
                ("rebuild", k), code, lambda: RebuildChoice(config, mode, edge, drop))
        return out

    def versions_for_plan(self, plan) -> np.ndarray:
        """The version vector of a ``Plan`` (checked against the graph first).

        Raises:
            ValueError: the plan is for another graph or device count (see
                ``check_plan_shape``).
        """
        check_plan_shape(self.ctx.graph, plan, self.ctx.model.num_devices)
        configs = [config_of(plan, op) for op in self.ctx.ops]
        by_input = edges_by_input(plan)
        edges = [by_input[(self.ctx.ops[k].name, i)] for k, i, _, _ in self.ctx.edges]
        return self._versions(configs, edges, [("plan", ep, configs[k])
                                               for ep, (k, *_rest) in zip(edges, self.ctx.edges)])

    def choice_versions(self, space, node_configs: Sequence[int],
                        edge_alternatives: Sequence[int]) -> np.ndarray:
        """The version vector of one point of Frontier-Tracking (its row of
        ``node_configs`` and ``edge_alternatives``) in ``space`` (the ``SearchSpace`` the
        search ran on). An alternative index of -1 takes the edge's fastest alternative,
        as ``search.data_parallel_plan`` does; one past the edge's list is the search's
        padding for alternative 0."""
        ops = space.ops
        configs = [space.configs[op][int(c)] for op, c in zip(ops, node_configs)]
        chosen = dict(zip(ops, configs))
        edges, codes = [], []
        for e, table in enumerate(space.edges):
            u, v = space.layout_pair(table, chosen)
            alts = table.alternatives[(u, v)]
            j = int(edge_alternatives[e])
            if j < 0:
                j = min(range(len(alts)), key=lambda a: (alts[a].time_s, alts[a].memory_bytes))
            elif j >= len(alts):
                j = 0
            edges.append(space.edge_entry(e, table, (u, v), j))
            codes.append(("space", u, v, j, configs[self.ctx.edges[e][0]]))
        return self._versions(configs, edges, codes)

    # -- simulation --------------------------------------------------------------------------
    def simulate(self, versions: np.ndarray) -> Timeline:
        """The timeline of ``versions``, by delta from the nearest recent state."""
        return self.delta.simulate(versions)

    def simulate_full(self, versions: np.ndarray, *, remember: bool = False) -> Timeline:
        """The same timeline by a full simulation (the reference)."""
        return self.delta.simulate_full(versions, remember=remember)

    def plan_result(self, plan) -> SimResult:
        """``summarize`` of a ``Plan``'s full simulation."""
        return summarize(self.simulate_full(self.versions_for_plan(plan)))


def simulate_plan(graph, plan, cluster, cost_model: Any = "analytical",
                  options: Optional[SimOptions] = None) -> SimResult:
    """Simulates one training step of ``plan`` (e.g. one read with ``Plan.load``).

    Args:
        graph: the recorded graph the plan was searched for.
        plan: the ``Plan``.
        cluster: a ``Cluster`` or a preset name / file (scaled to the plan's devices when
            it names a preset).
        cost_model: a ``CostModel`` for the graph, or "analytical" / "profiled".
        options: ``SimOptions``.

    Raises:
        ValueError: the plan is for another graph or device count, an unknown option
            value, or profiled costs without a calibration profile (naming the command).
    """
    if not isinstance(cluster, Cluster):
        cluster = get_cluster(cluster, devices=plan.parallelism)
    if isinstance(cost_model, str):
        cost_model = make_cost_model(graph, cluster, cluster.devices, cost_model)
    return PlanSimulator(graph, cost_model, cluster, options, window=1).plan_result(plan)
