"""The FT-ordered check of a frontier: simulate its plans in Frontier-Tracking's order and
compare what the simulator says with what the search estimated.

Usage::

    from tensoropt.simulator import check_frontier

    result = search_frontier(graph, model, SearchOptions(epsilon=0.05))
    check = check_frontier(result, cluster, memory_limit=cluster.memory_bytes / 1.1)
    check.kendall_tau_time, check.kendall_tau_memory, check.dominated, check.regret
    for row in check.rows:
        print(row.index, row.estimated_time_s, row.simulated_time_s, row.simulated_peak_bytes)
    check.to_dict()                     # for --json (simulator_check)

What it does:

- **Which plans.** The frontier's plans in FT's order (least memory first): all of them
  when there are at most ``budget``; beyond it both ends, the turning point
  (``report.turning_point``), the ``mini_time`` choice (the fastest plan whose estimate
  fits ``memory_limit``; the fastest plan without a limit) and evenly spaced plans up to
  ``budget``. The data-parallel plan is always added as a reference row (``index`` -1),
  which the order statistics leave out.
- **How.** Each plan's version vector comes from FT's choice arrays (no ``Plan`` built),
  and is delta-simulated from the nearest of the recent states (``window``). Every
  ``verify_every``-th plan (and the last) is also simulated in full; the two must agree
  on every task's start and end, the makespan and the peak. The delta speed-up is the
  full simulations' mean seconds over the mean seconds of the delta simulations (every
  checked plan after the first, which has no base). As in FlexFlow (§5.2-5.3), a full
  simulation assembles the plan's whole task graph and runs the event loop over every
  task; a delta one splices the changed fragments into its base's graph and re-times
  what changed. Each side's graph seconds are kept apart too, so the check also reports
  the speed-up of the simulation alone (event loop vs delta run) and the one against a
  full event loop on the spliced graph (both sides then share the splice). The plan's
  fragments (its tasks per op and edge, from the cost model; cached per version) are
  built before either is timed.
- **Per plan**: estimated vs simulated time and peak memory, exposed network time.
- **Overall**: Kendall tau-b between the estimated and the simulated values, for time
  and memory (``order_stats.kendall_tau_b``); adjacent inversions (positions where the
  estimate and the simulation move apart); frontier plans the simulation shows
  dominated (with the plan that dominates each); whether the ``mini_time`` plan fits by
  its simulated peak; the regret of ``mini_time``: its simulated time over the
  simulated time of the simulator's own choice (the fastest checked plan whose
  simulated peak fits), minus 1.
"""

from __future__ import annotations

import os
import time
from types import SimpleNamespace
from dataclasses import asdict, dataclass
from typing import Any, Optional

import numpy as np

from tensoropt.search.driver import data_parallel_configs
from tensoropt.search.strategy import turning_point
from tensoropt.simulator.memory import peak_memory_bytes
from tensoropt.simulator.order_stats import adjacent_inversions, dominated, kendall_tau_b
from tensoropt.simulator.plan_options import SimOptions
from tensoropt.simulator.plan_sim import PlanSimulator
from tensoropt.simulator.result import summarize
from tensoropt.simulator.trace import chrome_trace

__all__ = ["CheckRow", "FrontierCheck", "check_frontier", "checked_indices"]


@dataclass(frozen=True)
class CheckRow:
    """One checked plan (``index`` -1: the data-parallel reference)."""

    index: int
    estimated_time_s: float
    simulated_time_s: float
    estimated_memory_bytes: float
    simulated_peak_bytes: int
    exposed_network_s: float
    tasks: int


