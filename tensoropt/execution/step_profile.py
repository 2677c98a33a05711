"""What one training step measures on one rank: wall time, time inside horovod
collectives, and peak memory, read from TensorFlow's trace of the step.

Peak memory is measured one way everywhere (``python -m tensoropt.bench accuracy``,
``to.run(..., profile=True)``, the main job's report), and the estimates model the same
quantity:

- resident bytes: every TensorFlow variable of the rank's graph (parameter shards and
  optimizer slots), allocated before the step and alive through it;
- plus the step's allocation peak: the allocation records of a ``FULL_TRACE`` step
  (each op's allocations, and its deallocations as negative records), summed in time
  order into the bytes the step holds; its maximum. Gradients, saved activations,
  re-scheduling buffers and temporaries all count here.

The cost model's memory (``OpCost.param_bytes`` = parameters + gradients + slots, plus
saved activations) is the additive figure the search optimizes; the simulator's liveness
peak models the same two parts as a peak over the step, and adds what is live only for
a while: activation gradients, conversion buffers, and each op's workspace (what the
profiler measured its forward and backward passes hold beyond their results).

Usage::

    options, metadata = trace_options(tf)
    session.run(train_op, feed, options=options, run_metadata=metadata)
    profile = profile_from_trace(metadata, wall_s, resident_bytes(tf, tf_graph))
    profile.peak_bytes, profile.network_s, format_bytes(profile.peak_bytes)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensoropt.allocation_trace import allocation_peak, node_allocations, trace_options
from tensoropt.units import format_bytes

__all__ = ["StepProfile", "trace_options", "profile_from_trace", "resident_bytes", "format_bytes"]


@dataclass(frozen=True)
class StepProfile:
    """One step on one rank.

    Attributes:
        wall_s: the step's wall time (a traced step runs slower than an untraced one).
        network_s: time inside horovod ops (the plan chains its collectives, so they do
            not overlap one another; waiting for a slower rank counts).
        step_peak_bytes: the most bytes the step's own allocations held at once.
        resident_bytes: the variables' bytes (parameters and optimizer slots).
        compute_s: the sum of the other ops' times (ops that run side by side both count).
    """

    wall_s: float
    network_s: float
    step_peak_bytes: int
    resident_bytes: int
    compute_s: float = 0.0

    @property
    def peak_bytes(self) -> int:
        """Peak memory of the rank over the step: resident + the step's peak."""
        return self.resident_bytes + self.step_peak_bytes

    def to_dict(self) -> dict[str, Any]:
        return {"wall_s": self.wall_s, "network_s": self.network_s, "compute_s": self.compute_s,
                "step_peak_bytes": self.step_peak_bytes, "resident_bytes": self.resident_bytes,
                "peak_bytes": self.peak_bytes}


def profile_from_trace(metadata, wall_s: float, resident: int) -> StepProfile:
    """The step's profile from a traced run's ``RunMetadata`` (see the module doc)."""
    records: list[tuple[int, int]] = []
    network_us = compute_us = 0
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            if "Horovod" in node.timeline_label:   # HorovodAllreduce, HorovodAllgather, ...
                network_us += node.all_end_rel_micros
            else:
                compute_us += node.all_end_rel_micros
            records += node_allocations(node)
    return StepProfile(float(wall_s), network_us * 1e-6, allocation_peak(records), int(resident),
                       compute_us * 1e-6)


def resident_bytes(tf, tf_graph) -> int:
    """Bytes of every global variable of ``tf_graph`` (this rank's shards)."""
    with tf_graph.as_default():
        return int(sum(v.shape.num_elements() * v.dtype.size for v in tf.compat.v1.global_variables()))
