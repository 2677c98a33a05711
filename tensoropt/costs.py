"""Operator and edge costs (Eqs. 1 and 2 of the paper) for every configuration.

Per op and configuration (``OpCost``): parameter bytes (with gradients and optimizer
slots), bytes kept for backward, forward+backward compute seconds, and synchronization
seconds: the all-reduce of partial sums inside the op (forward) and of partial input
gradients (backward; for a parameter this is the gradient all-reduce of its replica
groups). Per data edge and pair of configurations (``edge_alternatives``): the
re-scheduling time forward and backward, from ``reschedule``, and, for a tensor both ends
keep for backward, the three tensor-reuse choices as (extra memory, extra time).

A ``Collectives`` provider prices a collective ``time_s(collective, nbytes, group_size,
stride)`` (``tensoropt.collectives``: analytical alpha-beta on a cluster, or profiled);
compute time comes from FLOPs and the device's peak (``peak_flops``), the analytical
roofline.

Usage::

    model = CostModel(graph, num_devices=8, collectives=provider, peak_flops=15.7e12)
    model.op_cost(op, config)             # OpCost
    model.edge_alternatives(tensor, src_layout, dst_layout, producer_keeps, consumer_keeps)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reschedule import Layout, Step, conversion_time, plan_conversion, reuse_options
from reschedule._steps import alltoallv_recv_elements

from tensoropt.configs import Config, input_layout, local_dim_sizes, output_layout
from tensoropt.profiler import AnalyticalCompute

__all__ = ["Collectives", "OpCost", "EdgeAlternative", "CostModel", "StepCostFn", "requires_grad"]


class Collectives(Protocol):
    """Prices one collective; ``nbytes`` conventions as in ``tensoropt.collectives``:
    allgather: the gathered buffer; reducescatter: the buffer before the scatter;
    allreduce: the reduced buffer; alltoall: the buffer each rank holds."""

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float: ...


@dataclass(frozen=True)
class OpCost:
    """Costs of one op under one configuration, per device.

    Attributes:
        param_bytes: parameters + gradients + optimizer slots (variables only).
        saved_bytes: bytes kept for backward.
        compute_s: forward + backward computation.
        sync_s: the op's own collectives, forward and backward.
    """

    param_bytes: float
    saved_bytes: float
    compute_s: float
    sync_s: float

    @property
    def memory_bytes(self) -> float:
        return self.param_bytes + self.saved_bytes

    @property
    def time_s(self) -> float:
        return self.compute_s + self.sync_s


@dataclass(frozen=True)
class EdgeAlternative:
    """One way to carry a tensor over an edge.

    Attributes:
        memory_bytes: memory change relative to both ends keeping their saved copies.
        time_s: re-scheduling forward + backward, plus any re-run for reuse.
        reuse: "none" (no copy kept by both ends), "keep_both", "keep_producer",
            "keep_consumer", or "shared" (same layout: one physical copy).
        src, dst: the producer's and the consumer's layouts.
        grad: whether a gradient flows back over the edge.
    """

    memory_bytes: float
    time_s: float
    reuse: str
    src: Layout
    dst: Layout
    grad: bool


@dataclass(frozen=True)
class StepCostFn:
    """Adapts a ``Collectives`` provider to ``reschedule``'s ``cost_fn(step, shape, itemsize)``."""

    collectives: Collectives

    def __call__(self, step: Step, shape, itemsize: int) -> float:
        kind, g = step.kind, step.group_size
        if kind == "slice":
            return 0.0
        if kind == "alltoallv":
            recv = max(alltoallv_recv_elements(step.src, step.dst, tuple(shape))) * itemsize
            if recv == 0:
                return 0.0
            # priced as an all-to-all over every rank moving the largest receive volume
            return self.collectives.time_s("alltoall", recv * g / max(g - 1, 1), g, 1)
        nbytes = (step.dst if kind == "allgather" else step.src).local_bytes(shape, itemsize)
        return self.collectives.time_s(kind, nbytes, g, step.group_stride)

    def __hash__(self) -> int:
        return id(self.collectives)


def requires_grad(graph) -> set:
    """Tensors whose gradients flow: their value depends on a trainable variable and, when
    the graph has training steps, some step's loss depends on them (TensorFlow builds no
    gradient, and so no backward collective, for a branch the loss does not use)."""
    out = set()
    for op in graph.operations:
        if op.kind == "variable" and op.attrs["trainable"]:
            out.add(op.outputs[0])
        elif any(t in out for t in op.inputs):
            out.update(t for t in op.outputs if t.dtype.is_floating)
    if graph.train_steps:
        used, stack = set(), [step.loss for step in graph.train_steps]
        while stack:
            t = stack.pop()
            if t not in used:
                used.add(t)
                stack.extend(t.op.inputs)
        out &= used
    return out


def _axis_stride(mesh: tuple[int, ...], axis: int) -> int:
    stride = 1
    for m in mesh[axis + 1:]:
        stride *= m
    return stride


