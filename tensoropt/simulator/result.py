"""What a timeline says: busy time per kind, exposed network, memory, the critical path.

Usage::

    from tensoropt.simulator import simulate, summarize

    r = summarize(simulate(graph))          # task kinds "compute" / "collective" by default
    r.makespan_s, r.compute_s, r.network_s, r.exposed_network_s, r.peak_memory_bytes
    for step in r.critical_path:
        print(step.name, step.start_s, step.end_s, step.bound_by)

Definitions, per rank (a task belongs to the rank given to ``add_task``):

- ``busy_s_by_kind``: the sum of the durations of the rank's tasks, per task kind. A
  task on a cycled resource (a collective waiting for horovod's cycle) counts from the
  time it was ready: it has been issued, and waits inside for its cycle, as the time
  inside a horovod op is measured.
- ``compute_s`` / ``network_s``: that sum over the kinds named compute / network.
- ``exposed_network_s``: how long the rank is in a network task while none of its
  compute tasks runs: |union of network intervals  U  union of compute intervals| minus
  |union of compute intervals|. It is the network time that overlap did not hide.
- ``memory``: the rank's ``MemoryTimeline``.

``SimResult``'s ``compute_s``, ``network_s``, ``exposed_network_s`` and
``peak_memory_bytes`` are the largest over ranks. The critical path runs back from the
task that ends last: each step names what its start waited for -- ``"dependency"`` (the
previous step, a predecessor that ended at that instant), a resource name (the previous
step held it until then), ``"<resource> cycle"`` (it waited for the resource's cycle
after the previous step: the later of its binding predecessor and the resource's last
task), or ``"start"`` (time 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from tensoropt.simulator.engine import Timeline
from tensoropt.simulator.graph import PS_PER_S
from tensoropt.simulator.memory import MemoryTimeline, memory_timelines

__all__ = ["SimResult", "RankSummary", "CriticalStep", "summarize", "critical_path",
           "union_length_ps"]


@dataclass(frozen=True)
class CriticalStep:
    """One task on the critical path, and what its start waited for."""

    name: str
    kind: str
    start_s: float
    end_s: float
    bound_by: str


@dataclass(frozen=True, eq=False)
class RankSummary:
    """Busy time and memory of one rank (see the module doc)."""

    rank: int
    busy_s_by_kind: Mapping[str, float]
    compute_s: float
    network_s: float
    exposed_network_s: float
    memory: MemoryTimeline


@dataclass(frozen=True, eq=False)
class SimResult:
    """A simulated step: time, per-rank summaries, the critical path."""

    timeline: Timeline
    makespan_s: float
    ranks: tuple[RankSummary, ...]
    critical_path: tuple[CriticalStep, ...]

    @property
    def compute_s(self) -> float:
        return max((r.compute_s for r in self.ranks), default=0.0)

    @property
    def network_s(self) -> float:
        return max((r.network_s for r in self.ranks), default=0.0)

    @property
    def exposed_network_s(self) -> float:
        return max((r.exposed_network_s for r in self.ranks), default=0.0)

    @property
    def peak_memory_bytes(self) -> int:
        return max((r.memory.peak_bytes for r in self.ranks), default=0)


def union_length_ps(start: np.ndarray, end: np.ndarray) -> int:
    """The total length of the union of intervals ``[start[i], end[i])``."""
    keep = end > start
    start, end = start[keep], end[keep]
    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    new = np.ones(len(start), dtype=bool)
    new[1:] = start[1:] > reach[:-1]
    first = np.flatnonzero(new)
    block_end = np.maximum.reduceat(end, first)
    return int((block_end - start[first]).sum())


def summarize(t: Timeline, *, compute_kinds: Sequence[str] = ("compute",),
              network_kinds: Sequence[str] = ("collective",)) -> SimResult:
    """Summarizes a timeline (see the module doc).

    Raises:
        ValueError: a kind is both compute and network.
    """
    both = set(compute_kinds) & set(network_kinds)
    if both:
        raise ValueError(f"task kinds {sorted(both)} are both compute and network kinds")
    g = t.graph
    kind_ids = {k: i for i, k in enumerate(g.kind_names)}
    comp = np.isin(g.kind_id, [kind_ids[k] for k in compute_kinds if k in kind_ids])
    net = np.isin(g.kind_id, [kind_ids[k] for k in network_kinds if k in kind_ids])
    begin = np.where(g.gate >= 0, t.ready_ps, t.start_ps)
    dur = t.end_ps - begin
    ranks = []
    for mem in memory_timelines(t):
        mine = g.rank == mem.rank
        busy = np.bincount(g.kind_id[mine], weights=dur[mine], minlength=len(g.kind_names))
        by_kind = {g.kind_names[k]: float(busy[k]) / PS_PER_S
                   for k in np.unique(g.kind_id[mine]).tolist()}
        c, n = mine & comp, mine & net
        cn = c | n
        exposed = union_length_ps(begin[cn], t.end_ps[cn]) - \
            union_length_ps(begin[c], t.end_ps[c])
        ranks.append(RankSummary(mem.rank, by_kind, int(dur[c].sum()) / PS_PER_S,
                                 int(dur[n].sum()) / PS_PER_S, exposed / PS_PER_S, mem))
    return SimResult(t, t.makespan_s, tuple(ranks), critical_path(t))


def critical_path(t: Timeline) -> tuple[CriticalStep, ...]:
    """The chain of tasks that sets the makespan, first task first (see module doc)."""
    g = t.graph
    if g.num_tasks == 0:
        return ()
    # The task before each (task, resource) pair on that resource, in the order taken.
    pos = np.empty(g.num_tasks, dtype=np.int64)
    pos[t.order] = np.arange(g.num_tasks)
    holder = g.res_holder
    srt = np.lexsort((pos[holder], g.res_idx))
    prev = np.full(len(holder), -1, dtype=np.int64)
    same = g.res_idx[srt][1:] == g.res_idx[srt][:-1]
    prev[srt[1:][same]] = holder[srt[:-1][same]]
    # Walked one task at a time (as long as the chain), so on Python lists.
    pptr, pidx = (a.tolist() for a in g.pred)
    start, end, ready = t.start_ps.tolist(), t.end_ps.tolist(), t.ready_ps.tolist()
    rptr, ridx, prev = g.res_ptr.tolist(), g.res_idx.tolist(), prev.tolist()
    gate = g.gate.tolist()
    cur = int(np.flatnonzero(t.end_ps == t.end_ps.max())[0])
    steps = []
    while True:
        s = start[cur]
        nxt, why = -1, "start"
        if s > 0:
            if ready[cur] == s:
                binding = [p for p in pidx[pptr[cur]:pptr[cur + 1]] if end[p] == s]
                if binding:
                    nxt, why = min(binding), "dependency"
            if nxt < 0:
                for pair in range(rptr[cur], rptr[cur + 1]):
                    p = prev[pair]
                    if p >= 0 and end[p] == s:
                        nxt, why = p, g.resources[ridx[pair]]
                        break
            if nxt < 0 and gate[cur] >= 0:      # it waited for the cycle after ...
                pair = rptr[cur] + ridx[rptr[cur]:rptr[cur + 1]].index(gate[cur])
                holder = prev[pair]
                binding = [p for p in pidx[pptr[cur]:pptr[cur + 1]] if end[p] == ready[cur]]
                if binding and (holder < 0 or end[holder] <= ready[cur]):
                    nxt = min(binding)          # ... its data, or
                elif holder >= 0:
                    nxt = holder                # ... the resource's last task
                why = f"{g.resources[gate[cur]]} cycle"
        steps.append(CriticalStep(g.names[cur], g.kind(cur), s / PS_PER_S, end[cur] / PS_PER_S,
                                  why))
        if nxt < 0:
            break
        cur = nxt
    assert steps[-1].start_s == 0 or steps[-1].bound_by.endswith(" cycle"), \
        "the critical path must reach time 0 (or a first cycle)"
    return tuple(reversed(steps))