@dataclass(frozen=True)
class FrontierCheck:
    """The check of one frontier (see the module doc)."""

    rows: tuple[CheckRow, ...]
    frontier_size: int
    kendall_tau_time: float
    kendall_tau_memory: float
    adjacent_inversions_time: tuple[int, ...]
    adjacent_inversions_memory: tuple[int, ...]
    dominated: tuple[tuple[int, int], ...]
    mini_time_index: int
    mini_time_fits: Optional[bool]
    simulator_choice_index: Optional[int]
    regret: Optional[float]
    memory_limit_bytes: Optional[float]
    verified: int
    delta_mismatches: tuple[int, ...]
    full_s_per_plan: float
    delta_s_per_plan: float
    options: SimOptions
    full_graph_s_per_plan: float = 0.0
    delta_graph_s_per_plan: float = 0.0

    @property
    def delta_speedup(self) -> float:
        """Full over delta seconds per plan, each with its graph; NaN when there is no
        figure (a frontier of one plan has nothing to delta from, or no plan was verified
        in full)."""
        return _ratio(self.full_s_per_plan, self.delta_s_per_plan)

    @property
    def simulation_speedup(self) -> float:
        """The event loop's seconds over the delta run's, graphs left out (NaN: no figure)."""
        return _ratio(self.full_s_per_plan - self.full_graph_s_per_plan,
                      self.delta_s_per_plan - self.delta_graph_s_per_plan)

    @property
    def spliced_speedup(self) -> float:
        """Speed-up against a full event loop on the spliced graph: both pay the splice."""
        if not self.full_s_per_plan:
            return float("nan")
        return _ratio(self.delta_graph_s_per_plan + self.full_s_per_plan
                      - self.full_graph_s_per_plan, self.delta_s_per_plan)

    @property
    def frontier_rows(self) -> tuple[CheckRow, ...]:
        return tuple(r for r in self.rows if r.index >= 0)

    def row(self, index: int) -> Optional[CheckRow]:
        """The checked row of frontier plan ``index`` (-1: data parallel), or None."""
        return next((r for r in self.rows if r.index == index), None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``simulator_check``)."""
        def num(x):
            return None if x is None or (isinstance(x, float) and np.isnan(x)) else x

        return {"plans": [asdict(r) for r in self.rows], "frontier_size": self.frontier_size,
                "kendall_tau_time": num(self.kendall_tau_time),
                "kendall_tau_memory": num(self.kendall_tau_memory),
                "adjacent_inversions_time": list(self.adjacent_inversions_time),
                "adjacent_inversions_memory": list(self.adjacent_inversions_memory),
                "dominated": [{"plan": a, "dominated_by": b} for a, b in self.dominated],
                "mini_time_index": self.mini_time_index, "mini_time_fits": self.mini_time_fits,
                "simulator_choice_index": self.simulator_choice_index, "regret": num(self.regret),
                "memory_limit_bytes": self.memory_limit_bytes, "verified_delta_plans": self.verified,
                "delta_mismatches": list(self.delta_mismatches),
                "full_s_per_plan": self.full_s_per_plan, "delta_s_per_plan": self.delta_s_per_plan,
                "delta_speedup": num(self.delta_speedup),
                "full_graph_s_per_plan": self.full_graph_s_per_plan,
                "delta_graph_s_per_plan": self.delta_graph_s_per_plan,
                "simulation_speedup": num(self.simulation_speedup),
                "spliced_speedup": num(self.spliced_speedup),
                "collective_order": self.options.collective_order, "ranks": self.options.ranks}

    def table(self) -> str:
        """Per checked plan: estimated and simulated time and peak memory, and exposed
        network time (data parallel last), then the summary."""
        gib = 2.0 ** 30
        lines = [f"{'plan':>6} {'est GiB':>9} {'sim peak GiB':>13} {'est time s':>11} "
                 f"{'sim time s':>11} {'exposed net s':>14}"]
        for r in self.rows:
            label = "DP" if r.index < 0 else str(r.index)
            lines.append(f"{label:>6} {r.estimated_memory_bytes / gib:>9.3f} "
                         f"{r.simulated_peak_bytes / gib:>13.3f} {r.estimated_time_s:>11.4g} "
                         f"{r.simulated_time_s:>11.4g} {r.exposed_network_s:>14.4g}")
        return "\n".join(lines + self.summary_lines())

    def summary_lines(self) -> list[str]:
        """The check's summary, a few lines for a table."""
        def f(x, fmt):
            return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, fmt)

        fits = {None: "n/a", True: "yes", False: "NO"}[self.mini_time_fits]
        lines = [f"simulator check ({self.options.collective_order} collectives): "
                 f"{len(self.frontier_rows)} of {self.frontier_size} frontier plans simulated, "
                 f"delta {f(self.delta_speedup, '.1f')}x faster than full, "
                 f"{self.verified} verified delta == full"
                 + (f", MISMATCH on plans {list(self.delta_mismatches)}" if self.delta_mismatches else ""),
                 f"  Kendall tau-b estimate vs simulation: time {f(self.kendall_tau_time, '.3f')}, "
                 f"memory {f(self.kendall_tau_memory, '.3f')}; adjacent inversions: time "
                 f"{len(self.adjacent_inversions_time)}, memory {len(self.adjacent_inversions_memory)}",
                 f"  dominated by simulation: {len(self.dominated)}"
                 + "".join(f"; plan {a} by plan {b}" for a, b in self.dominated[:5]),
                 f"  mini_time plan {self.mini_time_index} fits by simulated peak: {fits}; regret vs "
                 f"the simulator's choice (plan {self.simulator_choice_index}): "
                 f"{f(None if self.regret is None else 100 * self.regret, '.1f')}%"]
        return lines


