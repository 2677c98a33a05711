"""The event loop: list scheduling of a task graph, FIFO per resource by ready time.

Usage::

    from tensoropt.simulator import TaskGraph, simulate

    g = TaskGraph(resources=["compute:0"])
    g.add_task("a", "compute", ["compute:0"], 1e-3)
    g.add_task("b", "compute", ["compute:0"], 2e-3)
    g.add_dependency("a", "b")
    t = simulate(g)
    t.makespan_s                      # 0.003
    t.start_s[t.graph.index["b"]]     # 0.001

The rule (FlexFlow §5.2, Algorithm 1). A task is *ready* when every task it depends on
has ended; its ready time is the latest of their ends (0 with none). Ready tasks wait in
one queue ordered by ``(ready time, task index)``: the earliest-ready task is taken
first, and among tasks ready at the same instant the one added to the graph first wins
(this is the deterministic tie-break; in a ``DeltaSimulator`` graph the index order is
key order, then the order within a fragment). The task taken starts when it is ready and
every resource it holds is free -- on a cycled resource, a cycle later
(``cycle_start``) -- and it holds them all until it ends. So each resource
serves its tasks first-in first-out by ready time, with no back-filling: a task never
overtakes an earlier-ready one on a shared resource, even if that one is still waiting
for another resource. Ready times come out of the queue in non-decreasing order, which is
what lets a delta simulation resume the loop from any point.

A cycle leaves tasks that never become ready; the loop ends without them and
``simulate`` raises ``ValueError`` naming one cycle.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Union

import numpy as np

from tensoropt.simulator.graph import PS_PER_S, CompiledGraph, TaskGraph

__all__ = ["Timeline", "SimStats", "simulate", "event_loop", "cycle_message", "cycle_start"]


@dataclass(frozen=True)
class SimStats:
    """How a timeline was computed.

    Attributes:
        mode: ``"full"`` or ``"delta"``.
        loop_tasks: tasks timed one by one by the event loop.
        mirrored_tasks: tasks copied from the base timeline, shifted (delta only).
        segments: event-loop runs (a delta alternates loop runs and mirrored spans).
        changed_keys: keys whose version differs from the base (delta only).
    """

    mode: str
    loop_tasks: int
    mirrored_tasks: int = 0
    segments: int = 1
    changed_keys: int = 0


@dataclass(frozen=True, eq=False)
class Timeline:
    """Start and end of every task (integer picoseconds, exact; ``*_s`` in seconds).

    ``order`` is the order in which the event loop took the tasks; ``ready_ps`` the time
    each became ready. Arrays are indexed by task index (``graph.index[name]``).
    """

    graph: CompiledGraph
    start_ps: np.ndarray
    end_ps: np.ndarray
    ready_ps: np.ndarray
    order: np.ndarray
    stats: SimStats

    def __post_init__(self) -> None:
        for a in (self.start_ps, self.end_ps, self.ready_ps, self.order):
            a.flags.writeable = False

    @property
    def makespan_ps(self) -> int:
        return int(self.end_ps.max()) if len(self.end_ps) else 0

    @property
    def makespan_s(self) -> float:
        return self.makespan_ps / PS_PER_S

    @property
    def start_s(self) -> np.ndarray:
        return self.start_ps / PS_PER_S

    @property
    def end_s(self) -> np.ndarray:
        return self.end_ps / PS_PER_S

    def times_by_name(self) -> dict[str, tuple[int, int]]:
        """Task name -> ``(start_ps, end_ps)``, to compare timelines of different graphs."""
        return dict(zip(self.graph.names, zip(self.start_ps.tolist(), self.end_ps.tolist())))


def cycle_start(s: int, anchor: int, cycle: int) -> int:
    """When a task that could start at ``s`` starts on a resource whose loop cycles every
    ``cycle`` (``anchor``: the end of its last task, ``anchor <= s``): one whole cycle after
    ``anchor`` when it is issued within that cycle, else one whole cycle after ``s``.

    Horovod's loop on a CPU rank: a collective issued as the one before it ends, or a
    little compute later, goes on the cycle after that one's end; one issued after the
    loop has idled a cycle or more waits about a whole cycle. ``python -m tensoropt.bench
    horovod_cycle`` (2026-11-26, 2 ranks, a chain of matmuls then a tiny all-reduce, 32
    links) measured 0.82, 0.88 and 0.91 ms a link beyond compute with 0.68, 3.1 and 8.5 ms
    of compute a link (cycle 1.08-1.13 ms); this rule gives 0.81, 0.94 and 1.11 ms
    (totals -1.0%, +1.7%, +2.1%), the next cycle of a free-running loop gave 0.74, 0.49
    and 0.65 ms (-5.6%, -9.8%, -2.9%)."""
    return s + cycle if s - anchor >= cycle else anchor + cycle


def event_loop(lists: tuple, heap: list, pending: list, partial: list, free: list,
               start: list, end: list, ready: list, order: list) -> None:
    """Runs the loop until the ready queue is empty, in place.

    Args:
        lists: ``CompiledGraph.loop_lists``.
        heap: the ready queue, a heap of ``(ready_ps, task)``.
        pending: per task, how many of its predecessors have not ended.
        partial: per task, the latest end among its predecessors that have ended.
        free: per resource, when it is next free.
        start, end, ready: per task, filled for each task taken (-1 before).
        order: the tasks taken are appended here.
    """
    dur, rp, ri, sp, si, _, gate, cyc = lists
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        # 1. Take the ready task with the least (ready time, index).
        r, t = pop(heap)
        # 2. It starts when it is ready and each of its resources is free (on a cycled
        #    resource, a cycle later: ``cycle_start``) ...
        s = r
        res = ri[rp[t]:rp[t + 1]]
        for q in res:
            if free[q] > s:
                s = free[q]
        q = gate[t]
        if q >= 0:
            s = cycle_start(s, free[q], cyc[q])
        # 3. ... ends after its duration, and holds its resources until then.
        e = s + dur[t]
        for q in res:
            free[q] = e
        start[t] = s
        end[t] = e
        ready[t] = r
        order.append(t)
        # 4. Its successors learn its end; one whose predecessors have all ended is ready.
        for v in si[sp[t]:sp[t + 1]]:
            if e > partial[v]:
                partial[v] = e
            c = pending[v] - 1
            pending[v] = c
            if c == 0:
                push(heap, (partial[v], v))


def simulate(graph: Union[TaskGraph, CompiledGraph]) -> Timeline:
    """Full simulation of ``graph`` (see the module doc for the scheduling rule).

    Raises:
        ValueError: the graph has a cycle (named), or a ``TaskGraph`` does not compile.
    """
    cg = graph.compile() if isinstance(graph, TaskGraph) else graph
    n = cg.num_tasks
    lists = cg.loop_lists
    pending = list(lists[5])
    heap = [(0, t) for t in np.flatnonzero(cg.num_preds == 0).tolist()]   # sorted: a heap
    start, end, ready = [-1] * n, [-1] * n, [-1] * n
    order: list[int] = []
    event_loop(lists, heap, pending, [0] * n, [0] * len(cg.resources), start, end, ready,
               order)
    # 5. Every task ran, or the graph has a cycle.
    start_ps = np.array(start, dtype=np.int64)
    if len(order) != n:
        raise ValueError(cycle_message(cg, start_ps >= 0))
    return Timeline(cg, start_ps, np.array(end, dtype=np.int64),
                    np.array(ready, dtype=np.int64), np.array(order, dtype=np.int64),
                    SimStats(mode="full", loop_tasks=n))


def cycle_message(cg: CompiledGraph, done: np.ndarray) -> str:
    """Names one cycle among the tasks that never ran (each waits for another of them)."""
    ptr, idx = cg.pred
    waiting = np.flatnonzero(~done)
    t = int(waiting[0])
    seen: dict[int, int] = {}
    path: list[int] = []
    while t not in seen:
        seen[t] = len(path)
        path.append(t)
        preds = idx[ptr[t]:ptr[t + 1]]
        t = int(preds[~done[preds]][0])
    cycle = path[seen[t]:][::-1]
    names = " -> ".join(cg.names[i] for i in cycle + [cycle[0]])
    return (f"the task graph has a cycle: {names} ({len(waiting)} task(s) never became "
            "ready); remove one of these dependencies")
