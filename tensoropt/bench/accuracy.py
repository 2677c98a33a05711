"""Estimated against measured, as the paper's Table 2, on this machine's MPI ranks.

    mpirun --allow-run-as-root -np 2 .venv/bin/tensoropt calibrate
    mpirun --allow-run-as-root -np 2 .venv/bin/python -m tensoropt.bench accuracy

One rank per core (``-np 2`` on 2 cores) is the default setting; more ranks than cores
(``--oversubscribe -np 4``) still runs, and every figure is then labelled oversubscribed.

For each model, ``--plans`` plans sampled at random from its search space and
``--frontier`` plans spread along its frontier (priced with ``--cost-model``: profiled =
measured op shards and the calibration profile, its overheads included) are built and
trained. Every model is searched and profiled before the first is trained, as a job
profiles before its first training session. Measured, per plan (slowest or largest rank):

- time: the median wall time of untraced steps, with its spread (the interquartile
  range). Up to ``--group`` plans are held open at once and timed in ``--rounds``
  interleaved rounds (``bench.interleaved``), at least ``--steps`` steps
  (``--frontier-steps`` for the frontier's plans, whose order tau scores: their times lie
  within a few percent of each other, and the small LSTM's 5-step medians were too noisy
  to order them: tau 0.42-0.69, then 0.87 with 20 steps; with 20 steps in 5 rounds its
  even rounds ordered its ten frontier plans against its odd rounds at tau 0.60, with 60
  in 6 rounds at 0.82, hence the defaults) and ``--seconds`` seconds per plan, so the
  machine's drift falls on all of them alike. The frontier's plans then get two more
  rounds at a time, up to ``--max-rounds``, while their even rounds order them against
  their odd rounds at tau below ``SELF_TAU`` (0.9): the small LSTM's frontier plans lie
  within a few IQRs of each other, and its 60 steps in 6 rounds ordered them against
  themselves at 0.69-0.73 (2026-11-28). The rule reads the measurement alone, never
  the estimate;
- network: the median over ``--repeats`` traced steps of the time inside horovod ops;
  ops (printed per plan, not scored): the same of the other ops' summed times, beside
  the simulator's compute time, to tell where a gap is;
- peak memory per rank: ``execution.step_profile``'s one measure, resident variables
  plus the allocation peak of a traced step, the median over the traced steps.

Estimated: the additive figures the search optimizes (``Plan.time_s``, ``network_s``,
``memory_bytes``) and the simulator's (makespan, busy network time, liveness peak, from
the same cost model). Printed per model: mean |error| and signed mean of
(measured - estimated) / measured for each, and Kendall's tau-b between the measured and
the estimated order of time on the frontier plans; beside it, the same over the pairs of
frontier plans the measurement tells apart (``order_stats.tau_on_resolved_pairs``: medians
further apart than half their interquartile ranges together), and how many, to tell an
estimate that misorders distinct plans from plans that measure within noise of each other.
Last, the run against itself: tau between the frontier plans' medians over the even rounds
and over the odd rounds (``interleaved.half_medians``), two independent half-length
measurements. Where it is low, the run cannot order the frontier, and no estimate's tau
against it can be high either (the small LSTM's frontier plans lie 1-9 ms apart, their
steps' IQRs 4-12 ms).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt.cluster.calibration import CalibrationProfile
from tensoropt.cluster.presets import profile_path
from tensoropt.bench.interleaved import measure_group
from tensoropt.execution.machine_load import QUIET_SHARE, ForeignLoad, describe
from tensoropt.execution.quiet_bcast import quiet_bcast
from tensoropt.execution.step_profile import format_bytes
from tensoropt.search.driver import sample_plan, sampling_space, search_frontier
from tensoropt.search.strategy import make_cost_model
from tensoropt.simulator import kendall_tau_b, simulate_plan
from tensoropt.simulator.order_stats import tau_on_resolved_pairs

__all__ = ["main", "spread_plans", "summary_lines", "agrees_with_itself", "SELF_TAU"]

_FIGURES = ("time", "network", "memory")


def spread_plans(frontier, count: int) -> list:
    """``count`` plans spread evenly along a frontier (all of them when it has fewer)."""
    n = len(frontier)
    picks = sorted({int(round(i)) for i in np.linspace(0, n - 1, min(count, n))}) if n else []
    return [frontier[i] for i in picks]


def _error(measured: float, estimated: float) -> float:
    return (measured - estimated) / measured if measured else 0.0


def _plans_and_estimates(graph, world, args) -> list[dict]:
    """Rank 0: the sampled and frontier plans with their additive and simulated figures."""
    cluster = to.runtime.local_cluster()
    model = make_cost_model(graph, cluster, world.size, args.cost_model)
    rng = np.random.default_rng(7)
    space = sampling_space(graph, model)
    chosen = [("sampled", sample_plan(space, rng)) for _ in range(args.plans)]
    if args.frontier:
        result = search_frontier(graph, model)
        chosen += [("frontier", p) for p in spread_plans(result.plans, args.frontier)]
    rows = []
    for kind, plan in chosen:
        sim = simulate_plan(graph, plan, cluster, model)
        rows.append({"kind": kind, "plan": plan.to_json(),
                     "additive": {"time": plan.time_s, "network": plan.network_s, "memory": plan.memory_bytes},
                     "simulated": {"time": sim.makespan_s, "network": sim.network_s,
                                   "compute": sim.compute_s, "memory": float(sim.peak_memory_bytes)}})
    return rows


def _summary(rows: list[dict]) -> dict:
    out = {}
    for source in ("additive", "simulated"):
        errors = np.array([[_error(r["measured"][f], r[source][f]) for f in _FIGURES] for r in rows])
        out[source] = (np.mean(np.abs(errors), axis=0), np.mean(errors, axis=0))
    front = [r for r in rows if r["kind"] == "frontier"]
    measured = [r["measured"]["time"] for r in front]
    out["tau"] = {s: kendall_tau_b(measured, [r[s]["time"] for r in front]) if len(front) > 1 else float("nan")
                  for s in ("additive", "simulated")}
    spread = [r["measured"]["time_spread"] for r in front]
    out["tau_resolved"] = {s: tau_on_resolved_pairs(measured, spread, [r[s]["time"] for r in front])
                           for s in ("additive", "simulated")}
    halves = [[r["measured"][f"time_{h}_rounds"] for r in front] for h in ("even", "odd")]
    out["tau_self"] = kendall_tau_b(*halves) if len(front) > 1 else float("nan")
    return out


def _print_row(name: str, r: dict) -> None:
    m, a, s = r["measured"], r["additive"], r["simulated"]
    print(f"  {name} {r['kind']:<8} measured {m['time'] * 1e3:8.2f} ms (IQR {m['time_spread'] * 1e3:.2f}, "
          f"{m['steps']:.0f} steps in {m['rounds']:.0f} rounds), net {m['network'] * 1e3:7.2f} ms, "
          f"ops {m['compute'] * 1e3:7.2f} ms, "
          f"{format_bytes(m['memory']):>10} | additive {a['time'] * 1e3:8.2f} ms, net "
          f"{a['network'] * 1e3:7.2f} ms, {format_bytes(a['memory']):>10} | simulated "
          f"{s['time'] * 1e3:8.2f} ms, net {s['network'] * 1e3:7.2f} ms, ops {s['compute'] * 1e3:7.2f} ms, "
          f"{format_bytes(s['memory']):>10}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench accuracy")
    parser.add_argument("--models", default="mlp,cnn,transformer,lstm")
    parser.add_argument("--size", default="small")
    parser.add_argument("--plans", type=int, default=20, help="sampled plans per model")
    parser.add_argument("--frontier", type=int, default=10, help="plans spread along each frontier")
    parser.add_argument("--steps", type=int, default=5, help="the fewest timed steps per plan (median)")
    parser.add_argument("--frontier-steps", type=int, default=60,
                        help="the fewest timed steps per frontier plan (median)")
    parser.add_argument("--seconds", type=float, default=3.0, help="the fewest timed seconds per plan")
    parser.add_argument("--rounds", type=int, default=6,
                        help="interleaved rounds over a group's plans (even: as many in each half)")
    parser.add_argument("--max-rounds", type=int, default=14,
                        help="the frontier's plans get two more rounds at a time, up to this many, "
                             f"while the run orders them against itself at tau < {SELF_TAU} (even "
                             "rounds against odd)")
    parser.add_argument("--group", type=int, default=10, help="plans held open and interleaved at once")
    parser.add_argument("--repeats", type=int, default=3, help="traced steps per plan (network, memory)")
    parser.add_argument("--cost-model", default="profiled", choices=["profiled", "analytical"])
    args = parser.parse_args(argv)
    counts = (args.steps, args.frontier_steps, args.repeats, args.rounds, args.group, args.max_rounds)
    if min(args.plans, args.frontier) < 0 or args.plans + args.frontier < 1 or min(counts) < 1 \
            or args.seconds < 0:
        parser.error("--plans/--frontier must be >= 0 (one plan at least); --steps, --frontier-steps, "
                     "--repeats, --rounds, --group, --max-rounds >= 1; --seconds >= 0")
    world = to.init()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    cores = os.cpu_count() or 1
    label = f"{world.size} ranks on {cores} cores" + (", OVERSUBSCRIBED" if world.size > cores else "")
    names = args.models.split(",")
    # Every model is searched and profiled before any is trained, as a job's rank 0 profiles
    # before its first training session: a process that has run TensorFlow sessions can
    # time the same op shard several times faster (a max-pool's two passes: 0.59 ms fresh,
    # 0.07-0.37 ms after other sessions ran).
    estimated = {}
    for name in names:
        to.reset_default_graph()
        models.build(name, size=args.size)
        graph = to.get_default_graph()
        estimated[name] = quiet_bcast(comm, _plans_and_estimates(graph, world, args) if world.rank == 0 else None)
    results = []
    for name in names:
        to.reset_default_graph()
        spec = models.build(name, size=args.size)
        rows = estimated[name]
        feed = spec.feed(np.random.default_rng(0))
        load = ForeignLoad(comm)
        for kind in ("sampled", "frontier"):    # a group never mixes the two
            of_kind = [r for r in rows if r["kind"] == kind]
            for start in range(0, len(of_kind), args.group):
                group = of_kind[start:start + args.group]
                frontier = kind == "frontier"
                measured = measure_group(spec, [to.Plan.from_json(r["plan"]) for r in group], feed, comm,
                                         rounds=args.rounds,
                                         min_steps=args.frontier_steps if frontier else args.steps,
                                         min_time_s=args.seconds,
                                         repeats=args.repeats,
                                         max_rounds=args.max_rounds if frontier else None,
                                         settled=agrees_with_itself if frontier else None)
                for r, m in zip(group, measured):
                    r["measured"] = m
                    if world.rank == 0:
                        _print_row(name, r)
        results.append((name, {**_summary(rows), "others_cpu": load.share()}))
    if world.rank == 0:
        print(f"\n(measured - estimated) / measured, {args.plans} sampled + {args.frontier} frontier plans per "
              f"model, {label}, {args.cost_model} costs, {args.size} models; mean |error| (signed mean):")
        print("\n".join(summary_lines(results)))
        print(calibration_line(profile_path()))
        loaded = [(name, r["others_cpu"]) for name, r in results
                  if r["others_cpu"] is not None and r["others_cpu"] > QUIET_SHARE]
        for name, share in loaded:
            print(describe(share, f"accuracy ({name})"))
    return 0


#: The run's order of the frontier plans against itself (even rounds against odd) at which
#: it stops adding rounds (``--max-rounds``).
SELF_TAU = 0.9


def agrees_with_itself(halves) -> bool:
    """True when the even- and odd-round medians of ``halves`` (per plan) order the plans
    alike at Kendall's tau-b >= ``SELF_TAU`` (or there are fewer than two plans)."""
    if len(halves) < 2:
        return True
    tau = kendall_tau_b([h[0] for h in halves], [h[1] for h in halves])
    return math.isnan(tau) or tau >= SELF_TAU


