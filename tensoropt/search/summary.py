"""What a search found, as values every rank can hold: the frontier, the data-parallel
plan, the chosen plan, and a compact form to send them from rank 0 to the other ranks.

- ``FrontierPlans``: a frontier's plans, memory ascending and time strictly descending.
  A paper-scale frontier can hold 10^5 points, so each ``Plan`` is built on first use;
  ``points`` and ``estimates`` give every plan's costs without building any.
- ``PlanTable``: many plans of one graph on one device count, compactly: the distinct op
  configurations and edge plans they use, and per plan (row) an index into each. A
  frontier of thousands of plans is a few small arrays, not thousands of plan JSONs.
- ``ProfileRow``: one device count's search: its frontier, the fastest plan that fits,
  the data-parallel plan, the search time and whether the frontier is exact.
- ``SearchSummary``: what ``tensoropt.search_strategy`` returns, the same on every rank.
  ``to_bytes``/``from_bytes`` are how rank 0 sends it: the tables and the frontier's
  points, nothing that needs a cost model, so a plan built on rank 3 equals the one
  built on rank 0.

Usage::

    summary = to.search_strategy(option="mini_time")
    summary.chosen                      # the plan find_strategy returns
    summary.frontier[0]                 # the least-memory plan (built now, on every rank alike)
    summary.frontier.points             # [(memory bytes, seconds)] without building plans
    summary.data_parallel               # the data-parallel plan, priced alike
    SearchSummary.from_bytes(summary.to_bytes()) == summary   # as another rank receives it
"""

from __future__ import annotations

import pickle
import zlib
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

import numpy as np

from tensoropt.plan import EdgePlan, FrozenMap, OpConfig, Plan

__all__ = ["PlanEstimate", "FrontierPlans", "PlanTable", "ProfileRow", "SearchSummary", "table_row",
           "SUMMARY_FORMAT_VERSION"]

SUMMARY_FORMAT_VERSION = 1

Structure = Callable[[int], "tuple[FrozenMap, tuple[EdgePlan, ...]]"]


class PlanEstimate(NamedTuple):
    """A frontier plan's estimated costs, read without building the plan."""

    memory_bytes: float
    time_s: float
    network_s: float
    compute_s: float


class FrontierPlans(Sequence):
    """The frontier's plans, memory ascending, time strictly descending; each ``Plan`` is
    built on first use.

    Plan ``i`` has the memory and time of point ``i``, compute seconds ``compute_s[i]``,
    network seconds the rest, and the op configurations and edge plans ``structure(i)``
    gives.
    """

    def __init__(self, points: Sequence[tuple[float, float]], compute_s, structure: Structure,
                 parallelism: int, option: str, notes: str = "", table=None) -> None:
        """Args:
            points: (memory bytes, seconds) per plan.
            compute_s: per plan, its compute seconds: an array, or a function that
                computes it when first needed.
            structure: ``i -> (ops, edges)`` of plan i.
            table: the ``PlanTable`` whose first rows are these plans and whose next row
                is the data-parallel plan, or a function that builds it when first needed
                (``SearchSummary.to_bytes`` sends it); None if there is none.
        """
        self.points = [(float(m), float(t)) for m, t in points]
        self._compute = compute_s
        self._structure = structure
        self._table = table
        self.parallelism, self.option, self.notes = parallelism, option, notes
        self._estimates: list[PlanEstimate] | None = None
        self._built: dict[int, Plan] = {}

    def labelled(self, notes: str) -> "FrontierPlans":
        """The same frontier whose plans carry ``notes`` (none of this one's built plans
        is reused or changed)."""
        return FrontierPlans(self.points, self._compute, self._structure, self.parallelism, self.option,
                             notes, self._table)

    @property
    def compute_s(self) -> np.ndarray:
        if callable(self._compute):
            self._compute = np.asarray(self._compute(), dtype=np.float64)
        return self._compute

    @property
    def table(self) -> "PlanTable":
        """The ``PlanTable`` of these plans and the data-parallel plan (built on first use).

        Raises:
            ValueError: this frontier has no table.
        """
        if self._table is None:
            raise ValueError("this frontier carries no PlanTable; frontiers from search_frontier "
                             "and from a SearchSummary do")
        if callable(self._table):
            self._table = self._table()
        return self._table

    @property
    def estimates(self) -> list[PlanEstimate]:
        """Every plan's memory, time, network and compute seconds, as its ``Plan`` gives
        them, without building the plans."""
        if self._estimates is None:
            self._estimates = [PlanEstimate(m, t, t - c, c)
                               for (m, t), c in zip(self.points, self.compute_s.tolist())]
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
            ops, edges = self._structure(i)
            memory, time = self.points[i]
            compute = float(self.compute_s[i])
            self._built[i] = Plan(self.parallelism, self.option, ops, memory_bytes=memory, time_s=time,
                                  network_s=time - compute, compute_s=compute, edges=edges,
                                  notes=self.notes)
        return self._built[i]

    def __reduce__(self):
        raise TypeError("a FrontierPlans is not pickled; send a SearchSummary with to_bytes(), "
                        "which carries the frontier compactly")


