"""From a recorded graph to the memory/time frontier of whole-graph plans.

``search_frontier`` enumerates every op's configurations, prices them with a
``CostModel``, builds a ``frontier.CostGraph`` (one node per op, one edge per data edge,
each edge a small frontier of tensor-reuse choices), runs Frontier-Tracking, and turns
each frontier point into a ``Plan``. ``data_parallel_plan`` prices the data-parallel
strategy with the same model.

Usage::

    result = search_frontier(graph, model)                 # exact
    result = search_frontier(graph, model, SearchOptions(max_candidates=50_000_000))
    result.plans[0]        # least memory; result.plans[-1] fastest (built on first use)
    result.plans.points    # [(memory bytes, seconds)] of every plan, without building it
    result.plans.estimates # ... and network and compute seconds, still without building
    result.stats           # configurations per op, search seconds, FT statistics
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import numpy as np

from frontier import CostGraph, check_search_options, track
from tensoropt.configs import Config, enumerate_configs, input_layout, output_layout
from tensoropt.costs import CostModel, EdgeAlternative
from tensoropt.plan import OpConfig, Plan

__all__ = ["SearchOptions", "SearchResult", "FrontierPlans", "PlanEstimate", "search_frontier", "data_parallel_configs", "plan_from_configs",
           "steps_to_json", "sample_plan", "sampling_space"]


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
        threads: Frontier-Tracking threads.

    Raises:
        ValueError: naming the option that is not valid, when constructed (before any
            pricing).
    """

    epsilon: float | None = None
    max_candidates: int | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        check_search_options(self.threads, self.epsilon, self.max_candidates)


@dataclass
class _EdgeTable:
    """One data edge: which layout each config implies, and the alternatives per pair."""

    producer: object
    out_index: int
    consumer: object
    in_index: int
    src_ids: np.ndarray              # producer config -> unique src layout id
    dst_ids: np.ndarray              # consumer config -> unique dst layout id
    src_layouts: list
    dst_layouts: list
    alternatives: dict               # (src id, dst id) -> list[EdgeAlternative]


class PlanEstimate(NamedTuple):
    """A frontier plan's estimated costs, read without building the plan."""

    memory_bytes: float
    time_s: float
    network_s: float
    compute_s: float


class FrontierPlans(Sequence):
    """The frontier's plans, memory ascending and time strictly descending.

    A paper-scale frontier can hold 10^5 points, and building a ``Plan`` takes
    milliseconds, so each plan is built (and checked against its point) on first use;
    ``points`` gives every plan's (memory bytes, seconds) at once, and ``estimates``
    adds its network and compute seconds.
    """

    def __init__(self, points: list[tuple[float, float]], build: Callable[[int], Plan],
                 compute_s: Callable[[], np.ndarray]) -> None:
        self.points = points
        self._build = build
        self._compute_s = compute_s
        self._estimates: list[PlanEstimate] | None = None
        self._built: dict[int, Plan] = {}

    @property
    def estimates(self) -> list[PlanEstimate]:
        """Every plan's memory, time, network and compute seconds, as its ``Plan`` would
        give them, without building the plans."""
        if self._estimates is None:
            compute = self._compute_s().tolist()
            self._estimates = [PlanEstimate(m, t, t - c, c) for (m, t), c in zip(self.points, compute)]
        return self._estimates

    def index(self, plan, start: int = 0, stop: int | None = None) -> int:
        """Where ``plan``, taken from this frontier, lies in it (without building the rest).

        Raises:
            ValueError: ``plan`` was not taken from this frontier.
        """
        stop = len(self) if stop is None else stop
        for i, built in self._built.items():
            if built is plan and start <= i < stop:
                return i
        raise ValueError("the plan was not taken from this frontier")

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"plan {i} out of range; the frontier has {len(self)} plans")
        i %= len(self)
        if i not in self._built:
            self._built[i] = self._build(i)
        return self._built[i]

    def __reduce__(self):
        """Pickles as a list of all its plans (built now): rank 0 broadcasts profiling
        rows, whose plans carry their frontier, to the other ranks."""
        return (list, (), None, iter(self))


@dataclass
class SearchResult:
    """Attributes:
        plans: the frontier, memory ascending, time strictly descending.
        configs_per_op: op name -> number of configurations.
        stats: seconds per phase and the frontier's own statistics.
    """

    plans: FrontierPlans
    configs_per_op: dict[str, int]
    stats: dict = field(default_factory=dict)
    space: "_Space | None" = field(default=None, repr=False)

    def data_parallel_plan(self) -> Plan:
        """The data-parallel strategy, priced by the same cost model."""
        return plan_from_configs(self.space, data_parallel_configs(self.space), None, "data_parallel")


def _keeps(op, index: int, output: bool) -> bool:
    space = op.space
    return index in (space.saved_outputs if output else space.saved_inputs)


