"""The two event loops of a delta run (see ``_delta_run``): sparse first, dense if long.

Both are ``engine.event_loop`` (steps 1-4) plus the alignment watch: after each step,
when the clean tasks done are exactly the first ``cc`` clean tasks of the base run
(``kth[cc] == mx``), and at doubling gaps, they ask ``run.try_align`` -- unless the next
clean base step is not past ``run.hold``, the stop of the last attempt that found too
short a span. They end on an alignment (returned) or when the ready queue is empty
(None).

They run on the state the delta run keeps between loops (``run.heap``, ``run.pending``,
``run.partial``, ``run.free``: the ready queue, per-task predecessor counts and latest
predecessor ends as numpy arrays, and per-resource free times) and leave it up to date.

- ``sparse_loop`` reads the graph's numpy arrays task by task (caching what it read in
  ``run.info``) and keeps the counts and times it changes in dicts, written back at the
  end, so its cost is per task it touches, not per task of the graph.
- ``dense_loop`` first turns the arrays into Python lists (O(tasks)) and then runs as
  fast per step as a full simulation; ``sparse_loop`` hands over to it after
  ``run.dense_after`` steps.
"""

from __future__ import annotations

import heapq
from typing import Any, Optional

import numpy as np

from tensoropt.simulator.engine import cycle_start

__all__ = ["sparse_loop", "dense_loop"]


def _numpy_end_of(run: Any):
    end = run.end
    return lambda t: int(end[t])


def _overlay(end: np.ndarray, seg_e: dict) -> np.ndarray:
    """``end`` with the ends a sparse loop holds in ``seg_e`` written over it (a copy)."""
    out = end.copy()
    if seg_e:
        out[np.fromiter(seg_e.keys(), np.int64, len(seg_e))] = np.fromiter(seg_e.values(), np.int64,
                                                                             len(seg_e))
    return out


def _write_back(arr: np.ndarray, changes: dict) -> None:
    if changes:
        arr[np.fromiter(changes.keys(), np.int64, len(changes))] = list(changes.values())


def sparse_loop(run: Any) -> Optional[tuple[int, int, int]]:
    """Runs the loop from the run's state in sparse mode (see module doc)."""
    g = run.g
    heap, free = run.heap, run.free
    pend_np, part_np = run.pending, run.partial
    seg, seg_s, seg_r, seg_e = [], [], [], {}
    end_np = run.end

    def end_of(t: int) -> int:
        e = seg_e.get(t)
        return e if e is not None else int(end_np[t])

    run.end_of = end_of
    run.ends = lambda: _overlay(end_np, seg_e)
    info, dur, rp, ri, (sp, si) = run.info, g.duration_ps, g.res_ptr, g.res_idx, g.succ
    gate, cyc = g.gate, g.res_cycle_ps
    pend: dict[int, int] = {}
    part: dict[int, int] = {}
    dirty, posold, kth = run.dirty_set, run.posold, run.kth
    pop, push = heapq.heappop, heapq.heappush
    cc, mx = run.cc, run.mx
    steps, next_try, gap, align = 0, 1, 1, None
    while heap:
        r, t = pop(heap)
        x = info.get(t)
        if x is None:
            q = int(gate[t])
            x = info[t] = (int(dur[t]), ri[rp[t]:rp[t + 1]].tolist(),
                           si[sp[t]:sp[t + 1]].tolist(), q, int(cyc[q]) if q >= 0 else 0)
        d, res, succ, q, c = x
        s = r
        for p in res:
            if free[p] > s:
                s = free[p]
        if q >= 0:
            s = cycle_start(s, free[q], c)
        e = s + d
        for q in res:
            free[q] = e
        seg.append(t)
        seg_s.append(s)
        seg_r.append(r)
        seg_e[t] = e
        for v in succ:
            pv = part.get(v)
            if pv is None:
                pv = int(part_np[v])
            if e > pv:
                pv = e
            part[v] = pv
            c = pend.get(v)
            if c is None:
                c = int(pend_np[v])
            c -= 1
            pend[v] = c
            if c == 0:
                push(heap, (pv, v))
        if t not in dirty:
            cc += 1
            p = int(posold[t])
            if p > mx:
                mx = p
        steps += 1
        if steps >= next_try and heap and kth[cc] == mx and kth[cc + 1] > run.hold:
            align = run.try_align(cc)
            if align is not None:
                break
            gap *= 2
            next_try = steps + gap
        if steps >= run.dense_after and heap:
            break
    run.record(seg, seg_s, [seg_e[t] for t in seg], seg_r)
    run.cc, run.mx = cc, mx
    _write_back(pend_np, pend)
    _write_back(part_np, part)
    run.end_of = _numpy_end_of(run)
    run.ends = lambda: run.end
    if align is None and heap:
        return dense_loop(run, steps, next_try, gap)
    return align


def dense_loop(run: Any, steps: int, next_try: int, gap: int
               ) -> Optional[tuple[int, int, int]]:
    """Continues a sparse loop with Python lists."""
    dur, rp, ri, sp, si, _, gate, cyc = run.g.loop_lists
    heap, free = run.heap, run.free
    pending, partial = run.pending.tolist(), run.partial.tolist()
    st, en, rd = run.start.tolist(), run.end.tolist(), run.ready.tolist()
    run.end_of = en.__getitem__
    run.ends = lambda: np.array(en, dtype=np.int64)
    clean, posold, kth = run.clean.tolist(), run.posold.tolist(), run.kth.tolist()
    pop, push = heapq.heappop, heapq.heappush
    cc, mx, seg, align = run.cc, run.mx, [], None
    while heap:
        r, t = pop(heap)
        s = r
        res = ri[rp[t]:rp[t + 1]]
        for q in res:
            if free[q] > s:
                s = free[q]
        q = gate[t]
        if q >= 0:
            s = cycle_start(s, free[q], cyc[q])
        e = s + dur[t]
        for q in res:
            free[q] = e
        st[t] = s
        en[t] = e
        rd[t] = r
        seg.append(t)
        for v in si[sp[t]:sp[t + 1]]:
            if e > partial[v]:
                partial[v] = e
            c = pending[v] - 1
            pending[v] = c
            if c == 0:
                push(heap, (partial[v], v))
        if clean[t]:
            cc += 1
            if posold[t] > mx:
                mx = posold[t]
        steps += 1
        if steps >= next_try and heap and kth[cc] == mx and kth[cc + 1] > run.hold:
            align = run.try_align(cc)
            if align is not None:
                break
            gap *= 2
            next_try = steps + gap
    run.record(seg, [st[t] for t in seg], [en[t] for t in seg], [rd[t] for t in seg])
    run.cc, run.mx = cc, mx
    if align is not None:
        run.pending = np.array(pending, dtype=np.int64)
        run.partial = np.array(partial, dtype=np.int64)
    run.end_of = _numpy_end_of(run)
    run.ends = lambda: run.end
    return align