def _ratio(a: float, b: float) -> float:
    return a / b if a > 0 and b > 0 else float("nan")


def checked_indices(points, budget: int, mini_time_index: int) -> list[int]:
    """The frontier positions to simulate, ascending (see module doc)."""
    n = len(points)
    if budget < 1:
        raise ValueError(f"budget={budget}: simulate at least 1 plan")
    if n <= budget:
        return list(range(n))
    chosen = {0, n - 1, turning_point(SimpleNamespace(points=list(points))), mini_time_index}
    for x in np.linspace(0, n - 1, budget).round().astype(int).tolist():
        if len(chosen) >= budget:
            break
        chosen.add(x)
    return sorted(chosen)


def _mini_time_index(points, limit: Optional[float]) -> int:
    if limit is None:
        return len(points) - 1
    fits = sum(1 for m, _ in points if m <= limit)
    return max(fits - 1, 0)


def check_frontier(search_result, cluster, *, memory_limit: Optional[float] = None,
                   options: Optional[SimOptions] = None, budget: int = 64,
                   verify_every: int = 8, window: int = 8,
                   simulator: Optional[PlanSimulator] = None,
                   only: Optional[list[int]] = None,
                   trace_dir: Optional[str] = None) -> FrontierCheck:
    """Simulates ``search_result``'s frontier in FT's order (see the module doc).

    Args:
        search_result: a ``search.SearchResult`` (its space, choice arrays and points).
        cluster: the ``Cluster`` it was searched for.
        memory_limit: bytes per device the ``mini_time`` choice must fit (None: none).
        options: ``SimOptions``.
        budget: the most frontier plans to simulate.
        verify_every: also simulate every this many checked plans in full (>= 1).
        window: recent states to delta from.
        simulator: a ``PlanSimulator`` to reuse (its fragments are cached).
        only: simulate just these frontier positions (e.g. the chosen plan's) instead of
            choosing them by ``budget``.
        trace_dir: an existing directory to write each checked plan's Chrome trace to
            (``plan{index}.json``, ``data_parallel.json``).

    Raises:
        ValueError: a bad budget or verify_every, or a result without its search space.
    """
    if isinstance(verify_every, bool) or not isinstance(verify_every, int) or verify_every < 1:
        raise ValueError(f"verify_every={verify_every!r}: give an int >= 1")
    if trace_dir is not None and not (os.path.isdir(trace_dir) and os.access(trace_dir, os.W_OK)):
        raise ValueError(f"cannot write traces to {os.fspath(trace_dir)!r}: give an existing, "
                         "writable directory")
    space, track = search_result.space, search_result.track
    if space is None or track is None:
        raise ValueError("check_frontier needs the SearchResult of search_frontier (with its "
                         "space and track); a received SearchSummary has neither: check on rank 0")
    sim = simulator or PlanSimulator(space.graph, space.model, cluster, options, window=window)
    points = search_result.plans.points
    mini = _mini_time_index(points, memory_limit)
    indices = sorted(set(only)) if only is not None else checked_indices(points, budget, mini)
    if not indices or not 0 <= indices[0] <= indices[-1] < len(points):
        raise ValueError(f"only={only!r}: give frontier positions 0 .. {len(points) - 1}")
    if mini not in indices:
        indices = sorted(indices + [mini])
    rows, sim_t, sim_m, mismatches = [], [], [], []
    full_s = delta_s = full_graph_s = delta_graph_s = 0.0
    verified = timed = 0
    n_edges = len(space.edges)
    for pos, i in enumerate(indices + [-1]):
        if i >= 0:
            v = sim.choice_versions(space, track.node_configs[i], track.edge_alternatives[i])
            est_m, est_t = points[i]
        else:
            dp = search_result.data_parallel_plan()
            dp_configs = [space.config_index(op, c) for op, c in data_parallel_configs(space).items()]
            v = sim.choice_versions(space, dp_configs, [-1] * n_edges)
            est_m, est_t = dp.memory_bytes, dp.time_s
        sim.delta.prepare(v)                       # fragments built before either is timed
        full = None
        if i >= 0 and ((pos > 0 and pos % verify_every == 0) or pos == len(indices) - 1):
            t0 = time.perf_counter()
            full = sim.simulate_full(v)            # the graph assembled from scratch
            full_s += time.perf_counter() - t0
            full_graph_s += sim.delta.last_seconds[0]
            verified += 1
        t0 = time.perf_counter()
        timeline = sim.simulate(v)
        spent = time.perf_counter() - t0
        if i >= 0 and pos > 0:
            delta_s += spent
            delta_graph_s += sim.delta.last_seconds[0]
            timed += 1
        if full is not None and not (np.array_equal(full.start_ps, timeline.start_ps) and
                                     np.array_equal(full.end_ps, timeline.end_ps) and
                                     peak_memory_bytes(full) == peak_memory_bytes(timeline)):
            mismatches.append(i)
        r = summarize(timeline)
        if trace_dir is not None:
            chrome_trace(r, os.path.join(trace_dir, f"plan{i}.json" if i >= 0 else "data_parallel.json"))
        rows.append(CheckRow(i, float(est_t), r.makespan_s, float(est_m), r.peak_memory_bytes,
                             r.exposed_network_s, timeline.graph.num_tasks))
        if i >= 0:
            sim_t.append(r.makespan_s)
            sim_m.append(r.peak_memory_bytes)
    est_t = [points[i][1] for i in indices]
    est_m = [points[i][0] for i in indices]
    dom = dominated(sim_m, sim_t)
    fits = [k for k, m in enumerate(sim_m) if memory_limit is None or m <= memory_limit]
    choice = min(fits, key=lambda k: (sim_t[k], sim_m[k])) if fits else None
    mk = indices.index(mini)
    mini_fits = None if memory_limit is None else bool(sim_m[mk] <= memory_limit)
    regret = sim_t[mk] / sim_t[choice] - 1.0 if choice is not None and sim_t[choice] > 0 else None
    return FrontierCheck(
        rows=tuple(rows), frontier_size=len(points),
        kendall_tau_time=kendall_tau_b(est_t, sim_t), kendall_tau_memory=kendall_tau_b(est_m, sim_m),
        adjacent_inversions_time=tuple(indices[k] for k in adjacent_inversions(est_t, sim_t).tolist()),
        adjacent_inversions_memory=tuple(indices[k] for k in adjacent_inversions(est_m, sim_m).tolist()),
        dominated=tuple((indices[k], indices[int(b)]) for k, b in enumerate(dom.tolist()) if b >= 0),
        mini_time_index=mini, mini_time_fits=mini_fits,
        simulator_choice_index=None if choice is None else indices[choice], regret=regret,
        memory_limit_bytes=memory_limit, verified=verified, delta_mismatches=tuple(mismatches),
        full_s_per_plan=full_s / verified if verified else 0.0,
        delta_s_per_plan=delta_s / timed if timed else 0.0, options=sim.options,
        full_graph_s_per_plan=full_graph_s / verified if verified else 0.0,
        delta_graph_s_per_plan=delta_graph_s / timed if timed else 0.0)


