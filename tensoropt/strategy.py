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

Usage::

    summary = choose_plan(graph, "paper-v100x16", option="mini_time", parallelism=16)
    summary.chosen, summary.frontier[0], summary.data_parallel
    rows = profile_parallelisms(graph, "paper-v100x16", [1, 2, 4, 8, 16])
    summary = choose_plan(graph, "paper-v100x16", parallelism=16,
                          search=SearchOptions(max_candidates=50_000_000, threads=2))

Every search here takes ``search``, a ``tensoropt.search.SearchOptions`` (default: the
exact frontier on one thread).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from tensoropt.costs import CostModel
from tensoropt.plan import Plan
from tensoropt.report import approximation_line
from tensoropt.search import FrontierPlans, SearchOptions, SearchResult, search_frontier
from tensoropt.summary import ProfileRow, SearchSummary

__all__ = ["NoPlanFitsError", "SAFETY_MARGIN", "make_cost_model", "frontier_for", "choose_plan",
           "profile_parallelisms", "search_summary", "ProfileRow", "candidate_parallelisms",
           "fastest_fitting"]

SAFETY_MARGIN = 1.1


class NoPlanFitsError(ValueError):
    """No plan fits the memory limit; the message says what would."""


def make_cost_model(graph, cluster, num_devices: int, cost_model: str = "analytical") -> CostModel:
    """A CostModel for ``graph`` on ``num_devices`` devices of ``cluster``.

    Args:
        cluster: a ``tensoropt.cluster.Cluster`` (or a preset name / file path).
        cost_model: "analytical" (roofline compute, alpha-beta links) or "profiled"
            (measured compute and calibrated collectives; needs ``tensoropt calibrate``).
    """
    from tensoropt.cluster import get_cluster
    from tensoropt.collectives import AnalyticalCollectives, ProfiledCollectives

    cluster = get_cluster(cluster, devices=num_devices)
    if cost_model == "analytical":
        return CostModel(graph, num_devices, AnalyticalCollectives(cluster), cluster.peak_flops)
    if cost_model == "profiled":
        from tensoropt.cluster import profile_path
        from tensoropt.profiler import ComputeProfiler

        path = profile_path()
        if not path.exists():
            raise ValueError(f"cost_model='profiled' needs a calibration profile, and {path} does not "
                             f"exist; run: mpirun -np N tensoropt calibrate --out {path}")
        return CostModel(graph, num_devices, ProfiledCollectives.from_file(path), cluster.peak_flops,
                         compute=ComputeProfiler())
    raise ValueError(f"cost_model={cost_model!r}: choose 'analytical' or 'profiled'")


def frontier_for(graph, cluster, num_devices: int, cost_model: str = "analytical",
                 progress: Callable | None = None,
                 search: SearchOptions | None = None, option: str = "frontier") -> SearchResult:
    """The frontier of ``graph`` on ``num_devices`` devices of ``cluster``; its plans say
    ``option`` chose them."""
    model = make_cost_model(graph, cluster, num_devices, cost_model)
    return search_frontier(graph, model, search, progress=progress, option=option)


def _memory_limit(cluster, memory_limit: float | None) -> float:
    return cluster.memory_bytes / SAFETY_MARGIN if memory_limit is None else float(memory_limit)


def fastest_fitting(plans: FrontierPlans, limit: float) -> Plan | None:
    """The frontier's fastest plan within ``limit``: its last point that fits, as memory
    ascends and time descends along it."""
    fits = sum(1 for m, _ in plans.points if m <= limit)
    return plans[fits - 1] if fits else None


def candidate_parallelisms(max_devices: int) -> list[int]:
    """1, 2, 4, ... up to ``max_devices``, and ``max_devices`` itself."""
    out, n = [], 1
    while n < max_devices:
        out.append(n)
        n *= 2
    return out + [max_devices]


