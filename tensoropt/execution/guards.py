"""Guards that turn a hang of the MPI job into an error that names its cause.

- ``check_agreement``: at ``build_execution_graph``, the ranks compare a hash of their
  plan and of its collective schedule in one small allgather. A difference is a
  ``PlanMismatchError`` on every rank, naming the first op (or edge) and the first
  collective that differ and the ranks on each side, before any collective is issued.
- ``horovod_settings``: the environment ``hvd.init`` reads. Horovod's stall inspector
  checks for collectives that some ranks submitted and others did not; after
  ``TENSOROPT_COLLECTIVE_TIMEOUT_S`` seconds (default 120; 0 turns the guard off) it
  prints which ranks miss which collective and shuts horovod down, which fails the
  waiting ranks' step. The response cache gets room for any plan (``CACHE_CAPACITY``).
- ``StepWatch``: each rank tells the others when it starts a step (one small message to
  each), so that a rank whose step failed that way can name the ranks that never started
  it; ``stall_message`` says it all, and the runtime then aborts the whole MPI job, so no
  rank is left waiting.
- ``check_cache_capacity``: warns when a plan issues more collectives per step than
  horovod's response cache holds.

Usage::

    os.environ.update(horovod_settings(os.environ))     # before hvd.init
    check_agreement(comm, graph, plan, schedule)         # every rank, before building
    watch = StepWatch(comm); watch.start_step(); ...; watch.missing_ranks()
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import warnings
from typing import Mapping, Sequence

__all__ = ["PlanMismatchError", "CACHE_CAPACITY", "TIMEOUT_VARIABLE", "collective_timeout_s",
           "horovod_settings", "check_agreement", "check_cache_capacity", "StepWatch",
           "stall_message", "stalled_collective", "is_collective_failure"]

TIMEOUT_VARIABLE = "TENSOROPT_COLLECTIVE_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 120.0
#: Horovod's response cache (``HOROVOD_CACHE_CAPACITY``, read at ``hvd.init``, before any
#: plan exists): room for any plan's collectives. Entries cost memory only when used.
CACHE_CAPACITY = 1 << 16
_STEP_TAG = 7301


class PlanMismatchError(RuntimeError):
    """The ranks would run different plans or collective schedules."""


def collective_timeout_s(environ: Mapping[str, str] = os.environ) -> float:
    """``TENSOROPT_COLLECTIVE_TIMEOUT_S`` (default 120); 0 means no limit.

    Raises:
        ValueError: the variable is not a number >= 0.
    """
    text = environ.get(TIMEOUT_VARIABLE, "")
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or math.isinf(value):
        raise ValueError(f"{TIMEOUT_VARIABLE}={text!r}: give the seconds a step's collectives may wait "
                         "for the other ranks, e.g. 120, or 0 for no limit")
    return value


def horovod_settings(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The horovod variables to set before ``hvd.init`` (those already set are kept).

    The stall inspector checks every quarter of the timeout and shuts horovod down once a
    collective has waited longer than the timeout for missing ranks.
    """
    timeout = collective_timeout_s(environ)
    wanted = {"HOROVOD_CACHE_CAPACITY": str(CACHE_CAPACITY)}
    if timeout > 0:
        wanted["HOROVOD_STALL_CHECK_TIME_SECONDS"] = str(max(1, math.ceil(timeout / 4)))
        wanted["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"] = str(max(1, math.ceil(timeout)))
    return {k: v for k, v in wanted.items() if k not in environ}


def check_cache_capacity(count: int, environ: Mapping[str, str] = os.environ) -> None:
    """Warns (``RuntimeWarning``) when ``count`` collectives per step exceed horovod's
    response cache: every step would then negotiate some of them again."""
    capacity = int(environ.get("HOROVOD_CACHE_CAPACITY", "1024"))
    if 0 < capacity < count:
        warnings.warn(f"the plan issues {count} collectives per step, more than horovod's response cache "
                      f"holds ({capacity}): set HOROVOD_CACHE_CAPACITY={count} or more before "
                      "tensoropt.init()", RuntimeWarning, stacklevel=3)


# -- the same plan on every rank -------------------------------------------------------------
def _schedule_lines(schedule) -> list[str]:
    return [f"{c.phase} {c.kind} {c.name} mesh={list(c.mesh)} axis={c.axis} bytes={c.nbytes}"
            for c in schedule]


def _digest(lines: Sequence[str] | str) -> str:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    return hashlib.sha256(text.encode()).hexdigest()


def check_agreement(comm, graph, plan, schedule, problem: str | None = None) -> None:
    """Checks that every rank holds the same plan and collective schedule (one allgather
    of two hashes; the plans themselves are gathered only when they differ).

    Args:
        schedule: this rank's ``collective_schedule``, or None if ``problem``.
        problem: why this rank cannot build the plan (a ``ValueError``'s text), or None.

    Raises:
        ValueError: on every rank, when a rank has a problem: the first one's text and
            the ranks that have it.
        PlanMismatchError: on every rank, naming the first differing op or edge, the
            first differing collective, and the ranks on each side.
    """
    lines = _schedule_lines(schedule or ())
    mine = (_digest(plan.canonical_json()), _digest(lines), problem)
    everyone = comm.allgather(mine)
    problems = [(rank, p) for rank, (_, _, p) in enumerate(everyone) if p]
    if problems:
        ranks = ", ".join(str(rank) for rank, p in problems if p == problems[0][1])
        raise ValueError(f"{problems[0][1]} (on rank(s) {ranks} of {len(everyone)})")
    if len(set(everyone)) == 1:
        return
    ops = [(op.name, str(plan.ops[op.name])) for op in graph.operations]
    edges = [(e.name, _digest(json.dumps(e.to_dict(), sort_keys=True))) for e in plan.edges]
    everyone = comm.allgather((plan.parallelism, ops, edges, lines))
    raise PlanMismatchError(describe_difference(everyone))


