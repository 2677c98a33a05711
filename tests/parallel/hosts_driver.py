"""Run under mpirun -np 4 with TENSOROPT_HOSTS=a,a,b,b: the job's machine shape, each
machine's horovod process set (an allreduce inside it sums that machine's ranks only, and
one across machines sums one rank per machine), and a plan searched elsewhere for a
2 machines x 2 devices cluster, trained as it was saved.

Usage: hosts_driver.py PLAN.json OUT.json
"""

import importlib.util
import json
import pathlib
import sys

import numpy as np

import tensoropt as to
from tensoropt import models, runtime
from tensoropt._tf import import_tensorflow
from tensoropt.execution.hosts import machine_groups

_spec = importlib.util.spec_from_file_location(
    "parity_driver_hosts", pathlib.Path(__file__).with_name("parity_driver.py"))
PARITY = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PARITY)

world = to.init()
groups = machine_groups(world.hostnames)
mine = next(g for g in groups if world.rank in g)
across = tuple(g[mine.index(world.rank)] for g in groups)   # this rank's peers on the other machines
sets = runtime._runtime.process_sets
tf = import_tensorflow()
import horovod.tensorflow as hvd  # noqa: E402 - after to.init, which starts horovod

sums = {name: float(hvd.allreduce(tf.constant([float(world.rank)]), op=hvd.Sum, process_set=sets[g],
                                  name=f"hosts_{name}").numpy()[0])
        for name, g in (("machine", mine), ("across", across))}
checks = {"rank": world.rank, "machine_ranks": list(mine), "across_ranks": list(across),
          "sums": sums, "registered": sorted(list(g) for g in sets), "hvd_local_size": hvd.local_size()}
gathered = runtime._runtime.comm.gather(checks, root=0)
spec = models.build("transformer", size="tiny")
graph = to.get_default_graph()
rng = np.random.default_rng(3)
feeds = [spec.feed(rng) for _ in range(3)]
reference, _ = PARITY.reference(graph, spec.loss, spec.train_op, feeds)
plan = to.Plan.load(sys.argv[1])
to.build_execution_graph(plan=plan)
losses = [float(to.run([spec.loss, spec.train_op], f)[0]) for f in feeds]
local = runtime.local_cluster()
# a calibration of this job describes the machines TENSOROPT_HOSTS declares, as the runtime does
from tensoropt.execution.calibration_job import Calibrator  # noqa: E402

profile = Calibrator(runtime._runtime.comm, process_sets=sets).build_profile({}, repeats=1)
if world.rank == 0:
    with open(sys.argv[2], "w") as f:
        json.dump({"machines": world.machines, "devices_per_machine": world.devices_per_machine,
                   "local_cluster": [local.machines, local.devices_per_machine],
                   "calibrated": [profile.machines, profile.devices_per_machine,
                                  list(profile.hostnames)],
                   "losses": losses, "reference": [float(v) for v in reference],
                   "loss_rel": PARITY.rel(losses, reference), "ranks": gathered,
                   "machine_groups": [list(g) for g in groups]}, f)
