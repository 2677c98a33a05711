"""From a recorded graph to the memory/time frontier of whole-graph plans.

``search_frontier`` enumerates every op's configurations, prices them with a
``CostModel``, builds a ``frontier.CostGraph`` (one node per op, one edge per data edge,
each edge a small frontier of tensor-reuse choices; ``tensoropt.search.space``), runs
Frontier-Tracking, and turns each frontier point into a ``Plan``. ``data_parallel_plan``
prices the data-parallel strategy with the same model. ``plan_table`` puts the whole
frontier and the data-parallel plan in one compact ``summary.PlanTable``.

Usage::

    result = search_frontier(graph, model)                 # exact
    result = search_frontier(graph, model, SearchOptions(max_candidates=50_000_000))
    result.plans[0]        # least memory; result.plans[-1] fastest (built on first use)
    result.plans.points    # [(memory bytes, seconds)] of every plan, without building it
    result.plans.estimates # ... and network and compute seconds, still without building
    result.plans.table     # every plan and the data-parallel one, compactly (built now)
    result.stats           # configurations per op, search seconds, FT statistics
"""

from __future__ import annotations

import contextlib
import gc
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from frontier import CostGraph, check_search_options, heuristic_rules, track
from tensoropt.configs import Config, config_of
from tensoropt.costs.model import CostModel, EdgeAlternative
from tensoropt.plan import Plan
from tensoropt.search.space import SearchSpace, build_space
from tensoropt.search.summary import FrontierPlans, PlanEstimate, PlanTable

__all__ = ["SearchOptions", "SearchResult", "FrontierPlans", "PlanEstimate", "search_frontier",
           "data_parallel_configs", "plan_from_configs", "price_plan", "plan_table", "sample_plan",
           "sampling_space", "cost_graph"]


@dataclass(frozen=True)
class SearchOptions:
    """How Frontier-Tracking searches; the default is the exact frontier on one thread.

    Attributes:
        epsilon: None (exact) or a float in (0, 1): an epsilon-approximate frontier, in
            which every exact plan has a returned plan with no more memory and at most
            (1 + epsilon) times its time. Far cheaper on large graphs.
        max_candidates: None (no cap) or a positive int, e.g. 50_000_000: each product's
            inputs are thinned to about this many candidate points. It bounds the
            search's work, not its error; the error bound reached is in
            ``stats["frontier"].time_error_bound_s``. The paper Transformer on 16
            devices needs it.
        threads: Frontier-Tracking threads. With 2 or more and several ``heuristics``,
            the rules are tracked at once in forked processes (``frontier.track``):
            about as long as the slowest rule, with every rule's tables in memory at
            once (the paper Transformer at 16 devices at epsilon 0.05: 331 s, at most
            6.1 GiB in both processes together, against 507 s and 6.4 GiB with 1).
        relative: with epsilon, bound each plan's error by its own time instead of by
            the least time of any plan (``frontier.track``'s ``relative``): still at most
            (1 + epsilon) times each exact plan's time, but slow, low-memory plans are
            thinned more, so frontiers spanning a wide range of times search faster. The
            error in seconds may then exceed epsilon times the fastest time.
        heuristics: the rules of heuristic elimination (``frontier.track``'s
            ``heuristic``), used only when the graph needs one: a model whose graph is
            not series-parallel (residual streams, attention) is then tracked once per
            rule and the frontiers' Pareto union returned. The default runs
            ``min_memory`` and ``min_time``: either alone fixes each such op for the whole
            frontier and loses one end of it (the tiny Transformer on 2 devices: fastest
            plan 12.4 ms with ``min_memory`` alone, 2.7 ms with both). ``("min_memory",)``
            tracks once, in about half the time.

    Raises:
        ValueError: naming the option that is not valid, when constructed (before any
            pricing).
    """

    epsilon: float | None = None
    max_candidates: int | None = None
    threads: int = 1
    relative: bool = False
    heuristics: tuple = ("min_memory", "min_time")

    def __post_init__(self) -> None:
        check_search_options(self.threads, self.epsilon, self.max_candidates, self.relative)
        if not isinstance(self.heuristics, tuple):
            raise ValueError(f"heuristics must be a tuple of rules, e.g. ('min_memory', 'min_time') "
                             f"or ('min_memory',); got {self.heuristics!r}")
        heuristic_rules(list(self.heuristics))