def _sides(values: Sequence) -> str:
    groups: dict = {}
    for rank, v in enumerate(values):
        groups.setdefault(v, []).append(rank)
    return "; ".join(f"{v} on rank{'s' if len(r) > 1 else ''} {', '.join(map(str, r))}" for v, r in groups.items())


def describe_difference(everyone: Sequence) -> str:
    """What differs between the ranks' (parallelism, ops, edges, schedule lines)."""
    parts = []
    if len({p for p, *_ in everyone}) > 1:
        parts.append(f"parallelism: {_sides([p for p, *_ in everyone])}")
    ops = [dict(o) for _, o, _, _ in everyone]
    for name, _ in everyone[0][1]:
        values = [o.get(name) for o in ops]
        if len(set(values)) > 1:
            parts.append(f"op {name!r} is configured {_sides(values)}")
            break
    else:
        count = max(len(e) for _, _, e, _ in everyone)
        for k in range(count):
            values = [e[k] if k < len(e) else None for _, _, e, _ in everyone]
            if len(set(values)) > 1:
                parts.append(f"edge {k} ({next(v for v in values if v)[0]}) differs: "
                             + _sides([f"version {v[1][:8]}" if v else "absent" for v in values]))
                break
    count = max(len(s) for *_, s in everyone)
    for k in range(count):
        values = [s[k] if k < len(s) else "nothing" for *_, s in everyone]
        if len(set(values)) > 1:
            parts.append(f"collective #{k} is {_sides([repr(v) for v in values])}")
            break
    return ("build_execution_graph: the ranks hold different plans, which would hang in their first "
            "step: " + "; and ".join(parts) + ". Build every rank from the same plan: find_strategy and "
            "search_strategy give the same result on every rank; a plan picked by rank-dependent code or "
            "read from different files is not")


# -- a stalled step ------------------------------------------------------------------------------
def is_collective_failure(error: BaseException) -> bool:
    """Whether a step failed because horovod shut down (its stall inspector's timeout, or
    another rank's failure) rather than for a reason of its own."""
    return "Horovod has been shut down" in str(error)


def stalled_collective(error: BaseException) -> str | None:
    """The horovod op a failed step was waiting in, from TensorFlow's error text."""
    found = re.search(r"\{\{node ([^}]+)\}\}", str(error))
    return found.group(1) if found else None


class StepWatch:
    """Each rank tells every other rank when it starts a step, so that a rank whose step
    stalled can say which ranks never started it.

    Args:
        comm: an mpi4py communicator of its own (a ``Dup``), used for nothing else.
    """

    def __init__(self, comm) -> None:
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.step = 0
        self.latest = [0] * self.size
        self._sent: list = []

    def start_step(self) -> None:
        """Announces this rank's next step to the others, and reads their announcements."""
        self.step += 1
        self.latest[self.rank] = self.step
        self._sent = [r for r in self._sent if not r.Test()]
        self._sent += [self.comm.isend(self.step, dest=r, tag=_STEP_TAG)
                       for r in range(self.size) if r != self.rank]
        self._read()

    def _read(self) -> None:
        from mpi4py import MPI  # noqa: PLC0415 - only under mpirun

        status = MPI.Status()
        while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_STEP_TAG, status=status):
            source = status.Get_source()
            self.latest[source] = max(self.latest[source], self.comm.recv(source=source, tag=_STEP_TAG))

    def close(self) -> None:
        """Completes this rank's announcements and reads the others' (at the job's end)."""
        from mpi4py import MPI  # noqa: PLC0415 - only under mpirun

        MPI.Request.Waitall(self._sent)
        self._sent = []
        self._read()

    def missing_ranks(self) -> list[int]:
        """The ranks that have not started this rank's current step."""
        self._read()
        return [r for r in range(self.size) if self.latest[r] < self.step]


def stall_message(rank: int, collective: str | None, step: int, missing: Sequence[int],
                  timeout_s: float) -> str:
    """The error a rank prints when its step's collectives stopped."""
    what = f"collective {collective!r}" if collective else "a collective"
    if missing:
        who = (f"rank(s) {', '.join(map(str, missing))} never started step {step} (they stopped issuing "
               "collectives)")
    else:
        who = (f"every rank started step {step}; horovod's stall report above (\"Missing ranks\") names "
               "the ranks that did not submit it")
    return (f"tensoropt: rank {rank}: {what} of step {step} did not complete within {timeout_s:g} s "
            f"({TIMEOUT_VARIABLE}): {who}. Aborting the MPI job so that no rank hangs.")
