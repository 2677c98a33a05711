"""The parity fuzz's MPI job: generated models under many plans against one process.

Run by ``tensoropt.bench.fuzz`` (which watches it for hangs), not by hand::

    mpirun -np 4 python -m tensoropt.bench.fuzz_worker --seeds 0:30 --plans 10 --out run.jsonl

Phase 1, in parallel (rank r takes every size-th model): record each generated model,
train it on one process (``lower_graph`` without a plan: whole tensors) for the initial
values, the losses and the final parameters, and choose its plans
(``fuzz_plans.choose_plans``). Rank 0 gathers the references; every rank gathers the plans.

Phase 2, every rank together: for each model and plan, build the execution graph, fetch
the initial parameters, train ``--steps`` steps on the same batches, fetch the final
parameters. Rank 0 compares each with the reference (largest relative difference,
``|a - b| / max(|b|, 1e-3)``, as ``tests/parallel/parity_driver.py``), and with the
collectives the plan says it issues, and appends one JSON line per event to ``--out``:
``{"event": "start", ...}`` before a plan is built and ``{"event": "result", ...}`` after,
so a watcher knows which plan a stalled job is in.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import tensoropt as to
from tensoropt._tf import import_tensorflow
from tensoropt.bench.fuzz_plans import choose_plans
from tensoropt.execution.accounting import expected_collectives
from tensoropt.execution.lowering import lower_graph
from tensoropt.models.generated import generate_model
from tensoropt.plan import Plan

__all__ = ["main", "relative_difference"]


def relative_difference(a, b) -> float:
    """Largest ``|a - b| / max(|b|, 1e-3)``: relative, with small values compared absolutely."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3), initial=0.0))


def _session_config(tf):
    """As ``build_execution_graph``'s: no grappler rewrites, one inter-op thread."""
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


def _reference(model, feeds) -> dict:
    """One process, whole tensors: initial parameters, losses, final parameters."""
    tf = import_tensorflow()
    graph = to.get_default_graph()
    lowered = lower_graph(graph, tf)
    names = {v.op.name: lowered.variables[v] for v in graph.trainable_variables}
    with tf.compat.v1.Session(graph=lowered.tf_graph, config=_session_config(tf)) as session:
        session.run(lowered.init_op)
        initial = session.run(names)
        losses = []
        for feed in feeds:
            tf_feed = {lowered.tensors[k]: v for k, v in feed.items()}
            losses.append(session.run([lowered.tensors[model.spec.loss],
                                       lowered.train_ops[id(model.spec.train_op)]], tf_feed)[0])
        final = session.run(names)
    return {"initial": initial, "losses": np.array(losses), "final": final}


def _record(seed: int):
    to.reset_default_graph()
    return generate_model(seed)


def _phase1(seeds, args, comm, log) -> tuple[dict, dict]:
    """This rank's share of references and plan choices, gathered."""
    rank, size = comm.Get_rank(), comm.Get_size()
    refs, plans = {}, {}
    for seed in seeds[rank::size]:
        model = _record(seed)
        refs[seed] = _reference(model, model.feeds(args.steps))
        plans[seed] = [(c.label, c.plan_json, sorted(c.features)) for c in choose_plans(
            to.get_default_graph(), size, args.plans, args.frontier_cap, seed)]
        refs[seed]["description"] = model.description
        refs[seed]["features"] = sorted(model.features)
        if rank == 0:
            log({"event": "prepared", "seed": seed})
    gathered = comm.gather(refs, root=0)
    all_plans: dict = {}
    for part in comm.allgather(plans):
        all_plans.update(part)
    all_refs: dict = {}
    for part in gathered or []:
        all_refs.update(part)
    return all_refs, all_plans


def _run_plan(model, plan: Plan, feeds) -> dict:
    graph = to.get_default_graph()
    variables = {v.op.name: v for v in graph.trainable_variables}
    start, start_cpu = time.perf_counter(), time.process_time()
    to.build_execution_graph(plan=plan)
    built, built_cpu = time.perf_counter(), time.process_time()
    initial = to.run(variables)
    losses = [to.run([model.spec.loss, model.spec.train_op], feed)[0] for feed in feeds]
    final = to.run(variables)
    counts = dict(to.runtime._runtime.sharding.collectives.counts)
    return {"initial": initial, "losses": np.array(losses), "final": final, "counts": counts,
            "build_s": built - start, "run_s": time.perf_counter() - built,
            "build_cpu_s": built_cpu - start_cpu, "run_cpu_s": time.process_time() - built_cpu,
            "tf_ops": len(to.runtime._runtime.lowered.tf_graph.get_operations())}