def choose_plan(graph, cluster, option: str = "mini_time", memory_limit: float | None = None,
                parallelism: int | None = None, cost_model: str = "analytical",
                progress: Callable | None = None, search: SearchOptions | None = None,
                observe: Callable | None = None) -> SearchSummary:
    """The plan ``option`` asks for (``summary.chosen``), with its frontier and the
    data-parallel plan beside it.

    With ``SearchOptions(epsilon=e)`` the plan found is at most (1 + e) times slower
    than the exact search's, for no more memory. ``observe(summary, result, cluster,
    limit)``, when given, is called with the summary and the ``SearchResult`` it came from,
    and its return value is returned instead (``find_strategy(simulate=...)`` attaches the
    simulator's check so).

    Raises:
        NoPlanFitsError: when no plan fits; it gives the least memory any plan needs and
            the smallest device count that would fit.
    """
    from tensoropt.cluster import get_cluster

    cluster = get_cluster(cluster)
    limit = _memory_limit(cluster, memory_limit)
    if option == "mini_time":
        n = parallelism or cluster.devices
        result = frontier_for(graph, cluster, n, cost_model, progress, search, option)
        row = _row(result, limit, cluster)
        if row.plan is None:
            raise _no_fit(graph, cluster, n, result, limit, cost_model, search)
        return _observed(SearchSummary(option, (row,), row.plan), observe, result, cluster, limit)
    if option == "mini_parallelism":
        last = None
        for n in candidate_parallelisms(parallelism or cluster.devices):
            result = frontier_for(graph, cluster, n, cost_model, progress, search, option)
            row = _row(result, limit, cluster)
            if row.plan is not None:
                return _observed(SearchSummary(option, (row,), row.plan), observe, result, cluster, limit)
            last = (n, result)
        raise _no_fit(graph, cluster, last[0], last[1], limit, cost_model, search)
    raise ValueError(f"choose_plan: option {option!r}; use mini_time or mini_parallelism, or "
                     "profile_parallelisms for profiling")


def _observed(summary: SearchSummary, observe: Callable | None, result: SearchResult, cluster,
              limit: float) -> SearchSummary:
    """``summary``, with ``observe(summary, result, cluster, limit)``'s result in its stead
    when an observer is given (``find_strategy(simulate=...)`` attaches its check so)."""
    return summary if observe is None else observe(summary, result, cluster, limit)


def _row(result: SearchResult, limit: float, cluster) -> ProfileRow:
    """One device count's row: the frontier (its plans noted with the cluster and the
    approximation), the fastest plan within ``limit`` and the data-parallel plan."""
    where = f"estimated for cluster {cluster.name}"
    approximation = approximation_line(result.stats["frontier"])
    frontier = result.plans.labelled(f"{where}; {approximation}")
    data_parallel = dataclasses.replace(result.data_parallel_plan(), notes=where)
    return ProfileRow(frontier.parallelism, fastest_fitting(frontier, limit), frontier, data_parallel,
                      result.stats["build_s"] + result.stats["track_s"], approximation)


def _no_fit(graph, cluster, n: int, result: SearchResult, limit: float, cost_model: str,
            search: SearchOptions | None = None) -> NoPlanFitsError:
    least = result.plans.points[0][0]
    fits_at = None
    for m in (2 * n, 4 * n, 8 * n, 16 * n):
        try:
            bigger = frontier_for(graph, cluster, m, cost_model, search=search)
        except ValueError:
            break
        if fastest_fitting(bigger.plans, limit) is not None:
            fits_at = m
            break
    where = (f"the smallest device count that fits is {fits_at}" if fits_at else
             f"no device count up to {16 * n} fits either")
    gib = 2.0 ** 30
    return NoPlanFitsError(
        f"no plan for {n} device(s) fits in {limit / gib:.3f} GiB per device: the least memory any "
        f"plan needs is {least / gib:.3f} GiB ({least:.0f} bytes); {where}. Raise memory_limit to at "
        f"least {least:.0f}, use more devices, or shrink the model/batch")


def profile_parallelisms(graph, cluster, parallelisms: Sequence[int], memory_limit: float | None = None,
                         cost_model: str = "analytical", progress: Callable | None = None,
                         search: SearchOptions | None = None) -> list[ProfileRow]:
    """The best per-iteration time for each device count, without running the job."""
    from tensoropt.cluster import get_cluster

    cluster = get_cluster(cluster)
    limit = _memory_limit(cluster, memory_limit)
    return [_row(frontier_for(graph, cluster, n, cost_model, progress, search, "profiling"), limit, cluster)
            for n in parallelisms]


def search_summary(graph, cluster, option: str, memory_limit: float | None = None,
                   parallelism: int | None = None, parallelisms: Sequence[int] | None = None,
                   cost_model: str = "analytical", search: SearchOptions | None = None,
                   observe: Callable | None = None) -> SearchSummary:
    """``find_strategy``'s search on one process: ``choose_plan`` for "mini_time" and
    "mini_parallelism", ``profile_parallelisms`` for "profiling" (over ``parallelisms``,
    default 1, 2, 4, ... up to ``parallelism`` or the cluster's devices). ``observe``:
    as ``choose_plan``'s (not called for "profiling")."""
    from tensoropt.cluster import get_cluster

    cluster = get_cluster(cluster)
    if option == "profiling":
        counts = parallelisms or candidate_parallelisms(parallelism or cluster.devices)
        return SearchSummary(option, tuple(profile_parallelisms(graph, cluster, counts, memory_limit,
                                                                cost_model, search=search)), None)
    return choose_plan(graph, cluster, option, memory_limit, parallelism, cost_model, search=search,
                       observe=observe)
