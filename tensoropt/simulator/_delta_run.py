"""Delta simulation: the new timeline from a base one, exactly as a full run would give it.

Internal to ``DeltaSimulator``. The idea (FlexFlow §5.3, made exact): the full event loop
is deterministic, so the new run repeats the base run wherever the two cannot be told
apart, and only the rest goes through the loop.

Tasks of the new graph are *clean* when they belong to a key whose version did not change
and no dependency into them is declared by a changed key (in its old or new version); a
clean task has the same duration, resources, tie-break order and predecessor names in
both graphs, and is mapped to its base twin. All other tasks are *dirty* (old side: those
that disappear or change; new side: those that appear or change). A dirty task with a
clean successor exists on both sides under one name (the successor names it); such
*boundary* tasks are paired by name.

The run alternates two moves.

1. **Mirror.** When the new run after ``j`` steps is *aligned* with the base run after
   ``j'`` steps with shift ``delta`` (below), its next steps are the base run's steps
   ``j', j'+1, ...`` with every time plus ``delta`` -- until the first *stop*: the base
   run takes a dirty task, or a dirty task of the new graph becomes ready with a smaller
   ``(ready, index)`` key than the base task due at that step. Those steps are copied
   with numpy. The run starts aligned (0 steps each, shift 0), so the first mirror is the
   unchanged prefix.
2. **Loop.** From a stop, the event loop runs on, checking for alignment now and then
   (at doubling gaps) until it finds one or ends (``_delta_loop``). The loop's state
   (ready queue, predecessor counts, resource free times) is kept between loops; a
   mirrored span is folded into it with numpy, in time proportional to the span's tasks
   and edges.

*Aligned* means that the rest of the two runs is the same up to the shift, for the clean
tasks, until a dirty task intervenes:

- the clean tasks done are the same set: the first ``c`` clean tasks in base order, and
  ``j'`` is the base step of the next clean task (the dirty base steps before it count
  as done in the base run);
- a boundary task done in one run only (a rebuild that moved from backward to forward,
  say) does not break alignment, but its clean successors not yet done are set apart:
  *early* (done in the new run only) -- its clean successors may become ready in the new
  run only, so they are stop candidates just like dirty tasks; *late* (done in the base
  run only) -- its clean successors cannot run in the new run, so the mirror ends before
  the base run takes the first of them. Every other boundary task has the same status in
  both runs;
- every clean ready task (other than those set apart) has ready time = its base ready
  time + ``delta``, and the base task due at ``j'`` is the least ready one;
- with ``theta`` = the base ready time due at ``j'`` (a lower bound of all later ready
  times, as ready times leave the queue in order), times at or before it do not matter,
  so, clamped at ``theta`` (``theta + delta`` in the new run): each resource's free time
  matches, and each done task with a not-done clean successor (other than the early and
  late boundary tasks) ends at a matching time. A cycled resource's free time matches
  unclamped: when its next task starts depends on it however early it was
  (``engine.cycle_start``).

Why mirroring is then exact: the loop's next step depends only on the ready queue's
least ``(ready, index)``, the free times of that task's resources and, for the tasks it
releases, the ends of their predecessors -- all at or after ``theta``, where they are the
base run's plus ``delta`` (and a cycled resource's free time, matched exactly). So each step is the base step plus ``delta``, and by induction
so is every step until a dirty task or one set apart is involved (a stop). (An early
boundary task's base twin is a dirty base step, so the base run takes none of its
successors before the stop either.) Stopping early is always safe
(the loop just does more work); ``stop_after`` may do so at ties. With integer
picoseconds, "plus delta" is exact, so the result equals the full run's bit for bit; the
differential tests check that on random graphs and changes.
"""

from __future__ import annotations

import heapq
from typing import Optional

import numpy as np

from tensoropt.simulator._assemble import Layout
from tensoropt.simulator._delta_loop import sparse_loop
from tensoropt.simulator.engine import SimStats, Timeline, cycle_message

__all__ = ["BaseRun", "delta_run"]

_I = np.int64


