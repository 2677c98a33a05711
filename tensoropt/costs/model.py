"""Operator and edge costs (Eqs. 1 and 2 of the paper) for every configuration.

Per op and configuration (``OpCost``): parameter bytes (with gradients and optimizer
slots), bytes kept for backward, forward+backward compute seconds (a trained variable's:
its optimizer update, ``update_s``, when the compute provider prices one), and synchronization
seconds: the all-reduce of partial sums inside the op (forward) and of partial input
gradients (backward; for a parameter this is the gradient all-reduce of its replica
groups). Per data edge and pair of configurations (``edge_alternatives``): the
re-scheduling time forward and backward, from ``reschedule``, and, for a tensor both ends
keep for backward, the three tensor-reuse choices as (extra memory, extra time).

Two rules keep the additive sums true to what the run does:

- keep_producer makes the consumer convert the input itself and rebuild it in backward;
  an op whose gradient reads its forward results (``reruns_forward``: max-pool, softmax,
  cross-entropy, LSTM, ...) then re-runs its forward (and an LSTM its hidden gathers) in
  backward. ``rerun_cost`` prices that, and the keep_producer alternative carries it.
- keep_consumer drops the producer's one copy; it is offered only when a single consumer
  keeps the tensor (``sole_keeper``), else two edges would each count that one saving.

A ``Collectives`` provider prices a collective ``time_s(collective, nbytes, group_size,
stride)`` (``tensoropt.costs.collective_times``: analytical alpha-beta on a cluster, or profiled);
compute time comes from FLOPs and the device's peak (``peak_flops``), the analytical
roofline.

Usage::

    model = CostModel(graph, num_devices=8, collectives=provider, peak_flops=15.7e12)
    model.op_cost(op, config)             # OpCost
    model.workspace_bytes(op, config)     # (forward, backward) transient bytes (profiled)
    model.edge_alternatives(tensor, src_layout, dst_layout, producer_keeps, consumer_keeps)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from reschedule import Layout, Step, conversion_time_matrix, plan_conversion
from reschedule._steps import alltoallv_recv_elements

from tensoropt.configs import (Config, gradient_inputs, gradient_tensors, op_collectives, output_layout,
                               reruns_forward, saved_bytes)
from tensoropt.costs._edge_tables import EdgeAlternative, EdgeAlternativeTable, price_edge_table
from tensoropt.costs.profiler import AnalyticalCompute

__all__ = ["Collectives", "OpCost", "EdgeAlternative", "EdgeAlternativeTable", "CostModel", "StepCostFn", "WithCycle",
           "Larger", "Remembered", "requires_grad", "reruns_forward", "FORWARD_SHARE"]

#: The share of an op's compute seconds its forward pass takes when a gradient flows
#: through it, for a compute provider that does not time the forward apart (the
#: analytical roofline): the backward of a linear op computes two products the size of
#: its forward one (dX and dW), so forward is 1/3 of forward + backward FLOPs. The
#: profiler times it (``ComputeProfiler.forward_s``); measured shares run from 4% (a
#: max-pool) to 79-97% (a softmax cross-entropy).
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
class WithCycle:
    """A ``Collectives`` provider whose collectives cost what one costs in a chain inside a
    step: ``cycle_s`` (horovod's cycle, negotiation and latency, as ``tensoropt calibrate``
    measures it: ``overheads.collective_s``) plus what the provider's time for ``nbytes``
    exceeds its time for a tiny buffer of the same kind and group (``tiny_s``; a
    standalone calibrated call also pays a ``session.run``, which a chain inside a step
    does not)."""

    collectives: Collectives
    cycle_s: float
    _tiny: dict = field(default_factory=dict, compare=False, repr=False)   # per scheme

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        base = self.collectives.time_s(collective, nbytes, group_size, stride)
        if group_size <= 1:
            return base                   # no collective is issued for a group of one
        if nbytes <= 0:
            return self.cycle_s           # one that moves nothing still takes its cycle
        return self.cycle_s + max(0.0, base - self.tiny_s(collective, group_size, stride))

    def tiny_s(self, collective: str, group_size: int, stride: int) -> float:
        """The provider's least time for a tiny buffer (4 to 4096 bytes per rank): one
        size alone can carry an outlier (a calibration's first call of a kind once ran
        1.7-2.8 ms against 1.07 ms for the sizes after it). Asked once per scheme."""
        key = (collective, group_size, stride)
        if key not in self._tiny:
            self._tiny[key] = min(self.collectives.time_s(collective, 4 * group_size << k,
                                                          group_size, stride) for k in range(11))
        return self._tiny[key]


@dataclass(frozen=True)
class Larger:
    """A ``Collectives`` provider whose time is the larger of two providers' times."""

    first: Collectives
    second: Collectives

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        return max(self.first.time_s(collective, nbytes, group_size, stride),
                   self.second.time_s(collective, nbytes, group_size, stride))


