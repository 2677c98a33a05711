"""Execution: one TensorFlow graph per MPI process for a Plan (Section 4.2).

- ``schedule``: the collectives a plan issues per step, in order (no TensorFlow);
- ``builder``: ``PlanSharding``, this rank's shard of every op;
- ``collectives``: horovod collectives checked against the schedule, with explicit
  gradients (``gradients``: custom gradients that die with their graph);
- ``accounting``: collective counts per kind, from the schedule;
- ``recording_hvd``: a stand-in for ``horovod.tensorflow`` that builds graphs in one
  process and records what would be issued (for tests and benchmarks).

Usage::

    sharding = PlanSharding(graph, plan, rank, hvd, process_sets)
    lowered = tensoropt.execution.lowering.lower_graph(graph, tf, sharding)
    collective_schedule(graph, plan)      # [CollectiveCall, ...] in issue order
"""

from tensoropt.execution.builder import PlanSharding
from tensoropt.execution.horovod_comm import CollectiveOps, ScheduleMismatchError
from tensoropt.execution.schedule import (CollectiveCall, check_plan_for_graph, collective_schedule)

__all__ = ["PlanSharding", "CollectiveOps", "ScheduleMismatchError", "CollectiveCall",
           "collective_schedule", "check_plan_for_graph"]
