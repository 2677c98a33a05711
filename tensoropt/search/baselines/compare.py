"""Every search method side by side on one graph, cluster and cost model
(``tensoropt compare``).

The space is priced once (the pricing seconds are shared and reported apart); then
Frontier-Tracking and each baseline search it. Every method's plan is an ordinary
``Plan`` priced by the same cost model. A row gives its search seconds (its own, after
the shared pricing), time per iteration, memory per device, whether it fits the memory
limit, and its slowdown against FT's fastest plan that fits.

Methods: ``frontier`` (FT's fastest plan within the limit), ``data_parallel``, ``mesh_tf``,
``optcnn``, ``tofu``, ``pase`` (each min time only, memory checked after),
``mcmc`` (memory limit hard, ``budget_s`` seconds; its cost is ``mcmc_cost(tables,
cluster)`` when given -- the CLI passes the simulator's ``SimulatedCost``, as FlexFlow
prices with its simulator -- else the additive cost; its note gives the best plan's time
under that cost).

Usage::

    comparison = compare(graph, "paper-v100x16", devices=16, budget_s=10)
    print(comparison_table(comparison))
    json.dumps(comparison_json(comparison))
    plot_comparison(comparison, "compare.png")
"""

from __future__ import annotations

import time
import os
from dataclasses import dataclass, field
from typing import Callable

from tensoropt.cluster import get_cluster
from tensoropt.plan import Plan
from tensoropt.search.baselines._result import BaselineError
from tensoropt.search.baselines._tables import MinTimeTables
from tensoropt.search.baselines.mcmc import mcmc_search
from tensoropt.search.baselines.mesh_tf import mesh_tf_search
from tensoropt.search.baselines.optcnn import optcnn_search
from tensoropt.search.baselines.pase_dp import pase_search
from tensoropt.search.baselines.tofu import tofu_search
from tensoropt.search.driver import search_frontier
from tensoropt.search.strategy import SAFETY_MARGIN, fastest_fitting, make_cost_model
from tensoropt.validation import atomic_write

__all__ = ["METHODS", "MethodRow", "Comparison", "compare", "comparison_table", "comparison_json",
           "plot_comparison"]

METHODS = ("frontier", "data_parallel", "mesh_tf", "optcnn", "tofu", "pase", "mcmc")
GIB = 2.0 ** 30


@dataclass(frozen=True)
class MethodRow:
    """One method's result.

    Attributes:
        method: one of ``METHODS``.
        plan: its plan, or None when the method could not search (``note`` says why).
        search_s: its own search seconds (the shared pricing excluded).
        fits: the plan's memory per device is within the limit.
        slowdown: its time over FT's fastest fitting plan's (None when either is missing).
        note: what the method reported (its layout, its failure).
        simulated_s: the simulator's step time of the plan, when ``compare`` was given
            ``simulate`` (None otherwise).
    """

    method: str
    plan: Plan | None
    search_s: float
    fits: bool
    slowdown: float | None
    note: str = ""
    simulated_s: float | None = None

    @property
    def time_s(self) -> float | None:
        return None if self.plan is None else self.plan.time_s

    @property
    def memory_bytes(self) -> float | None:
        return None if self.plan is None else self.plan.memory_bytes


@dataclass(frozen=True)
class Comparison:
    """Attributes: what was compared, the shared pricing seconds, the rows, FT's whole
    result (for its frontier) and MCMC's (seconds, best time) trace."""

    model: str
    cluster: str
    devices: int
    memory_limit_bytes: float
    pricing_s: float
    rows: tuple[MethodRow, ...]
    frontier: object = field(repr=False)
    mcmc_trace_s: tuple = ()


