"""Memory over time, per rank, from the buffers' liveness on a timeline.

Usage::

    from tensoropt.simulator import simulate, memory_timelines

    t = simulate(graph)
    for m in memory_timelines(t):
        print(m.rank, m.peak_bytes, m.peak_time_s, m.live_at_peak[:3])

The rules (the task graph's builder decides which buffers exist and who frees them):

- A **resident** buffer (``alloc=None``: parameters, gradients' accumulators, optimizer
  slots) is present for the whole step; the sum of these is ``resident_bytes``.
- Any other buffer is allocated when its ``alloc`` task **starts** and freed when the
  **last** of its ``free_after`` tasks **ends** -- but not before its ``alloc`` task ends
  (the task that allocates a buffer writes it); with no ``free_after`` it is kept to the
  end of the step. So an activation allocated by its producer's forward task lives until
  its last forward use, or until the end of the backward task that saved it; a transient
  buffer (``alloc=t, free_after=[t]``) lives during task ``t``.
- A collective marked ``held_to_next`` (the fit check's bound, ``late_release``) frees
  what it reads or writes no earlier than the end of the next collective of its rank
  (the step's end for the last one), and so does a join that waits for it.
- At one instant, frees of buffers allocated earlier happen first, then allocations,
  then the frees of buffers allocated at that same instant (so a buffer whose task takes
  no time is still counted, and a buffer freed at ``t`` does not overlap one allocated
  at ``t``).
- ``peak_bytes`` is the most live at any instant, resident included; ``peak_time_s`` the
  first instant it is reached; ``live_at_peak`` what is live then (largest first).

The memory timeline is a step function: ``live_bytes[i]`` holds from ``times_s[i]``
(one sample per instant and phase, so the peak is among the samples).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tensoropt.simulator.engine import Timeline
from tensoropt.simulator.graph import PS_PER_S, BufferTable

__all__ = ["LiveBuffer", "MemoryTimeline", "memory_timelines", "peak_memory_bytes"]


@dataclass(frozen=True)
class LiveBuffer:
    """A buffer live at the peak."""

    name: str
    size_bytes: int
    why: str


@dataclass(frozen=True, eq=False)
class MemoryTimeline:
    """Live bytes on one rank over the step (see the module doc for the rules).

    ``live_at_peak_ids`` indexes the graph's buffers (largest first); ``live_at_peak``
    names them.
    """

    rank: int
    resident_bytes: int
    peak_bytes: int
    peak_time_s: float
    live_at_peak_ids: np.ndarray
    times_s: np.ndarray
    live_bytes: np.ndarray
    buffers: BufferTable = field(repr=False)

    @cached_property
    def live_at_peak(self) -> tuple[LiveBuffer, ...]:
        b = self.buffers
        sizes = b.size_bytes[self.live_at_peak_ids].tolist()
        return tuple(LiveBuffer(b.names[j], size, b.why[j])
                     for j, size in zip(self.live_at_peak_ids.tolist(), sizes))


def _lifetimes(t: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """Per buffer: alloc and free times in ps (resident: -1; never freed: -1)."""
    b = t.graph.buffers
    producer = np.maximum(b.alloc, 0)
    alloc = np.where(b.alloc >= 0, t.start_ps[producer], -1)
    free = np.full(len(b), -1, dtype=np.int64)
    has = np.diff(b.free_ptr) > 0                    # resident buffers have no frees
    if has.any():
        ends = _held_ends(t)
        last = np.maximum.reduceat(ends[b.free_idx], b.free_ptr[:-1][has])
        free[has] = np.maximum(last, t.end_ps[producer[has]])
    return alloc, free


def _held_ends(t: Timeline) -> np.ndarray:
    """Per task, when what it reads or writes may be freed: its end, but for a collective
    marked ``held_to_next`` (``SimOptions.late_release``), the end of the next collective
    its rank starts (else the step's end): horovod's background thread drops a
    collective's tensors after its callback, before it performs the next one, and may be
    descheduled in between (seen on more ranks than cores)."""
    g = t.graph
    if "collective" not in g.kind_names:
        return t.end_ps
    tasks = np.flatnonzero(g.kind_id == g.kind_names.index("collective"))
    held = np.array([bool(g.meta[c].get("held_to_next")) for c in tasks.tolist()], dtype=bool)
    if not held.any():
        return t.end_ps
    ends = t.end_ps.copy()
    for rank in np.unique(g.rank[tasks]).tolist():
        mine = g.rank[tasks] == rank
        ranked, marked = tasks[mine], held[mine]
        order = np.lexsort((ranked, t.start_ps[ranked]))
        ranked, marked = ranked[order], marked[order]
        after = np.append(t.end_ps[ranked[1:]], t.makespan_ps)
        ends[ranked[marked]] = np.maximum(ends[ranked[marked]], after[marked])
    # through the joins that wait for them (a consumer's ``release``, a gradient's
    # ``grad_read``), in the order the loop took them (a topological order)
    if "join" in g.kind_names:
        ptr, idx = g.pred
        join = g.kind_id == g.kind_names.index("join")
        for v in t.order[join[t.order]].tolist():
            preds = idx[ptr[v]:ptr[v + 1]]
            if len(preds):
                ends[v] = max(ends[v], int(ends[preds].max()))
    return ends


def memory_timelines(t: Timeline) -> tuple[MemoryTimeline, ...]:
    """One ``MemoryTimeline`` per rank that has a task or a buffer, by rank."""
    g, b = t.graph, t.graph.buffers
    alloc, free = _lifetimes(t)
    makespan = t.makespan_ps
    out = []
    for rank in np.union1d(np.unique(g.rank), np.unique(b.rank)).tolist():
        mine = b.rank == rank
        resident = mine & (b.alloc < 0)
        res_bytes = int(b.size_bytes[resident].sum())
        dyn = np.flatnonzero(mine & (b.alloc >= 0))
        a, f, size = alloc[dyn], free[dyn], b.size_bytes[dyn]
        freed = f >= 0
        # Events (time, phase, +-bytes): phase 0 frees of earlier allocations, 1 allocs,
        # 2 frees of allocations at the same instant.
        times = np.concatenate([a, f[freed]])
        phase = np.concatenate([np.ones(len(a), dtype=np.int64),
                                np.where(a[freed] < f[freed], 0, 2)])
        delta = np.concatenate([size, -size[freed]])
        order = np.lexsort((phase, times))
        times, phase, delta = times[order], phase[order], delta[order]
        live = res_bytes + np.cumsum(delta)
        # One sample per (instant, phase): the value after its last event.
        last = np.ones(len(times), dtype=bool)
        last[:-1] = (times[1:] != times[:-1]) | (phase[1:] != phase[:-1])
        s_times = np.concatenate([[0], times[last]])
        s_live = np.concatenate([[res_bytes], live[last]])
        i = int(np.argmax(s_live))
        peak, when = int(s_live[i]), int(s_times[i])
        # Live at ``when`` after its allocations: allocated at or before, not yet freed
        # (or freed at that instant but allocated then too).
        alive = (a <= when) & (~freed | (f > when) | ((f == when) & (a == when)))
        if i == 0:
            alive[:] = False
        ids = np.concatenate([np.flatnonzero(resident), dyn[alive]])
        ids = ids[np.lexsort((ids, -b.size_bytes[ids]))]
        assert int(b.size_bytes[ids].sum()) == peak, "the live set does not add up"
        s_times = np.append(s_times, makespan)           # the step holds to the end
        s_live = np.append(s_live, s_live[-1])
        out.append(MemoryTimeline(rank, res_bytes, peak, when / PS_PER_S, ids,
                                  s_times / PS_PER_S, s_live, b))
    return tuple(out)


def peak_memory_bytes(t: Timeline) -> int:
    """The largest peak over ranks (0 with no buffers)."""
    return max((m.peak_bytes for m in memory_timelines(t)), default=0)
