"""``find_strategy``'s three options on top of the frontier search.

- ``mini_time``: the fastest frontier plan whose memory per device fits the limit, at
  the given parallelism.
- ``mini_parallelism``: the smallest device count with any plan under the limit (and
  its fastest such plan).
- ``profiling``: for each device count, the best time and its plan, running nothing.

The memory limit defaults to the device's memory / 1.1, the paper's safety margin for
what the cost model leaves out (kernel workspace, communication buffers).

Each returns its whole result: ``choose_plan`` a ``summary.SearchSummary`` (the chosen
plan, its frontier and the data-parallel plan), ``profile_parallelisms`` one
``summary.ProfileRow`` per device count. Plans are frozen values: nothing here changes a
plan after the search built it.

One call's settings travel as one frozen value, :class:`SearchSettings`, whose cluster
is resolved once (``SearchSettings.resolve``).

Usage::

    settings = SearchSettings.resolve("paper-v100x16", option="mini_time", parallelism=16)
    summary = choose_plan(graph, settings)
    summary.chosen, summary.frontier[0], summary.data_parallel
    rows = profile_parallelisms(graph, settings, [1, 2, 4, 8, 16])
    fast = SearchSettings.resolve("paper-v100x16", parallelism=16,
                                  search=SearchOptions(max_candidates=50_000_000, threads=2))
    search_summary(graph, fast)   # choose_plan or profile_parallelisms, by the option
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from tensoropt.cluster import Cluster, get_cluster, profile_path
from tensoropt.cluster.calibration import profile_overheads
from tensoropt.cluster.presets import is_local
from tensoropt.cluster.threads import rank_threads
from tensoropt.costs.collective_times import AnalyticalCollectives, ProfiledCollectives
from tensoropt.costs.model import CostModel
from tensoropt.costs.cpu_workspaces import CpuKernelWorkspaces
from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler
from tensoropt.plan import Plan
from tensoropt.search.approximation import approximation_line
from tensoropt.search.driver import FrontierPlans, SearchOptions, SearchResult, search_frontier
from tensoropt.search.summary import ProfileRow, SearchSummary
from tensoropt.units import format_bytes

__all__ = ["NoPlanFitsError", "SAFETY_MARGIN", "OPTIONS", "SearchSettings", "make_cost_model", "frontier_for",
           "choose_plan", "profile_parallelisms", "search_summary", "ProfileRow", "candidate_parallelisms",
           "fastest_fitting", "turning_point"]

SAFETY_MARGIN = 1.1
OPTIONS = ("mini_time", "mini_parallelism", "profiling")


class NoPlanFitsError(ValueError):
    """No plan fits the memory limit; the message says what would."""


@dataclass(frozen=True)
class SearchSettings:
    """What one ``find_strategy`` call asks the search for, its cluster resolved once.

    Attributes:
        cluster: the resolved cluster (see :meth:`resolve` for names and files).
        option: "mini_time", "mini_parallelism" or "profiling".
        memory_limit_bytes: per device; None for the device's memory / ``SAFETY_MARGIN``.
        parallelism: devices for "mini_time" (default the cluster's), or the most devices
            for "mini_parallelism" and "profiling".
        parallelisms: device counts for "profiling"; None for 1, 2, 4, ... up to
            ``parallelism`` or the cluster's devices.
        cost_model: "analytical" or "profiled".
        search: how Frontier-Tracking searches.

    Raises:
        ValueError: for a cluster that is not a Cluster, or an unknown option.
    """

    cluster: Cluster
    option: str = "mini_time"
    memory_limit_bytes: float | None = None
    parallelism: int | None = None
    parallelisms: tuple[int, ...] | None = None
    cost_model: str = "analytical"
    search: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self) -> None:
        if not isinstance(self.cluster, Cluster):
            raise ValueError(f"SearchSettings: cluster must be a resolved Cluster, got {self.cluster!r}; "
                             "use SearchSettings.resolve(name_or_path, ...)")
        if self.option not in OPTIONS:
            raise ValueError(f"SearchSettings: unknown option {self.option!r}; choose one of {', '.join(OPTIONS)}")
        if self.parallelisms is not None:
            object.__setattr__(self, "parallelisms", tuple(self.parallelisms))

    @classmethod
    def resolve(cls, cluster: str | os.PathLike | Cluster, **settings) -> "SearchSettings":
        """The settings for ``cluster`` (a preset name, ``"local"``, a file or a Cluster),
        resolved here once; ``settings`` are the other fields."""
        return cls(cluster=get_cluster(cluster), **settings)

    @property
    def limit_bytes(self) -> float:
        """The memory limit per device in bytes."""
        if self.memory_limit_bytes is None:
            return self.cluster.memory_bytes / SAFETY_MARGIN
        return float(self.memory_limit_bytes)

    @property
    def max_devices(self) -> int:
        """``parallelism``, or the cluster's device count."""
        return self.parallelism or self.cluster.devices


def make_cost_model(graph, cluster, num_devices: int, cost_model: str = "analytical") -> CostModel:
    """A CostModel for ``graph`` on ``num_devices`` devices of ``cluster``.

    Args:
        cluster: a ``tensoropt.cluster.Cluster`` (or a preset name / file path).
        cost_model: "analytical" (roofline compute, alpha-beta links) or "profiled"
            (measured compute and calibrated collectives; needs ``tensoropt calibrate``).
    """
    cluster = get_cluster(cluster, devices=num_devices)
    if cost_model == "analytical":
        # on this machine's CPUs, the workspaces TensorFlow's kernels are known to take
        workspaces = CpuKernelWorkspaces(rank_threads(cluster.devices_per_machine)) \
            if is_local(cluster) else None
        return CostModel(graph, num_devices, AnalyticalCollectives(cluster), cluster.peak_flops,
                         compute=AnalyticalCompute(cluster.peak_flops, workspaces))
    if cost_model == "profiled":
        path = profile_path()
        if not path.exists():
            raise ValueError(f"cost_model='profiled' needs a calibration profile, and {path} does not "
                             f"exist; run: mpirun -np N tensoropt calibrate --out {path}")
        collectives = ProfiledCollectives.from_file(path)
        profile = collectives.profile
        overheads = profile_overheads(profile)
        # the simulator's transfers: horovod's own work on each, where the profile has it
        busy = (ProfiledCollectives(profile, str(path), field="busy_seconds")
                if profile.has_busy_seconds() else None)
        # shards timed with the threads each rank trains with (its machine's CPUs / ranks)
        profiler = ComputeProfiler(threads=rank_threads(cluster.devices_per_machine))
        return CostModel(graph, num_devices, collectives, cluster.peak_flops, compute=profiler,
                         op_overhead_s=overheads.get("op_s", 0.0),
                         collective_overhead_s=overheads.get("collective_s", 0.0),
                         copy_bytes_per_s=overheads.get("copy_bytes_per_s", 0.0),
                         # this machine's CPUs move MPI's bytes too: measured, else they take turns
                         transfer_compute_share=overheads.get("transfer_compute_share", 1.0),
                         transfer_collectives=busy)
    raise ValueError(f"cost_model={cost_model!r}: choose 'analytical' or 'profiled'")


def frontier_for(graph, cluster, num_devices: int, cost_model: str = "analytical",
                 progress: Callable | None = None,
                 search: SearchOptions | None = None, option: str = "frontier") -> SearchResult:
    """The frontier of ``graph`` on ``num_devices`` devices of ``cluster``; its plans say
    ``option`` chose them."""
    model = make_cost_model(graph, cluster, num_devices, cost_model)
    return search_frontier(graph, model, search, progress=progress, option=option)


def _frontier(graph, settings: SearchSettings, num_devices: int, progress: Callable | None,
              option: str) -> SearchResult:
    return frontier_for(graph, settings.cluster, num_devices, settings.cost_model, progress,
                        settings.search, option)


def fastest_fitting(plans: FrontierPlans, limit: float, peak: Callable | None = None) -> Plan | None:
    """The frontier's fastest plan within ``limit``: its last point that fits, as memory
    ascends and time descends along it. With ``peak(plan) -> bytes`` (a checked peak over
    the step, e.g. the simulator's liveness peak, which the additive estimate cannot
    express), the fastest plan whose additive estimate and checked peak both fit."""
    fits = sum(1 for m, _ in plans.points if m <= limit)
    for i in range(fits - 1, -1, -1):
        if peak is None or peak(plans[i]) <= limit:
            return plans[i]
    return None


def turning_point(plans) -> int:
    """Index of the frontier's knee: the point farthest below the chord joining its ends
    (in axes normalized to [0, 1]), where adding memory stops buying much time. ``plans``
    is a list of Plans, or ``FrontierPlans`` (whose points are read without building)."""
    points = getattr(plans, "points", None)
    if points is None:
        points = [(p.memory_bytes, p.time_s) for p in plans]
    if len(points) < 3:
        return 0
    (m0, t0), (m1, t1) = points[0], points[-1]
    best, best_i = -1.0, 0
    for i, (mem, tim) in enumerate(points):
        x = (mem - m0) / ((m1 - m0) or 1.0)
        y = (tim - t1) / ((t0 - t1) or 1.0)
        below = (1.0 - x) - y  # distance below the chord y = 1 - x
        if below > best:
            best, best_i = below, i
    return best_i


def candidate_parallelisms(max_devices: int) -> list[int]:
    """1, 2, 4, ... up to ``max_devices``, and ``max_devices`` itself."""
    out, n = [], 1
    while n < max_devices:
        out.append(n)
        n *= 2
    return out + [max_devices]


def choose_plan(graph, settings: SearchSettings, progress: Callable | None = None,
                observe: Callable | None = None, peak: Callable | None = None) -> SearchSummary:
    """The plan ``settings.option`` asks for (``summary.chosen``), with its frontier and
    the data-parallel plan beside it.

    With ``SearchOptions(epsilon=e)`` the plan found is at most (1 + e) times slower
    than the exact search's, for no more memory. ``observe(summary, result, cluster,
    limit)``, when given, is called with the summary and the ``SearchResult`` it came
    from, and its return value is returned instead (``find_strategy(simulate=...)``
    attaches the simulator's check so).

    Raises:
        NoPlanFitsError: when no plan fits; it gives the least memory any plan needs on
            the device counts searched.
    """
    option, limit = settings.option, settings.limit_bytes
    if option == "mini_time":
        counts = [settings.max_devices]
    elif option == "mini_parallelism":
        counts = candidate_parallelisms(settings.max_devices)
    else:
        raise ValueError(f"choose_plan: option {option!r}; use mini_time or mini_parallelism, or "
                         "profile_parallelisms for profiling")
    least: list[tuple[int, float]] = []
    checked = False
    for n in counts:
        result = _frontier(graph, settings, n, progress, option)
        row = _row(result, limit, settings.cluster, peak)
        if row.plan is not None:
            summary = SearchSummary(option, (row,), row.plan)
            return summary if observe is None else observe(summary, result, settings.cluster, limit)
        need = row.least_memory_bytes
        if peak is not None and need <= limit:   # it fits by the additive estimate only
            need = max(need, peak(row.frontier[0], result, settings.cluster))
            checked = True
        least.append((n, need))
    raise _no_fit(option, least, limit, checked=checked)


def _row(result: SearchResult, limit: float, cluster, peak: Callable | None = None) -> ProfileRow:
    """One device count's row: the frontier (its plans noted with the cluster and the
    approximation), the fastest plan within ``limit`` and the data-parallel plan."""
    where = f"estimated for cluster {cluster.name}"
    approximation = approximation_line(result.stats["frontier"])
    frontier = result.plans.labelled(f"{where}; {approximation}")
    data_parallel = dataclasses.replace(result.data_parallel_plan(), notes=where)
    checked = None if peak is None else (lambda plan: peak(plan, result, cluster))
    return ProfileRow(frontier.parallelism, fastest_fitting(frontier, limit, checked), frontier, data_parallel,
                      result.stats["build_s"] + result.stats["track_s"], approximation)


def _no_fit(option: str, least: Sequence[tuple[int, float]], limit: float,
            checked: bool = False) -> NoPlanFitsError:
    """The error when no plan fits, from the frontiers already searched: ``least`` is
    (device count, least memory any plan needs) per count searched, the last the largest
    (with ``checked``, the least-memory plan's checked peak where its additive estimate
    fits)."""
    n, need = least[-1]
    if option == "mini_time":
        more = ("find_strategy('mini_parallelism', parallelism=N) finds the smallest device count "
                "up to N that fits")
    else:
        searched = ", ".join(f"{c}: {format_bytes(m)}" for c, m in least)
        more = f"no device count up to {n} fits either (least memory per count: {searched})"
    what = ("the least memory any plan needs (its peak over the step, as the simulator counts it, "
            "or the additive estimate when larger)" if checked else "the least memory any plan needs")
    return NoPlanFitsError(
        f"no plan for {n} device(s) fits in {format_bytes(limit)} per device: {what} is {format_bytes(need)} "
        f"({need:.0f} bytes); {more}. Raise memory_limit to at least {need:.0f}, use more devices, "
        f"or shrink the model/batch")


def profile_parallelisms(graph, settings: SearchSettings, parallelisms: Sequence[int],
                         progress: Callable | None = None) -> list[ProfileRow]:
    """The best per-iteration time for each device count, without running the job."""
    return [_row(_frontier(graph, settings, n, progress, "profiling"), settings.limit_bytes, settings.cluster)
            for n in parallelisms]


def search_summary(graph, settings: SearchSettings, observe: Callable | None = None,
                   peak: Callable | None = None) -> SearchSummary:
    """``find_strategy``'s search on one process: ``choose_plan`` for "mini_time" and
    "mini_parallelism", ``profile_parallelisms`` for "profiling" (over
    ``settings.parallelisms``, default 1, 2, 4, ... up to ``settings.max_devices``).
    ``observe``, ``peak``: as ``choose_plan``'s (not used for "profiling")."""
    if settings.option == "profiling":
        counts = settings.parallelisms or candidate_parallelisms(settings.max_devices)
        return SearchSummary("profiling", tuple(profile_parallelisms(graph, settings, counts)), None)
    return choose_plan(graph, settings, observe=observe, peak=peak)