@dataclass
class SearchResult:
    """Attributes:
        plans: the frontier, memory ascending, time strictly descending.
        configs_per_op: op name -> number of configurations.
        stats: seconds per phase and the frontier's own statistics.
        space: the priced search space.
        track: Frontier-Tracking's result (its choice arrays).
    """

    plans: FrontierPlans
    configs_per_op: dict[str, int]
    stats: dict = field(default_factory=dict)
    space: SearchSpace | None = field(default=None, repr=False)
    track: object = field(default=None, repr=False)
    _data_parallel: Plan | None = field(default=None, repr=False)

    def data_parallel_plan(self) -> Plan:
        """The data-parallel strategy, priced by the same cost model."""
        if self._data_parallel is None:
            self._data_parallel = plan_from_configs(self.space, data_parallel_configs(self.space), None,
                                                    "data_parallel")
        return self._data_parallel


def _alternative(alts: list[EdgeAlternative], j: int | None) -> int:
    """The alternative a plan takes: ``j`` (indices past the list are ``edge_costs``'
    padding, copies of alternative 0), or with None the least time, then least memory."""
    if j is None:
        return min(range(len(alts)), key=lambda i: (alts[i].time_s, alts[i].memory_bytes))
    return j if j < len(alts) else 0


def plan_from_configs(space: SearchSpace, chosen: dict, alt_choice: dict | None, option: str) -> Plan:
    """Prices one whole strategy (configs per op, reuse choice per edge) as a Plan."""
    model = space.model
    memory = compute = network = 0.0
    ops = {}
    for op in space.ops:
        config: Config = chosen[op]
        cost = space.op_cost(op, config)
        memory += cost.memory_bytes
        compute += cost.compute_s
        network += cost.sync_s
        ops[op.name] = space.op_config(config)
    edges = []
    for e, table in enumerate(space.edges):
        pair = space.layout_pair(table, chosen)
        alts: list[EdgeAlternative] = table.alternatives[pair]
        j = _alternative(alts, None if alt_choice is None else alt_choice[e])
        alt = alts[j]
        memory += alt.memory_bytes
        network += alt.network_s
        compute += alt.compute_s
        edges.append(space.edge_entry(e, table, pair, j))
    return Plan(parallelism=model.num_devices, option=option, ops=ops, memory_bytes=memory,
                time_s=compute + network, network_s=network, compute_s=compute, edges=tuple(edges))


def price_plan(space: SearchSpace, plan: Plan) -> Plan:
    """``plan`` priced again from its configurations and reuse choices under the space's
    cost model (to check a plan's estimates, e.g. one read from a file or a table).

    Raises:
        ValueError: the plan does not fit the space's graph.
    """
    chosen = {op: config_of(plan, op) for op in space.ops}
    if len(plan.edges) != len(space.edges):
        raise ValueError(f"price_plan: the plan has {len(plan.edges)} edges, the graph {len(space.edges)}")
    alt_choice = {}
    for e, (table, edge) in enumerate(zip(space.edges, plan.edges)):
        alts = table.alternatives[space.layout_pair(table, chosen)]
        reuses = [a.reuse for a in alts]
        if edge.reuse not in reuses:
            raise ValueError(f"price_plan: edge {edge.name} takes reuse {edge.reuse!r}, the space offers {reuses}")
        alt_choice[e] = reuses.index(edge.reuse)
    return plan_from_configs(space, chosen, alt_choice, plan.option)


