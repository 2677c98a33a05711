"""Run under mpirun -np 4 with TENSOROPT_HOSTS=a,a,b,b: the job's machine shape, and a plan
searched elsewhere for a 2 machines x 2 devices cluster, trained as it was saved.

Usage: hosts_driver.py PLAN.json OUT.json
"""

import importlib.util
import json
import pathlib
import sys

import numpy as np

import tensoropt as to
from tensoropt import models, runtime

_spec = importlib.util.spec_from_file_location(
    "parity_driver_hosts", pathlib.Path(__file__).with_name("parity_driver.py"))
PARITY = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PARITY)

world = to.init()
spec = models.build("transformer", size="tiny")
graph = to.get_default_graph()
rng = np.random.default_rng(3)
feeds = [spec.feed(rng) for _ in range(3)]
reference, _ = PARITY.reference(graph, spec.loss, spec.train_op, feeds)
plan = to.Plan.load(sys.argv[1])
to.build_execution_graph(plan=plan)
losses = [float(to.run([spec.loss, spec.train_op], f)[0]) for f in feeds]
local = runtime.local_cluster()
if world.rank == 0:
    with open(sys.argv[2], "w") as f:
        json.dump({"machines": world.machines, "devices_per_machine": world.devices_per_machine,
                   "local_cluster": [local.machines, local.devices_per_machine],
                   "losses": losses, "reference": [float(v) for v in reference],
                   "loss_rel": PARITY.rel(losses, reference)}, f)