@dataclass(frozen=True, eq=False)
class PlanTable:
    """Plans of one graph on one device count, compactly.

    Attributes:
        parallelism: the device count.
        op_names: the graph's ops, in order; a plan configures each.
        configs: the distinct op configurations the plans use.
        edges: the distinct edge plans the plans use (an edge plan names its edge).
        node_choice: ``[row, op]`` -> index into ``configs``.
        edge_choice: ``[row, edge]`` -> index into ``edges``, edges in the plans' order.
        costs: ``[row]`` -> (memory bytes, time s, network s, compute s).
    """

    parallelism: int
    op_names: tuple[str, ...]
    configs: tuple[OpConfig, ...]
    edges: tuple[EdgePlan, ...]
    node_choice: np.ndarray
    edge_choice: np.ndarray
    costs: np.ndarray

    def __post_init__(self) -> None:
        rows = len(self.costs)
        if self.node_choice.shape != (rows, len(self.op_names)) or self.edge_choice.shape[0] != rows \
                or self.costs.shape != (rows, 4):
            raise ValueError(f"plan table: arrays of shapes {self.node_choice.shape}, {self.edge_choice.shape}, "
                             f"{self.costs.shape} do not describe {rows} plans of {len(self.op_names)} ops")
        for name, array, table in (("node_choice", self.node_choice, self.configs),
                                   ("edge_choice", self.edge_choice, self.edges)):
            if array.size and not 0 <= array.min() <= array.max() < len(table):
                raise ValueError(f"plan table: {name} refers to entries outside its {len(table)}")

    @property
    def rows(self) -> int:
        return len(self.costs)

    def structure(self, row: int) -> tuple[FrozenMap, tuple[EdgePlan, ...]]:
        """Plan ``row``'s op configurations and edge plans."""
        ops = FrozenMap(zip(self.op_names, (self.configs[k] for k in self.node_choice[row].tolist())))
        return ops, tuple(self.edges[k] for k in self.edge_choice[row].tolist())

    def plan(self, row: int, option: str, notes: str = "") -> Plan:
        ops, edges = self.structure(row)
        memory, time, network, compute = self.costs[row].tolist()
        return Plan(self.parallelism, option, ops, memory_bytes=memory, time_s=time, network_s=network,
                    compute_s=compute, edges=edges, notes=notes)

    def frontier(self, count: int, option: str, notes: str = "") -> FrontierPlans:
        """Rows ``0 .. count-1`` as a frontier."""
        return FrontierPlans([tuple(c) for c in self.costs[:count, :2].tolist()], self.costs[:count, 3],
                             self.structure, self.parallelism, option, notes, table=self)

    def to_message(self) -> dict:
        """Plain data (names, JSON-ready dicts, packed arrays) for ``from_message``."""
        return {"parallelism": self.parallelism, "op_names": list(self.op_names),
                "configs": [c.to_dict() for c in self.configs], "edges": [e.to_dict() for e in self.edges],
                "node_choice": _pack(self.node_choice), "edge_choice": _pack(self.edge_choice),
                "costs": _pack(self.costs)}

    @classmethod
    def from_message(cls, m: dict) -> "PlanTable":
        """Rebuilds a table, every configuration and edge plan through its constructors.

        Raises:
            ValueError: naming the configuration or edge that is not valid.
        """
        configs = []
        for k, c in enumerate(m["configs"]):
            try:
                configs.append(OpConfig.from_dict(c))
            except ValueError as e:
                raise ValueError(f"plan table: configuration {k}: {e}") from None
        edges = []
        for k, e in enumerate(m["edges"]):
            try:
                edges.append(EdgePlan.from_dict(e))
            except ValueError as err:
                raise ValueError(f"plan table: edge plan {k}: {err}") from None
        return cls(int(m["parallelism"]), tuple(m["op_names"]), tuple(configs), tuple(edges),
                   _unpack(m["node_choice"]), _unpack(m["edge_choice"]), _unpack(m["costs"]))


def _pack(array: np.ndarray) -> tuple:
    if array.dtype.kind in "iu" and array.size:   # the smallest unsigned type that holds it
        array = array.astype(np.min_scalar_type(int(array.max())))
    return (array.dtype.str, array.shape, zlib.compress(np.ascontiguousarray(array).tobytes()))


def _unpack(packed: tuple) -> np.ndarray:
    dtype, shape, data = packed
    array = np.frombuffer(zlib.decompress(data), dtype=np.dtype(dtype)).reshape(shape)
    return array.astype(np.int64) if array.dtype.kind in "iu" else array.copy()


