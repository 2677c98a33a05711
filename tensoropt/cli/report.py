"""Readable tables and plots of frontiers and parallelism profiles.

Usage::

    print(frontier_table(result))
    plot_frontier(result, "frontier.png", title="transformer on paper-v100x16")
"""

from __future__ import annotations

from statistics import mean
import os

from frontier import TrackStats

from tensoropt.search.approximation import EXACT, approximation_line
from tensoropt.search.strategy import turning_point
from tensoropt.units import format_bytes
from tensoropt.validation import atomic_write

__all__ = ["frontier_rows", "frontier_table", "plans_table", "profile_table", "plot_frontier",
           "turning_point"]

GIB = 2.0 ** 30


def _estimates(plans):
    """Each plan's memory, time, network and compute: a ``FrontierPlans``' estimates
    (no plan built), or the plans of a list."""
    return getattr(plans, "estimates", plans)


def frontier_rows(result) -> list[dict]:
    return [{"memory_gib": p.memory_bytes / GIB, "time_s": p.time_s, "network_s": p.network_s,
             "compute_s": p.compute_s} for p in _estimates(result.plans)]


def plans_table(plans, data_parallel=None, chosen=None, title: str = "",
                max_rows: int | None = None) -> str:
    """One row per plan (memory per device, time, network, compute), the turning point and
    the chosen plan marked, and the data-parallel plan below. With ``max_rows``, rows
    evenly spaced along the frontier, both ends, the turning point and the chosen plan."""
    knee = turning_point(plans)
    try:
        chosen_i = plans.index(chosen) if chosen is not None else None
    except ValueError:
        chosen_i = None
    estimates = _estimates(plans)
    rows = list(range(len(plans)))
    if max_rows is not None and len(plans) > max_rows:
        keep = {round(k * (len(plans) - 1) / (max_rows - 1)) for k in range(max_rows)} | {knee}
        rows = sorted(keep | ({chosen_i} if chosen_i is not None else set()))
    lines = ([title] if title else []) + [
        f"{'#':>4} {'memory/device':>18} {'time s':>11} {'network s':>11} {'compute s':>11}"]
    for i in rows:
        p = estimates[i]
        marks = (["turning point"] if i == knee else []) + (["chosen"] if i == chosen_i else [])
        lines.append(f"{i:>4} {format_bytes(p.memory_bytes):>18} {p.time_s:>11.5g} {p.network_s:>11.5g} "
                     f"{p.compute_s:>11.5g}" + (f"  <- {', '.join(marks)}" if marks else ""))
    if data_parallel is not None:
        dp = data_parallel
        lines.append(f"{'DP':>4} {format_bytes(dp.memory_bytes):>18} {dp.time_s:>11.5g} {dp.network_s:>11.5g} "
                     f"{dp.compute_s:>11.5g}  (data parallel, same cost model)")
    return "\n".join(lines)


def frontier_table(result, model: str = "", cluster: str = "") -> str:
    plans = result.plans
    lines = [plans_table(plans, result.data_parallel_plan(),
                         title=f"frontier of {model} on {cluster}: {len(plans)} plans "
                               f"({plans[0].parallelism} devices)")]
    counts = list(result.configs_per_op.values())
    s = result.stats
    lines.append(f"search: {s['build_s']:.2f} s building costs, {s['track_s']:.2f} s Frontier-Tracking; "
                 f"configurations per op: mean {mean(counts):.1f}, "
                 f"max {max(counts)} over {len(counts)} ops; eliminations: "
                 f"{_elims(s['frontier'])}")
    lines.append(approximation_line(s["frontier"]))
    return "\n".join(lines)


def _elims(stats: TrackStats) -> str:
    keys = ("node_eliminations", "edge_eliminations", "branch_eliminations", "heuristic_eliminations")
    return ", ".join(f"{k.split('_')[0]} {getattr(stats, k)}" for k in keys)


def profile_table(rows, model: str = "", cluster: str = "", limit_bytes: float | None = None) -> str:
    lines = [f"best per-iteration time by parallelism, {model} on {cluster}"
             + (f" (memory limit {format_bytes(limit_bytes)}/device)" if limit_bytes else ""),
             f"{'devices':>8} {'TensorOpt s':>12} {'memory':>11} {'least':>11} "
             f"{'data parallel s':>16} {'DP memory':>11} {'search s':>9}"]
    for r in rows:
        best = f"{r.plan.time_s:>12.5g} {format_bytes(r.plan.memory_bytes):>11}" if r.plan else \
            f"{'OOM':>12} {'-':>11}"
        dp_fits = limit_bytes is None or r.data_parallel.memory_bytes <= limit_bytes
        dp = f"{r.data_parallel.time_s:>16.5g}" if dp_fits else f"{'OOM':>16}"
        lines.append(f"{r.parallelism:>8} {best} {format_bytes(r.least_memory_bytes):>11} {dp} "
                     f"{format_bytes(r.data_parallel.memory_bytes):>11} {r.search_s:>9.2f}")
    lines += [f"devices {r.parallelism}: {r.approximation}" for r in rows
              if r.approximation != EXACT]
    return "\n".join(lines)


def plot_frontier(result, path: str, title: str = "") -> None:
    """Draws the frontier as in the paper's Figure 6: time, network and compute vs memory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plans = _estimates(result.plans)
    mem = [p.memory_bytes / GIB for p in plans]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.step(mem, [p.time_s for p in plans], where="post", label="TensorOpt frontier", color="C0")
    ax.plot(mem, [p.network_s for p in plans], ":", label="network time", color="C2")
    ax.plot(mem, [p.compute_s for p in plans], ":", label="computation time", color="C1")
    dp = result.data_parallel_plan()
    ax.scatter([dp.memory_bytes / GIB], [dp.time_s], marker="x", color="C3", label="data parallel")
    knee = turning_point(plans)
    ax.scatter([mem[knee]], [plans[knee].time_s], marker="o", facecolors="none", color="k",
               label="turning point")
    ax.set_xlabel("memory per device (GiB)")
    ax.set_ylabel("per-iteration time (s)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    try:
        atomic_write(path, lambda f: fig.savefig(f, dpi=120, format=fmt), mode="wb")
    finally:
        plt.close(fig)
