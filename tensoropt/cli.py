"""The ``tensoropt`` command (also ``python -m tensoropt``).

Usage::

    tensoropt models [--json] [--size paper]     # each zoo model's op count and bytes
"""

from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["main"]


def _cmd_models(args: argparse.Namespace) -> int:
    import tensoropt as to
    from tensoropt import models
    from tensoropt.stats import graph_stats

    rows = []
    for name in models.names():
        to.reset_default_graph()
        start = time.perf_counter()
        try:
            models.build(name, size=args.size)
        except KeyError:
            continue  # the model has no preset of that size
        stats = graph_stats(to.get_default_graph())
        rows.append({"model": name, "size": args.size, "ops": stats.ops, "compute_ops": stats.compute_ops,
                     "param_count": stats.param_count, "param_bytes": stats.param_bytes,
                     "saved_activation_bytes": stats.saved_activation_bytes,
                     "single_device_bytes": stats.single_device_bytes, "flops": stats.flops,
                     "record_s": round(time.perf_counter() - start, 4)})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    gib = 2.0 ** 30
    print(f"{'model':<22}{'ops':>7}{'params':>14}{'param GiB':>11}{'saved act GiB':>15}"
          f"{'1-device GiB':>14}{'TFLOP/iter':>12}")
    for r in rows:
        print(f"{r['model']:<22}{r['ops']:>7}{r['param_count']:>14,}{r['param_bytes'] / gib:>11.3f}"
              f"{r['saved_activation_bytes'] / gib:>15.3f}{r['single_device_bytes'] / gib:>14.3f}"
              f"{r['flops'] / 1e12:>12.2f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tensoropt", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("models", help="op count, parameter bytes and saved-activation bytes of each zoo model")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--size", default="paper", help="which preset of each model (paper, small, tiny)")
    p.set_defaults(func=_cmd_models)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
