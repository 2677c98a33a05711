"""Execution: one TensorFlow graph per MPI process for a Plan (Section 4.2).

Usage::

    sharding = PlanSharding(graph, plan, rank, hvd, process_sets)
    lowered = tensoropt.lowering.lower_graph(graph, tf, sharding)
"""

from tensoropt.execution.builder import PlanSharding, config_of, steps_from_json
from tensoropt.execution.collectives import CollectiveOps

__all__ = ["PlanSharding", "CollectiveOps", "config_of", "steps_from_json"]
