"""The simulator's part of the ``tensoropt`` command: ``frontier --simulate``, ``plan``
and ``simulate``.

Usage::

    tensoropt frontier --model M --cluster C --devices N --simulate {auto,all,N} [--trace-dir DIR]
    tensoropt plan --model M --cluster C --devices N --option mini_time --out plan.json
    tensoropt simulate --model M --cluster C --devices N --plan plan.json --trace out.json
                       [--collective-order chained|free] [--ranks representative|all]

``--simulate auto`` checks up to 64 frontier plans (both ends, the turning point, the
``mini_time`` choice, evenly spaced ones), ``all`` every plan, ``N`` up to N plans
(``simulator.check``). Errors (a plan for another graph or device count, an unknown
option, an unwritable path, profiled costs without a calibration profile) end the
command with a message that says how to fix them.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Optional

import tensoropt as to
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.plan import Plan
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import SAFETY_MARGIN, SearchSettings, choose_plan
from tensoropt.simulator.check import check_frontier
from tensoropt.simulator.plan_options import SimOptions
from tensoropt.simulator.plan_sim import check_plan_shape, simulate_plan
from tensoropt.simulator.trace import chrome_trace
from tensoropt.units import format_bytes
from tensoropt.validation import positive_float

__all__ = ["add_simulate_arguments", "frontier_check", "cmd_plan", "cmd_simulate",
           "add_commands"]


def _fail(command: str, error: Exception) -> SystemExit:
    return SystemExit(f"tensoropt {command}: {error}")


def _simulate_budget(value: str) -> str:
    if value in ("auto", "all") or (value.isdigit() and int(value) >= 1):
        return value
    raise argparse.ArgumentTypeError(f"{value!r}: give auto, all or a number of plans >= 1")


def add_simulate_arguments(p: argparse.ArgumentParser) -> None:
    """``frontier``'s ``--simulate`` and ``--trace-dir``."""
    p.add_argument("--simulate", type=_simulate_budget, default=None, metavar="{auto,all,N}",
                   help="simulate the frontier's plans in FT order and add simulated columns, "
                        "the check's summary and (with --json) simulator_check")
    p.add_argument("--trace-dir", default=None, metavar="DIR",
                   help="with --simulate: write each simulated plan's Chrome trace here")


def frontier_check(args: argparse.Namespace, result: Any, cluster: Any) -> Optional[Any]:
    """The ``FrontierCheck`` ``frontier --simulate`` asks for, or None."""
    if args.simulate is None:
        if args.trace_dir is not None:
            raise _fail("frontier", ValueError("--trace-dir needs --simulate {auto,all,N}"))
        return None
    budget = {"auto": 64, "all": len(result.plans)}.get(args.simulate) or int(args.simulate)
    try:
        return check_frontier(result, cluster, memory_limit=cluster.memory_bytes / SAFETY_MARGIN,
                              budget=budget, trace_dir=args.trace_dir)
    except ValueError as e:
        raise _fail("frontier", e) from None


def _record(model: str, size: str):
    to.reset_default_graph()
    models.build(model, size=size)
    return to.get_default_graph()


def cmd_plan(args: argparse.Namespace) -> int:
    """``tensoropt plan``: search and save the chosen plan."""
    try:
        cluster = get_cluster(args.cluster, devices=args.devices)
        graph = _record(args.model, args.size)
        settings = SearchSettings(cluster, args.option, args.memory_limit, cluster.devices,
                                  cost_model=args.cost_model, search=SearchOptions(epsilon=args.epsilon))
        summary = choose_plan(graph, settings)
        summary.chosen.save(args.out)
    except (ValueError, OSError) as e:
        raise _fail("plan", e) from None
    print(f"{summary.chosen}\nsaved to {args.out}")
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """``tensoropt simulate``: one training step of a saved plan."""
    try:
        options = SimOptions(collective_order=args.collective_order, ranks=args.ranks)
        if args.trace and not os.access(os.path.dirname(os.path.abspath(args.trace)), os.W_OK):
            raise ValueError(f"cannot write the trace to {args.trace!r}: give a path in an existing, "
                             "writable directory")
        plan = Plan.load(args.plan)
        cluster = get_cluster(args.cluster, devices=args.devices or plan.parallelism)
        graph = _record(args.model, args.size)
        check_plan_shape(graph, plan, cluster.devices)
        result = simulate_plan(graph, plan, cluster, args.cost_model, options)
        if args.trace:
            chrome_trace(result, args.trace)
    except (ValueError, OSError) as e:
        raise _fail("simulate", e) from None
    print(f"{plan}\n  simulated ({options.collective_order} collectives): time/iter "
          f"{result.makespan_s:.4g} s (estimate {plan.time_s:.4g} s), peak memory/device "
          f"{format_bytes(result.peak_memory_bytes)} (estimate {format_bytes(plan.memory_bytes)}), "
          f"exposed network {result.exposed_network_s:.4g} s")
    peak = result.ranks[0].memory
    print(f"  peak at {peak.peak_time_s:.4g} s; largest live: " + ", ".join(
        f"{b.name} ({b.size_bytes / 2**20:.1f} MiB, {b.why})" for b in peak.live_at_peak[:5]))
    if args.trace:
        print(f"  trace written to {args.trace} (open it in https://ui.perfetto.dev)")
    return 0


def add_commands(sub: Any, model_arguments) -> None:
    """Registers ``plan`` and ``simulate``; ``model_arguments(p)`` adds --model, --size,
    --cluster, --devices and --cost-model."""
    p = sub.add_parser("plan", help="search a model's plan and save it as JSON")
    model_arguments(p)
    p.add_argument("--option", default="mini_time", choices=["mini_time", "mini_parallelism"])
    p.add_argument("--memory-limit", type=positive_float, default=None, help="bytes per device (default memory/1.1)")
    p.add_argument("--epsilon", type=float, default=None, help="search an epsilon-approximate frontier")
    p.add_argument("--out", required=True, help="where to write the plan (JSON)")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("simulate", help="simulate one training step of a saved plan")
    model_arguments(p)
    p.add_argument("--plan", required=True, help="a plan saved by tensoropt plan or Plan.save")
    p.add_argument("--trace", default=None, help="write a Chrome trace (Perfetto) here")
    p.add_argument("--collective-order", default="chained", help="chained (as built) or free")
    p.add_argument("--ranks", default="representative", help="representative or all")
    p.set_defaults(func=cmd_simulate)
