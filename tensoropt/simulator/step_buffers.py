"""The buffers TensorFlow holds for a conversion's steps, as ``execution.horovod_comm``
lowers them (the simulator's memory mirrors these; ``plan_tasks`` places them in time).

Usage::

    from tensoropt.simulator.step_buffers import conversion_step_buffers

    held = conversion_step_buffers(steps, (784, 512), 4)
    held.steps[0].moved_in, held.steps[0].scratch, held.steps[0].out, held.view_of_input

How the lowering holds memory (``horovod_comm.CollectiveOps``):

- ``allgather`` of dim ``d`` and ``reducescatter`` into dim ``d`` move ``d`` to the front
  (``tf.transpose``), run the collective on dim 0, and move it back. A transpose copies
  its input unless only size-1 dims change places (TensorFlow then reshapes); so with
  ``d > 0`` and a size > 1 dim before it there are three buffers: the moved input (the
  step's source block), the collective's result and the result moved back (both the
  destination block), and the moved-back one is the step's value. The moved input is
  made as soon as the step's input exists and horovod holds it until the collective
  ends; the collective's result lives until it is moved back, right after.
- ``alltoall`` moves the destination dim to the front the same way, receives a buffer
  of its block's size, splits it into pieces (views when the moved dim is the first:
  no copy; else each piece is moved back, a copy) and concatenates them (a new buffer,
  the step's value).
- ``allreduce``'s result is a new buffer the size of its input.
- ``alltoallv`` (a mesh change) is counted by its result only.
- ``slice`` keeps one piece of a ``tf.split``. A split of dim 0 whose inner block is
  aligned (``ALIGN_BYTES``) makes views of its input: no copy, and the input lives as
  long as the piece; any other split writes every piece (the source block in all),
  keeps its own and frees the rest.

A slice has no task of its own: it happens with the collective before it (or, when a
conversion is only slices, with the conversion's one ``slice`` task), so its buffers
count in that step's ``StepBuffers``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

__all__ = ["ALIGN_BYTES", "StepBuffers", "ConversionBuffers", "conversion_step_buffers",
           "collective_copy_ops", "transpose_copies", "split_copies"]

#: TensorFlow's ``EIGEN_MAX_ALIGN_BYTES``: a dim-0 split shares its input's buffer when
#: each piece's inner block is a multiple of it.
ALIGN_BYTES = 64


@dataclass(frozen=True)
class StepBuffers:
    """What one collective step (with the slices after it) holds, in bytes.

    Attributes:
        moved_in: the transposed copy of the step's input the collective reads (0: none);
            held from when the input exists until the collective ends.
        scratch: held during the step and freed when it ends: the collective's result
            before it is moved back or concatenated, moved pieces, a split's input and
            the pieces it does not keep.
        out: the step's value (after its slices), read by the next step or the consumer.
        copied: the bytes its local copies write (a transpose in and back, moved
            pieces and their concatenation, a copying split), which take compute time.
        copy_ops: the TensorFlow ops that make those copies, as ``horovod_comm`` lowers
            the step, as values a profiler can time (``copy_ops``'s forms).
    """

    moved_in: int
    scratch: int
    out: int
    copied: int = 0
    copy_ops: tuple = field(default=(), compare=False)


@dataclass(frozen=True)
class ConversionBuffers:
    """A conversion's buffers: one ``StepBuffers`` per task (each collective, or the one
    ``slice`` task of a conversion that only slices), and whether its value is a view of
    the producer's buffer (which then lives as long as the converted value)."""

    steps: tuple[StepBuffers, ...]
    view_of_input: bool


def transpose_copies(local_shape: Sequence[int], dim: int) -> bool:
    """Whether moving ``dim`` to the front copies (some dim before it has size > 1 and
    so has ``dim``); otherwise TensorFlow's transpose reshapes without a copy."""
    return local_shape[dim] > 1 and any(n > 1 for n in local_shape[:dim])


def split_copies(local_shape: Sequence[int], dim: int, parts: int, itemsize: int) -> bool:
    """Whether ``tf.split`` of ``dim`` into ``parts`` writes new buffers (not views)."""
    if parts == 1:
        return False
    inner = math.prod(local_shape[1:]) * int(itemsize)
    return dim != 0 or inner % ALIGN_BYTES != 0


