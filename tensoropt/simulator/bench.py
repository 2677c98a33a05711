"""Benchmark: full vs delta simulation on a graph shaped like a training step, and the
FT-ordered check on real frontiers.

Usage::

    python -m tensoropt.bench simulator                    # frontiers (see bench_plans)
    python -m tensoropt.bench simulator --models paper_vgg16@8 --epsilon 0.05
    python -m tensoropt.simulator.bench --synthetic        # 1250 ops (~19k tasks), 40 plans
    python -m tensoropt.simulator.bench --synthetic --ops 300 --plans 10 --changes 2

Without ``--synthetic`` it runs ``bench_plans`` on the frontiers of ``paper_vgg16`` at 8
devices and ``paper_wide_resnet`` at 16 (epsilon 0.05). With it:

It builds ``synthetic.training_step`` (forward chain with per-op collectives, backward in
reverse, gradient all-reduces, one collective chain; see that module), simulates a random
plan, then walks ``--plans`` plans, each differing from the previous one in ``--changes``
random ops' configurations. For each plan, as ``DeltaSimulator`` does it:

1. *graph*: the plan's task graph, spliced from the nearest recent state's graph
   (both full and delta simulation need it; timed once per plan);
2. *full simulation*: the event loop over every task (``engine.simulate``);
3. *delta simulation*: from the nearest recent state (``_delta_run.delta_run``);
4. *memory*: the liveness memory timeline (both need it; timed once per plan).

It prints the tasks per plan, each part's seconds per plan (CPU time, and wall time for
the totals; fragments are built once beforehand and reported apart), the event loop's
tasks per second, the speed-up of delta over full for the simulation alone and per plan
with graph and memory (target >= 2x), and checks every plan: delta == full on every
task's start and end, the makespan and the peak memory. Exits 1 if any plan differs.

``run(...)`` returns the figures as a dict (for ``python -m tensoropt.bench simulator``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Optional

import numpy as np

from tensoropt.simulator._assemble import splice
from tensoropt.simulator._delta_run import delta_run
from tensoropt.simulator.delta import DeltaSimulator
from tensoropt.simulator.engine import simulate
from tensoropt.simulator.memory import peak_memory_bytes
from tensoropt.simulator.bench_plans import DEFAULT_MODELS, print_frontier, run_frontier
from tensoropt.simulator.synthetic import training_step

__all__ = ["run", "main"]


class _Clock:
    """Accumulates CPU and wall seconds per named part."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}

    def __call__(self, part: str, fn, *args):
        c, w = time.process_time(), time.perf_counter()
        out = fn(*args)
        self.cpu[part] = self.cpu.get(part, 0.0) + time.process_time() - c
        self.wall[part] = self.wall.get(part, 0.0) + time.perf_counter() - w
        return out


