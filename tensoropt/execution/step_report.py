"""The main job's report of what its plan measures, next to what was estimated.

After ``report_step`` training steps (``TENSOROPT_REPORT_STEP``, default 5; 0 turns it
off), ``tensoropt.run`` traces one step, and rank 0 prints one line: the measured
per-step time (median of the untraced training steps after the first, slowest rank) and
the peak memory of each rank (``step_profile``'s measure), next to the plan's estimates
(``Plan.time_s``, ``Plan.memory_bytes``) and, when the search attached one, the
simulated figure, then any reason the two are not comparable (``report_caveats``).
Memory is printed in the unit that fits (``format_bytes``).

Usage (``tensoropt.runtime`` drives it)::

    reporter = StepReporter(plan, comm, rank, report_step_from_env())
    trace = reporter.wants_trace()            # before a training step
    reporter.step(wall_s, profile_or_None)    # after it; prints once, on rank 0
"""

from __future__ import annotations

import os
import statistics
import sys
from typing import Any, TextIO

from tensoropt.execution.step_profile import StepProfile, format_bytes
from tensoropt.units import format_seconds
from tensoropt.validation import env_whole_number

__all__ = ["StepReporter", "report_step_from_env", "report_caveats", "REPORT_STEP_ENV"]

REPORT_STEP_ENV = "TENSOROPT_REPORT_STEP"


def report_step_from_env(environ=os.environ) -> int:
    """The training step to report after (``TENSOROPT_REPORT_STEP``; default 5, 0: never).

    Raises:
        ValueError: the variable is not a whole number >= 0.
    """
    return env_whole_number(REPORT_STEP_ENV, environ.get(REPORT_STEP_ENV, "5"), 0,
                            "give the training step to report after (a whole number, 0 to turn the "
                            "report off)")


def report_caveats(plan, local_ranks: int, cores: int | None) -> list[str]:
    """Why the measured figures may not be comparable with the estimates, each as a
    clause to print after them: more ranks on this machine than cores (the estimate
    assumes a device per rank; the tiny Transformer's mini_time plan on 4 ranks of 2
    cores: 28 ms measured, 2.6 ms estimated), and estimates from nominal CPU figures
    (no calibration profile)."""
    caveats = []
    if cores and local_ranks > cores:
        caveats.append(f"{local_ranks} ranks share this machine's {cores} cores (oversubscribed): the "
                       "estimates assume a device per rank, so the measured time is not comparable")
    if "uncalibrated" in (plan.notes or ""):
        caveats.append("the estimates use nominal CPU figures: run tensoropt calibrate with this job's "
                       "ranks, then find_strategy(cost_model='profiled'), for measured ones")
    return caveats


class StepReporter:
    """Counts training steps and prints the measured-vs-estimated line once."""

    def __init__(self, plan, comm: Any, rank: int, report_step: int, simulated: dict | None = None,
                 out: TextIO | None = None, caveats: list[str] | None = None):
        self.plan, self.comm, self.rank = plan, comm, rank
        self.caveats = list(caveats or [])
        self.report_step = report_step
        self.simulated = simulated or {}
        self.out = out or sys.stderr
        self.steps = 0
        self.walls: list[float] = []
        self.line: str | None = None

    def wants_trace(self) -> bool:
        """Whether the coming training step is the one to trace."""
        return self.report_step > 0 and self.steps + 1 == self.report_step

    def step(self, wall_s: float, profile: StepProfile | None) -> None:
        """Records one training step; at ``report_step`` gathers and prints."""
        self.steps += 1
        if self.report_step <= 0 or self.steps > self.report_step:
            return
        if self.steps > 1 and profile is None:
            self.walls.append(wall_s)
        if self.steps != self.report_step or profile is None:
            return
        mine = (statistics.median(self.walls) if self.walls else profile.wall_s, profile.peak_bytes)
        gathered = self.comm.allgather(mine) if self.comm is not None else [mine]
        self.line = self.format(max(t for t, _ in gathered), [m for _, m in gathered])
        if self.rank == 0:   # one write: mpirun forwards each write of a rank apart
            self.out.write(self.line + "\n")
            self.out.flush()

    def format(self, time_s: float, peaks: list[float]) -> str:
        plan, sim = self.plan, self.simulated
        est_time = "n/a" if plan.time_s is None else format_seconds(plan.time_s)
        est_mem = "n/a" if plan.memory_bytes is None else format_bytes(plan.memory_bytes)
        extra_t = f", simulated {format_seconds(sim['time_s'])}" if "time_s" in sim else ""
        extra_m = f", simulated peak {format_bytes(sim['peak_memory_bytes'])}" if "peak_memory_bytes" in sim else ""
        per_rank = ", ".join(format_bytes(m) for m in peaks)
        return (f"tensoropt: after {self.steps} steps: measured {format_seconds(time_s)} per step "
                f"(estimated {est_time}{extra_t}); peak memory per rank {per_rank} "
                f"(estimated {est_mem}{extra_m})" + "".join(f"; note: {c}" for c in self.caveats))