def compare(graph, cluster, devices: int, *, memory_limit: float | None = None, budget_s: float = 10.0,
            search=None, cost_model: str = "analytical", methods=METHODS, seed: int = 0,
            model_name: str = "", progress: Callable | None = None,
            mcmc_cost: Callable | None = None, simulate: Callable | None = None) -> Comparison:
    """Runs every method of ``methods`` on ``graph`` with ``devices`` devices of ``cluster``.

    ``mcmc_cost(tables, cluster)`` makes MCMC's ``StrategyCost`` (default: additive);
    ``simulate(plan, cluster, cost_model) -> seconds`` gives each row's ``simulated_s``.

    Raises:
        ValueError: an unknown method name.
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"compare: unknown method(s) {unknown}; choose from {', '.join(METHODS)}")
    cluster = get_cluster(cluster, devices=devices)
    limit = cluster.memory_bytes / SAFETY_MARGIN if memory_limit is None else float(memory_limit)
    model = make_cost_model(graph, cluster, devices, cost_model)
    result = search_frontier(graph, model, search, progress=progress)
    start = time.perf_counter()
    tables = MinTimeTables(result.space)
    pricing_s = result.stats["build_s"] + time.perf_counter() - start
    fastest = fastest_fitting(result.plans, limit)
    base = None if fastest is None else fastest.time_s
    rows, trace = [], ()

    def row(method: str, plan: Plan | None, seconds: float, note: str = "") -> MethodRow:
        fits = plan is not None and plan.memory_bytes <= limit
        slowdown = None if plan is None or base is None else plan.time_s / base
        simulated = None if plan is None or simulate is None else simulate(plan, cluster, model)
        return MethodRow(method, plan, seconds, fits, slowdown, note, simulated)

    runs = {"mesh_tf": lambda: mesh_tf_search(tables, limit), "optcnn": lambda: optcnn_search(tables),
            "tofu": lambda: tofu_search(tables), "pase": lambda: pase_search(tables),
            "mcmc": lambda: mcmc_search(tables, limit, budget_s=budget_s, seed=seed,
                                        cost=None if mcmc_cost is None else mcmc_cost(tables, cluster))}
    for method in methods:
        if method == "frontier":
            exact = "exact" if result.track.exact else "not exact (heuristic or approximate)"
            note = f"{len(result.plans)} plans, {exact}"
            plan = fastest if fastest is not None else result.plans[0]
            rows.append(row(method, plan, result.stats["track_s"], note))
            continue
        if method == "data_parallel":
            start = time.perf_counter()
            plan = result.data_parallel_plan()
            rows.append(row(method, plan, time.perf_counter() - start))
            continue
        try:
            found = runs[method]()
        except BaselineError as err:
            rows.append(row(method, None, 0.0, str(err)))
            continue
        if method == "mcmc":
            trace = found.trace_s
        rows.append(row(method, found.plan, found.search_s, _note(found.stats)))
    return Comparison(model_name, cluster.name, devices, limit, pricing_s, tuple(rows), result, trace)


def _note(stats: dict) -> str:
    keep = ("mesh", "layout", "layouts", "residual_ops", "order_width", "largest_table", "levels",
            "proposals", "accepted", "cost")
    note = ", ".join(f"{k}={stats[k]}" for k in keep if k in stats)
    if stats.get("best_time_s") is not None:
        note += f", its time {stats['best_time_s']:.5f} s"
    return note


def comparison_table(c: Comparison) -> str:
    """The comparison as a text table."""
    lines = [f"{c.model or 'graph'} on {c.cluster}, {c.devices} devices, memory limit "
             f"{c.memory_limit_bytes / GIB:.2f} GiB per device; pricing (shared) {c.pricing_s:.2f} s",
             f"{'method':<15}{'search s':>10}{'time/iter s':>13}{'simulated s':>13}{'memory GiB':>12}"
             f"{'fits':>6}{'vs FT':>9}  note"]
    for r in c.rows:
        if r.plan is None:
            lines.append(f"{r.method:<15}{'-':>10}{'-':>13}{'-':>13}{'-':>12}{'-':>6}{'-':>9}  {r.note}")
            continue
        slow = "-" if r.slowdown is None else f"{r.slowdown:.3f}x"
        sim = "-" if r.simulated_s is None else f"{r.simulated_s:.5f}"
        lines.append(f"{r.method:<15}{r.search_s:>10.3f}{r.time_s:>13.5f}{sim:>13}{r.memory_bytes / GIB:>12.3f}"
                     f"{'yes' if r.fits else 'no':>6}{slow:>9}  {r.note}")
    return "\n".join(lines)


def comparison_json(c: Comparison) -> dict:
    """The comparison as JSON-ready values: a ``methods`` list with ``method``,
    ``search_s``, ``time_s``, ``memory_bytes``, ``fits`` (and ``slowdown``, ``note``)."""
    return {"model": c.model, "cluster": c.cluster, "devices": c.devices,
            "memory_limit_bytes": c.memory_limit_bytes, "pricing_s": c.pricing_s,
            "methods": [{"method": r.method, "search_s": r.search_s, "time_s": r.time_s,
                         "memory_bytes": r.memory_bytes, "fits": r.fits, "slowdown": r.slowdown,
                         "simulated_s": r.simulated_s, "note": r.note} for r in c.rows],
            "mcmc_trace": [{"search_s": s, "best_time_s": t} for s, t in c.mcmc_trace_s]}


def plot_comparison(c: Comparison, path: str) -> None:
    """Every method's (memory, time) point over FT's frontier, as the paper's Figures 6-7."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = c.frontier.plans.points
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.step([m / GIB for m, _ in points], [t for _, t in points], where="post", color="C0",
            label="TensorOpt frontier")
    markers = {"frontier": "o", "data_parallel": "x", "mesh_tf": "s", "optcnn": "^", "tofu": "v",
               "pase": "D", "mcmc": "*"}
    for k, r in enumerate(c.rows):
        if r.plan is not None:
            ax.scatter([r.memory_bytes / GIB], [r.time_s], marker=markers[r.method], color=f"C{k + 1}",
                       label=r.method, zorder=3, facecolors="none" if r.method == "frontier" else None)
    ax.axvline(c.memory_limit_bytes / GIB, color="grey", linestyle="--", label="memory limit")
    ax.set_xlabel("memory per device (GiB)")
    ax.set_ylabel("per-iteration time (s)")
    ax.set_title(f"{c.model} on {c.cluster}, {c.devices} devices")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    try:
        atomic_write(path, lambda f: fig.savefig(f, dpi=120, format=fmt), mode="wb")
    finally:
        plt.close(fig)
