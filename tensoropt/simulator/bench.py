"""Benchmark: full vs delta simulation on a graph shaped like a training step.

Usage::

    python -m tensoropt.simulator.bench                    # 1250 ops (~19k tasks), 40 plans
    python -m tensoropt.simulator.bench --ops 300 --plans 10 --changes 2

It builds ``synthetic.training_step`` (forward chain with per-op collectives, backward in
reverse, gradient all-reduces, one collective chain; see that module), simulates a random
plan, then walks ``--plans`` plans, each differing from the previous in ``--changes``
random ops' configurations. Each plan is simulated twice: from scratch
(``simulate_full``: assembling every fragment and running the whole event loop) and by
delta from the window (``simulate``). It prints the tasks per plan, the seconds per plan
of each (wall and CPU; fragments are built once beforehand and reported apart), the
speed-up (target >= 2x), how much of the delta went through the event loop, and checks
every plan: delta == full on every task's start and end, the makespan and the peak
memory. Exits 1 if any plan differs.

``run(...)`` returns the figures as a dict (for ``python -m tensoropt.bench simulator``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Optional

import numpy as np

from tensoropt.simulator.delta import DeltaSimulator
from tensoropt.simulator.memory import peak_memory_bytes
from tensoropt.simulator.synthetic import training_step

__all__ = ["run", "main"]


def run(n_ops: int = 1250, plans: int = 40, changes: int = 1, seed: int = 0,
        window: int = 8) -> dict[str, Any]:
    """Times full vs delta simulation (see module doc); returns the figures."""
    spec = training_step(n_ops, seed=seed)
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources, window=window)
    w0 = time.perf_counter()
    for k, n in enumerate(spec.num_versions):
        for v in range(n):
            sim._reg.template(k, v)
    build_s = time.perf_counter() - w0
    rng = np.random.default_rng(seed)
    v = spec.random_versions(rng)
    first = sim.simulate(v)
    ops = [k for k, key in enumerate(spec.keys) if key.startswith("op")]
    full_w = full_c = delta_w = delta_c = 0.0
    loop = mirrored = segments = tasks = verified = 0
    for _ in range(plans):
        for k in rng.choice(ops, changes, replace=False):
            n = spec.num_versions[k]
            v[k] = (v[k] + 1 + rng.integers(n - 1)) % n
        w, c = time.perf_counter(), time.process_time()
        full = sim.simulate_full(v)
        full_peak = peak_memory_bytes(full)
        w2, c2 = time.perf_counter(), time.process_time()
        delta = sim.simulate(v)
        delta_peak = peak_memory_bytes(delta)
        w3, c3 = time.perf_counter(), time.process_time()
        full_w, full_c = full_w + w2 - w, full_c + c2 - c
        delta_w, delta_c = delta_w + w3 - w2, delta_c + c3 - c2
        verified += bool(np.array_equal(full.start_ps, delta.start_ps)
                         and np.array_equal(full.end_ps, delta.end_ps)
                         and full.makespan_ps == delta.makespan_ps and full_peak == delta_peak)
        s = delta.stats
        loop, mirrored, segments = loop + s.loop_tasks, mirrored + s.mirrored_tasks, \
            segments + s.segments
        tasks += delta.graph.num_tasks
    return {"ops": n_ops, "plans": plans, "changes": changes, "seed": seed,
            "tasks_per_plan": tasks / plans, "edges": len(first.graph.edge_src),
            "fragments": sum(spec.num_versions), "build_s": build_s,
            "full_s": full_w / plans, "full_cpu_s": full_c / plans,
            "delta_s": delta_w / plans, "delta_cpu_s": delta_c / plans,
            "speedup": full_w / delta_w, "loop_fraction": loop / tasks,
            "mirrored_fraction": mirrored / tasks, "loop_runs": segments / plans,
            "verified": verified}


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensoropt.simulator.bench",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=1250, help="ops in the training step")
    ap.add_argument("--plans", type=int, default=40, help="plans to simulate")
    ap.add_argument("--changes", type=int, default=1, help="ops changed per plan")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window", type=int, default=8, help="delta bases kept")
    a = ap.parse_args(argv)
    if a.ops < 2 or a.plans < 1 or not 1 <= a.changes <= a.ops or a.window < 1:
        ap.error("need --ops >= 2, --plans >= 1, 1 <= --changes <= --ops, --window >= 1")
    r = run(a.ops, a.plans, a.changes, a.seed, a.window)
    print(f"simulator bench: training step of {r['ops']} ops, {r['plans']} plans, "
          f"{r['changes']} op(s) changed per plan (seed {r['seed']})")
    print(f"  tasks per plan      {r['tasks_per_plan']:,.0f} (edges {r['edges']:,})")
    print(f"  fragments built     {r['fragments']:,} in {r['build_s']:.2f} s (once, apart)")
    print(f"  full  per plan      {r['full_s']:.4f} s wall  {r['full_cpu_s']:.4f} s cpu")
    print(f"  delta per plan      {r['delta_s']:.4f} s wall  {r['delta_cpu_s']:.4f} s cpu")
    print(f"  speed-up            {r['speedup']:.1f}x (target >= 2x)")
    print(f"  delta work          {100 * r['loop_fraction']:.2f}% of tasks through the event "
          f"loop, {100 * r['mirrored_fraction']:.2f}% copied; {r['loop_runs']:.1f} loop "
          "runs per plan")
    ok = r["verified"] == r["plans"]
    print(f"  {'PASS' if ok else 'FAIL'}  delta == full on {r['verified']}/{r['plans']} plans "
          "(every start and end, makespan, peak memory)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
