"""``python -m tensoropt.costs.profiler``: profile every op of a model under every configuration.

Prints, per compute op: its configurations on N devices, the measured and analytical
(roofline) time of the whole op on one device, and the fastest measured shard; then
totals and cache statistics. Measurements go to the profile cache, so a second run is
served from it.

Usage::

    python -m tensoropt.costs.profiler --model demo --devices 4
    python -m tensoropt.costs.profiler --model mlp --size tiny --devices 4 --cache /tmp/p.json
"""

from __future__ import annotations

import argparse
import sys
import time

import tensoropt as to
from tensoropt import models
from tensoropt.configs import Config, enumerate_configs
from tensoropt.costs.profiler import SOURCE_KINDS, AnalyticalCompute, ComputeProfiler, profile_graph

__all__ = ["main"]


def _build(name: str, size: str):
    to.reset_default_graph()
    if name == "demo":  # a 2-layer MLP with a softmax loss; needs no model zoo
        x = to.placeholder(to.float32, [256, 1024], name="x")
        y = to.placeholder(to.int32, [256], name="y")
        h = to.nn.relu(to.matmul(x, to.get_variable("w1", [1024, 1024])))
        logits = to.matmul(h, to.get_variable("w2", [1024, 10]))
        to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    else:
        models.build(name, size=size)
    return to.get_default_graph()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.costs.profiler",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="demo", help="'demo' or a zoo model name")
    parser.add_argument("--size", default="tiny", help="zoo preset (tiny, small, paper)")
    parser.add_argument("--devices", type=int, default=4, help="devices to enumerate configurations for")
    parser.add_argument("--cache", default=None, help="profile file (default ~/.cache/tensoropt/"
                        "compute-profile.json); 'none' keeps it in memory")
    parser.add_argument("--threads", type=int, default=None, help="TensorFlow intra-op threads")
    parser.add_argument("--peak-flops", type=float, default=1e11,
                        help="peak FLOP/s for the analytical column (default 1e11)")
    args = parser.parse_args(argv)

    graph = _build(args.model, args.size)
    kwargs = {} if args.cache is None else {"cache_path": None if args.cache == "none" else args.cache}
    profiler = ComputeProfiler(threads=args.threads, **kwargs)
    analytical = AnalyticalCompute(args.peak_flops)
    last = [time.perf_counter()]

    def progress(done: int, total: int, name: str) -> None:
        if time.perf_counter() - last[0] > 2.0:
            last[0] = time.perf_counter()
            print(f"  profiled {done}/{total} ops ({name})", file=sys.stderr)

    summary = profile_graph(graph, args.devices, profiler, progress=progress)
    one = Config((1,), (None,))
    print(f"{'op':<36}{'kind':<20}{'configs':>8}{'1-dev ms':>10}{'roofline ms':>12}"
          f"{'best shard ms':>14}  best config")
    total_measured = total_analytical = 0.0
    for op in graph.operations:
        if op.kind in SOURCE_KINDS:
            continue
        configs = enumerate_configs(op, args.devices)
        whole = profiler.compute_s(op, one)
        roof = analytical.compute_s(op, one)
        best = min(configs, key=lambda c: profiler.compute_s(op, c))
        total_measured += whole
        total_analytical += roof
        print(f"{op.name[-35:]:<36}{op.kind[:19]:<20}{len(configs):>8}{whole * 1e3:>10.3f}"
              f"{roof * 1e3:>12.3f}{profiler.compute_s(op, best) * 1e3:>14.3f}  {best}")
    print(f"\n{summary.ops} compute ops, {summary.configs} (op, config) pairs on {args.devices} devices: "
          f"{summary.measured} measured, {summary.cached} from the cache, {summary.seconds:.1f} s")
    print(f"one device, whole model forward+backward: measured {total_measured * 1e3:.2f} ms, "
          f"roofline at {args.peak_flops:.3g} FLOP/s {total_analytical * 1e3:.2f} ms")
    print(f"cache: {profiler.cache.path or 'memory only'} ({len(profiler.cache)} entries)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