class BaseRun:
    """What a timeline offers as a base: its run in step order, indexed for lookups."""

    def __init__(self, layout: Layout, timeline: Timeline) -> None:
        g = timeline.graph
        self.layout, self.timeline = layout, timeline
        self.order = timeline.order
        self.pos = np.empty(len(self.order), dtype=_I)
        self.pos[self.order] = np.arange(len(self.order))
        self.ready_seq = timeline.ready_ps[self.order]
        self.end_seq = timeline.end_ps[self.order]
        # Per resource: the steps at which its tasks ran, and their ends, in step order.
        holder = g.res_holder
        steps = self.pos[holder]
        srt = np.lexsort((steps, g.res_idx))
        q_sorted, steps, ends = g.res_idx[srt], steps[srt], timeline.end_ps[holder[srt]]
        bounds = np.searchsorted(q_sorted, np.arange(len(g.resources) + 1))
        self.res_steps = [steps[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        self.res_ends = [ends[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def free_at(self, q: int, step: int) -> int:
        """When resource ``q`` is free after the base run's first ``step`` steps."""
        i = int(np.searchsorted(self.res_steps[q], step))
        return int(self.res_ends[q][i - 1]) if i else 0


def delta_run(base: BaseRun, new: Layout, changed: list, min_span: int,
              dense_after: int) -> Timeline:
    """The timeline of ``new``'s graph, from ``base`` (see the module doc)."""
    return _Run(base, new, changed, min_span, dense_after).run()


class _Run:
    def __init__(self, base: BaseRun, new: Layout, changed: list, min_span: int,
                 dense_after: int) -> None:
        old, og, ng = base.layout, base.timeline.graph, new.graph
        self.base, self.g, self.min_span, self.dense_after = base, ng, min_span, dense_after
        nk = len(new.templates)
        is_changed = np.zeros(nk, dtype=bool)
        is_changed[changed] = True
        ch = np.array(changed, dtype=_I)
        # Task maps: unchanged keys keep their tasks, shifted by the sizes before them.
        shift = new.task_start[:-1] - old.task_start[:-1]
        key_old = np.repeat(np.arange(nk), np.diff(old.task_start))
        key_new = np.repeat(np.arange(nk), np.diff(new.task_start))
        old2new = np.arange(og.num_tasks) + shift[key_old]
        old2new[is_changed[key_old]] = -1
        new2old = np.arange(ng.num_tasks) - shift[key_new]
        new2old[is_changed[key_new]] = -1
        # Dirty: tasks of changed keys, and targets of dependencies those keys declared.
        dirty_new = is_changed[key_new].copy()
        dirty_new[ng.edge_dst[np.isin(new.edges[:, 0], ch)]] = True
        dirty_old = is_changed[key_old].copy()
        dirty_old[og.edge_dst[np.isin(old.edges[:, 0], ch)]] = True
        m = dirty_old & (old2new >= 0)
        dirty_new[old2new[m]] = True
        m = dirty_new & (new2old >= 0)
        dirty_old[new2old[m]] = True
        self.clean_old, self.clean = ~dirty_old, ~dirty_new
        # Boundary: dirty predecessors of clean tasks, paired by name across the graphs.
        s, d = og.edge_src, og.edge_dst
        m = self.clean_old[d] & dirty_old[s]
        by_name = {(og.names[a], int(old2new[b])): a for a, b in zip(s[m].tolist(),
                                                                      d[m].tolist())}
        s, d = ng.edge_src, ng.edge_dst
        m = self.clean[d] & dirty_new[s]
        self.pairs_n2o: dict[int, int] = {}
        for a, b in zip(s[m].tolist(), d[m].tolist()):
            o = by_name[(ng.names[a], b)]
            assert self.pairs_n2o.setdefault(a, o) == o, "a task name maps to two tasks"
        self.pairs_o2n = {o: n for n, o in self.pairs_n2o.items()}
        self.pair_new = np.fromiter(self.pairs_n2o.keys(), _I, len(self.pairs_n2o))
        self.pair_pos = base.pos[np.fromiter(self.pairs_n2o.values(), _I, len(self.pairs_n2o))]
        self.old2new, self.new2old = old2new, new2old
        self.posold = np.where(self.clean, base.pos[new2old], -1)
        self.dirty_steps = np.flatnonzero(dirty_old[base.order])
        self.kth = np.concatenate([[-1], np.flatnonzero(self.clean_old[base.order]),
                                   [len(base.order)]])
        self.dirty_todo = np.flatnonzero(dirty_new)      # not yet done (pruned by stop_after)
        self.dirty_set = set(self.dirty_todo.tolist())
        self.info: dict = {}               # the sparse loop's per-task cache
        n = ng.num_tasks
        self.start = np.full(n, -1, dtype=_I)
        self.end = np.full(n, -1, dtype=_I)
        self.ready = np.full(n, -1, dtype=_I)
        self.end_of = lambda t: -1         # a task's end in the run so far, -1 if not done
        self.ends = lambda: self.end       # every task's end so far, as one array (the loops
                                           # set both while they hold ends of their own)
        # The event loop's state before any step (see _delta_loop).
        self.pending = ng.num_preds.copy()
        self.partial = np.zeros(n, dtype=_I)
        self.free = [0] * len(ng.resources)
        self.cycled = np.flatnonzero(ng.res_cycle_ps > 0).tolist()
        self.heap: list = []               # (before the first span: every source, below)
        self.sources = np.flatnonzero(self.pending == 0)
        self.pieces: list[np.ndarray] = []
        self.cc, self.mx = 0, -1
        self.hold = -1                     # the loops try to align only past this base step
        self.loop_tasks = self.mirrored = self.segments = 0
        self.changed = len(changed)

    def run(self) -> Timeline:
        bt = self.base.timeline
        align: Optional[tuple[int, int, int]] = (0, 0, self.stop_after(0, 0))
        while align is not None:
            jp, delta, stop = align
            # Mirror base steps [jp, stop) shifted by delta.
            ids_old = self.base.order[jp:stop]
            ids = self.old2new[ids_old]
            self.start[ids] = bt.start_ps[ids_old] + delta
            self.end[ids] = bt.end_ps[ids_old] + delta
            self.ready[ids] = bt.ready_ps[ids_old] + delta
            self.pieces.append(ids)
            self.cc += stop - jp
            self.mx = max(self.mx, stop - 1)
            self.mirrored += stop - jp
            if self.mirrored + self.loop_tasks == self.g.num_tasks:
                break
            self.apply_span(ids)
            self.segments += 1
            align = sparse_loop(self)
        done = self.start >= 0
        if not done.all():
            raise ValueError(cycle_message(self.g, done))
        order = np.concatenate(self.pieces) if self.pieces else np.zeros(0, dtype=_I)
        return Timeline(self.g, self.start, self.end, self.ready, order,
                        SimStats(mode="delta", loop_tasks=self.loop_tasks,
                                 mirrored_tasks=self.mirrored, segments=self.segments,
                                 changed_keys=self.changed))

    def apply_span(self, ids: np.ndarray) -> None:
        """Folds mirrored tasks (already timed) into the loop's state."""
        g, end = self.g, self.end
        sp, si = g.succ
        dst = si[_ranges(sp[ids], sp[ids + 1] - sp[ids])]
        src_end = np.repeat(end[ids], sp[ids + 1] - sp[ids])
        np.add.at(self.pending, dst, -1)
        np.maximum.at(self.partial, dst, src_end)
        rp = g.res_ptr
        res = g.res_idx[_ranges(rp[ids], rp[ids + 1] - rp[ids])]
        free = np.array(self.free, dtype=_I)
        np.maximum.at(free, res, np.repeat(end[ids], rp[ids + 1] - rp[ids]))
        self.free = free.tolist()
        is_new = np.zeros(g.num_tasks, dtype=bool)
        is_new[dst[(self.pending[dst] == 0) & (self.start[dst] < 0)]] = True
        if self.sources is not None:         # the first span: the queue held every source
            waiting = self.sources[self.start[self.sources] < 0]
            heap = list(zip([0] * len(waiting), waiting.tolist()))
            self.sources = None
        else:
            queued = np.array(self.heap, dtype=_I).reshape(-1, 2)
            keep = queued[self.start[queued[:, 1]] < 0]
            heap = list(zip(keep[:, 0].tolist(), keep[:, 1].tolist()))
        new = np.flatnonzero(is_new)
        heap += zip(self.partial[new].tolist(), new.tolist())
        heapq.heapify(heap)
        self.heap = heap

    def record(self, seg: list, starts: list, ends: list, readies: list) -> None:
        """Stores a loop run's tasks (in the order taken) and their times."""
        if seg:
            ids = np.array(seg, dtype=_I)
            self.start[ids] = starts
            self.end[ids] = ends
            self.ready[ids] = readies
            self.pieces.append(ids)
            self.loop_tasks += len(seg)

    def try_align(self, cc: int) -> Optional[tuple[int, int, int]]:
        """``(j', delta, stop)`` if the new run, whose clean tasks done are the base run's
        first ``cc``, is aligned with base step ``j'`` and the mirrored span would be at
        least ``min_span`` steps; else None."""
        b, end_of, clean = self.base, self.end_of, self.clean
        heap, free = self.heap, self.free
        # j' is the step of the next clean base task: the base steps before it that the
        # new run has not matched are dirty, and count as done in the base run.
        jp = int(self.kth[cc + 1])
        if jp >= len(b.order) or not heap:
            return None
        # Aligned, the base task due at j' is the new run's least ready task (clean tasks
        # keep their relative index order): a cheap test that most attempts fail.
        n0 = int(self.old2new[b.order[jp]])
        if heap[0][1] != n0:
            return None
        dirty_step = self.next_dirty_step(jp)        # the span ends there at the latest
        if dirty_step - jp < self.min_span:
            self.hold = dirty_step
            return None
        theta_old = int(b.ready_seq[jp])
        theta = heap[0][0]
        delta = theta - theta_old
        for q in range(len(free)):
            if max(free[q], theta) != max(b.free_at(q, jp), theta_old) + delta:
                return None
        for q in self.cycled:             # a cycle's phase: set by the last end, however early
            if free[q] != b.free_at(q, jp) + delta:
                return None
        ends = self.ends()
        # Boundary pairs done in one run only. Clean successors of the *early* ones (done
        # in the new run only) may become ready in the new run only: they are stop
        # candidates, like dirty tasks. Those of the *late* ones (done in the base run
        # only) wait in the new run only: the mirror ends before the base run takes one.
        done_new = ends[self.pair_new] >= 0
        done_old = self.pair_pos < jp
        early = self.pair_new[done_new & ~done_old]
        late = self.pair_new[~done_new & done_old]
        displaced = self.waiting_successors(early, ends)
        cap = int(self.posold[self.waiting_successors(late, ends)].min(initial=len(b.order)))
        # Every clean ready task is shifted by delta (the shift of the base task due at
        # j', which is clean and not set apart: its base predecessors are all done).
        queued = np.array(heap, dtype=_I).reshape(-1, 2)
        hr, ht = queued[:, 0], queued[:, 1]
        like_dirty = ~clean[ht]
        if len(displaced):
            set_apart = np.zeros(len(clean), dtype=bool)
            set_apart[displaced] = True
            like_dirty |= set_apart[ht]
        if (hr[~like_dirty] - b.timeline.ready_ps[self.new2old[ht[~like_dirty]]] != delta).any():
            return None
        hd, td = hr[like_dirty], ht[like_dirty]     # one due first: stop_after says stop == jp
        if ((hd < theta) | ((hd == theta) & (td < n0))).any():
            return None
        # Done tasks still running past theta (either run): their ends must match.
        end_old = b.timeline.end_ps
        early_set, late_set = set(early.tolist()), set(late.tolist())
        running = np.flatnonzero(ends > theta)
        for dn, e in zip(running.tolist(), ends[running].tolist()):
            if dn not in early_set:
                do = int(self.new2old[dn]) if clean[dn] else self.pairs_n2o.get(dn)
                if self.feeds_clean(dn) and (do is None or
                                              max(int(end_old[do]), theta_old) + delta != e):
                    return None
        for do in b.order[:jp][b.end_seq[:jp] > theta_old].tolist():
            dn = int(self.old2new[do]) if self.clean_old[do] else self.pairs_o2n.get(do)
            if dn is not None and dn not in late_set and self.feeds_clean(dn) and \
                    max(end_of(dn), theta) != int(end_old[do]) + delta:
                return None
        stop = self.stop_after(jp, delta, displaced, cap, ends)
        if stop - jp < self.min_span:
            self.hold = stop        # (what stops it is likely still there until then)
            return None
        return jp, delta, stop

    def feeds_clean(self, t: int) -> bool:
        """Whether task ``t`` (new graph) has a clean successor not yet done."""
        sp, si = self.g.succ
        return any(self.clean[v] and self.end_of(v) < 0 for v in si[sp[t]:sp[t + 1]].tolist())

    def next_dirty_step(self, jp: int) -> int:
        """The first dirty base step at or after ``jp`` (the base run's length if none)."""
        i = int(np.searchsorted(self.dirty_steps, jp))
        return int(self.dirty_steps[i]) if i < len(self.dirty_steps) else len(self.base.order)

    def waiting_successors(self, tasks: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The clean successors not yet done of ``tasks`` (new graph), given every
        task's end so far (-1: not done); a task may be listed more than once."""
        if not len(tasks):
            return tasks
        sp, si = self.g.succ
        succ = si[_ranges(sp[tasks], sp[tasks + 1] - sp[tasks])]
        return succ[self.clean[succ] & (ends[succ] < 0)]

    def stop_after(self, jp: int, delta: int, displaced: Optional[np.ndarray] = None,
                   cap: Optional[int] = None, ends: Optional[np.ndarray] = None) -> int:
        """The first base step at or after ``jp`` that cannot be mirrored (see module doc).

        That is the first dirty base step (or ``cap``, if less), or earlier the step before
        which a dirty task not yet done, or one of ``displaced`` (clean tasks set apart),
        would go: one whose predecessors are all done, or clean and due in
        the mirrored span (then their ends are the base's plus ``delta``), goes before the
        first base step with a larger ``(ready, index)`` key, at or after its last clean
        predecessor's step. Vectorized over the dirty tasks: the span's bound only
        shrinks, and a task that a tighter bound would skip has its step past that bound
        anyway, so taking every task against the first bound gives the same minimum.
        """
        b, posold = self.base, self.posold
        best = self.next_dirty_step(jp)
        if cap is not None:
            best = min(best, cap)
        ends = self.ends() if ends is None else ends
        todo = self.dirty_todo = self.dirty_todo[ends[self.dirty_todo] < 0]
        if displaced is not None and len(displaced):
            todo = np.concatenate([todo, displaced])
        if not len(todo) or jp >= best:
            return best
        pp, pi = self.g.pred
        counts = pp[todo + 1] - pp[todo]
        preds = pi[_ranges(pp[todo], counts)]
        owner = np.repeat(np.arange(len(todo)), counts)
        pred_end = ends[preds]
        done = pred_end >= 0
        waits = ~done & self.clean[preds] & (posold[preds] < best)   # ends in the span
        usable = np.ones(len(todo), dtype=bool)
        usable[owner[~(done | waits)]] = False          # waits for a dirty task or past best
        end_old = b.timeline.end_ps
        pred_end[waits] = end_old[self.new2old[preds[waits]]] + delta
        ready = np.zeros(len(todo), dtype=_I)
        np.maximum.at(ready, owner[done | waits], pred_end[done | waits])
        rstep = np.full(len(todo), jp, dtype=_I)
        np.maximum.at(rstep, owner[waits], posold[preds[waits]] + 1)
        go = usable & (rstep < best)
        if not go.any():
            return best
        todo, ready, rstep = todo[go], ready[go], rstep[go]
        # before the first base step with a larger ready time (base ready times rise
        # with the step), not before rstep, and best at most
        p0 = np.clip(np.searchsorted(b.ready_seq, ready - delta), rstep, best)
        # passing the equal-ready steps that go first only lengthens the span (stopping
        # earlier is always safe); such a task goes at p0 or later, so the ties are taken
        # by p0 and only while p0 is less than the least stop so far
        tie = (p0 < best) & (b.ready_seq[np.minimum(p0, len(b.order) - 1)] + delta == ready)
        stop = min(best, int(p0[~tie].min(initial=best)))
        ties = np.flatnonzero(tie)
        for k in ties[np.argsort(p0[ties], kind="stable")].tolist():
            q, x, r = int(p0[k]), int(todo[k]), int(ready[k])
            if q >= stop:
                break
            hi = min(stop, int(np.searchsorted(b.ready_seq, r - delta, side="right")))
            first = self.old2new[b.order[q:hi]] >= x          # the first step x goes before
            stop = q + int(first.argmax()) if first.any() else hi
        return stop


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorized."""
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total)
