"""Task graphs: tasks that hold named resources, dependencies between them, and buffers.

Usage::

    from tensoropt.simulator import TaskGraph, simulate

    g = TaskGraph(resources=["compute:0", "chain:0", "nic:m0"])
    g.add_task("dense/fwd", "compute", ["compute:0"], 2e-3, op="dense", step="forward")
    g.add_task("dense/allgather", "collective", ["chain:0", "nic:m0"], 1e-3, bytes=4 << 20)
    g.add_dependency("dense/fwd", "dense/allgather")
    g.add_buffer("dense:0", 1 << 20, "activation", alloc="dense/fwd",
                 free_after=["dense/allgather"])
    g.add_buffer("dense/kernel", 8 << 20, "parameter")          # resident: always present
    timeline = simulate(g)

What the pieces mean:

- A **resource** is named ``<kind>:<id>`` (``compute:0``, ``chain:0``, ``nic:m0``,
  ``link:m0-m1``); the kind groups resources in traces. Resources are declared up front
  (constructor or ``add_resource``); a task naming an undeclared one is an error.
- A resource may run on a **cycle** (``cycles={"chain:0": 1e-3}`` or
  ``add_resource(name, cycle_s=...)``): a loop that looks for work once per period, as
  horovod's background thread does. A task holding it that could start within one period
  of the end of the last task that held the resource (of time 0 before any did) starts
  one period after that end (a task queued behind another waits a whole period); one
  that could start later, after the loop idled, starts a whole period after it could
  (``engine.cycle_start``). A task holds at most one cycled resource. A task holding no
  cycled resource may instead wait for one's cycle without holding it
  (``waits_for_cycle_of``): it starts when a task queued on that resource at the same
  moment would, and leaves the resource free (a zero-duration join marking when
  horovod's loop issues a collective, for work that starts beside the transfer).
- A **task** runs for ``duration_s`` and holds every resource it names for its whole run
  (a collective can hold the rank's chain slot and its machine's NIC at once). A task may
  hold no resource (a pure delay, or a zero-duration join point). ``kind`` is a free label
  (``"compute"``, ``"collective"``, ...) that results group by; ``rank`` says which
  process a task belongs to (traces, memory); ``**meta`` is carried to traces unchanged.
- ``add_dependency(a, b)``: ``b`` cannot start before ``a`` has ended.
- A **buffer** has a name, a size and a reason (``why``). It is allocated when its
  ``alloc`` task starts and freed when the last of its ``free_after`` tasks ends, and
  not before ``alloc`` ends (the liveness rule: an activation is allocated by its
  producer and freed after its last use). ``alloc=None`` makes it resident (present
  from time 0, no ``free_after``); an empty ``free_after`` keeps it to the end. A
  transient buffer of one task has ``alloc=t, free_after=[t]``.

Times are kept as integer picoseconds (``PS_PER_S`` per second), so that adding and
comparing them is exact: a delta simulation reproduces a full one bit for bit.
A :class:`Fragment` is a partial graph whose dependencies and ``free_after`` may name
tasks of other fragments; :class:`~tensoropt.simulator.delta.DeltaSimulator` assembles
fragments into one graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from numbers import Real
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

__all__ = ["TaskGraph", "Fragment", "CompiledGraph", "BufferTable", "PS_PER_S",
           "seconds_to_ps", "resource_kind"]

PS_PER_S = 10**12
MAX_TOTAL_PS = 2**62       # the sum of all durations must stay far from int64 overflow


def seconds_to_ps(duration_s: float, what: str = "duration_s") -> int:
    """``duration_s`` as whole picoseconds; raises ``ValueError`` unless finite and >= 0."""
    if isinstance(duration_s, bool) or not isinstance(duration_s, Real):
        raise ValueError(f"{what} must be a number of seconds, got {duration_s!r}")
    x = float(duration_s)
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{what} must be a finite number of seconds >= 0, got {duration_s!r}")
    return int(round(x * PS_PER_S))


def resource_kind(name: str) -> str:
    """``"nic:m0"`` -> ``"nic"``."""
    return name.split(":", 1)[0]


def _check_resource_name(name: Any) -> str:
    if not isinstance(name, str) or ":" not in name or name.startswith(":") \
            or name.endswith(":"):
        raise ValueError(f"resource {name!r} must be a string '<kind>:<id>', "
                         "e.g. 'compute:0', 'chain:0' or 'nic:m0'")
    return name


@dataclass(frozen=True)
class _BufferSpec:
    name: str
    size_bytes: int
    why: str
    rank: int
    alloc: Optional[str]
    free_after: tuple[str, ...]


class TaskGraph:
    """A graph of tasks on named resources, validated as it is built (see module doc)."""

    _allow_external = False

    def __init__(self, resources: Iterable[str],
                 cycles: Optional[Mapping[str, float]] = None) -> None:
        self._resources: dict[str, int] = {}
        self._cycle_ps: dict[str, int] = {}
        self._index: dict[str, int] = {}
        self._names: list[str] = []
        self._kinds: list[str] = []
        self._ranks: list[int] = []
        self._dur_ps: list[int] = []
        self._res: list[tuple[int, ...]] = []
        self._waits: list[int] = []                          # a cycled resource waited on, or -1
        self._meta: list[dict[str, Any]] = []
        self._deps: dict[tuple[str, str], None] = {}        # an ordered set
        self._buffers: list[_BufferSpec] = []
        self._buffer_names: set[str] = set()
        if isinstance(resources, str):
            resources = [resources]
        for r in resources:
            self.add_resource(r)
        for r, cycle_s in (cycles or {}).items():
            if r not in self._resources:
                raise ValueError(f"cycles names resource {r!r}, which is not declared; "
                                 f"declared: {sorted(self._resources)}")
            self.add_resource(r, cycle_s)

    # -- building ----------------------------------------------------------------------

    @property
    def resources(self) -> tuple[str, ...]:
        """The declared resources, in declaration order."""
        return tuple(self._resources)

    @property
    def cycles(self) -> dict[str, float]:
        """The cycled resources and their periods in seconds (see the module doc)."""
        return {r: ps / PS_PER_S for r, ps in self._cycle_ps.items()}

    def add_resource(self, name: str, cycle_s: float = 0.0) -> None:
        """Declares resource ``name`` (``<kind>:<id>``), on a cycle of ``cycle_s`` seconds
        when that is > 0; declaring it again only sets a cycle given now.

        Raises:
            ValueError: a bad name or cycle, or a cycle given to a resource a task holds.
        """
        self._resources.setdefault(_check_resource_name(name), len(self._resources))
        cycle_ps = seconds_to_ps(cycle_s, f"resource {name!r}: cycle_s")
        if cycle_ps and self._cycle_ps.get(name) != cycle_ps:
            if any(self._resources[name] in r for r in self._res):
                raise ValueError(f"resource {name!r} is already held by a task; give its "
                                 "cycle before adding tasks")
            self._cycle_ps[name] = cycle_ps

    def add_task(self, name: str, kind: str, resources: Union[str, Sequence[str]],
                 duration_s: float, *, rank: int = 0, waits_for_cycle_of: Optional[str] = None,
                 **meta: Any) -> int:
        """Adds a task and returns its index (tasks are numbered in insertion order).

        Args:
            name: unique task name.
            kind: a label results group by, e.g. ``"compute"`` or ``"collective"``.
            resources: the declared resources the task holds while it runs (a string is
                one resource; an empty sequence holds none).
            duration_s: how long it runs, in seconds (finite, >= 0).
            rank: the process it belongs to (traces and memory are per rank).
            waits_for_cycle_of: a cycled resource whose cycle the task waits for without
                holding it (see the module doc); the task must hold no cycled resource.
            **meta: anything to carry into traces (op, configuration, bytes, ...).

        Raises:
            ValueError: a duplicate name, an undeclared resource, a resource named twice,
                a bad duration or rank.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a task name must be a non-empty string, got {name!r}")
        if name in self._index:
            raise ValueError(f"task {name!r} is already in the graph; task names are unique")
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"task {name!r}: kind must be a non-empty string, got {kind!r}")
        if isinstance(resources, str):
            resources = [resources]
        res = []
        for r in resources:
            if r not in self._resources:
                raise ValueError(f"task {name!r} uses unknown resource {r!r}; declared "
                                 f"resources: {sorted(self._resources)} (declare it with "
                                 "TaskGraph(resources=...) or add_resource)")
            res.append(self._resources[r])
        if len(set(res)) != len(res):
            raise ValueError(f"task {name!r} names a resource twice: {list(resources)}")
        cycled = [r for r in resources if r in self._cycle_ps]
        if len(cycled) > 1:
            raise ValueError(f"task {name!r} holds two cycled resources {cycled}; a task "
                             "may wait for one cycle only")
        wait = -1
        if waits_for_cycle_of is not None:
            if waits_for_cycle_of not in self._cycle_ps or cycled:
                raise ValueError(f"task {name!r}: waits_for_cycle_of={waits_for_cycle_of!r} must "
                                 f"name a cycled resource ({sorted(self._cycle_ps)}), for a task "
                                 "that holds none")
            wait = self._resources[waits_for_cycle_of]
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0:
            raise ValueError(f"task {name!r}: rank must be an int >= 0, got {rank!r}")
        dur = seconds_to_ps(duration_s, f"task {name!r}: duration_s")
        self._index[name] = len(self._names)
        self._names.append(name)
        self._kinds.append(kind)
        self._ranks.append(int(rank))
        self._dur_ps.append(dur)
        self._res.append(tuple(res))
        self._waits.append(wait)
        self._meta.append(meta)
        return len(self._names) - 1

    def _check_ref(self, name: Any, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what}: a task name must be a non-empty string, got {name!r}")
        if name not in self._index and not self._allow_external:
            raise ValueError(f"{what}: unknown task {name!r}; add it with add_task first")

    def add_dependency(self, a: str, b: str) -> None:
        """Task ``b`` cannot start before task ``a`` has ended (adding it twice is a no-op).

        Raises:
            ValueError: an unknown task, or ``a == b`` (a cycle of one task).
        """
        self._check_ref(a, f"add_dependency({a!r}, {b!r})")
        self._check_ref(b, f"add_dependency({a!r}, {b!r})")
        if a == b:
            raise ValueError(f"add_dependency({a!r}, {b!r}): a task cannot depend on itself "
                             f"(cycle: {a} -> {a})")
        if self._allow_external and a not in self._index and b not in self._index:
            raise ValueError(f"add_dependency({a!r}, {b!r}): a fragment's dependency must "
                             "touch one of its own tasks; add the task first")
        self._deps[(a, b)] = None

    def add_buffer(self, name: str, size_bytes: int, why: str, *, alloc: Optional[str] = None,
                   free_after: Iterable[str] = (), rank: Optional[int] = None) -> None:
        """Adds a buffer allocated when ``alloc`` starts, freed when all ``free_after`` end.

        Args:
            name: unique buffer name (reported when the buffer is live at the peak).
            size_bytes: its size (int >= 0).
            why: what it is, e.g. ``"activation"``, ``"parameter"``, ``"transient"``.
            alloc: the task whose start allocates it; ``None`` makes it resident.
            free_after: tasks after whose last end it is freed; empty keeps it to the end.
            rank: the process it lives on; default: ``alloc``'s rank, else 0.

        Raises:
            ValueError: a duplicate name, a bad size, an unknown task.
        """
        if not isinstance(name, str) or not name or name in self._buffer_names:
            raise ValueError(f"buffer name {name!r} must be a new non-empty string")
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, (int, np.integer)) \
                or size_bytes < 0:
            raise ValueError(f"buffer {name!r}: size_bytes must be an int >= 0, "
                             f"got {size_bytes!r}")
        if alloc is not None and alloc not in self._index:
            raise ValueError(f"buffer {name!r}: unknown alloc task {alloc!r}; the task that "
                             "allocates a buffer must be added first (in the same fragment)")
        if isinstance(free_after, str):
            free_after = [free_after]
        free = tuple(dict.fromkeys(free_after))
        if alloc is None and free:
            raise ValueError(f"buffer {name!r} is resident (alloc=None) but has free_after "
                             f"{list(free)}; give the task that allocates it as alloc")
        for f in free:
            self._check_ref(f, f"buffer {name!r} free_after")
        if rank is None:
            rank = self._ranks[self._index[alloc]] if alloc is not None else 0
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0:
            raise ValueError(f"buffer {name!r}: rank must be an int >= 0, got {rank!r}")
        self._buffer_names.add(name)
        self._buffers.append(_BufferSpec(name, int(size_bytes), str(why), int(rank), alloc,
                                         free))

    # -- reading -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    @property
    def task_names(self) -> tuple[str, ...]:
        return tuple(self._names)

    def compile(self) -> "CompiledGraph":
        """The graph as arrays, ready to simulate.

        Raises:
            ValueError: a dependency or buffer names a task not in the graph (fragments),
                or the durations add up to more than int64 picoseconds can hold.
        """
        idx = self._index
        for a, b in self._deps:
            for t in (a, b):
                if t not in idx:
                    raise ValueError(f"dependency ({a!r}, {b!r}) names unknown task {t!r}")
        src = np.array([idx[a] for a, _ in self._deps], dtype=np.int64)
        dst = np.array([idx[b] for _, b in self._deps], dtype=np.int64)
        kind_names = tuple(dict.fromkeys(self._kinds))
        kid = {k: i for i, k in enumerate(kind_names)}
        free_ptr, free_idx = [0], []
        for b in self._buffers:
            for f in b.free_after:
                if f not in idx:
                    raise ValueError(f"buffer {b.name!r} is freed after unknown task {f!r}")
                free_idx.append(idx[f])
            free_ptr.append(len(free_idx))
        buffers = BufferTable(
            names=tuple(b.name for b in self._buffers),
            size_bytes=np.array([b.size_bytes for b in self._buffers], dtype=np.int64),
            why=tuple(b.why for b in self._buffers),
            rank=np.array([b.rank for b in self._buffers], dtype=np.int64),
            alloc=np.array([-1 if b.alloc is None else idx[b.alloc] for b in self._buffers],
                           dtype=np.int64),
            free_ptr=np.array(free_ptr, dtype=np.int64),
            free_idx=np.array(free_idx, dtype=np.int64))
        return CompiledGraph(
            resources=self.resources, res_cycle_ps=self._cycle_array(),
            names=tuple(self._names), kind_names=kind_names,
            kind_id=np.array([kid[k] for k in self._kinds], dtype=np.int64),
            rank=np.array(self._ranks, dtype=np.int64),
            duration_ps=np.array(self._dur_ps, dtype=np.int64),
            res_ptr=np.cumsum([0] + [len(r) for r in self._res], dtype=np.int64),
            res_idx=np.array([q for r in self._res for q in r], dtype=np.int64),
            edge_src=src, edge_dst=dst, meta=tuple(self._meta), buffers=buffers,
            cycle_wait=np.array(self._waits, dtype=np.int64))

    def _cycle_array(self) -> np.ndarray:
        return np.array([self._cycle_ps.get(r, 0) for r in self._resources], dtype=np.int64)


