"""Plans timed in interleaved rounds, so a drift of the machine's speed (seen here over
minutes) falls on every plan of a group alike instead of on whichever ran last.

A group's plans are built once and held open together. Each round runs every plan in
turn: one untimed step after the switch (horovod names collectives by op, so another
plan's collectives of the same names are negotiated again; that step pays for it),
then a block of timed steps. Blocks are sized from one warm-up step per plan, so that
``rounds`` rounds give each plan at least ``min_steps`` timed steps and ``min_time_s``
seconds of them: short steps are timed many times, long ones fewer.

Per plan, every figure is the slowest (or largest) rank's:
- time: the median of the timed steps, with the interquartile range as its spread, and
  the medians of the even and of the odd rounds apart (``half_medians``);
- network, ops (time inside horovod ops, and the other ops' summed times) and peak
  memory (resident variables + the allocation peak): the median over ``repeats``
  traced steps, as ``execution.step_profile`` measures one step.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

import tensoropt as to
from tensoropt._tf import import_tensorflow
from tensoropt.execution.step_profile import profile_from_trace, resident_bytes, trace_options

__all__ = ["block_steps", "interquartile_range", "measure_group", "half_medians"]


def block_steps(step_s: Sequence[float], rounds: int, min_steps: int, min_time_s: float) -> list[int]:
    """Timed steps per round for plans whose steps take ``step_s``: at least
    ``min_steps`` steps and ``min_time_s`` seconds over ``rounds`` rounds, for each."""
    if rounds < 1 or min_steps < 1 or min_time_s < 0:
        raise ValueError(f"rounds={rounds}, min_steps={min_steps}, min_time_s={min_time_s}: "
                         "need rounds >= 1, min_steps >= 1 and min_time_s >= 0")
    return [max(math.ceil(min_steps / rounds), math.ceil(min_time_s / (rounds * max(s, 1e-6))))
            for s in step_s]


def interquartile_range(values: Sequence[float]) -> float:
    """The 75th minus the 25th percentile (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    q1, q3 = np.percentile(values, [25, 75])
    return float(q3 - q1)


def half_medians(rounds: Sequence[Sequence[float]]) -> tuple[float, float]:
    """The median of the steps timed in the even rounds and that of the odd rounds: two
    independent measurements of one plan, whose agreement over a group of plans tells how
    well the run can order them (``accuracy``'s "run vs itself"). With one round, its first
    and its second half; with one step, that step twice.

    Raises:
        ValueError: no step was timed.
    """
    if len(rounds) > 1:
        halves = [[s for r in rounds[0::2] for s in r], [s for r in rounds[1::2] for s in r]]
    else:
        only = list(rounds[0]) if rounds else []
        halves = [only[:(len(only) + 1) // 2], only[(len(only) + 1) // 2:] or only]
    if not halves[0] or not halves[1]:
        raise ValueError(f"half_medians: no timed step in a half of {[len(r) for r in rounds]} steps per round")
    return statistics.median(halves[0]), statistics.median(halves[1])


@dataclass
class _Held:
    """One plan's open session, its training op and its rank's feed."""

    session: Any
    train: Any
    feed: dict
    tf_graph: Any

    def step(self, **kwargs) -> float:
        start = time.perf_counter()
        self.session.run(self.train, feed_dict=self.feed, **kwargs)
        return time.perf_counter() - start


def _hold(spec, plan, feed) -> _Held:
    """``plan`` built and initialized, its session kept open beside the others."""
    to.build_execution_graph(engine="tensorflow", plan=plan)
    rt = to.runtime._runtime
    lowered = rt.lowered
    tf_feed = {lowered.tensors[k]: to.session._local_feed(k, np.asarray(v), rt.sharding) for k, v in feed.items()}
    held = _Held(rt.session, lowered.train_ops[id(spec.train_op)], tf_feed, lowered.tf_graph)
    rt.session = None   # the next build would close the runtime's session; this one stays open
    return held


def _slowest(comm, value: float) -> float:
    """The largest of every rank's ``value``."""
    return max(comm.allgather(value))


def measure_group(spec, plans, feed, comm, *, rounds: int, min_steps: int, min_time_s: float,
                  repeats: int, max_rounds: int | None = None,
                  settled: Callable[[list[tuple[float, float]]], bool] | None = None) -> list[dict]:
    """Each of ``plans`` trained on this rank, timed in interleaved rounds; per plan the
    slowest rank's time (median) and time_spread (interquartile range), the medians of its
    even and of its odd rounds (``half_medians``), network, ops (``compute``) and memory
    (medians of traced steps), the timed step count and the rounds run.

    With ``settled`` and ``max_rounds``: after ``rounds`` rounds, while
    ``settled(halves)`` is false (``halves``: per plan, the slowest rank's even- and
    odd-round medians, the same on every rank) two more rounds run, up to ``max_rounds``:
    plans too close to order in ``rounds`` rounds are timed longer, until the run agrees
    with itself or the rounds run out. The rule looks only at the measurement, never at an
    estimate.

    ``comm`` is the job's communicator (``Barrier``, ``allgather``), e.g. mpi4py's
    ``MPI.COMM_WORLD``."""
    tf = import_tensorflow()
    group = [_hold(spec, plan, feed) for plan in plans]
    try:
        warm = [_slowest(comm, h.step()) for h in group]   # the same on every rank
        blocks = block_steps(warm, rounds, min_steps, min_time_s)
        times: list[list[list[float]]] = [[] for _ in group]     # per plan, per round

        def run_rounds(count: int) -> None:
            for _ in range(count):
                for held, block, out in zip(group, blocks, times):
                    held.step()        # after the switch: untimed
                    out.append([])
                    for _ in range(block):
                        comm.Barrier()
                        out[-1].append(held.step())

        run_rounds(rounds)
        limit = max(rounds, max_rounds or rounds)
        while settled is not None and len(times[0]) + 2 <= limit:
            halves = [tuple(_slowest(comm, h) for h in half_medians(per_round)) for per_round in times]
            if settled(halves):
                break
            run_rounds(2)
        rows = []
        for held, per_round in zip(group, times):
            out = [s for r in per_round for s in r]
            even, odd = half_medians(per_round)
            resident = resident_bytes(tf, held.tf_graph)
            held.step()
            traced = []
            for _ in range(repeats):
                options, metadata = trace_options(tf)
                comm.Barrier()
                wall = held.step(options=options, run_metadata=metadata)
                traced.append(profile_from_trace(metadata, wall, resident))
            mine = {"time": statistics.median(out), "time_spread": interquartile_range(out),
                    "network": statistics.median(p.network_s for p in traced),
                    "compute": statistics.median(p.compute_s for p in traced),
                    "memory": statistics.median(p.peak_bytes for p in traced),
                    "steps": len(out), "rounds": len(per_round), "time_even_rounds": even,
                    "time_odd_rounds": odd}
            rows.append({k: _slowest(comm, v) for k, v in mine.items()})
        return rows
    finally:
        for held in group:
            held.session.close()
