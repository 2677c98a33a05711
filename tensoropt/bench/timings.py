"""Timings the tests do not assert: how long recording each zoo model at paper size
takes (the target: under 3 s each), and whether measured compute follows the work (the
targets: 4x the matmul FLOPs measure > 2x the time; a 4-way split of a matmul or a conv
measures < 0.6x the whole).

Usage::

    python -m tensoropt.bench timings [--skip-recording] [--skip-profiler]

Prints one line per figure with its target and ok|MISSED; exits 0 (timings on a shared
machine are noisy: re-run on a quiet one before drawing conclusions). The profiler
measures with ``statistic="min"`` over interleaved rounds, keeping each shard's
least-disturbed round.
"""

from __future__ import annotations

import argparse
import time

import tensoropt as to
from tensoropt import models
from tensoropt.configs import Config
from tensoropt.costs.profiler import ComputeProfiler, local_shard

__all__ = ["recording_seconds", "profiler_ratios", "main"]

RECORDING_TARGET_S = 3.0


def recording_seconds() -> dict[str, float]:
    """Seconds to record each zoo model at paper size (no TensorFlow object is made)."""

    out = {}
    for name in models.names():
        to.reset_default_graph()
        start = time.perf_counter()
        models.build(name, size="paper")
        out[name] = time.perf_counter() - start
    to.reset_default_graph()
    return out


def _steady(profiler, pairs, rounds: int = 3) -> list[float]:
    best = [float("inf")] * len(pairs)
    for _ in range(rounds):
        for i, (op, config) in enumerate(pairs):
            best[i] = min(best[i], profiler.measure(op, local_shard(op, config)).seconds)
    return best


def profiler_ratios() -> dict[str, tuple[float, str, float]]:
    """{figure: (measured ratio, "<" or ">", target)} of measured compute times."""

    one = Config((1,), (None,))
    to.reset_default_graph()
    p = ComputeProfiler(cache_path=None, warmup=2, min_runs=7, max_runs=30, min_time_s=0.15, statistic="min")

    def matmul(m: int):
        x = to.placeholder(to.float32, [m, 512])
        return to.matmul(x, to.get_variable(f"w{m}", [512, 512])).op

    small, large = matmul(512), matmul(2048)
    t_small, t_large, t_m4, t_mn = _steady(p, [(small, one), (large, one), (large, Config((4,), ("m",))),
                                               (large, Config((2, 2), ("m", "n")))])
    x = to.placeholder(to.float32, [32, 32, 32, 32])
    conv = to.nn.conv2d(x, to.get_variable("f", [3, 3, 32, 64]), strides=1, padding="SAME").op
    whole, shard = _steady(p, [(conv, one), (conv, Config((4,), ("b",)))])
    to.reset_default_graph()
    return {"matmul 4x FLOPs / 1x": (t_large / t_small, ">", 2.0),
            "matmul [4] m split / whole": (t_m4 / t_large, "<", 0.6),
            "matmul [2,2] m,n split / whole": (t_mn / t_large, "<", 0.6),
            "conv [4] batch split / whole": (shard / whole, "<", 0.6)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench timings", description=__doc__.split("\n")[0])
    parser.add_argument("--skip-recording", action="store_true")
    parser.add_argument("--skip-profiler", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_recording:
        print(f"recording at paper size (target < {RECORDING_TARGET_S:.0f} s each):")
        for name, seconds in recording_seconds().items():
            print(f"  {name:<22}{seconds:>8.3f} s  {'ok' if seconds < RECORDING_TARGET_S else 'MISSED'}")
    if not args.skip_profiler:
        print("measured compute follows the work (ratios of least-disturbed measurements):")
        for figure, (ratio, sign, target) in profiler_ratios().items():
            ok = ratio > target if sign == ">" else ratio < target
            print(f"  {figure:<34}{ratio:>8.3f}  target {sign} {target}  {'ok' if ok else 'MISSED'}")
    return 0
