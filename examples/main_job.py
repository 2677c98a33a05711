"""TensorOpt's main job: search a model's memory/time frontier, pick the fastest plan that
fits, and train it on every MPI rank.

    mpirun --allow-run-as-root --oversubscribe -np 4 .venv/bin/python examples/main_job.py

It records a zoo model at paper scale and prints its statistics (no memory is used:
recording creates no tensor), then builds a small Transformer, prints its frontier on
this job's devices, chooses ``mini_time`` (with the chosen plan's simulated time and peak
memory next to the estimate), and trains 20 steps, printing the losses. Once ``tensoropt
calibrate`` has measured this machine (``profiles/local.json``), the search prices ops
by measuring them (``cost_model="profiled"``); before, by nominal CPU figures, and the
step report says so.
"""

import argparse

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt.cli.report import plans_table
from tensoropt.cluster.presets import profile_path
from tensoropt.stats import graph_stats
from tensoropt.units import format_bytes


def show_paper_model(name: str) -> None:
    to.reset_default_graph()
    models.build(name, size="paper")
    s = graph_stats(to.get_default_graph())
    gib = 2.0 ** 30
    print(f"{name} at paper scale: {s.ops} ops, {s.param_count:,} parameters "
          f"({s.param_bytes / gib:.2f} GiB), {s.saved_activation_bytes / gib:.2f} GiB of activations "
          f"kept for backward, {s.flops / 1e12:.1f} TFLOP per iteration")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="transformer", help="zoo model to train (tiny preset)")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    world = to.init()
    if world.rank == 0:
        show_paper_model("paper_transformer")

    to.reset_default_graph()
    spec = models.build(args.model, size="tiny")
    # the whole search result, the same on every rank: any of its plans may be built
    calibrated = profile_path().exists()
    result = to.search_strategy(option="mini_time", simulate="chosen",
                                cost_model="profiled" if calibrated else "analytical")
    plan = result.chosen
    if world.rank == 0:
        print(plans_table(result.frontier, result.data_parallel, chosen=plan, max_rows=12,
                          title=f"\nfrontier of tiny {args.model} on {world.size} rank(s): "
                                f"{len(result.frontier)} plans, {plan.notes}"))
        print(f"\nchosen (mini_time): {plan}")
        check = result.simulator_check
        row = next(r for r in check["plans"] if r["index"] == check["chosen_index"])
        print(f"  simulated: time/iter {row['simulated_time_s']:.4g} s (estimate "
              f"{row['estimated_time_s']:.4g} s), peak memory/device "
              f"{format_bytes(row['simulated_peak_bytes'])} (estimate "
              f"{format_bytes(row['estimated_memory_bytes'])})")
    to.build_execution_graph(engine="tensorflow", plan=plan)
    # Every rank makes the same batch and feeds it whole; TensorOpt gives each rank its slice.
    # One batch, trained on repeatedly, so that the falling loss shows training works.
    batch = spec.feed(np.random.default_rng(0))
    for step in range(args.steps):
        loss, _ = to.run([spec.loss, spec.train_op], feed_dict=batch)
        if world.rank == 0:
            print(f"step {step:2d}  loss {float(loss):.5f}", flush=True)


if __name__ == "__main__":
    main()