class Remembered:
    """A ``Collectives`` provider whose times are asked once per (collective, nbytes and its
    type, group_size, stride) and then remembered (providers are pure: the same arguments
    give the same seconds); other attributes are the provider's."""

    def __init__(self, collectives: Collectives):
        self.collectives = collectives
        self._seconds: dict = {}

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        try:
            key = (collective, nbytes, type(nbytes), group_size, stride)
            seconds = self._seconds.get(key)
        except TypeError:                       # an unhashable argument: ask every time
            return self.collectives.time_s(collective, nbytes, group_size, stride)
        if seconds is None:
            seconds = self._seconds[key] = self.collectives.time_s(collective, nbytes, group_size, stride)
        return seconds

    def __getattr__(self, name: str):
        if name == "collectives":                # not set yet (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.collectives, name)

    def __repr__(self) -> str:
        return f"Remembered({self.collectives!r})"


@dataclass(frozen=True)
class StepCostFn:
    """Adapts a ``Collectives`` provider to ``reschedule``'s ``cost_fn(step, shape, itemsize)``
    (the provider's times remembered, ``Remembered``; equal and hashed by the provider)."""

    collectives: Collectives
    remembered: Remembered = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "remembered", Remembered(self.collectives))

    def __call__(self, step: Step, shape, itemsize: int) -> float:
        kind, g = step.kind, step.group_size
        if kind == "slice":
            return 0.0
        if kind == "alltoallv":
            recv = max(alltoallv_recv_elements(step.src, step.dst, tuple(shape))) * itemsize
            return self.alltoallv_seconds(recv, g)
        nbytes = (step.dst if kind == "allgather" else step.src).local_bytes(shape, itemsize)
        return self.remembered.time_s(kind, nbytes, g, step.group_stride)

    def alltoallv_seconds(self, max_recv_bytes: int, num_ranks: int) -> float:
        """An alltoallv over ``num_ranks`` ranks whose busiest rank receives
        ``max_recv_bytes``, priced as an all-to-all over every rank moving that volume
        (``reschedule``'s vectorized pricing calls this once per distinct volume). One
        that moves nothing is still issued: the provider prices 0 bytes (horovod's cycle
        under ``WithCycle``)."""
        g = num_ranks
        return self.remembered.time_s("alltoall", max_recv_bytes * g / max(g - 1, 1), g, 1)

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
                 compute=None, op_overhead_s: float = 0.0, collective_overhead_s: float = 0.0,
                 copy_bytes_per_s: float = 0.0, transfer_compute_share: float = 0.0,
                 transfer_collectives: Collectives | None = None):
        """Args:
            compute: a provider with ``compute_s(op, config)`` (``tensoropt.costs.profiler``:
                measured, or the default ``AnalyticalCompute``, FLOPs of the shard /
                ``peak_flops``).
            op_overhead_s: launch overhead added to an op's forward, and again to its
                backward when one runs (sources excluded); from a calibration profile's
                ``overheads.op_s``.
            collective_overhead_s: horovod's cycle, what a collective costs in a chain
                beyond its transfer (``WithCycle``); from a calibration profile's
                ``overheads.collective_s``. 0: the provider's times as they are.
            copy_bytes_per_s: how fast a local copy (a ``tf.transpose`` around a
                collective) writes, from a calibration profile's
                ``overheads.copy_bytes_per_s``; the simulator prices a conversion's copies
                with it (``copies_s``) when ``compute`` does not time them itself (the
                profiler does). 0: copies are free then.
            transfer_compute_share: what a collective's transfer costs the rank's compute,
                as a share of the transfer's time, in [0, 1]: 0 where they overlap freely
                (accelerators with their own copy engines and NICs), 1 where the cores that
                compute make the transfer (CPU ranks: MPI copies through shared memory or
                sockets) and the two take turns. From a calibration profile's
                ``overheads.transfer_compute_share``; the simulator applies it
                (``simulator.plan_tasks``). ``make_cost_model("profiled")`` sets it, 1 for
                a profile that has not measured it.
            transfer_collectives: the transfer alone, measured (a calibration profile's
                ``busy_seconds``: horovod's own work on a collective). A transfer is the
                larger of it and what a collective's time in a chain exceeds a tiny one's
                (with a cycle; the provider's time without): a chain hides the work of any
                collective whose work ends within one cycle, and the busy time leaves out
                TensorFlow's side of a call.

        Collectives are priced two ways: ``collectives`` and ``step_cost`` (an op's own
        collectives, and re-scheduling steps) give what one costs in a chain, the cycle
        included, as the additive estimate adds them up; ``transfers`` and
        ``step_transfer`` give the transfer alone, for the simulator, which waits for
        horovod's cycles itself.
        """
        if peak_flops <= 0:
            raise ValueError(f"peak_flops={peak_flops}: give the device's FLOP/s (> 0)")
        for name, value in (("op_overhead_s", op_overhead_s), ("collective_overhead_s", collective_overhead_s),
                            ("copy_bytes_per_s", copy_bytes_per_s)):
            if not value >= 0:
                raise ValueError(f"{name}={value}: give a number >= 0 (seconds, or bytes per second; from tensoropt calibrate)")
        if not 0 <= transfer_compute_share <= 1:
            raise ValueError(f"transfer_compute_share={transfer_compute_share}: give a share of the "
                             "transfer's time in [0, 1] (0: transfers and compute overlap freely; "
                             "1: they take turns; from tensoropt calibrate)")
        self.graph = graph
        self.num_devices = num_devices
        self.op_overhead_s = float(op_overhead_s)
        self.collective_overhead_s = float(collective_overhead_s)
        self.copy_bytes_per_s = float(copy_bytes_per_s)
        self.transfer_compute_share = float(transfer_compute_share)
        cycle = self.collective_overhead_s
        in_chain = WithCycle(collectives, cycle) if cycle else collectives
        moved = WithCycle(collectives, 0.0) if cycle else collectives
        if transfer_collectives is not None:
            moved = Larger(transfer_collectives, moved)
        self.collectives, self.step_cost = Remembered(in_chain), StepCostFn(in_chain)
        self.transfers, self.step_transfer = Remembered(moved), StepCostFn(moved)
        self.peak_flops = float(peak_flops)
        self.compute = compute if compute is not None else AnalyticalCompute(self.peak_flops)
        self.grad = requires_grad(graph)
        self.slots = max((s.optimizer.slots_per_variable for s in graph.train_steps), default=0)
        self.optimizers = {v: s.optimizer for s in graph.train_steps for v in s.var_list}
        self.trained = self.optimizers.keys()
        self._edge_tables: dict = {}

    def copies_s(self, held, itemsize: int = 4) -> float:
        """Seconds of a conversion step's local copies (``simulator.step_buffers.StepBuffers``):
        timed as they are by a compute provider that profiles them (``copies_s``), else
        their bytes at the calibrated copy speed (0 without one)."""
        measured = getattr(self.compute, "copies_s", None)
        if measured is not None and held.copy_ops:
            return float(measured(held.copy_ops, itemsize))
        return held.copied / self.copy_bytes_per_s if self.copy_bytes_per_s else 0.0

    # -- ops -------------------------------------------------------------------------------
    def allreduce_s(self, nbytes: float, mesh: tuple[int, ...], axis: int) -> float:
        return self.collectives.time_s("allreduce", nbytes, mesh[axis], _axis_stride(mesh, axis))

    def op_cost(self, op, config: Config) -> OpCost:
        if op.kind == "variable":
            nbytes = output_layout(op, config, 0).local_bytes(op.outputs[0].shape, op.outputs[0].dtype.itemsize)
            trained = op.outputs[0] in self.trained
            return OpCost(param_bytes=nbytes * ((2 + self.slots) if trained else 1),
                          saved_bytes=0.0, compute_s=self.update_s(op, config), sync_s=0.0)
        compute = self.compute.compute_s(op, config) + self._launch_s(op)
        # the op's own collectives, by the rule the schedule and the builder also follow
        sync = sum(self.collectives.time_s(c.kind, c.nbytes, config.mesh[c.mesh_axis],
                                           _axis_stride(config.mesh, c.mesh_axis))
                   for c in op_collectives(op, config, gradient_inputs(op, self.grad))) + 0.0
        return OpCost(param_bytes=0.0, saved_bytes=float(saved_bytes(op, config)), compute_s=compute,
                      sync_s=sync)

    def update_s(self, op, config: Config) -> float:
        """Seconds of a trained variable's optimizer update on its local shard: the
        compute provider's ``update_s(optimizer, elements, dtype)`` when it has one (the
        profiler measures it), 0 otherwise (the analytical roofline does not price
        updates) and for any other op. It is the variable's ``compute_s``, and runs
        after its gradients arrive (``compute_split``: all of it backward)."""
        measured = getattr(self.compute, "update_s", None)
        tensor = op.outputs[0] if op.kind == "variable" else None
        if measured is None or tensor not in self.trained:
            return 0.0
        layout = output_layout(op, config, 0)
        elements = layout.local_bytes(tensor.shape, tensor.dtype.itemsize) // tensor.dtype.itemsize
        return float(measured(self.optimizers[tensor], int(elements), tensor.dtype.name))

    def _launch_s(self, op) -> float:
        """The op's launch overheads: forward, and backward when a gradient flows."""
        if not self.op_overhead_s or op.kind in ("variable", "placeholder", "fill"):
            return 0.0
        return self.op_overhead_s * (2 if any(gradient_inputs(op, self.grad)) else 1)

    def compute_split(self, op, config: Config) -> tuple[float, float]:
        """``(forward_s, backward_s)`` of the op's ``compute_s``: the provider's own split
        when it has ``forward_s(op, config)``, else ``FORWARD_SHARE`` of it forward when a
        gradient flows through the op and all of it forward when none does (no backward
        runs). ``backward_s = compute_s - forward_s``, so they add up to ``compute_s``."""
        compute = self.op_cost(op, config).compute_s
        if op.kind == "variable":
            return 0.0, compute               # its update, after its gradients arrive
        if not any(gradient_inputs(op, self.grad)):
            return compute, 0.0
        split = getattr(self.compute, "forward_s", None)
        launch = self._launch_s(op) / 2      # one launch each way
        work = compute - 2 * launch
        forward = min(work, max(0.0, split(op, config))) if split else work * FORWARD_SHARE
        return forward + launch, compute - forward - launch

    def workspace_bytes(self, op, config: Config) -> tuple[int, int]:
        """``(forward, backward)`` transient bytes ``op`` allocates while its forward
        (backward) pass runs, beyond its outputs: the compute provider's
        ``workspace_bytes(op, config)`` when it has one (the profiler measures them);
        ``(0, 0)`` otherwise (the analytical roofline knows no workspace). Not part of
        the additive memory (a transient adds to the peak, not to a sum); the simulator
        holds them during the op's forward and backward tasks."""
        measured = getattr(self.compute, "workspace_bytes", None)
        if measured is None or op.kind == "variable":
            return 0, 0
        forward, backward = measured(op, config)
        if not any(gradient_inputs(op, self.grad)):
            backward = 0                      # no backward runs
        return int(forward), int(backward)

    def rerun_cost(self, op, config: Config) -> tuple[float, float]:
        """``(compute_s, network_s)`` ``op`` spends again in backward when it converts an
        input itself (keep_producer): its forward compute when its gradient reads its
        forward results (``reruns_forward``), and its own forward collectives issued
        inside it (an LSTM's hidden gathers), as the builder's re-run issues them."""
        inputs = gradient_inputs(op, self.grad)
        if not any(inputs):
            return 0.0, 0.0
        compute = self.compute_split(op, config)[0] if reruns_forward(op) else 0.0
        network = sum(self.collectives.time_s(c.kind, c.nbytes, config.mesh[c.mesh_axis],
                                              _axis_stride(config.mesh, c.mesh_axis))
                      for c in op_collectives(op, config, inputs) if c.inside and c.phase == "forward")
        return compute, network + 0.0

    # -- edges -----------------------------------------------------------------------------
    def conversion(self, src: Layout, dst: Layout, shape: tuple[int, ...], itemsize: int):
        """The cheapest conversion under this model (``reschedule`` caches the plans)."""
        return plan_conversion(src, dst, shape, itemsize, self.step_cost)

    def edge_alternatives(self, tensor, src: Layout, dst: Layout, producer_keeps: bool,
                          consumer_keeps: bool, *, producer_pinned: bool = False,
                          grad: bool | None = None, sole_keeper: bool = True,
                          rerun: tuple[float, float] = (0.0, 0.0)) -> list[EdgeAlternative]:
        """The (memory, time) choices for carrying ``tensor`` from ``src`` to ``dst``.

        Args:
            producer_keeps: the producer keeps ``tensor`` (in ``src``) for backward.
            consumer_keeps: the consumer keeps it (in ``dst``) for backward.
            producer_pinned: the producer's copy cannot be dropped (a parameter, or an op
                whose backward cannot be computed from a rebuilt output): only
                "keep_both" and "keep_producer" apply.
            grad: whether a gradient flows back over the edge (``configs.gradient_inputs``
                of the consumer); None: whether ``tensor`` has a gradient at all.
            sole_keeper: the consumer is the only one keeping ``tensor`` for backward;
                otherwise "keep_consumer" is not offered (its saving, the producer's one
                copy, would be counted once per such edge).
            rerun: ``(compute_s, network_s)`` the consumer re-runs in backward under
                "keep_producer" (``rerun_cost`` of the consumer's configuration).
        """
        return self.edge_alternative_table(tensor, (src,), ((dst, tuple(rerun)),), producer_keeps,
                                           consumer_keeps, producer_pinned=producer_pinned, grad=grad,
                                           sole_keeper=sole_keeper)[(0, 0)]

    def edge_alternative_table(self, tensor, srcs, dsts, producer_keeps: bool,
                               consumer_keeps: bool, *, producer_pinned: bool = False,
                               grad: bool | None = None, sole_keeper: bool = True) -> EdgeAlternativeTable:
        """``{(u, v): edge_alternatives(tensor, srcs[u], dst, ..., rerun=rerun)}`` with
        ``(dst, rerun) = dsts[v]``, for every pair (an ``EdgeAlternativeTable``: arrays, and
        each pair's list built on first access), priced together: one conversion matrix
        each way, and kept per distinct
        (layouts, re-runs, shape, itemsize, keeps, gradient) so that edges of repeated
        layers, and edges of other op kinds carrying a tensor of the same shape, share one
        table."""
        shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
        grad = tensor in self.grad if grad is None else grad
        srcs, dsts = tuple(srcs), tuple(dsts)
        key = (shape, itemsize, srcs, dsts, producer_keeps, consumer_keeps, producer_pinned, grad,
               sole_keeper)
        table = self._edge_tables.get(key)
        if table is None:
            table = self._edge_tables[key] = self._price_edge_table(
                shape, itemsize, srcs, dsts, producer_keeps and consumer_keeps,
                producer_pinned or not sole_keeper, grad)
        return table

    def _price_edge_table(self, shape, itemsize, srcs, dsts, both_keep: bool,
                          no_keep_consumer: bool, grad: bool) -> EdgeAlternativeTable:
        cost = self.step_cost
        layouts = [d for d, _ in dsts]
        forward = conversion_time_matrix(srcs, layouts, shape, itemsize, cost)
        backward = conversion_time_matrix([d.grad() for d in layouts], [s.grad() for s in srcs],
                                          shape, itemsize, cost) if grad else None
        # reverse conversions rebuild the producer's copy (nan: none can)
        reverse = conversion_time_matrix(layouts, srcs, shape, itemsize, cost, unreachable=math.nan) \
            if both_keep else None
        return price_edge_table(srcs, layouts, forward, backward, reverse,
                                [s.local_bytes(shape, itemsize) for s in srcs],
                                [d.local_bytes(shape, itemsize) for d in layouts],
                                [tuple(rerun) for _, rerun in dsts], grad=grad,
                                keep_consumer=not no_keep_consumer)

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