def plan_table(result: SearchResult) -> PlanTable:
    """Every frontier plan of ``result`` (rows ``0 .. len(result.plans)-1``) and its
    data-parallel plan (the last row), as one compact table."""
    space, tr = result.space, result.track
    ops = space.ops
    dp_configs = data_parallel_configs(space)
    dp_local = np.array([[space.config_index(op, dp_configs[op]) for op in ops]], dtype=np.int64)
    dp_alts = []
    for table in space.edges:
        dp_alts.append(_alternative(table.alternatives[space.layout_pair(table, dp_configs)], None))
    local = np.vstack([np.asarray(tr.node_configs, dtype=np.int64).reshape(len(result.plans), len(ops)),
                       dp_local])
    alts = np.vstack([np.asarray(tr.edge_alternatives, dtype=np.int64).reshape(len(result.plans), -1),
                      np.array([dp_alts], dtype=np.int64)])
    config_ids: dict = {}
    node_choice = np.empty(local.shape, dtype=np.int64)
    for k, op in enumerate(ops):
        used, inverse = np.unique(local[:, k], return_inverse=True)
        ids = [config_ids.setdefault(space.op_config(space.configs[op][u]), len(config_ids)) for u in used.tolist()]
        node_choice[:, k] = np.asarray(ids, dtype=np.int64)[inverse.reshape(-1)]
    configs = list(config_ids)
    column = {op: k for k, op in enumerate(ops)}
    edges, edge_ids = [], {}
    edge_choice = np.empty(alts.shape, dtype=np.int64)
    for e, table in enumerate(space.edges):
        src = table.src_ids[local[:, column[table.producer]]]
        dst = table.dst_ids[local[:, column[table.consumer]]]
        width, counts = table.alternatives.width, table.alternatives.counts
        j = np.where(alts[:, e] < counts[src, dst], alts[:, e], 0)
        key = (src * len(table.dst_layouts) + dst) * width + j
        used, inverse = np.unique(key, return_inverse=True)
        ids = []
        for k in used.tolist():
            pair, jj = divmod(k, width)
            entry = space.edge_entry(e, table, divmod(pair, len(table.dst_layouts)), jj)
            if id(entry) not in edge_ids:
                edge_ids[id(entry)] = len(edges)
                edges.append(entry)
            ids.append(edge_ids[id(entry)])
        edge_choice[:, e] = np.asarray(ids, dtype=np.int64)[inverse.reshape(-1)]
    plans = result.plans
    estimates = np.array([[m, t, t - c, c] for (m, t), c in zip(plans.points, plans.compute_s.tolist())],
                         dtype=np.float64).reshape(len(plans), 4)
    dp = result.data_parallel_plan()
    costs = np.vstack([estimates, [[dp.memory_bytes, dp.time_s, dp.network_s, dp.compute_s]]])
    return PlanTable(space.model.num_devices, tuple(op.name for op in ops), tuple(configs), tuple(edges),
                     node_choice, edge_choice, costs)


def cost_graph(graph, model: CostModel, progress: Callable | None = None) -> CostGraph:
    """The Frontier-Tracking cost graph of ``graph`` under ``model``: a node per op (its
    configurations' costs) and an edge per tensor use (re-scheduling costs per pair)."""
    return build_space(graph, model, progress)[1]


