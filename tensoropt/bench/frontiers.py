"""The paper's Table 1 models on its cluster: frontier figures and the claims they support.

    python -m tensoropt.bench frontiers [--models paper_transformer,paper_wide_resnet] [--devices 16]
                                        [--epsilon 0.01] [--max-candidates N] [--threads 2]

For each model, on ``paper-v100x16`` scaled to ``--devices``: search seconds (cost tables
and Frontier-Tracking; compare the paper's Table 3; plans are built only where printed),
the frontier's memory and time ranges, its turning point, where data parallel lies,
whether the frontier is exact (or approximate, with its error bound), and the process's
peak memory. Then it checks, and prints PASS or FAIL for:

- the frontier is non-empty and monotone (memory up, time strictly down);
- its fastest point is no slower than data parallel;
- its least-memory point needs less memory than data parallel;
- with ``--fit-devices`` (8 for WideResNet and the Transformer, as the paper's Figure 8,
  when ``--models`` names them; ``--fit-models`` names others): data parallel does not
  fit in 16 GB / 1.1, but some frontier plan does.

Exits 1 if any check fails.
"""

from __future__ import annotations

import argparse
import time

from frontier.bench import peak_resident_gib
import tensoropt as to
from tensoropt import models
from tensoropt.cli.progress import progress_bar
from tensoropt.cluster import get_cluster
from tensoropt.cli.report import turning_point
from tensoropt.search.approximation import approximation_line
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import SAFETY_MARGIN, fastest_fitting, frontier_for

GIB = 2.0 ** 30


def _check(name: str, ok: bool, detail: str) -> bool:
    print(f"  {'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)
    return ok


def _frontier(model: str, devices: int, search: SearchOptions):
    to.reset_default_graph()
    models.build(model, size="paper")
    start = time.perf_counter()
    with progress_bar(f"{model} on {devices} devices") as update:
        result = frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), devices,
                              progress=update, search=search)
    return result, time.perf_counter() - start


def report(model: str, devices: int, search: SearchOptions) -> bool:
    result, seconds = _frontier(model, devices, search)
    plans, dp = result.plans, result.data_parallel_plan()
    knee = plans[turning_point(plans)]
    s = result.stats
    print(f"{model} on paper-v100x16@{devices}: {len(plans)} frontier plans, search {seconds:.1f} s "
          f"(cost tables {s['build_s']:.1f} s, FT-LDP {s['track_s']:.1f} s)")
    print(f"  memory/device {plans[0].memory_bytes / GIB:.2f} .. {plans[-1].memory_bytes / GIB:.2f} GiB, "
          f"time/iter {plans[-1].time_s:.4f} .. {plans[0].time_s:.4f} s")
    print(f"  turning point: {knee.memory_bytes / GIB:.2f} GiB, {knee.time_s:.4f} s "
          f"(network {knee.network_s:.4f} s, compute {knee.compute_s:.4f} s)")
    print(f"  data parallel: {dp.memory_bytes / GIB:.2f} GiB, {dp.time_s:.4f} s "
          f"(network {dp.network_s:.4f} s, compute {dp.compute_s:.4f} s)")
    print(f"  {approximation_line(s['frontier'])}")
    print(f"  largest frontier cell {s['frontier'].max_cell_points} points; "
          f"peak memory so far {peak_resident_gib():.1f} GiB "
          "(this process, plus its largest forked rule run)", flush=True)
    mems = [m for m, _ in plans.points]
    times = [t for _, t in plans.points]
    ok = _check("non-empty and monotone", bool(plans) and mems == sorted(mems)
                and all(a > b for a, b in zip(times, times[1:])), f"{len(plans)} points")
    ok &= _check("fastest no slower than data parallel", times[-1] <= dp.time_s,
                 f"{times[-1]:.4f} s vs {dp.time_s:.4f} s")
    ok &= _check("least memory below data parallel", mems[0] < dp.memory_bytes,
                 f"{mems[0] / GIB:.2f} GiB vs {dp.memory_bytes / GIB:.2f} GiB")
    return ok


def fits(model: str, devices: int, search: SearchOptions) -> bool:
    result, _ = _frontier(model, devices, search)
    limit = get_cluster("paper-v100x16").memory_bytes / SAFETY_MARGIN
    dp = result.data_parallel_plan()
    best = fastest_fitting(result.plans, limit)
    return _check(f"on {devices} x 16 GB data parallel does not fit, a frontier plan does",
                  dp.memory_bytes > limit and best is not None,
                  f"limit {limit / GIB:.2f} GiB; data parallel {dp.memory_bytes / GIB:.2f} GiB; "
                  + (f"fastest fitting plan {best.memory_bytes / GIB:.2f} GiB, {best.time_s:.4f} s"
                     if best else "no frontier plan fits"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench frontiers")
    parser.add_argument("--models", default="paper_rnn,paper_vgg16,paper_wide_resnet,paper_transformer")
    parser.add_argument("--devices", type=int, default=16)
    parser.add_argument("--fit-models", default=None,
                        help="models for the --fit-devices check (default: WideResNet and "
                             "the Transformer, those of them in --models; '' for none)")
    parser.add_argument("--fit-devices", type=int, default=8)
    parser.add_argument("--epsilon", type=float, default=None,
                        help="search epsilon-approximate frontiers (see frontier.track); "
                             "default exact")
    parser.add_argument("--max-candidates", type=int, default=None,
                        help="bound each Frontier-Tracking product to about N candidates "
                             "(see frontier.track); the error bound reached is printed")
    parser.add_argument("--threads", type=int, default=1, help="Frontier-Tracking threads")
    args = parser.parse_args(argv)
    search = SearchOptions(epsilon=args.epsilon, max_candidates=args.max_candidates,
                           threads=args.threads)
    if args.max_candidates:
        print(f"max candidates = {args.max_candidates}: products are thinned to bound the "
              "search time; each model's line gives the error bound this reached")
    elif args.epsilon:
        print(f"epsilon = {args.epsilon}: every exact frontier point has a plan here with no "
              f"more memory and at most {1 + args.epsilon:g} times its time")
    ok = True
    for model in filter(None, args.models.split(",")):
        ok &= report(model, args.devices, search)
    fit_models = args.fit_models
    if fit_models is None:
        fit_models = ",".join(m for m in ("paper_wide_resnet", "paper_transformer")
                              if m in args.models.split(","))
    for model in filter(None, fit_models.split(",")):
        ok &= fits(model, args.fit_devices, search)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1