def collective_copy_ops(step, src_shape: Sequence[int], dst_shape: Sequence[int]) -> list[tuple]:
    """The local TensorFlow ops around a gather, scatter or exchange, as
    ``horovod_comm.CollectiveOps`` lowers it: ``("transpose", shape, perm)``,
    ``("split", shape, axis, parts)`` and ``("concat", piece_shape, parts, axis)``, each
    with the shape of its input. A transpose that only moves size-1 dims reshapes; the
    profiler's timing shows it."""
    src_shape, dst_shape = tuple(src_shape), tuple(dst_shape)
    moved = step.src_dim if step.kind == "allgather" else step.dst_dim
    perm = tuple([moved] + [d for d in range(len(src_shape)) if d != moved])   # as horovod_comm's
    back = tuple(sorted(range(len(perm)), key=perm.__getitem__))               # test_copy_ops checks
    front = lambda shape: tuple(shape[d] for d in perm)   # noqa: E731 - the moved shape
    if step.kind != "alltoall":
        return [("transpose", src_shape, perm), ("transpose", front(dst_shape), back)]
    parts = step.src.mesh[step.axis]
    received = front(src_shape)
    piece = (received[0] // parts,) + received[1:]
    piece_back = tuple(piece[d] for d in back)
    return [("transpose", src_shape, perm), ("split", received, 0, parts)] + \
        [("transpose", piece, back)] * parts + [("concat", piece_back, parts, step.src_dim)]


def conversion_step_buffers(steps, shape: Sequence[int], itemsize: int) -> ConversionBuffers:
    """The buffers of a conversion's ``steps`` (``reschedule.Step``) on a tensor of
    ``shape`` (see the module doc). Slices before the first collective count with it."""
    shape = tuple(shape)
    tasks: list[list] = []                   # [moved_in, scratch, out, copied, copy_ops] per task
    view = True                               # the value is still the producer's buffer
    lead_copy = 0                             # a copy made by slices before any collective
    lead_written = 0                          # the bytes those slices wrote
    lead_ops: list = []                       # and their splits
    for s in steps:
        src, dst = s.src.local_bytes(shape, itemsize), s.dst.local_bytes(shape, itemsize)
        src_shape = s.src.local_shape(shape)
        if s.kind == "slice":
            parts = s.src.mesh[s.axis]
            if not split_copies(src_shape, s.dst_dim, parts, itemsize):
                continue                       # a view: the value stays where it was
            split = ("split", src_shape, s.dst_dim, parts)
            if not tasks:
                lead_copy, view = dst, False
                lead_written += src
                lead_ops.append(split)
                continue
            t = tasks[-1]
            t[1] += t[2] + (src - dst)         # its input and the pieces it drops
            t[2] = dst
            t[3] += src                        # every piece is written
            t[4].append(split)
            continue
        copied, ops = 0, []
        if s.kind in ("allgather", "reducescatter", "alltoall"):
            ops = collective_copy_ops(s, src_shape, s.dst.local_shape(shape))
            moved = s.src_dim if s.kind == "allgather" else s.dst_dim
            copies = transpose_copies(src_shape, moved)
            moved_in = src if copies else 0
            if s.kind == "alltoall":
                scratch = dst + (dst if copies else 0)   # received, and moved-back pieces
                copied = moved_in + (dst if copies else 0) + dst   # ... and concatenated
            else:
                scratch = dst if copies else 0           # the result before it moves back
                copied = moved_in + (dst if copies else 0)
        else:                                  # allreduce, alltoallv: the result only
            moved_in, scratch = 0, 0
        if not tasks and lead_copy:
            copied += lead_written             # the slices before it wrote its input
            ops = lead_ops + ops
            if not moved_in:
                moved_in = lead_copy           # the sliced copy is the collective's input
        tasks.append([moved_in, scratch, dst, copied, ops])
        view = False
    if not tasks:                              # only slices: the one slice task
        tasks.append([0, 0, lead_copy, lead_written, lead_ops])
    for t in tasks:
        t[4] = tuple(t[4])
    return ConversionBuffers(tuple(StepBuffers(*t) for t in tasks), view)