def sampling_space(graph, model: CostModel) -> SearchSpace:
    """The configurations and edge tables of ``graph``, without pricing every op's every
    configuration: enough for ``sample_plan``, which prices only what it picks."""
    return build_space(graph, model, cost_graph=False)[0]


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a search prices and tracks (and on
    again after, when it was on). Both make many objects that live on (configurations,
    layouts, edge tables, frontier tables), and every full collection walks all of them:
    0.5 s of InceptionV3's 13 s search at 16 devices (timed with ``gc.callbacks``).
    Cycles made meanwhile are collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def search_frontier(graph, model: CostModel, search: SearchOptions | None = None, *,
                    method: str = "ldp", option: str = "frontier",
                    progress: Callable | None = None) -> SearchResult:
    """The whole memory/time frontier of plans for ``graph`` under ``model``.

    ``search`` (default: exact, one thread) says how ``frontier.track`` searches; see
    ``SearchOptions``. ``progress(phase, done, total)`` is called while pricing edges
    and while tracking.
    """
    search = search or SearchOptions()
    with _collector_paused():
        t0 = time.perf_counter()
        space, cg = build_space(graph, model, progress)
        t1 = time.perf_counter()
        tracking = (lambda done, total: progress("tracking ops", done, total)) if progress else None
        result = track(cg, method=method, threads=search.threads, epsilon=search.epsilon,
                       progress=tracking, max_candidates=search.max_candidates,
                       relative=search.relative, heuristic=list(search.heuristics))
        t2 = time.perf_counter()

    def structure(i: int):
        node_choice, edge_choice = result.choice(i)
        chosen = {op: space.configs[op][node_choice[n]] for n, op in enumerate(space.ops)}
        plan = plan_from_configs(space, chosen, edge_choice, option)
        mem, tim = result.points[i]   # the plan re-costs to its point
        assert np.isclose(plan.memory_bytes, mem, rtol=1e-9, atol=1.0), (plan.memory_bytes, mem)
        assert np.isclose(plan.time_s, tim, rtol=1e-9, atol=1e-12), (plan.time_s, tim)
        return plan.ops, plan.edges

    def compute_s() -> np.ndarray:   # per point: the chosen configurations' compute seconds
        total = np.zeros(len(result.points))
        for n, op in enumerate(space.ops):
            per_config = np.array([space.op_cost(op, c).compute_s for c in space.configs[op]])
            total += per_config[result.node_configs[:, n]]
        column = {op: n for n, op in enumerate(space.ops)}
        for e, table in enumerate(space.edges):   # keep_producer re-runs (EdgeAlternative.compute_s)
            grid = space.edge_compute(table)
            if grid is None:
                continue
            u = table.src_ids[result.node_configs[:, column[table.producer]]]
            v = table.dst_ids[result.node_configs[:, column[table.consumer]]]
            total += grid[u, v, np.minimum(result.edge_alternatives[:, e], grid.shape[2] - 1)]
        return total

    stats = {"build_s": t1 - t0, "track_s": t2 - t1, "frontier": result.stats}
    out = SearchResult(None, {op.name: len(space.configs[op]) for op in space.ops}, stats, space, result)
    out.plans = FrontierPlans(result.points, compute_s, structure, model.num_devices, option,
                              table=lambda: plan_table(out))
    return out


def sample_plan(space: SearchSpace, rng, option: str = "sampled") -> Plan:
    """A random strategy: a random configuration per op and a random alternative per edge
    (for tests and for estimated-vs-measured benchmarks)."""
    chosen = {op: space.configs[op][rng.integers(len(space.configs[op]))] for op in space.ops}
    alt_choice = {}
    for e, table in enumerate(space.edges):
        alternatives = table.alternatives[space.layout_pair(table, chosen)]
        alt_choice[e] = int(rng.integers(len(alternatives)))
    return plan_from_configs(space, chosen, alt_choice, option)


def data_parallel_configs(space: SearchSpace) -> dict:
    """Each op split along the batch (the dims that carry the placeholders' axis 0) over
    all devices where it divides; replicated otherwise. Parameters are replicated."""
    n = space.model.num_devices
    batch_axis: dict = {}  # tensor -> axis index carrying the batch
    chosen = {}
    for op in space.ops:
        configs = space.configs[op]
        if op.kind == "placeholder":
            chosen[op] = configs[0]
            if op.outputs[0].shape:     # a scalar (a learning rate, a keep_prob) has no batch
                batch_axis[op.outputs[0]] = 0
            continue
        dim = None
        for i, t in enumerate(op.inputs):
            if t in batch_axis:
                dim = op.space.inputs[i][batch_axis[t]]
                if dim is not None:
                    break
        wanted = Config((n,), (dim,)) if dim is not None else None
        chosen[op] = wanted if wanted in configs else Config((n,), (None,))
        assert chosen[op] in configs, (op.name, chosen[op])
        if dim is not None and wanted in configs:
            for j, axes in enumerate(op.space.outputs):
                if dim in axes:
                    batch_axis[op.outputs[j]] = axes.index(dim)
    return chosen