class _Space:
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
        self.edges: list[_EdgeTable] = []
        self._config_index: dict = {}
        self._edge_entries: dict = {}
        self._op_configs: dict = {}
        self._op_costs: dict = {}
        self._node_costs: dict = {}
        self._edge_parts: dict = {}
        self._edge_grids: dict = {}

    def _signature(self, op) -> tuple:
        model = self.model
        return (op.kind, repr(sorted((k, repr(v)) for k, v in op.attrs.items() if k != "initializer")),
                tuple((tuple(t.shape), t.dtype.name, t in model.grad) for t in op.inputs),
                tuple(tuple(t.shape) for t in op.outputs),
                op.kind == "variable" and op.outputs[0] in model.trained)

    def edge_entry(self, e: int, table: _EdgeTable, pair: tuple, j: int) -> dict:
        """Edge e's entry in a Plan for layout pair ``pair`` and alternative j. Plans of
        one search share these (a frontier can hold thousands of plans); treat as read-only."""
        key = (e, *pair, j)
        entry = self._edge_entries.get(key)
        if entry is None:
            alt = table.alternatives[pair][j]
            convs = self.model.conversions(table.producer.outputs[table.out_index], alt)
            entry = self._edge_entries[key] = {
                "producer": table.producer.name, "output": table.out_index,
                "consumer": table.consumer.name, "input": table.in_index,
                "src_layout": str(alt.src), "dst_layout": str(alt.dst),
                "forward": str(convs["forward"]), "reuse": alt.reuse,
                "forward_steps": steps_to_json(convs["forward"]),
                "backward_steps": steps_to_json(convs["backward"]),
                "rebuild_steps": steps_to_json(convs["rebuild"])}
        return entry

    def op_config(self, config: Config) -> OpConfig:
        """The Plan form of a configuration, one shared value per configuration."""
        if config not in self._op_configs:
            self._op_configs[config] = OpConfig(config.mesh, tuple(
                (d, a) for a, d in enumerate(config.axis_dims) if d is not None))
        return self._op_configs[config]

    def config_index(self, op, config) -> int:
        """The position of ``config`` in ``self.configs[op]``."""
        key = self.signatures[op]
        if key not in self._config_index:
            self._config_index[key] = {c: i for i, c in enumerate(self.configs[op])}
        return self._config_index[key][config]

    def layout_pair(self, table: _EdgeTable, chosen: dict) -> tuple[int, int]:
        """The (src, dst) layout ids an edge has when its ops take the ``chosen`` configs."""
        k = self.config_index(table.producer, chosen[table.producer])
        p = self.config_index(table.consumer, chosen[table.consumer])
        return int(table.src_ids[k]), int(table.dst_ids[p])

    def op_cost(self, op, config: Config):
        """``model.op_cost``, once per (signature, configuration)."""
        key = (self.signatures[op], config)
        cost = self._op_costs.get(key)
        if cost is None:
            cost = self._op_costs[key] = self.model.op_cost(op, config)
        return cost

    def node_costs(self, op) -> np.ndarray:
        key = self.signatures[op]
        if key not in self._node_costs:
            costs = [self.op_cost(op, c) for c in self.configs[op]]
            self._node_costs[key] = np.array([(c.memory_bytes, c.time_s) for c in costs], dtype=np.float64)
        return self._node_costs[key]

    def edge_table(self, producer, out_index, consumer, in_index) -> _EdgeTable:
        key = (self.signatures[producer], out_index, self.signatures[consumer], in_index)
        parts = self._edge_parts.get(key)
        if parts is None:
            parts = self._edge_parts[key] = self._edge_parts_of(producer, out_index, consumer, in_index)
        return _EdgeTable(producer, out_index, consumer, in_index, *parts)

    def _edge_parts_of(self, producer, out_index, consumer, in_index):
        tensor = producer.outputs[out_index]
        src_list, src_ids = _unique([output_layout(producer, c, out_index) for c in self.configs[producer]])
        dst_list, dst_ids = _unique([input_layout(consumer, c, in_index) for c in self.configs[consumer]])
        producer_keeps = _keeps(producer, out_index, True) or producer.kind == "variable"
        consumer_keeps = _keeps(consumer, in_index, False)
        alternatives = {}
        for u, src in enumerate(src_list):
            for v, dst in enumerate(dst_list):
                alternatives[(u, v)] = self.model.edge_alternatives(
                    tensor, src, dst, producer_keeps, consumer_keeps,
                    producer_pinned=not producer.op_def.grad_from_output_ok)
        return src_ids, dst_ids, src_list, dst_list, alternatives

    def edge_costs(self, table: _EdgeTable) -> np.ndarray:
        key = id(table.alternatives)  # shared by every edge of the same signatures
        if key not in self._edge_grids:
            grid = self._edge_grid(table)
            grid.flags.writeable = False   # lets CostGraph share it between those edges
            self._edge_grids[key] = grid
        return self._edge_grids[key]

    def _edge_grid(self, table: _EdgeTable) -> np.ndarray:
        width = max(len(a) for a in table.alternatives.values())
        grid = np.empty((len(table.src_layouts), len(table.dst_layouts), width, 2))
        for (u, v), alts in table.alternatives.items():
            padded = alts + [alts[0]] * (width - len(alts))  # duplicates are harmless
            grid[u, v] = [(a.memory_bytes, a.time_s) for a in padded]
        return grid[table.src_ids[:, None], table.dst_ids[None, :]]


