"""The ``tensoropt`` command (also ``python -m tensoropt``).

Usage::

    tensoropt models [--json] [--size paper]     # each zoo model's op count and bytes
    tensoropt frontier --model paper_transformer --cluster paper-v100x16 [--devices 16]
                       [--epsilon 0.05] [--max-candidates 50000000] [--threads 2]
                       [--json] [--plot frontier.png]
    tensoropt profile --model paper_wide_resnet --cluster paper-v100x16 --devices 1,2,4,8,16
                      [--epsilon 0.05] [--max-candidates N] [--threads N]
    tensoropt compare --model paper_vgg16 --cluster paper-v100x16 --devices 16
                      [--memory-limit B] [--budget-s S] [--mcmc-cost simulated|additive]
                      [--json] [--plot compare.png]
    tensoropt frontier ... --simulate {auto,all,N} [--trace-dir DIR]    # + the simulator's check
    tensoropt plan --model M --cluster C --devices N --option mini_time --out plan.json
    tensoropt simulate --model M --cluster C --devices N --plan plan.json --trace out.json
    mpirun -np 4 tensoropt calibrate --out profiles/local.json      # measure this cluster
    tensoropt export-checkpoint ckpt/model-300 exported/model       # to a plain TF checkpoint

A mistake (an unknown model, a bad number, an output path that cannot be written: every
output path is checked before the search) ends the command with one line on stderr,
``tensoropt <command>: <what> (<how to fix>)``, and exit status 2; ``--debug``
(anywhere on the line) shows the Python traceback instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import tensoropt as to
from tensoropt import models
from tensoropt.checkpoint import export_tensorflow
from tensoropt.cli.progress import progress_bar
from tensoropt.cli.report import frontier_rows, frontier_table, plot_frontier, profile_table
from tensoropt.cluster import get_cluster
from tensoropt.search.baselines import compare, comparison_json, comparison_table, plot_comparison
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import SearchSettings, frontier_for, profile_parallelisms
from tensoropt.simulator.commands import add_commands, add_simulate_arguments, frontier_check
from tensoropt.simulator.plan_sim import simulate_plan
from tensoropt.simulator.strategy_cost import SimulatedCost
from tensoropt.stats import graph_stats
from tensoropt.validation import (CommandParser, UsageError, check_writable, check_writable_dir, int_list,
                                  positive_float, positive_int)

__all__ = ["main", "build_parser", "check_outputs", "one_line", "SIZES"]


def _cmd_models(args: argparse.Namespace) -> int:
    rows = []
    for name in models.names():
        to.reset_default_graph()
        start = time.perf_counter()
        if args.size not in models.get_entry(name).presets:
            continue  # the model has no preset of that size
        models.build(name, size=args.size)
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
    print(f"{'model':<22}{'ops':>7} {'params':>16}{'param GiB':>11}{'saved act GiB':>15}"
          f"{'1-device GiB':>14}{'TFLOP/iter':>12}")
    for r in rows:
        print(f"{r['model']:<22}{r['ops']:>7} {r['param_count']:>16,}{r['param_bytes'] / gib:>11.3f}"
              f"{r['saved_activation_bytes'] / gib:>15.3f}{r['single_device_bytes'] / gib:>14.3f}"
              f"{r['flops'] / 1e12:>12.2f}")
    return 0


def _record(model: str, size: str):
    to.reset_default_graph()
    models.build(model, size=size)
    return to.get_default_graph()


def _cmd_frontier(args: argparse.Namespace) -> int:
    graph = _record(args.model, args.size)
    cluster = get_cluster(args.cluster, devices=args.devices)
    with progress_bar(f"{args.model} on {cluster.devices} devices") as update:
        result = frontier_for(graph, cluster, cluster.devices, args.cost_model, progress=update,
                              search=_search_options(args))
    check = frontier_check(args, result, cluster)
    if args.json:
        dp = result.data_parallel_plan()
        print(json.dumps({"model": args.model, "cluster": cluster.name, "devices": cluster.devices,
                          "frontier": frontier_rows(result),
                          "data_parallel": {"memory_gib": dp.memory_bytes / 2**30, "time_s": dp.time_s,
                                            "network_s": dp.network_s, "compute_s": dp.compute_s},
                          "configs_per_op": result.configs_per_op,
                          "search_s": {k: result.stats[k] for k in ("build_s", "track_s")},
                          "frontier_stats": {k: v for k, v in result.stats["frontier"].as_dict().items()
                                             if isinstance(v, (int, float, str))
                                             or k in ("heuristic", "heuristic_runs")},
                          **({"simulator_check": check.to_dict()} if check else {})}, indent=1))
    else:
        print(frontier_table(result, args.model, cluster.name))
        if check:
            print(check.table())
    if args.plot:
        plot_frontier(result, args.plot, title=f"{args.model} on {cluster.name}")
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    graph = _record(args.model, args.size)
    cluster = get_cluster(args.cluster)
    counts = args.devices
    search = _search_options(args)
    rows = []
    for n in counts:
        settings = SearchSettings(cluster=cluster.scaled(n), option="profiling",
                                  memory_limit_bytes=args.memory_limit, cost_model=args.cost_model,
                                  search=search)
        with progress_bar(f"{args.model} on {n} devices") as update:
            rows += profile_parallelisms(graph, settings, [n], progress=update)
    limit = SearchSettings(cluster=cluster, memory_limit_bytes=args.memory_limit).limit_bytes
    print(profile_table(rows, args.model, cluster.name, limit))
    return 0


def _cmd_export_checkpoint(args: argparse.Namespace) -> int:
    names = export_tensorflow(args.checkpoint, args.prefix)   # a CheckpointError names the file
    print(f"{len(names)} tensors written to the TensorFlow checkpoint {args.prefix} "
          f"(tf.train.load_checkpoint({args.prefix!r}))")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    graph = _record(args.model, args.size)
    with progress_bar(f"{args.model} on {args.devices} devices") as update:
        result = compare(graph, args.cluster, args.devices, memory_limit=args.memory_limit,
                         budget_s=args.budget_s, search=_search_options(args), cost_model=args.cost_model,
                         seed=args.seed, model_name=args.model, progress=update,
                         mcmc_cost=MCMC_COSTS[args.mcmc_cost],
                         simulate=lambda plan, cluster, model: simulate_plan(graph, plan, cluster, model).makespan_s)
    print(json.dumps(comparison_json(result), indent=1) if args.json else comparison_table(result))
    if args.plot:
        plot_comparison(result, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


MCMC_COSTS = {"simulated": lambda tables, cluster: SimulatedCost(tables, cluster), "additive": None}


def _search_options(args: argparse.Namespace) -> SearchOptions:
    return SearchOptions(epsilon=args.epsilon, max_candidates=args.max_candidates, threads=args.threads,
                         relative=args.relative)


EPSILON_HELP = ("search an epsilon-approximate frontier (e.g. 0.01): every exact plan has a "
                "returned plan with no more memory and at most (1 + epsilon) times its time; "
                "much faster on large models (default: exact)")
RELATIVE_HELP = ("with --epsilon, bound each plan's error by its own time rather than by the "
                 "fastest plan's: slow, low-memory plans are thinned more, so frontiers that "
                 "span a wide range of times search faster")
MAX_CANDIDATES_HELP = ("bound each Frontier-Tracking product to about this many candidate "
                       "points (e.g. 50000000) by thinning its inputs; bounds the search time "
                       "instead of the error, and prints the error bound reached "
                       "(default: no bound)")


def _model_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, choices=models.names(), metavar="MODEL",
                   help="a zoo model (tensoropt models lists them)")
    p.add_argument("--size", default="paper", choices=SIZES, help="the model's preset (paper, small, tiny)")
    p.add_argument("--cluster", required=True, help="a preset (paper-v100x16, ...), 'local' or a JSON file")
    p.add_argument("--devices", type=positive_int, default=None, help="scale the cluster to N devices")
    p.add_argument("--cost-model", default="analytical", choices=["analytical", "profiled"])


def _search_arguments(p: argparse.ArgumentParser) -> None:
    """The cost model and the Frontier-Tracking settings every searching command takes."""
    p.add_argument("--cost-model", default="analytical", choices=["analytical", "profiled"])
    p.add_argument("--threads", type=positive_int, default=1, help="Frontier-Tracking threads")
    p.add_argument("--epsilon", type=float, default=None, help=EPSILON_HELP)
    p.add_argument("--max-candidates", type=positive_int, default=None, help=MAX_CANDIDATES_HELP)
    p.add_argument("--relative", action="store_true", help=RELATIVE_HELP)


def build_parser() -> argparse.ArgumentParser:

    parser = CommandParser(prog="tensoropt", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("models", help="op count, parameter bytes and saved-activation bytes of each zoo model")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--size", default="paper", choices=SIZES, help="which preset of each model (paper, small, tiny)")
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("frontier", help="the memory/time frontier of a zoo model on a cluster")
    p.add_argument("--model", required=True, choices=models.names(), metavar="MODEL",
                   help="a zoo model (tensoropt models lists them)")
    p.add_argument("--size", default="paper", choices=SIZES, help="the model's preset (paper, small, tiny)")
    p.add_argument("--cluster", required=True, help="a preset (paper-v100x16, ...), 'local' or a JSON file")
    p.add_argument("--devices", type=positive_int, default=None, help="scale the cluster to N devices")
    _search_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--plot", metavar="FILE.png", help="draw the frontier as in the paper's Figure 6")
    add_simulate_arguments(p)
    p.set_defaults(func=_cmd_frontier)

    p = sub.add_parser("profile", help="best time per device count, as the paper's Figure 8")
    p.add_argument("--model", required=True, choices=models.names(), metavar="MODEL")
    p.add_argument("--size", default="paper", choices=SIZES)
    p.add_argument("--cluster", required=True)
    p.add_argument("--devices", type=int_list, default=[1, 2, 4, 8, 16], help="comma-separated device counts")
    p.add_argument("--memory-limit", type=positive_float, default=None, help="bytes per device (default memory/1.1)")
    _search_arguments(p)
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("compare", help="FT beside data parallel, Mesh-TF, OptCNN, ToFu, PaSE and MCMC "
                                       "on one cost model")
    p.add_argument("--model", required=True, choices=models.names(), metavar="MODEL")
    p.add_argument("--size", default="paper", choices=SIZES)
    p.add_argument("--cluster", required=True)
    p.add_argument("--devices", type=positive_int, required=True, help="device count (the cluster is scaled to it)")
    p.add_argument("--memory-limit", type=positive_float, default=None, help="bytes per device (default memory/1.1)")
    p.add_argument("--budget-s", type=positive_float, default=10.0, help="MCMC's search seconds (default 10)")
    p.add_argument("--seed", type=int, default=0, help="MCMC's random seed")
    p.add_argument("--mcmc-cost", choices=sorted(MCMC_COSTS), default="simulated",
                   help="MCMC's cost: the simulator's step time by delta simulation, as FlexFlow "
                        "(default), or the cost model's additive time")
    _search_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--plot", metavar="FILE.png", help="every method's point over FT's frontier")
    p.set_defaults(func=_cmd_compare)

    add_commands(sub, _model_arguments)

    p = sub.add_parser("export-checkpoint", help="a TensorOpt checkpoint as a plain TensorFlow checkpoint "
                                                 "(whole tensors under their TF 1.x names)")
    p.add_argument("checkpoint", help="a checkpoint directory (Saver.save's path)")
    p.add_argument("prefix", help="the TensorFlow checkpoint prefix to write, e.g. exported/model")
    p.set_defaults(func=_cmd_export_checkpoint)

    p = sub.add_parser("calibrate", add_help=False,
                       help="under mpirun: measure collectives per group shape and matmul FLOP/s "
                            "(tensoropt calibrate --help)")
    return parser


SIZES = sorted({size for name in models.names() for size in models.get_entry(name).presets})

#: output options, checked before any work: (attribute, option, a file (else a directory))
OUTPUTS = (("plot", "--plot", True), ("out", "--out", True), ("trace", "--trace", True),
           ("trace_dir", "--trace-dir", False))


def check_outputs(args: argparse.Namespace) -> None:
    """Every output path of the command can be written; raises ValueError naming it."""
    for attr, option, is_file in OUTPUTS:
        path = getattr(args, attr, None)
        if path is not None:
            (check_writable if is_file else check_writable_dir)(option, path)


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (2 for a bad input, after one line on stderr)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        if command == "calibrate" and argv[:1] == ["calibrate"]:  # its own parser, --help included
            # Lazy: the calibration job starts MPI and loads TensorFlow and horovod.
            from tensoropt.execution import calibration_job  # noqa: PLC0415

            return calibration_job.main(argv[1:])
        args = build_parser().parse_args(argv)
        check_outputs(args)
        return args.func(args)
    except (ValueError, OSError, SystemExit) as e:
        if debug or (isinstance(e, SystemExit) and not isinstance(e.code, str)):
            raise   # --help's exit 0, or an exit status already chosen
        print(one_line(command, e), file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - one line; the traceback with --debug
        if debug:
            raise
        print(one_line(command, e, internal=True), file=sys.stderr)
        return 1


def one_line(command: str | None, error: BaseException, internal: bool = False) -> str:
    """``tensoropt <command>: <what> (<how to fix>)`` for ``error``, on one line."""
    text = str(error.code if isinstance(error, SystemExit) else error)
    if isinstance(error, OSError) and error.filename is not None:
        text = f"{error.filename}: {error.strerror or text} (check the path)"
    text = " ".join(text.split())
    if internal:
        text = (f"internal error {type(error).__name__}: {text} (run again with --debug for the "
                "traceback, and report it)")
    prefix = "tensoropt" + (f" {command}" if command else "")
    return text if isinstance(error, UsageError) or text.startswith(prefix + ":") else f"{prefix}: {text}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