@dataclass(frozen=True)
class ProfileRow:
    """One device count's search.

    Attributes:
        parallelism: the device count.
        plan: the fastest frontier plan within the memory limit, or None.
        frontier: every frontier plan (``FrontierPlans``).
        data_parallel: the data-parallel plan, priced by the same cost model.
        search_s: pricing and Frontier-Tracking seconds.
        approximation: whether the frontier is exact, and if not, its error bound
            (``report.approximation_line``).
    """

    parallelism: int
    plan: Plan | None
    frontier: FrontierPlans
    data_parallel: Plan
    search_s: float
    approximation: str

    @property
    def least_memory_bytes(self) -> float:
        """The least memory any plan of this device count needs."""
        return self.frontier.points[0][0]


@dataclass(frozen=True)
class SearchSummary:
    """What a search found, identical on every rank.

    Attributes:
        option: "mini_time", "mini_parallelism" or "profiling".
        rows: one ``ProfileRow`` per device count kept: the chosen plan's for
            "mini_time" and "mini_parallelism", every one searched for "profiling".
        chosen: the plan the option chose (None for "profiling").
        simulator_check: the simulator's check of the chosen device count's frontier
            (``FrontierCheck.to_dict()``), when ``find_strategy(simulate=...)`` asked
            for one; else None.
    """

    option: str
    rows: tuple[ProfileRow, ...]
    chosen: Plan | None
    simulator_check: dict | None = None

    def _row(self) -> ProfileRow:
        if len(self.rows) != 1:
            raise ValueError(f"this {self.option} search covered {len(self.rows)} device counts; "
                             "take the frontier of one of summary.profile")
        return self.rows[0]

    @property
    def frontier(self) -> FrontierPlans:
        """The chosen device count's frontier, memory ascending."""
        return self._row().frontier

    @property
    def data_parallel(self) -> Plan:
        """The chosen device count's data-parallel plan."""
        return self._row().data_parallel

    @property
    def profile(self) -> list[ProfileRow]:
        """Per device count searched, its row (the "profiling" option's result)."""
        return list(self.rows)

    # -- the form rank 0 sends -------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The summary, compactly: per device count a ``PlanTable`` of its frontier plans
        and its data-parallel plan (the last row), and which row was chosen."""
        rows = []
        for row in self.rows:
            table = row.frontier.table
            chosen = None if row.plan is None else row.frontier.index(row.plan)
            rows.append({"table": table.to_message(), "frontier_size": len(row.frontier), "chosen": chosen,
                         "search_s": row.search_s, "approximation": row.approximation,
                         "notes": row.frontier.notes, "data_parallel_notes": row.data_parallel.notes})
        chosen_row = next((k for k, r in enumerate(self.rows) if r.plan is not None and r.plan is self.chosen),
                          None)
        message = {"format_version": SUMMARY_FORMAT_VERSION, "option": self.option, "rows": rows,
                   "chosen_row": chosen_row, "simulator_check": self.simulator_check}
        return zlib.compress(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    @classmethod
    def from_bytes(cls, data: bytes) -> "SearchSummary":
        """The summary ``to_bytes`` sent; every plan is checked as it is built.

        Raises:
            ValueError: for data of another format version, or a table whose
                configurations or edge plans are not valid.
        """
        message = pickle.loads(zlib.decompress(data))
        if message.get("format_version") != SUMMARY_FORMAT_VERSION:
            raise ValueError(f"search summary of format {message.get('format_version')!r}; this "
                             f"TensorOpt reads {SUMMARY_FORMAT_VERSION}: run every rank with the same version")
        option = message["option"]
        rows = []
        for r in message["rows"]:
            table = PlanTable.from_message(r["table"])
            rows.append(table_row(table, r["frontier_size"], r["chosen"], option, r["notes"],
                                  r["data_parallel_notes"], r["search_s"], r["approximation"]))
        chosen = None if message["chosen_row"] is None else rows[message["chosen_row"]].plan
        return cls(option, tuple(rows), chosen, message.get("simulator_check"))


def table_row(table: PlanTable, frontier_size: int, chosen: int | None, option: str, notes: str,
              data_parallel_notes: str, search_s: float, approximation: str) -> ProfileRow:
    """A ``ProfileRow`` whose plans all come from ``table``: rows ``0 .. frontier_size-1``
    are the frontier (plan ``chosen`` of them the row's plan), the next one the
    data-parallel plan."""
    frontier = table.frontier(frontier_size, option, notes)
    data_parallel = table.plan(frontier_size, "data_parallel", data_parallel_notes)
    plan = None if chosen is None else frontier[chosen]
    return ProfileRow(table.parallelism, plan, frontier, data_parallel, float(search_s), approximation)
