"""Operator and edge costs (Eqs. 1 and 2 of the paper) for every configuration.

Per op and configuration (``OpCost``): parameter bytes (with gradients and optimizer
slots), bytes kept for backward, forward+backward compute seconds, and synchronization
seconds: the all-reduce of partial sums inside the op (forward) and of partial input
gradients (backward; for a parameter this is the gradient all-reduce of its replica
groups). Per data edge and pair of configurations (``edge_alternatives``): the
re-scheduling time forward and backward, from ``reschedule``, and, for a tensor both ends
keep for backward, the three tensor-reuse choices as (extra memory, extra time).

A ``Collectives`` provider prices a collective ``time_s(collective, nbytes, group_size,
stride)`` (``tensoropt.costs.collective_times``: analytical alpha-beta on a cluster, or profiled);
compute time comes from FLOPs and the device's peak (``peak_flops``), the analytical
roofline.

Usage::

    model = CostModel(graph, num_devices=8, collectives=provider, peak_flops=15.7e12)
    model.op_cost(op, config)             # OpCost
    model.edge_alternatives(tensor, src_layout, dst_layout, producer_keeps, consumer_keeps)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from reschedule import Layout, Step, conversion_times, plan_conversion
from reschedule._steps import alltoallv_recv_elements

from tensoropt.configs import (Config, gradient_inputs, gradient_tensors, op_collectives, output_layout,
                               saved_bytes)
from tensoropt.costs.profiler import AnalyticalCompute

__all__ = ["Collectives", "OpCost", "EdgeAlternative", "CostModel", "StepCostFn", "requires_grad",
           "FORWARD_SHARE"]

#: The share of an op's compute seconds its forward pass takes when a gradient flows
#: through it: the backward of a linear op computes two products the size of its forward
#: one (dX and dW), so forward is 1/3 of forward + backward FLOPs.
FORWARD_SHARE = 1.0 / 3.0


class Collectives(Protocol):
    """Prices one collective; ``nbytes`` conventions as in ``tensoropt.costs.collective_times``:
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


