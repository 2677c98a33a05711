"""Checkpoints across plans and rank counts, one phase per launch.

Usage: checkpoint_driver.py PHASE DIR

- ``a`` (mpirun -np 4): each model and chain trains steps 1-3 under plan A and saves;
- ``b`` (mpirun -np 2): restores under plan B, trains steps 4-6, saves;
- ``c`` (one process): restores, trains steps 7-8; then the reference: 8 uninterrupted
  steps on one process;
- ``kill`` (mpirun -np 4): saves step 1, trains, and rank 1 dies while writing step 2's
  shard (the job ends);
- ``after_kill`` (one process): the latest checkpoint is step 1's, it restores to the
  values saved then, and a new save clears the cut-off one.

Chains: ``least_memory`` (A: the 4-device frontier's least-memory plan; B: 2-device data
parallel) and ``data_parallel`` (A: 4-device data parallel; B: the 2-device frontier's
least-memory plan). Rank 0 writes each phase's losses to DIR/<model>-<chain>-<phase>.json.
"""

import json
import os
import sys

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt.checkpoint.saver import Saver
from tensoropt.costs.model import CostModel
from tensoropt.search.driver import search_frontier

MODELS = ("mlp", "transformer")
CHAINS = {"least_memory": ("least_memory", "data_parallel"), "data_parallel": ("data_parallel", "least_memory")}
STEPS = {"a": range(0, 3), "b": range(3, 6), "c": range(6, 8)}


class AlphaBeta:
    def time_s(self, collective, nbytes, group_size, stride):
        return 2.0 * (group_size - 1) * (1e-5 + nbytes / group_size / 1e9) * (1 + stride / 8)


def _record(name):
    to.reset_default_graph()
    spec = models.build(name, size="tiny")
    rng = np.random.default_rng(1)
    return spec, to.get_default_graph(), [spec.feed(rng) for _ in range(8)]


def _plan(graph, devices, kind):
    search = search_frontier(graph, CostModel(graph, devices, AlphaBeta(), 1e10))
    return search.plans[0] if kind == "least_memory" else search.data_parallel_plan()


def _write(path, data):
    if to.runtime.world().rank == 0:
        with open(path, "w") as f:
            json.dump(data, f)


def chained(phase, out):
    size = to.runtime.world().size
    for name in MODELS:
        for chain, kinds in CHAINS.items():
            spec, graph, feeds = _record(name)
            kind = {"a": kinds[0], "b": kinds[1], "c": "data_parallel"}[phase]
            plan = _plan(graph, size, kind)
            to.build_execution_graph(plan=plan, graph=graph)
            directory = os.path.join(out, f"{name}-{chain}")
            saver = Saver(max_to_keep=2)
            restored = None if phase == "a" else saver.restore(to.train.latest_checkpoint(directory))
            losses = [float(to.run([spec.loss, spec.train_op], feeds[i])[0]) for i in STEPS[phase]]
            if phase != "c":
                saver.save(os.path.join(directory, "model"), global_step=STEPS[phase][-1] + 1)
            result = {"losses": losses, "restored_step": restored, "plan": kind,
                      "plan_memory_bytes": plan.memory_bytes, "ranks": size}
            if phase == "c":
                to.build_execution_graph(plan=_plan(graph, 1, "data_parallel"), graph=graph)
                result["reference"] = [float(to.run([spec.loss, spec.train_op], f)[0]) for f in feeds]
            _write(os.path.join(out, f"{name}-{chain}-{phase}.json"), result)


def kill(out):
    spec, graph, feeds = _record("mlp")
    to.build_execution_graph(plan=_plan(graph, to.runtime.world().size, "least_memory"), graph=graph)
    directory = os.path.join(out, "killed")
    saver = Saver()
    to.run([spec.loss, spec.train_op], feeds[0])
    saver.save(os.path.join(directory, "model"), global_step=1)
    saved = to.run({v.op.name: v for v in graph.trainable_variables})
    if to.runtime.world().rank == 0:
        np.savez(os.path.join(out, "saved_at_1.npz"), **{k.replace("/", "|"): v for k, v in saved.items()})
    to.run([spec.loss, spec.train_op], feeds[1])
    write = Saver._write_shard

    def dying(path, blocks):
        if to.runtime.world().rank == 1:
            with open(path, "wb") as f:      # half a file, then the process is gone
                f.write(b"PK\x03\x04 cut off")
            os._exit(3)
        write(path, blocks)

    Saver._write_shard = staticmethod(dying)
    saver.save(os.path.join(directory, "model"), global_step=2)


def after_kill(out):
    spec, graph, _ = _record("mlp")
    to.build_execution_graph(plan=_plan(graph, 1, "data_parallel"), graph=graph)
    directory = os.path.join(out, "killed")
    latest = to.train.latest_checkpoint(directory)
    leftovers = sorted(p for p in os.listdir(directory) if ".tmp-" in p)
    step = Saver().restore(latest)
    saved = np.load(os.path.join(out, "saved_at_1.npz"))
    values = to.run({v.op.name: v for v in graph.trainable_variables})
    equal = all(np.array_equal(values[k.replace("|", "/")], saved[k]) for k in saved.files)
    Saver().save(os.path.join(directory, "model"), global_step=3)
    after = sorted(p for p in os.listdir(directory) if ".tmp-" in p)
    _write(os.path.join(out, "after_kill.json"), {"latest": os.path.basename(latest), "step": step,
                                                   "equal": equal, "leftovers_before": leftovers,
                                                   "leftovers_after": after})


if __name__ == "__main__":
    phase, out = sys.argv[1], sys.argv[2]
    to.init()
    if phase in STEPS:
        chained(phase, out)
    elif phase == "kill":
        kill(out)
    elif phase == "after_kill":
        after_kill(out)
