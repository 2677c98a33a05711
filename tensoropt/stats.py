"""Whole-graph statistics on one device: op count, parameter and activation bytes.

Usage::

    s = graph_stats(to.get_default_graph())
    s.param_bytes, s.saved_activation_bytes, s.flops
"""

from __future__ import annotations

from dataclasses import dataclass

from tensoropt import configs
from tensoropt.graph import Graph

__all__ = ["GraphStats", "graph_stats", "saved_bytes"]


@dataclass(frozen=True)
class GraphStats:
    """Attributes:
        ops: number of recorded ops (placeholders and variables included).
        compute_ops: ops that compute (not placeholders, variables or constants).
        param_count: elements of trainable variables.
        param_bytes: bytes of trainable variables (weights only).
        saved_activation_bytes: bytes that backward keeps, over all ops, on one device
            (parameters a backward needs are the parameters themselves, not counted again).
        flops: forward + backward FLOPs of one iteration.
        optimizer_slots: slots per parameter of the recorded optimizer (0 if none).
        single_device_bytes: weights + gradients + optimizer slots + saved activations.
    """

    ops: int
    compute_ops: int
    param_count: int
    param_bytes: int
    saved_activation_bytes: int
    flops: float
    optimizer_slots: int
    single_device_bytes: int


def saved_bytes(op, count_parameters: bool = True) -> int:
    """Bytes ``op``'s backward keeps, on one device (full logical tensors); the cost
    model's per-device figure comes from the same rule (``configs.saved_bytes``).

    Args:
        count_parameters: whether saved inputs that are variables count; a whole-graph
            total leaves them out, since the parameter itself is what is kept.
    """
    return configs.saved_bytes(op, None, count_parameters)


def graph_stats(graph: Graph) -> GraphStats:
    sources = ("placeholder", "variable", "fill")
    params = graph.trainable_variables
    param_count = sum(v.shape.num_elements() for v in params)
    param_bytes = sum(v.nbytes for v in params)
    saved = sum(saved_bytes(op, count_parameters=False) for op in graph.operations if op.kind not in sources)
    flops = sum(op.space.flops for op in graph.operations)
    slots = max((s.optimizer.slots_per_variable for s in graph.train_steps), default=0)
    return GraphStats(
        ops=len(graph.operations),
        compute_ops=sum(op.kind not in sources for op in graph.operations),
        param_count=param_count,
        param_bytes=param_bytes,
        saved_activation_bytes=saved,
        flops=flops,
        optimizer_slots=slots,
        single_device_bytes=param_bytes * (2 + slots) + saved,
    )