def requires_grad(graph) -> frozenset:
    """The tensors whose gradient training computes (``configs.gradient_tensors``)."""
    return gradient_tensors(graph)


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
            compute: a provider with ``compute_s(op, config)`` (``tensoropt.costs.profiler``:
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
        self._edge_tables: dict = {}

    # -- ops -------------------------------------------------------------------------------
    def allreduce_s(self, nbytes: float, mesh: tuple[int, ...], axis: int) -> float:
        return self.collectives.time_s("allreduce", nbytes, mesh[axis], _axis_stride(mesh, axis))

    def op_cost(self, op, config: Config) -> OpCost:
        if op.kind == "variable":
            nbytes = output_layout(op, config, 0).local_bytes(op.outputs[0].shape, op.outputs[0].dtype.itemsize)
            trained = op.outputs[0] in self.trained
            return OpCost(param_bytes=nbytes * ((2 + self.slots) if trained else 1),
                          saved_bytes=0.0, compute_s=0.0, sync_s=0.0)
        compute = self.compute.compute_s(op, config)
        # the op's own collectives, by the rule the schedule and the builder also follow
        sync = sum(self.collectives.time_s(c.kind, c.nbytes, config.mesh[c.mesh_axis],
                                           _axis_stride(config.mesh, c.mesh_axis))
                   for c in op_collectives(op, config, gradient_inputs(op, self.grad))) + 0.0
        return OpCost(param_bytes=0.0, saved_bytes=float(saved_bytes(op, config)), compute_s=compute,
                      sync_s=sync)

    def compute_split(self, op, config: Config) -> tuple[float, float]:
        """``(forward_s, backward_s)`` of the op's ``compute_s``: the provider's own split
        when it has ``forward_s(op, config)``, else ``FORWARD_SHARE`` of it forward when a
        gradient flows through the op and all of it forward when none does (no backward
        runs). ``backward_s = compute_s - forward_s``, so they add up to ``compute_s``."""
        compute = self.op_cost(op, config).compute_s
        if not any(gradient_inputs(op, self.grad)):
            return compute, 0.0
        split = getattr(self.compute, "forward_s", None)
        forward = min(compute, max(0.0, split(op, config))) if split else compute * FORWARD_SHARE
        return forward, compute - forward

    # -- edges -----------------------------------------------------------------------------
    def conversion(self, src: Layout, dst: Layout, shape: tuple[int, ...], itemsize: int):
        """The cheapest conversion under this model (``reschedule`` caches the plans)."""
        return plan_conversion(src, dst, shape, itemsize, self.step_cost)

    def edge_alternatives(self, tensor, src: Layout, dst: Layout, producer_keeps: bool,
                          consumer_keeps: bool, producer_pinned: bool = False,
                          grad: bool | None = None) -> list[EdgeAlternative]:
        """The (memory, time) choices for carrying ``tensor`` from ``src`` to ``dst``.

        Args:
            producer_keeps: the producer keeps ``tensor`` (in ``src``) for backward.
            consumer_keeps: the consumer keeps it (in ``dst``) for backward.
            producer_pinned: the producer's copy cannot be dropped (a parameter, or an op
                whose backward cannot be computed from a rebuilt output): only
                "keep_both" and "keep_producer" apply.
            grad: whether a gradient flows back over the edge (``configs.gradient_inputs``
                of the consumer); None: whether ``tensor`` has a gradient at all.
        """
        return self.edge_alternative_table(tensor, (src,), (dst,), producer_keeps, consumer_keeps,
                                           producer_pinned, grad)[(0, 0)]

    def edge_alternative_table(self, tensor, srcs, dsts, producer_keeps: bool,
                               consumer_keeps: bool, producer_pinned: bool = False,
                               grad: bool | None = None) -> dict:
        """``{(u, v): edge_alternatives(tensor, srcs[u], dsts[v], ...)}`` for every pair of
        source and destination layouts, priced together: one shortest-path tree per source
        layout (and per destination for the gradient), and kept per distinct (layouts,
        shape, itemsize, keeps, gradient) so that edges of repeated layers, and edges of
        other op kinds carrying a tensor of the same shape, share one table."""
        shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
        grad = tensor in self.grad if grad is None else grad
        srcs, dsts = tuple(srcs), tuple(dsts)
        key = (shape, itemsize, srcs, dsts, producer_keeps, consumer_keeps, producer_pinned, grad)
        table = self._edge_tables.get(key)
        if table is None:
            table = self._edge_tables[key] = self._price_edge_table(
                shape, itemsize, srcs, dsts, producer_keeps and consumer_keeps, producer_pinned, grad)
        return table

    def _price_edge_table(self, shape, itemsize, srcs, dsts, both_keep: bool,
                          producer_pinned: bool, grad: bool) -> dict:
        cost = self.step_cost
        forward = [conversion_times(s, dsts, shape, itemsize, cost) for s in srcs]
        if grad:
            src_grads = [s.grad() for s in srcs]
            backward = [conversion_times(d.grad(), src_grads, shape, itemsize, cost) for d in dsts]
        if both_keep:  # reverse conversions rebuild the producer's copy (nan: none can)
            reverse = [conversion_times(d, srcs, shape, itemsize, cost, unreachable=math.nan)
                       for d in dsts]
        table = {}
        for u, src in enumerate(srcs):
            for v, dst in enumerate(dsts):
                fwd = forward[u][v]
                time = fwd + backward[v][u] if grad else fwd
                if not both_keep:
                    table[(u, v)] = [EdgeAlternative(0.0, time, "none", src, dst, grad)]
                elif src == dst:
                    table[(u, v)] = [EdgeAlternative(-float(src.local_bytes(shape, itemsize)), time,
                                                     "shared", src, dst, grad)]
                else:
                    alts = [EdgeAlternative(0.0, time, "keep_both", src, dst, grad),
                            EdgeAlternative(float(-dst.local_bytes(shape, itemsize)), time + fwd,
                                            "keep_producer", src, dst, grad)]
                    rev = reverse[v][u]
                    if not (producer_pinned or math.isnan(rev)):
                        alts.append(EdgeAlternative(float(-src.local_bytes(shape, itemsize)),
                                                    time + rev, "keep_consumer", src, dst, grad))
                    table[(u, v)] = alts
        return table

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