class Fragment(TaskGraph):
    """A partial task graph: its dependencies and ``free_after`` may name tasks of other
    fragments (resolved by name when a ``DeltaSimulator`` assembles the fragments). Each
    dependency must touch one of the fragment's own tasks; ``alloc`` must be its own."""

    _allow_external = True


@dataclass(frozen=True, eq=False)
class BufferTable:
    """Buffers as arrays: ``alloc`` is a task index or -1 (resident); buffer ``i`` is freed
    after tasks ``free_idx[free_ptr[i]:free_ptr[i+1]]`` (none: never)."""

    names: tuple[str, ...]
    size_bytes: np.ndarray
    why: tuple[str, ...]
    rank: np.ndarray
    alloc: np.ndarray
    free_ptr: np.ndarray
    free_idx: np.ndarray

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True, eq=False)
class CompiledGraph:
    """A task graph as arrays, tasks numbered ``0..n-1`` (the tie-break order).

    Task ``i`` holds resources ``res_idx[res_ptr[i]:res_ptr[i+1]]`` (indices into
    ``resources``); edge ``e`` says ``edge_dst[e]`` waits for ``edge_src[e]``. Resource
    ``q`` runs on a cycle of ``res_cycle_ps[q]`` picoseconds (0: none). Task ``i`` waits
    for the cycle of resource ``cycle_wait[i]`` without holding it (-1: none; ``None``
    given: none for every task).
    """

    resources: tuple[str, ...]
    res_cycle_ps: np.ndarray
    names: tuple[str, ...]
    kind_names: tuple[str, ...]
    kind_id: np.ndarray
    rank: np.ndarray
    duration_ps: np.ndarray
    res_ptr: np.ndarray
    res_idx: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    meta: tuple[Mapping[str, Any], ...]
    buffers: BufferTable
    cycle_wait: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        if self.cycle_wait is None:
            object.__setattr__(self, "cycle_wait", np.full(len(self.names), -1, dtype=np.int64))
        total = int(self.duration_ps.sum()) if len(self.duration_ps) else 0
        if total > MAX_TOTAL_PS:
            raise ValueError(f"the task durations add up to {total / PS_PER_S:.3g} s, more "
                             f"than the {MAX_TOTAL_PS / PS_PER_S:.3g} s the simulator's "
                             "integer picoseconds can hold")

    @property
    def num_tasks(self) -> int:
        return len(self.names)

    @cached_property
    def index(self) -> dict[str, int]:
        """Task name -> task index."""
        return {n: i for i, n in enumerate(self.names)}

    def kind(self, task: int) -> str:
        return self.kind_names[self.kind_id[task]]

    def task_resources(self, task: int) -> tuple[str, ...]:
        return tuple(self.resources[q] for q in
                     self.res_idx[self.res_ptr[task]:self.res_ptr[task + 1]])

    @cached_property
    def succ(self) -> tuple[np.ndarray, np.ndarray]:
        """Successors as CSR: ``(ptr, idx)``."""
        return _csr(self.edge_src, self.edge_dst, self.num_tasks)

    @cached_property
    def pred(self) -> tuple[np.ndarray, np.ndarray]:
        """Predecessors as CSR: ``(ptr, idx)``."""
        return _csr(self.edge_dst, self.edge_src, self.num_tasks)

    @cached_property
    def num_preds(self) -> np.ndarray:
        """How many dependencies each task waits for."""
        return np.diff(self.pred[0])

    @cached_property
    def res_holder(self) -> np.ndarray:
        """The task of each entry of ``res_idx``."""
        return np.repeat(np.arange(self.num_tasks), np.diff(self.res_ptr))

    @cached_property
    def gate(self) -> np.ndarray:
        """Per task, the cycled resource it holds or waits for (-1: none)."""
        out = self.cycle_wait.copy()
        cycled = self.res_cycle_ps[self.res_idx] > 0
        out[self.res_holder[cycled]] = self.res_idx[cycled]
        return out

    @cached_property
    def loop_lists(self) -> tuple[list, ...]:
        """``(duration, res_ptr, res_idx, succ_ptr, succ_idx, num_preds, gate, cycle)`` as
        Python lists, the fastest form for the event loop to index (``gate`` per task,
        ``cycle`` per resource)."""
        sp, si = self.succ
        return (self.duration_ps.tolist(), self.res_ptr.tolist(), self.res_idx.tolist(),
                sp.tolist(), si.tolist(), self.num_preds.tolist(), self.gate.tolist(),
                self.res_cycle_ps.tolist())


def _csr(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, values[order]