def steps_to_json(conversion) -> list[dict] | None:
    """A conversion's steps as plain data (``reschedule.Step`` fields, layouts as text)."""
    if conversion is None:
        return None
    return [{"kind": s.kind, "src": str(s.src), "dst": str(s.dst), "axis": s.axis,
             "src_dim": s.src_dim, "dst_dim": s.dst_dim} for s in conversion.steps]


def _unique(layouts):
    index: dict = {}
    ids = np.array([index.setdefault(lay, len(index)) for lay in layouts], dtype=np.int64)
    return list(index), ids


def plan_from_configs(space: _Space, chosen: dict, alt_choice: dict | None, option: str) -> Plan:
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
        if alt_choice is None:  # choose the least time, then least memory
            j = min(range(len(alts)), key=lambda i: (alts[i].time_s, alts[i].memory_bytes))
        else:  # indices past the list are edge_costs' padding, copies of alternative 0
            j = alt_choice[e] if alt_choice[e] < len(alts) else 0
        alt = alts[j]
        memory += alt.memory_bytes
        network += alt.time_s
        edges.append(space.edge_entry(e, table, pair, j))
    return Plan(parallelism=model.num_devices, option=option, ops=ops, memory_bytes=memory,
                time_s=compute + network, network_s=network, compute_s=compute, edges=edges)


def _build(graph, model: CostModel, progress: Callable | None = None,
           cost_graph: bool = True) -> tuple[_Space, CostGraph | None]:
    space = _Space(graph, model)
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


def cost_graph(graph, model: CostModel, progress: Callable | None = None) -> CostGraph:
    """The Frontier-Tracking cost graph of ``graph`` under ``model``: a node per op (its
    configurations' costs) and an edge per tensor use (re-scheduling costs per pair)."""
    return _build(graph, model, progress)[1]


def sampling_space(graph, model: CostModel) -> _Space:
    """The configurations and edge tables of ``graph``, without pricing every op's every
    configuration: enough for ``sample_plan``, which prices only what it picks."""
    return _build(graph, model, cost_graph=False)[0]


def search_frontier(graph, model: CostModel, search: SearchOptions | None = None, *,
                    method: str = "ldp", option: str = "frontier",
                    progress: Callable | None = None) -> SearchResult:
    """The whole memory/time frontier of plans for ``graph`` under ``model``.

    ``search`` (default: exact, one thread) says how ``frontier.track`` searches; see
    ``SearchOptions``. ``progress(phase, done, total)`` is called while pricing edges
    and while tracking.
    """
    search = search or SearchOptions()
    t0 = time.perf_counter()
    space, cg = _build(graph, model, progress)
    t1 = time.perf_counter()
    tracking = (lambda done, total: progress("tracking ops", done, total)) if progress else None
    result = track(cg, method=method, threads=search.threads, epsilon=search.epsilon,
                   progress=tracking, max_candidates=search.max_candidates)
    t2 = time.perf_counter()

    def build(i: int) -> Plan:
        node_choice, edge_choice = result.choice(i)
        chosen = {op: space.configs[op][node_choice[n]] for n, op in enumerate(space.ops)}
        plan = plan_from_configs(space, chosen, edge_choice, option)
        mem, tim = result.points[i]
        assert np.isclose(plan.memory_bytes, mem, rtol=1e-9, atol=1.0), (plan.memory_bytes, mem)
        assert np.isclose(plan.time_s, tim, rtol=1e-9, atol=1e-12), (plan.time_s, tim)
        return plan

    def compute_s() -> np.ndarray:   # per point: the chosen configurations' compute seconds
        total = np.zeros(len(result.points))
        for n, op in enumerate(space.ops):
            per_config = np.array([space.op_cost(op, c).compute_s for c in space.configs[op]])
            total += per_config[result.node_configs[:, n]]
        return total

    plans = FrontierPlans(result.points, build, compute_s)
    stats = {"build_s": t1 - t0, "track_s": t2 - t1, "frontier": result.stats}
    return SearchResult(plans, {op.name: len(space.configs[op]) for op in space.ops}, stats, space)


def sample_plan(space: _Space, rng, option: str = "sampled") -> Plan:
    """A random strategy: a random configuration per op and a random alternative per edge
    (for tests and for estimated-vs-measured benchmarks)."""
    chosen = {op: space.configs[op][rng.integers(len(space.configs[op]))] for op in space.ops}
    alt_choice = {}
    for e, table in enumerate(space.edges):
        alternatives = table.alternatives[space.layout_pair(table, chosen)]
        alt_choice[e] = int(rng.integers(len(alternatives)))
    return plan_from_configs(space, chosen, alt_choice, option)


def data_parallel_configs(space: _Space) -> dict:
    """Each op split along the batch (the dims that carry the placeholders' axis 0) over
    all devices where it divides; replicated otherwise. Parameters are replicated."""
    n = space.model.num_devices
    batch_axis: dict = {}  # tensor -> axis index carrying the batch
    chosen = {}
    for op in space.ops:
        configs = space.configs[op]
        if op.kind == "placeholder":
            chosen[op] = configs[0]
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
