"""Every method's row on the paper's Table 1 models (``python -m tensoropt.bench compare``).

    python -m tensoropt.bench compare [--models paper_rnn,paper_vgg16,paper_wide_resnet,paper_transformer]
                                      [--devices 16] [--budget-s 10] [--epsilon E] [--max-candidates N]
                                      [--skip mesh_tf,...]

For each model, on ``paper-v100x16`` scaled to ``--devices``: the ``tensoropt compare``
table (search seconds, time per iteration, memory per device, fits, slowdown against FT's
fastest fitting plan). Then per model it checks, printing PASS or FAIL: no method's plan
that fits is faster than FT's fastest fitting plan when FT is exact (FT is exact on the
cost model, so a violation is a bug in one of the two), and PaSE's time equals FT's
fastest when FT is exact and no memory limit binds. Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import math

import tensoropt as to
from tensoropt import models
from tensoropt.search.baselines.compare import METHODS, compare, comparison_table
from tensoropt.search.driver import SearchOptions

__all__ = ["main"]


def _checks(c) -> bool:
    rows = {r.method: r for r in c.rows}
    ft = rows.get("frontier")
    if ft is None or ft.plan is None or not c.frontier.track.exact:
        print("  (FT not exact here: no checks against it)")
        return True
    ok = True
    for r in c.rows:
        if r.plan is not None and r.fits and ft.fits and r.time_s < ft.time_s * (1 - 1e-9):
            print(f"  FAIL  {r.method} fits and is faster than FT: {r.time_s} < {ft.time_s}")
            ok = False
    pase = rows.get("pase")
    if pase is not None and pase.plan is not None:
        fastest = c.frontier.plans.points[-1][1]
        same = math.isclose(pase.time_s, fastest, rel_tol=1e-9)
        print(f"  {'PASS' if same else 'FAIL'}  PaSE's minimum time {pase.time_s:.6f} s vs FT's fastest "
              f"{fastest:.6f} s")
        ok &= same
    if ok:
        print("  PASS  no method that fits beats FT's fastest fitting plan")
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench compare")
    parser.add_argument("--models", default="paper_rnn,paper_vgg16,paper_wide_resnet,paper_transformer")
    parser.add_argument("--devices", type=int, default=16)
    parser.add_argument("--cluster", default="paper-v100x16")
    parser.add_argument("--budget-s", type=float, default=10.0)
    parser.add_argument("--epsilon", type=float, default=None)
    parser.add_argument("--max-candidates", type=int, default=None)
    parser.add_argument("--skip", default="", help="comma-separated methods to leave out")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    methods = [m for m in METHODS if m not in skip]
    search = SearchOptions(epsilon=args.epsilon, max_candidates=args.max_candidates)
    ok = True
    for name in filter(None, args.models.split(",")):
        to.reset_default_graph()
        models.build(name, size="paper")
        c = compare(to.get_default_graph(), args.cluster, args.devices, budget_s=args.budget_s, search=search,
                    methods=methods, model_name=name)
        print(comparison_table(c), flush=True)
        ok &= _checks(c)
        print(flush=True)
    return 0 if ok else 1