def run(n_ops: int = 1250, plans: int = 40, changes: int = 1, seed: int = 0,
        window: int = 8) -> dict[str, Any]:
    """Times full vs delta simulation (see module doc); returns the figures (seconds per
    plan; CPU unless the key ends in ``_wall_s``)."""
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
    clock = _Clock()
    loop = mirrored = segments = tasks = verified = 0
    for _ in range(plans):
        for k in rng.choice(ops, changes, replace=False):
            n = spec.num_versions[k]
            v[k] = (v[k] + 1 + rng.integers(n - 1)) % n
        state, _ = sim._nearest(v)
        layout, changed = clock("graph", splice, state.layout, v, sim._reg)
        n_tasks = layout.graph.num_tasks
        dense = max(1000, n_tasks // 10) if sim.dense_after is None else sim.dense_after
        delta = clock("delta", delta_run, state.base, layout, changed, sim.min_span, dense)
        full_layout, _ = splice(state.layout, v, sim._reg)      # its own graph, untimed
        full = clock("full", simulate, full_layout.graph)
        delta_peak = clock("memory", peak_memory_bytes, delta)
        verified += bool(np.array_equal(full.start_ps, delta.start_ps)
                         and np.array_equal(full.end_ps, delta.end_ps)
                         and full.makespan_ps == delta.makespan_ps
                         and peak_memory_bytes(full) == delta_peak)
        sim._remember(layout, delta)
        s = delta.stats
        loop, mirrored, segments = loop + s.loop_tasks, mirrored + s.mirrored_tasks, \
            segments + s.segments
        tasks += n_tasks
    cpu = {k: x / plans for k, x in clock.cpu.items()}
    wall = {k: x / plans for k, x in clock.wall.items()}
    shared, shared_wall = cpu["graph"] + cpu["memory"], wall["graph"] + wall["memory"]
    return {"ops": n_ops, "plans": plans, "changes": changes, "seed": seed,
            "tasks_per_plan": tasks / plans, "edges": len(first.graph.edge_src),
            "fragments": sum(spec.num_versions), "build_s": build_s,
            "graph_s": cpu["graph"], "memory_s": cpu["memory"],
            "full_sim_s": cpu["full"], "delta_sim_s": cpu["delta"],
            "full_s": cpu["full"] + shared, "delta_s": cpu["delta"] + shared,
            "full_wall_s": wall["full"] + shared_wall,
            "delta_wall_s": wall["delta"] + shared_wall,
            "loop_tasks_per_s": tasks / plans / cpu["full"],
            "sim_speedup": cpu["full"] / cpu["delta"],
            "speedup": (cpu["full"] + shared) / (cpu["delta"] + shared),
            "loop_fraction": loop / tasks, "mirrored_fraction": mirrored / tasks,
            "loop_runs": segments / plans, "verified": verified}


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensoropt.simulator.bench",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synthetic", action="store_true",
                    help="the engine bench on a generated training step (below)")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="frontiers to check: comma-separated MODEL@DEVICES")
    ap.add_argument("--epsilon", type=float, default=0.05, help="the searches' epsilon")
    ap.add_argument("--budget", type=int, default=64, help="most frontier plans per model")
    ap.add_argument("--verify-every", type=int, default=4,
                    help="also simulate every N-th checked plan in full")
    ap.add_argument("--ops", type=int, default=1250, help="ops in the training step")
    ap.add_argument("--plans", type=int, default=40, help="plans to simulate")
    ap.add_argument("--changes", type=int, default=1, help="ops changed per plan")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--window", type=int, default=8, help="delta bases kept")
    a = ap.parse_args(argv)
    if not a.synthetic:
        if a.budget < 1 or a.verify_every < 1 or not 0 < a.epsilon < 1:
            ap.error("need --budget >= 1, --verify-every >= 1, 0 < --epsilon < 1")
        ok = True
        for spec in a.models.split(","):
            ok &= print_frontier(run_frontier(spec.strip(), a.epsilon, a.budget, a.verify_every))
        return 0 if ok else 1
    if a.ops < 2 or a.plans < 1 or not 1 <= a.changes <= a.ops or a.window < 1:
        ap.error("need --ops >= 2, --plans >= 1, 1 <= --changes <= --ops, --window >= 1")
    r = run(a.ops, a.plans, a.changes, a.seed, a.window)
    print(f"simulator bench: training step of {r['ops']} ops, {r['plans']} plans, "
          f"{r['changes']} op(s) changed per plan (seed {r['seed']}); seconds per plan, CPU")
    print(f"  tasks per plan      {r['tasks_per_plan']:,.0f} (edges {r['edges']:,})")
    print(f"  fragments built     {r['fragments']:,} in {r['build_s']:.2f} s wall (once, apart)")
    print(f"  graph               {r['graph_s']:.4f} s (spliced from the nearest state; both)")
    print(f"  full simulation     {r['full_sim_s']:.4f} s (event loop over every task: "
          f"{r['loop_tasks_per_s']:,.0f} tasks/s)")
    print(f"  delta simulation    {r['delta_sim_s']:.4f} s ({100 * r['loop_fraction']:.2f}% of "
          f"tasks through the event loop, {100 * r['mirrored_fraction']:.2f}% copied; "
          f"{r['loop_runs']:.1f} loop runs)")
    print(f"  memory              {r['memory_s']:.4f} s (liveness timeline and peak; both)")
    print(f"  full  per plan      {r['full_s']:.4f} s   ({r['full_wall_s']:.4f} s wall)")
    print(f"  delta per plan      {r['delta_s']:.4f} s   ({r['delta_wall_s']:.4f} s wall)")
    print(f"  speed-up            {r['speedup']:.1f}x per plan (target >= 2x); "
          f"{r['sim_speedup']:.1f}x for the simulation alone")
    ok = r["verified"] == r["plans"]
    print(f"  {'PASS' if ok else 'FAIL'}  delta == full on {r['verified']}/{r['plans']} plans "
          "(every start and end, makespan, peak memory)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
