"""Horovod collectives for one process, issued in the plan's schedule, with explicit gradients.

Every rank builds the same sequence of collectives: the plan's
``schedule.collective_schedule``. Each collective the builder makes is checked against it
(name, kind, process set), and a difference raises before anything runs. Each collective
runs after the one before it in the schedule (collectives on different process sets that
run in different orders deadlock under MPI): forward collectives get a control
dependency on the previous one as they are built; backward ones are built by
``tf.gradients`` in its own traversal order, so ``finish()`` chains them afterwards in the
schedule's order. Names come from the schedule (``{kind}/{op}/{what}``), outside any name
scope, so that horovod matches them across ranks. Horovod's own registered gradients are
never used: each differentiable collective has a custom gradient
(``execution.gradients``) whose backward is the collective the layout rules call for.

Usage::

    ops = CollectiveOps(tf, hvd, rank=3, process_sets=sets, schedule=calls)
    y = ops.convert(x, forward_steps, backward_steps, shape, "MatMul/in0")   # re-scheduling
    y = ops.allreduce_forward(partial, mesh, axis, "MatMul/out0/axis1")      # P -> R, grad identity
    x = ops.allreduce_backward(x, mesh, [0, 1], "MatMul/in1/grad")           # identity, grad summed
    ops.begin_gradients(); ...; ops.finish()     # around the optimizer's tf.gradients
    ops.counts                     # Counter of collectives issued per kind
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

from reschedule import Step, axis_groups, mesh_coords

from tensoropt.execution.gradients import custom_gradient
from tensoropt.execution.schedule import CollectiveCall, collective_name

__all__ = ["CollectiveOps", "ScheduleMismatchError"]


class ScheduleMismatchError(RuntimeError):
    """The builder made a collective the plan's schedule does not have where it made it."""


def _perm_to_front(rank: int, dim: int) -> list[int]:
    return [dim] + [d for d in range(rank) if d != dim]