class CostModel:
    """Prices ops and edges of one recorded graph on ``num_devices`` devices."""

    def __init__(self, graph, num_devices: int, collectives: Collectives, peak_flops: float,
                 compute=None):
        """Args:
            compute: a provider with ``compute_s(op, config)`` (``tensoropt.profiler``:
                measured, or the default ``AnalyticalCompute``, FLOPs of the shard /
                ``peak_flops``).
        """
        if peak_flops <= 0:
            raise ValueError(f"peak_flops={peak_flops}: give the device's FLOP/s (> 0)")
        self.graph = graph
        self.num_devices = num_devices
        self.collectives = collectives
        self.peak_flops = float(peak_flops)
        self.compute = compute if compute is not None else AnalyticalCompute(self.peak_flops)
        self.step_cost = StepCostFn(collectives)
        self.grad = requires_grad(graph)
        self.slots = max((s.optimizer.slots_per_variable for s in graph.train_steps), default=0)
        self.trained = {v for s in graph.train_steps for v in s.var_list}

    # -- ops -------------------------------------------------------------------------------
    def allreduce_s(self, nbytes: float, mesh: tuple[int, ...], axis: int) -> float:
        return self.collectives.time_s("allreduce", nbytes, mesh[axis], _axis_stride(mesh, axis))

    def op_cost(self, op, config: Config) -> OpCost:
        space = op.space
        local = local_dim_sizes(space, config)
        dim_axes = config.dim_axes()
        if op.kind == "variable":
            nbytes = output_layout(op, config, 0).local_bytes(op.outputs[0].shape, op.outputs[0].dtype.itemsize)
            trained = op.outputs[0] in self.trained
            return OpCost(param_bytes=nbytes * ((2 + self.slots) if trained else 1),
                          saved_bytes=0.0, compute_s=0.0, sync_s=0.0)
        saved = 0.0
        for i in space.saved_inputs:
            t = op.inputs[i]
            saved += input_layout(op, config, i).local_bytes(t.shape, t.dtype.itemsize)
        for i in space.saved_outputs:
            t = op.outputs[i]
            saved += output_layout(op, config, i).local_bytes(t.shape, t.dtype.itemsize)
        for dims in space.saved_internal:
            n = 1
            for d in dims:
                n *= local[d]
            saved += n * 4
        compute = self.compute.compute_s(op, config)
        sync = 0.0
        # forward: partial sums over axes that split a reduction dim
        for j, t in enumerate(op.outputs):
            nbytes = output_layout(op, config, j).local_bytes(t.shape, t.dtype.itemsize)
            for d in space.reductions:
                if d in dim_axes:
                    sync += self.allreduce_s(nbytes, config.mesh, dim_axes[d])
        # a fused LSTM with its hidden units split gathers h each step after the first,
        # and all-reduces that gather's (partial) gradient in backward
        if op.kind == "lstm" and "h" in dim_axes:
            axis = dim_axes["h"]
            gathered = local["b"] * space.dims["h"] * op.outputs[0].dtype.itemsize
            per_step = (self.collectives.time_s("allgather", gathered, config.mesh[axis],
                                                _axis_stride(config.mesh, axis))
                        + self.allreduce_s(gathered, config.mesh, axis))
            sync += (space.dims["t"] - 1) * per_step
        # backward: input gradients are partial over axes splitting a dim the input lacks
        for i, t in enumerate(op.inputs):
            if t not in self.grad:
                continue
            carried = set(space.inputs[i])
            nbytes = input_layout(op, config, i).local_bytes(t.shape, t.dtype.itemsize)
            for a, d in enumerate(config.axis_dims):
                if d is not None and d not in carried:
                    sync += self.allreduce_s(nbytes, config.mesh, a)
        return OpCost(param_bytes=0.0, saved_bytes=saved, compute_s=compute, sync_s=sync)

    # -- edges -----------------------------------------------------------------------------
    def conversion(self, src: Layout, dst: Layout, shape: tuple[int, ...], itemsize: int):
        """The cheapest conversion under this model (``reschedule`` caches the plans)."""
        return plan_conversion(src, dst, shape, itemsize, self.step_cost)

    def edge_alternatives(self, tensor, src: Layout, dst: Layout, producer_keeps: bool,
                          consumer_keeps: bool, producer_pinned: bool = False) -> list[EdgeAlternative]:
        """The (memory, time) choices for carrying ``tensor`` from ``src`` to ``dst``.

        Args:
            producer_keeps: the producer keeps ``tensor`` (in ``src``) for backward.
            consumer_keeps: the consumer keeps it (in ``dst``) for backward.
            producer_pinned: the producer's copy cannot be dropped (a parameter, or an op
                whose backward cannot be computed from a rebuilt output): only
                "keep_both" and "keep_producer" apply.
        """
        shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
        grad = tensor in self.grad
        time = conversion_time(src, dst, shape, itemsize, self.step_cost)
        if grad:
            time += conversion_time(dst.grad(), src.grad(), shape, itemsize, self.step_cost)
        if not (producer_keeps and consumer_keeps):
            return [EdgeAlternative(0.0, time, "none", src, dst, grad)]
        if src == dst:
            return [EdgeAlternative(-float(src.local_bytes(shape, itemsize)), time, "shared", src, dst, grad)]
        return [EdgeAlternative(float(o.extra_memory_bytes), time + o.extra_time_s, o.name, src, dst, grad)
                for o in reuse_options(src, dst, shape, itemsize, self.step_cost)
                if not (producer_pinned and o.name == "keep_consumer")]

    def conversions(self, tensor, alternative: EdgeAlternative) -> dict:
        """The conversions an alternative runs: forward, backward (or None), and the one
        re-run in backward to rebuild a dropped copy (or None)."""
        shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
        src, dst = alternative.src, alternative.dst
        forward = self.conversion(src, dst, shape, itemsize)
        rebuild = {"keep_producer": forward,
                   "keep_consumer": self.conversion(dst, src, shape, itemsize)
                   if alternative.reuse == "keep_consumer" else None}.get(alternative.reuse)
        return {"forward": forward, "rebuild": rebuild,
                "backward": self.conversion(dst.grad(), src.grad(), shape, itemsize) if alternative.grad else None}
