"""Horovod collectives for one process, chained in one total order, with explicit gradients.

Every rank builds the same sequence of collectives; each new collective gets a control
dependency on the previous one, forward and backward, so that all ranks issue them in the
same order (collectives on different process sets that run in different orders deadlock
under MPI). Names are deterministic: ``{purpose}/{recorded op}/{serial}``. Horovod's own
registered gradients are never used: each differentiable collective is a
``tf.custom_gradient`` whose backward is the collective the layout rules call for.

Usage::

    ops = CollectiveOps(tf, hvd, rank=3, process_sets=sets)
    y = ops.convert(x, forward_steps, backward_steps, shape, "matmul/in0")   # re-scheduling
    y = ops.allreduce_forward(partial, mesh, axis, "matmul/out")            # P -> R, grad identity
    x = ops.allreduce_backward(x, mesh, axis, "matmul/in1")                 # identity, grad summed
    ops.counts                     # Counter of collectives issued per kind
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

import numpy as np

from reschedule import Step, axis_groups, mesh_coords

__all__ = ["CollectiveOps"]


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
    """

    def __init__(self, tf, hvd, rank: int, process_sets: dict[tuple[int, ...], Any]):
        self.tf, self.hvd, self.rank = tf, hvd, rank
        self.process_sets = process_sets
        self.last = None          # the previous collective, for the total order
        self.serial = 0
        self.counts: Counter = Counter()

    # -- plumbing --------------------------------------------------------------------------
    def _name(self, purpose: str, where: str) -> str:
        self.serial += 1
        clean = re.sub(r"[^A-Za-z0-9_.\-/]", "_", where)
        return f"{purpose}/{clean}/{self.serial}"

    def _group(self, mesh: tuple[int, ...], axis: int) -> tuple[int, ...]:
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

    def _issue(self, kind: str, build):
        """Runs ``build()`` after the previous collective and records it as the last."""
        tf = self.tf
        deps = [self.last] if self.last is not None else []
        with tf.control_dependencies(deps):
            out = build()
        if isinstance(out, (tuple, list)):  # hvd.alltoall returns (tensor, received splits)
            out = out[0]
        self.last = out
        self.counts[kind] += 1
        return out

    def _dense(self, dy):
        """Gradients of gathers arrive as IndexedSlices; collectives need dense tensors."""
        return self.tf.convert_to_tensor(dy)

    # -- raw collectives (no gradient) -----------------------------------------------------
    def allreduce_raw(self, x, mesh, axis, where):
        ps = self._process_set(self._group(mesh, axis))
        name = self._name("allreduce", where)
        return self._issue("allreduce", lambda: self.hvd.allreduce(x, op=self.hvd.Sum, process_set=ps,
                                                                    name=name))

    def allgather_raw(self, x, dim, mesh, axis, where):
        tf = self.tf
        ps = self._process_set(self._group(mesh, axis))
        perm = _perm_to_front(len(x.shape), dim)
        name = self._name("allgather", where)
        gathered = self._issue("allgather", lambda: self.hvd.allgather(tf.transpose(x, perm),
                                                                       process_set=ps, name=name))
        return tf.transpose(gathered, _inverse(perm))

    def alltoall_raw(self, x, src_dim, dst_dim, mesh, axis, where):
        """Member i sends chunk j of ``dst_dim`` to member j; received chunks are
        concatenated along ``src_dim`` in member order."""
        tf = self.tf
        g = mesh[axis]
        ps = self._process_set(self._group(mesh, axis))
        perm = _perm_to_front(len(x.shape), dst_dim)
        name = self._name("alltoall", where)
        received = self._issue("alltoall", lambda: self.hvd.alltoall(tf.transpose(x, perm),
                                                                     process_set=ps, name=name))
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
        name = self._name("alltoallv", where)
        received = self._issue("alltoallv", lambda: self.hvd.alltoall(
            buffer, splits=splits, process_set=self.hvd.global_process_set, name=name))
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
            out = padded if out is None else out + padded
        assert offset == int(np.prod(out_shape)), (offset, out_shape)
        return out

    def apply_steps(self, x, steps: Sequence[Step], shape, where):
        """Runs a conversion's steps (no gradient); all steps are non-partial here except
        allreduce/reducescatter, which sum pending partials."""
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
                x = self.slice_raw(self.allreduce_raw(x, s.mesh, s.axis, tag), s.dst_dim, s.mesh, s.axis)
            elif s.kind == "alltoallv":
                x = self.alltoallv_raw(x, s, shape, tag)
            else:  # pragma: no cover - reschedule.STEP_KINDS is closed
                raise AssertionError(s.kind)
        return x

    # -- differentiable wrappers -----------------------------------------------------------
    def convert(self, x, forward: Sequence[Step], backward: Sequence[Step] | None, shape, where):
        """A fused re-scheduling operator: ``forward`` steps, and ``backward`` steps on the
        gradient (None: no gradient flows, e.g. integer ids)."""
        if not forward:
            return x
        if backward is None or not x.dtype.is_floating:
            return self.apply_steps(x, forward, shape, where)

        @self.tf.custom_gradient
        def fused(value):
            def grad(dy):
                return self.apply_steps(self._dense(dy), backward, shape, f"{where}/grad")
            return self.apply_steps(value, forward, shape, where), grad

        return fused(x)

    def allreduce_forward(self, x, mesh, axis, where):
        """Sums the partial values of an op along ``axis``; the gradient passes unchanged
        (every member needs the same gradient of the sum)."""

        @self.tf.custom_gradient
        def reduce(value):
            def grad(dy):
                return self.tf.identity(dy)
            return self.allreduce_raw(value, mesh, axis, where), grad

        return reduce(x)

    def allreduce_backward(self, x, mesh, axis, where):
        """Identity forward; sums the gradient along ``axis`` (an input replicated along an
        axis that splits the op's work gets partial gradients there)."""

        @self.tf.custom_gradient
        def identity(value):
            def grad(dy):
                return self.allreduce_raw(self._dense(dy), mesh, axis, f"{where}/grad")
            return self.tf.identity(value), grad

        return identity(x)

    def allgather_partial_grad(self, x, dim, mesh, axis, where):
        """Allgather whose consumers use the gathered value in a split way: the gradient is
        partial, so backward reduce-scatters (all-reduce, then keep this rank's chunk)."""

        @self.tf.custom_gradient
        def gather(value):
            def grad(dy):
                summed = self.allreduce_raw(self._dense(dy), mesh, axis, f"{where}/grad")
                return self.slice_raw(summed, dim, mesh, axis)
            return self.allgather_raw(value, dim, mesh, axis, where), grad

        return gather(x)
