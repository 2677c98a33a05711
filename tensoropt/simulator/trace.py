"""Chrome trace export: a simulated timeline that Perfetto and chrome://tracing open.

Usage::

    from tensoropt.simulator import chrome_trace, simulate, summarize

    chrome_trace(simulate(graph), "step.json")          # or a SimResult
    # open https://ui.perfetto.dev and load step.json

The file is Trace Event Format JSON (``{"traceEvents": [...]}``), times in microseconds:

- one process per rank (``pid`` = rank, named ``rank N``);
- one thread per resource the rank's tasks hold (``compute:0``, ``chain:0``,
  ``nic:m0``...), sorted compute first, then chains and collectives, then links and NICs;
  a task that holds several resources is drawn on the first it names; tasks that hold
  none (join points, delays) go on ``no resource`` lanes, as many as needed so that
  events on one thread never overlap;
- one complete event (``"ph": "X"``) per task, named as the task, with its kind and meta
  (op, configuration, step, bytes, additive cost, ...) in ``args``;
- a memory counter (``"ph": "C"``, named ``memory``) per rank: live bytes over time, its
  maximum is the rank's peak (``memory.memory_timelines``).
"""

from __future__ import annotations

import heapq
import json
import os
from typing import Any, Union

import numpy as np

from tensoropt.simulator.engine import Timeline
from tensoropt.simulator.graph import resource_kind
from tensoropt.simulator.memory import memory_timelines
from tensoropt.simulator.result import SimResult
from tensoropt.validation import atomic_write, check_writable

__all__ = ["chrome_trace", "trace_events"]

_KIND_ORDER = {"compute": 0, "chain": 1, "collective": 1, "link": 2, "nic": 3}


def _lanes(start: list, end: list) -> list[int]:
    """Assigns intervals (sorted by start) to the fewest lanes without overlap."""
    free: list[tuple[int, int]] = []         # (end, lane)
    lanes, count = [], 0
    for s, e in zip(start, end):
        if free and free[0][0] <= s:
            lane = heapq.heappop(free)[1]
        else:
            lane, count = count, count + 1
        lanes.append(lane)
        heapq.heappush(free, (max(e, s), lane))
    return lanes


def trace_events(t: Timeline) -> list[dict[str, Any]]:
    """The trace's events (see the module doc)."""
    g = t.graph
    n_res = len(g.resources)
    has = np.diff(g.res_ptr) > 0
    first_res = np.full(g.num_tasks, -1, dtype=np.int64)
    first_res[has] = g.res_idx[g.res_ptr[:-1][has]]
    tid = first_res + 1
    events: list[dict[str, Any]] = []
    for rank in np.unique(g.rank).tolist():
        mine = np.flatnonzero(g.rank == rank)
        loose = mine[first_res[mine] < 0]
        if len(loose):
            srt = loose[np.lexsort((loose, t.start_ps[loose]))]
            lanes = _lanes(t.start_ps[srt].tolist(), t.end_ps[srt].tolist())
            tid[srt] = n_res + 1 + np.array(lanes)
        events.append({"ph": "M", "name": "process_name", "pid": rank,
                       "args": {"name": f"rank {rank}"}})
        for th in np.unique(tid[mine]).tolist():
            if th <= n_res:
                name = g.resources[th - 1]
                order = _KIND_ORDER.get(resource_kind(name), 4) * 10**6 + th
            else:
                name, order = f"no resource {th - n_res - 1}", 5 * 10**6 + th
            events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": th,
                           "args": {"name": name}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": th,
                           "args": {"sort_index": order}})
    start_us = (t.start_ps / 1e6).tolist()
    dur_us = ((t.end_ps - t.start_ps) / 1e6).tolist()
    ranks, tids = g.rank.tolist(), tid.tolist()
    for i in range(g.num_tasks):
        args = dict(g.meta[i])
        args.setdefault("kind", g.kind(i))
        args.setdefault("resources", list(g.task_resources(i)))
        events.append({"name": g.names[i], "cat": g.kind(i), "ph": "X", "pid": ranks[i],
                       "tid": tids[i], "ts": start_us[i], "dur": dur_us[i], "args": args})
    for m in memory_timelines(t):
        for ts, live in zip((m.times_s * 1e6).tolist(), m.live_bytes.tolist()):
            events.append({"ph": "C", "name": "memory", "pid": m.rank, "ts": ts,
                           "args": {"bytes": live}})
    return events


def chrome_trace(source: Union[Timeline, SimResult], path: Union[str, os.PathLike]) -> None:
    """Writes ``source``'s timeline to ``path`` as Chrome trace JSON (see module doc).

    Raises:
        ValueError: ``path`` cannot be written (checked before any work).
    """
    check_writable("the trace", path)
    t = source.timeline if isinstance(source, SimResult) else source
    atomic_write(path, lambda f: json.dump({"traceEvents": trace_events(t), "displayTimeUnit": "ms"}, f,
                                           default=str))