def calibration_line(path, now=None) -> str:
    """Which calibration profile priced the estimates, how old it is and how loaded the
    machine was while it measured: a profile is only as good as the hour it was made in."""
    if not os.path.exists(path):
        return f"calibration: none at {path}; estimates use nominal CPU figures (run tensoropt calibrate)"
    extra = CalibrationProfile.load(path).extra
    made = extra.get("created_utc")
    age = ""
    if made:
        now = now or datetime.datetime.now(datetime.timezone.utc)
        age = f", made {made} ({(now - datetime.datetime.fromisoformat(made)).total_seconds() / 3600:.1f} h ago)"
    share = extra.get("foreign_cpu_share")
    others = "" if share is None else f", other processes took {share:.1%} of the CPUs while it measured"
    return f"calibration: {path}{age}{others}"


def summary_lines(results) -> list[str]:
    """The bench's closing table: per ``(model, summary)`` of ``results`` (``_summary``),
    the additive and simulated errors and tau, then the targets."""
    lines = [f"{'model':<12}{'source':<11}{'time':>18}{'network':>18}{'peak memory':>18}{'tau (frontier)':>16}"
             f"{'tau, resolved pairs':>21}{'tau, run vs itself':>20}{'others CPU':>12}"]
    for name, summary in results:
        for source in ("additive", "simulated"):
            absolute, signed = summary[source]
            cells = "".join(f"{f'{a:.1%} ({s:+.1%})':>18}" for a, s in zip(absolute, signed))
            tau = summary["tau"][source]
            resolved, pairs = summary["tau_resolved"][source]
            own = summary["tau_self"]
            others = summary.get("others_cpu")
            lines.append(f"{name:<12}{source:<11}{cells}{_tau(tau):>16}{_tau(resolved) + f' ({pairs})':>21}"
                         f"{_tau(own):>20}{'n/a' if others is None else f'{others:.1%}':>12}")
    lines.append("targets: time <= 10%, memory <= 5%, tau >= 0.8 (n/a: fewer than two frontier plans, "
                 "or all their times tie)")
    lines.append("tau, resolved pairs: over the frontier pairs whose measured medians are further apart "
                 "than half their IQRs together (how many), not a target")
    lines.append("tau, run vs itself: the frontier plans' order in the even rounds against the odd rounds "
                 "(each half the steps), how far the run can order them at all, not a target")
    lines.append(f"others CPU: the share of the machine's CPU time other processes took while the model was "
                 f"measured (execution.machine_load); above {QUIET_SHARE:.0%}, its measured figures are slowed")
    return lines


def _tau(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"