def _compare(ref: dict, got: dict, plan: Plan, rtol: float) -> dict:
    init_rel = max((relative_difference(got["initial"][k], v) for k, v in ref["initial"].items()), default=0.0)
    param_rel = max((relative_difference(got["final"][k], v) for k, v in ref["final"].items()), default=0.0)
    loss_rel = relative_difference(got["losses"], ref["losses"])
    expected = expected_collectives(to.get_default_graph(), plan)
    counts_match = {k: v for k, v in got["counts"].items() if v} == {k: v for k, v in expected.items() if v}
    ok = max(init_rel, loss_rel, param_rel) <= rtol and bool(np.all(np.isfinite(got["losses"])))
    return {"status": "ok" if ok and counts_match else "mismatch", "init_rel": init_rel,
            "loss_rel": loss_rel, "param_rel": param_rel, "counts_match": counts_match,
            "collectives": got["counts"], "expected_collectives": dict(expected),
            "losses": got["losses"].tolist(), "reference_losses": ref["losses"].tolist(),
            "build_s": round(got["build_s"], 3), "run_s": round(got["run_s"], 3),
            "build_cpu_s": round(got["build_cpu_s"], 3), "run_cpu_s": round(got["run_cpu_s"], 3),
            "tf_ops": got["tf_ops"]}


def _run_model(seed: int, ref: dict | None, plans: list, args, after: tuple[int, int], log, rank: int,
               stall_at: tuple[int, int]) -> None:
    """Every plan of one model (rank 0 holds the reference and compares)."""
    model = _record(seed)
    feeds = model.feeds(args.steps)
    if rank == 0:
        log({"event": "model", "seed": seed, "description": ref["description"], "features": ref["features"],
             "plans": len(plans)})
    for index, (label, plan_json, features) in enumerate(plans):
        if (seed, index) <= after:
            continue
        plan = Plan.from_json(plan_json, source=f"fuzz plan {seed}:{index}")
        log({"event": "start", "seed": seed, "index": index, "label": label})
        if (seed, index) == stall_at and rank == to.runtime.world().size - 1:
            time.sleep(1e9)   # --stall-at: this rank stops issuing collectives
        got = _run_plan(model, plan, feeds)
        if rank == 0:
            log({"event": "result", "seed": seed, "index": index, "label": label, "option": plan.option,
                 "features": features, **_compare(ref, got, plan, args.rtol)})


def _parse_position(text: str | None) -> tuple[int, int]:
    if not text:
        return (-1, -1)
    seed, index = text.split(":")
    return int(seed), int(index)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench.fuzz_worker")
    parser.add_argument("--seeds", required=True, help="first:stop, e.g. 0:30")
    parser.add_argument("--plans", type=int, default=10, help="plans per model")
    parser.add_argument("--frontier-cap", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--after", default=None, help="SEED:INDEX: skip plans up to this one")
    parser.add_argument("--out", required=True)
    parser.add_argument("--stall-at", default=None,
                        help="SEED:INDEX: the last rank stops before this plan (tests the hang watchdog)")
    args = parser.parse_args(argv)
    first, stop = (int(x) for x in args.seeds.split(":"))
    after = _parse_position(args.after)
    seeds = [s for s in range(first, stop) if s >= after[0]]
    world = to.init()
    from mpi4py import MPI  # noqa: PLC0415 - after init, as everywhere

    comm = MPI.COMM_WORLD
    out = open(args.out, "a") if world.rank == 0 else None

    def log(record: dict) -> None:
        if out is not None:
            out.write(json.dumps({"ranks": world.size, **record}) + "\n")
            out.flush()

    log({"event": "launched", "seeds": [seeds[0], seeds[-1] + 1] if seeds else []})
    chunk = 2 * world.size   # prepare a few models at a time: bounded memory, early progress
    for first_index in range(0, len(seeds), chunk):
        chunk_seeds = seeds[first_index:first_index + chunk]
        refs, plans = _phase1(chunk_seeds, args, comm, log)
        for seed in chunk_seeds:
            _run_model(seed, refs.get(seed), plans[seed], args, after, log, world.rank,
                       _parse_position(args.stall_at))
    log({"event": "done"})
    comm.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