def _inverse(perm: Sequence[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


class CollectiveOps:
    """Builds this rank's collectives into the current TensorFlow graph.

    Args:
        tf: the tensorflow module.
        hvd: ``horovod.tensorflow``, initialized with the process sets.
        rank: this process's rank.
        process_sets: rank group (sorted tuple) -> horovod ProcessSet.
        schedule: the plan's ``collective_schedule``; every collective built must be in
            it, the forward ones in its order.
    """

    def __init__(self, tf, hvd, rank: int, process_sets: dict[tuple[int, ...], Any],
                 schedule: Sequence[CollectiveCall]):
        self.tf, self.hvd, self.rank = tf, hvd, rank
        self.process_sets = process_sets
        self.schedule = list(schedule)
        self.position = {c.name: k for k, c in enumerate(self.schedule)}
        self.forward_count = sum(1 for c in self.schedule if c.phase == "forward")
        self.issued: dict[str, Any] = {}   # name -> the horovod op
        self.last = None                   # the previous forward collective's output
        self.in_gradients = False
        self.counts: Counter = Counter()

    # -- plumbing --------------------------------------------------------------------------
    def _group(self, mesh: tuple[int, ...], axis: int | None) -> tuple[int, ...]:
        for group in axis_groups(mesh, axis):
            if self.rank in group:
                return tuple(group)
        raise AssertionError((mesh, axis, self.rank))

    def _process_set(self, group: tuple[int, ...]):
        try:
            return self.process_sets[tuple(sorted(group))]
        except KeyError:
            raise RuntimeError(f"no horovod process set for ranks {group}; tensoropt.init() registers "
                               "one per mesh-axis group: call it before building") from None

    def _expect(self, kind: str, name: str, group: tuple[int, ...]) -> CollectiveCall:
        """The schedule's entry for a collective about to be built; raises if it differs."""
        k = self.position.get(name)
        if k is None:
            raise ScheduleMismatchError(f"the builder made {kind} {name!r}, which the plan's collective "
                                        "schedule does not list")
        call = self.schedule[k]
        if name in self.issued:
            raise ScheduleMismatchError(f"the builder made {name!r} twice")
        if call.kind != kind or call.group(self.rank) != group:
            raise ScheduleMismatchError(f"the builder made {name!r} as {kind} over ranks {list(group)}; the "
                                        f"schedule has it as {call.kind} over ranks {list(call.group(self.rank))}")
        if self.in_gradients == (call.phase == "forward"):
            raise ScheduleMismatchError(f"the builder made {name!r} while building "
                                        f"{'gradients' if self.in_gradients else 'the forward pass'}; the "
                                        f"schedule has it in the {call.phase} phase")
        if not self.in_gradients and k != len(self.issued):
            raise ScheduleMismatchError(f"the builder made {name!r} as collective #{len(self.issued)}; the "
                                        f"schedule has {self.schedule[len(self.issued)].name!r} there")
        return call

    def _issue(self, kind: str, where: str, mesh, axis, build):
        """Builds collective ``{kind}/{where}`` with ``build(process_set, name)``: after the
        previous one (forward), or unchained until ``finish`` (backward)."""
        tf = self.tf
        name = collective_name(kind, where)
        group = self._group(mesh, axis)
        self._expect(kind, name, group)
        ps = self.hvd.global_process_set if axis is None else self._process_set(group)
        deps = [self.last] if self.last is not None and not self.in_gradients else []
        graph = tf.compat.v1.get_default_graph()
        with tf.control_dependencies(deps), graph.name_scope(None):   # names outside any scope
            out = build(ps, name)
        if isinstance(out, (tuple, list)):  # hvd.alltoall returns (tensor, received splits)
            out = out[0]
        if out.op.name != name:
            raise ScheduleMismatchError(f"horovod op {name!r} was named {out.op.name!r} in the graph (a "
                                        "name clash); ranks could not match it")
        self.issued[name] = out.op
        if not self.in_gradients:
            self.last = out
        self.counts[kind] += 1
        return out

    def begin_gradients(self) -> None:
        """Collectives built from now on are backward ones (built by ``tf.gradients``)."""
        if len(self.issued) != self.forward_count:
            missing = [c.name for c in self.schedule[len(self.issued):self.forward_count]]
            raise ScheduleMismatchError(f"the forward pass made {len(self.issued)} collectives, the schedule "
                                        f"has {self.forward_count} (first missing: {missing[:3]})")
        self.in_gradients = True

    def finish(self) -> None:
        """Checks that every scheduled collective was built, and chains the backward ones
        in the schedule's order (each after the one before it)."""
        missing = [c.name for c in self.schedule if c.name not in self.issued]
        if missing:
            raise ScheduleMismatchError(f"{len(missing)} collective(s) of the schedule were never built, "
                                        f"e.g. {missing[:3]}: TensorFlow computed no gradient there")
        previous = self.last.op if self.last is not None else None
        for call in self.schedule[self.forward_count:]:
            op = self.issued[call.name]
            if previous is not None:
                op._add_control_inputs([previous])   # noqa: SLF001 - the only way to order ops built earlier
            previous = op

    def _dense(self, dy):
        """Gradients of gathers arrive as IndexedSlices; collectives need dense tensors."""
        return self.tf.convert_to_tensor(dy)

    # -- raw collectives (no gradient) -----------------------------------------------------
    def allreduce_raw(self, x, mesh, axis, where):
        return self._issue("allreduce", where, mesh, axis, lambda ps, name: self.hvd.allreduce(
            x, op=self.hvd.Sum, process_set=ps, name=name))

    def allgather_raw(self, x, dim, mesh, axis, where):
        tf = self.tf
        perm = _perm_to_front(len(x.shape), dim)
        moved = tf.transpose(x, perm)
        gathered = self._issue("allgather", where, mesh, axis, lambda ps, name: self.hvd.allgather(
            moved, process_set=ps, name=name))
        return tf.transpose(gathered, _inverse(perm))

    def reducescatter_raw(self, x, dim, mesh, axis, where):
        """Sums the group's partial values and keeps this member's block of ``dim``
        (member i gets block i, as ``slice_raw``): one ``hvd.reducescatter``."""
        tf = self.tf
        perm = _perm_to_front(len(x.shape), dim)
        moved = tf.transpose(x, perm)
        scattered = self._issue("reducescatter", where, mesh, axis, lambda ps, name: self.hvd.reducescatter(
            moved, op=self.hvd.Sum, process_set=ps, name=name))
        return tf.transpose(scattered, _inverse(perm))

    def alltoall_raw(self, x, src_dim, dst_dim, mesh, axis, where):
        """Member i sends chunk j of ``dst_dim`` to member j; received chunks are
        concatenated along ``src_dim`` in member order."""
        tf = self.tf
        g = mesh[axis]
        perm = _perm_to_front(len(x.shape), dst_dim)
        moved = tf.transpose(x, perm)
        received = self._issue("alltoall", where, mesh, axis, lambda ps, name: self.hvd.alltoall(
            moved, process_set=ps, name=name))
        pieces = [tf.transpose(p, _inverse(perm)) for p in tf.split(received, g, axis=0)]
        return tf.concat(pieces, axis=src_dim)

    def slice_raw(self, x, dim, mesh, axis):
        coord = mesh_coords(mesh, self.rank)[axis]
        return self.tf.split(x, mesh[axis], axis=dim)[coord]

    def alltoallv_raw(self, x, step: Step, shape, where):
        tf = self.tf
        exchange = step.exchange(tuple(shape))
        sends = exchange.sends(self.rank)
        parts = [tf.reshape(x[p.src_slices], [-1]) for p in sends]
        buffer = tf.concat(parts, axis=0) if parts else tf.zeros([0], x.dtype)
        splits = tf.constant(exchange.send_splits(self.rank), dtype=tf.int32)
        received = self._issue("alltoallv", where, step.mesh, None, lambda ps, name: self.hvd.alltoall(
            buffer, splits=splits, process_set=ps, name=name))
        out_shape = step.dst.local_shape(tuple(shape))
        # The received pieces tile this rank's block: place each one by padding it to the
        # block's shape, and add them (no per-element index constant in the graph).
        out, offset = None, 0
        for piece in exchange.recvs(self.rank):
            box = [s.stop - s.start for s in piece.dst_slices]
            block = tf.reshape(received[offset:offset + piece.num_elements], box)
            offset += piece.num_elements
            paddings = np.array([[s.start, n - s.stop] for s, n in zip(piece.dst_slices, out_shape)],
                                dtype=np.int32).reshape(-1, 2)  # (0, 2) for a scalar
            padded = tf.pad(block, paddings)
            # the pieces do not overlap: adding places them (or-ing, for bool blocks)
            out = padded if out is None else tf.logical_or(out, padded) if out.dtype == tf.bool \
                else out + padded
        assert offset == int(np.prod(out_shape)), (offset, out_shape)
        return out

    def apply_steps(self, x, steps: Sequence[Step], shape, where):
        """Runs a conversion's steps (no gradient), step ``k`` named ``{where}/{k}``; all
        steps are non-partial here except allreduce/reducescatter, which sum pending
        partials."""
        for i, s in enumerate(steps):
            tag = f"{where}/{i}"
            if s.kind == "slice":
                x = self.slice_raw(x, s.dst_dim, s.mesh, s.axis)
            elif s.kind == "allgather":
                x = self.allgather_raw(x, s.src_dim, s.mesh, s.axis, tag)
            elif s.kind == "alltoall":
                x = self.alltoall_raw(x, s.src_dim, s.dst_dim, s.mesh, s.axis, tag)
            elif s.kind == "allreduce":
                x = self.allreduce_raw(x, s.mesh, s.axis, tag)
            elif s.kind == "reducescatter":
                x = self.reducescatter_raw(x, s.dst_dim, s.mesh, s.axis, tag)
            elif s.kind == "alltoallv":
                x = self.alltoallv_raw(x, s, shape, tag)
            else:  # pragma: no cover - reschedule.STEP_KINDS is closed
                raise AssertionError(s.kind)
        return x

    # -- differentiable wrappers -----------------------------------------------------------
    def convert(self, x, forward: Sequence[Step], backward: Sequence[Step] | None, shape, where):
        """A fused re-scheduling operator: ``forward`` steps, and ``backward`` steps on the
        gradient, named ``{where}/grad/{k}`` (None: no gradient flows)."""
        if not forward:
            return x
        if backward is None:
            return self.apply_steps(x, forward, shape, where)

        @custom_gradient(self.tf)
        def fused(value):
            def grad(dy):
                return self.apply_steps(self._dense(dy), backward, shape, f"{where}/grad")
            return self.apply_steps(value, forward, shape, where), grad

        return fused(x)

    def allreduce_forward(self, x, mesh, axis, where):
        """Sums the partial values of an op along ``axis``; the gradient passes unchanged
        (every member needs the same gradient of the sum)."""

        @custom_gradient(self.tf)
        def reduce(value):
            def grad(dy):
                return self.tf.identity(dy)
            return self.allreduce_raw(value, mesh, axis, where), grad

        return reduce(x)

    def allreduce_axes(self, g, mesh, axes: Sequence[int], where):
        """All-reduces ``g`` along each of ``axes`` in turn, named ``{where}/axis{a}``."""
        for a in axes:
            g = self.allreduce_raw(g, mesh, a, f"{where}/axis{a}")
        return g

    def allreduce_backward(self, x, mesh, axes: Sequence[int], where):
        """Identity forward; sums the gradient along each of ``axes`` (an input replicated
        along an axis that splits the op's work gets partial gradients there)."""
        if not axes:
            return x

        @custom_gradient(self.tf)
        def identity(value):
            def grad(dy):
                return self.allreduce_axes(self._dense(dy), mesh, axes, where)
            return self.tf.identity(value), grad

        return identity(x)

    def allgather_partial_grad(self, x, dim, mesh, axis, where):
        """Allgather whose consumers use the gathered value in a split way: the gradient is
        partial, so backward reduce-scatters (all-reduce, then keep this rank's chunk)."""

        @custom_gradient(self.tf)
        def gather(value):
            def grad(dy):
                summed = self.allreduce_raw(self._dense(dy), mesh, axis, f"{where}/grad")
                return self.slice_raw(summed, dim, mesh, axis)
            return self.allgather_raw(value, dim, mesh, axis, where), grad

        return gather(x)
