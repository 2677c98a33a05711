"""PaSE's benchmark models on our frontier search, beside PaSE's own DP timings.

    python -m tensoropt.bench pase [--models inception_v3,resnet101,pase_transformer]
                                   [--devices 16,32,64] [--epsilon E [--relative]]
                                   [--max-candidates N] [--threads N]

For each model (the zoo's PaSE shapes: InceptionV3 and ResNet101 at batch 128, the
Transformer at batch 64) and device count, on ``paper-v100x16`` scaled to that count, it
prints the search's seconds split into pricing (configurations and edge tables) and
Frontier-Tracking, its whole CPU seconds and peak resident memory (with ``--threads``
2 or more the rules run at once in forked processes: their CPU seconds are added, and
the peak is the search process's plus the largest rule process's, a bound), the
frontier's plan count, its error bound (seconds, 0 when exact; with ``--relative`` the
largest share of a plan's own time, e.g. ``1.00%``; ``+h`` when heuristic eliminations
fixed some ops, which the bound does not cover; such a model is tracked once per
``--heuristics`` rule and the frontiers merged), the fastest plan's estimated time, and
the seconds PaSE's DP took on this 2-core machine for its single minimum-time point
(issue 14's table; ``>`` means it did not finish in that time). Each search runs in a
child process of its own (so its peak memory is its own), stopped after ``--timeout``
seconds and printed as ``>T s`` (or as ``signal 9`` when the kernel's out-of-memory
killer stopped it). A search that raises (a device count the model cannot use, say) is
printed as an ``error:`` row and the others still run; the exit status is then 1.

PaSE returns one point; this search returns the whole memory/time frontier.
"""

from __future__ import annotations

import argparse
import time

from frontier.bench import cpu_seconds, peak_resident_gib
from frontier.bench import run_in_child as run_in_frontier_child
from tensoropt.search.driver import SearchOptions

__all__ = ["PASE_DP_SECONDS", "run", "main"]

#: PaSE's DP (min time only, its own cost model) on this machine: model -> devices ->
#: (seconds, finished); unfinished runs were stopped at the seconds given.
PASE_DP_SECONDS = {
    "inception_v3": {16: (12.0, True), 32: (36.0, True), 64: (99.0, True)},
    "resnet101": {16: (69.0, True), 32: (252.0, True), 64: (300.0, False)},
    "pase_transformer": {16: (168.0, True), 32: (300.0, False), 64: (300.0, False)},
}


def run(model: str, devices: int, search: SearchOptions) -> dict:
    """Searches one model's frontier; returns its figures."""
    import tensoropt as to
    from tensoropt import models
    from tensoropt.cluster import get_cluster
    from tensoropt.search.strategy import frontier_for

    to.reset_default_graph()
    models.build(model, size="paper")
    start, cpu = time.perf_counter(), cpu_seconds()
    result = frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), devices,
                          search=search)
    total, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    stats = result.stats
    plans = result.plans
    return {"model": model, "devices": devices, "pricing_s": stats["build_s"],
            "tracking_s": stats["track_s"], "total_s": total, "cpu_s": cpu, "plans": len(plans),
            "bound_s": stats["frontier"].time_error_bound_s,
            "relative_bound": (stats["frontier"].relative_error_bound
                               if stats["frontier"].relative else None),
            "heuristic": stats["frontier"].heuristic_eliminations,
            "peak_gib": peak_resident_gib(),
            "fastest_s": min(t for _, t in plans.points)}


def _search(model: str, devices: int, search: SearchOptions) -> dict:
    return run(model, devices, search)   # looked up when called: tests replace ``run``


def run_in_child(model: str, devices: int, search: SearchOptions, timeout: float) -> dict:
    """``run`` in a child process of its own (``frontier.bench.run_in_child``): its
    figures, or ``{"stopped": text}`` (``">900 s"``, ``"signal 9"``: killed, on Linux
    usually for memory).

    Raises:
        RuntimeError: the search raised in the child (its error is in the message).
    """
    return run_in_frontier_child(_search, (model, devices, search), timeout,
                                 label=f"{model} on {devices} devices")


def _reference(model: str, devices: int) -> str:
    seconds, finished = PASE_DP_SECONDS.get(model, {}).get(devices, (None, True))
    if seconds is None:
        return "-"
    return f"{seconds:.0f} s" if finished else f"> {seconds:.0f} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench pase")
    parser.add_argument("--models", default="inception_v3,resnet101,pase_transformer")
    parser.add_argument("--devices", default="16,32,64", help="comma-separated device counts")
    parser.add_argument("--epsilon", type=float, default=None,
                        help="epsilon-approximate frontiers (default exact)")
    parser.add_argument("--max-candidates", type=int, default=None)
    parser.add_argument("--relative", action="store_true",
                        help="with --epsilon, each plan's error relative to its own time")
    parser.add_argument("--threads", type=int, default=1, help="Frontier-Tracking threads")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per search")
    parser.add_argument("--heuristics", default="min_memory,min_time",
                        help="heuristic elimination rules, one run each where a model needs one "
                             "(SearchOptions.heuristics); min_memory alone runs once")
    args = parser.parse_args(argv)
    try:
        counts = [int(d) for d in args.devices.split(",") if d]
    except ValueError:
        parser.error(f"--devices {args.devices!r}: give comma-separated ints, e.g. 16,32,64")
    try:
        search = SearchOptions(epsilon=args.epsilon, max_candidates=args.max_candidates,
                               threads=args.threads, relative=args.relative,
                               heuristics=tuple(filter(None, args.heuristics.split(","))))
    except ValueError as err:
        parser.error(str(err))
    print(f"{'model':<18}{'devices':>8}{'pricing s':>11}{'tracking s':>12}{'total s':>10}"
          f"{'cpu s':>8}{'peak GiB':>10}{'plans':>7}{'bound s':>11}{'fastest s':>11}"
          "  PaSE DP (one point)", flush=True)
    failed = 0
    for model in filter(None, args.models.split(",")):
        for devices in counts:
            try:
                r = run_in_child(model, devices, search, args.timeout)
            except RuntimeError as err:   # the search raised: say so, run the others
                failed += 1
                print(f"{model:<18}{devices:>8}  error: {err}", flush=True)
                continue
            if "stopped" in r:
                print(f"{model:<18}{devices:>8}  {r['stopped']:<78}  {_reference(model, devices)}",
                      flush=True)
                continue
            bound = (f"{r['bound_s']:.3g}" if r.get("relative_bound") is None
                     else f"{r['relative_bound']:.2%}") + ("+h" if r["heuristic"] else "")
            print(f"{model:<18}{devices:>8}{r['pricing_s']:>11.1f}{r['tracking_s']:>12.1f}"
                  f"{r['total_s']:>10.1f}{r['cpu_s']:>8.1f}{r['peak_gib']:>10.2f}{r['plans']:>7}"
                  f"{bound:>11}{r['fastest_s']:>11.4f}  {_reference(model, devices)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
