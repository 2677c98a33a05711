"""Slicing: ``x[:, -1]``, ``x[..., 1:3]`` and ``to.slice(x, begin, size)``.

Usage::

    last = outputs[:, -1]                 # an RNN's last step: [batch, time, h] -> [batch, h]
    cls = to.slice(hidden, [0, 0, 0], [-1, 1, -1])

An axis taken whole keeps its dim, so the plan may split it; an axis cut (a range, or an
index that removes it) is kept whole on every rank (an unsplittable dim), since a shard
would hold some, all or none of the slice. Steps other than 1 and ``tf.newaxis`` are not
supported.
"""

from __future__ import annotations

import builtins
import numbers

from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, op_error, prod
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace

__all__ = ["strided_slice_of", "slice"]


@register
class StridedSliceDef(OpDef):
    """``attrs["box"]``: per input axis ``(begin, end, shrink)`` with 0 <= begin < end <= n."""

    kind = "strided_slice"
    default_name = "strided_slice"

    def infer(self, op):
        x = op.inputs[0]
        box = op.attrs["box"]
        if len(box) != x.shape.rank:
            raise op_error(op, f"{len(box)} axes sliced", f"one (begin, end, shrink) per axis of {tuple(x.shape)}")
        dims, in_axes, out_axes, out_shape = {}, [], [], []
        for a, ((begin, end, shrink), n) in enumerate(zip(box, x.shape)):
            if not 0 <= begin < end <= n or (shrink and end != begin + 1):
                raise op_error(op, f"axis {a}: [{begin}:{end}] of {n}", "a non-empty range inside the axis")
            whole = begin == 0 and end == n and not shrink
            name = f"d{a}" if whole else f"s{a}"
            dims[name] = n
            in_axes.append(name)
            if not shrink:
                out_axes.append(name if whole else None)
                out_shape.append(end - begin)
        space = IterationSpace(dims=dims, inputs=(tuple(in_axes),), outputs=(tuple(out_axes),),
                               unsplittable={d for d in dims if d.startswith("s")},
                               flops=2.0 * prod(out_shape), notes="axes cut by the slice are kept whole")
        return Signature(((tuple(out_shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        index = []
        for (begin, end, shrink), n in zip(op.attrs["box"], op.inputs[0].shape):
            if shrink:
                index.append(begin)
            elif begin == 0 and end == n:
                index.append(builtins.slice(None))   # taken whole: all of this rank's shard of the axis
            else:
                index.append(builtins.slice(begin, end))
        return [inputs[0][tuple(index)]]


def _box_of(x: Tensor, key) -> tuple:
    """``key`` (ints, slices of step 1, one Ellipsis) as per-axis (begin, end, shrink)."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in items) > 1:
        raise ValueError(f"{x.name}[{key!r}]: at most one ... in an index")
    if Ellipsis in items:
        e = items.index(Ellipsis)
        fill = x.shape.rank - (len(items) - 1)
        items = items[:e] + (builtins.slice(None),) * fill + items[e + 1:]
    if len(items) > x.shape.rank:
        raise ValueError(f"{x.name}[{key!r}]: {len(items)} indices for a tensor of rank {x.shape.rank}")
    items = items + (builtins.slice(None),) * (x.shape.rank - len(items))
    box = []
    for a, (k, n) in enumerate(zip(items, x.shape)):
        if isinstance(k, numbers.Integral) and not isinstance(k, bool):
            i = int(k) + n if k < 0 else int(k)
            if not 0 <= i < n:
                raise ValueError(f"{x.name}[{key!r}]: index {k} is out of range for axis {a} of size {n}")
            box.append((i, i + 1, True))
        elif isinstance(k, builtins.slice):
            if k.step not in (None, 1):
                raise ValueError(f"{x.name}[{key!r}]: step {k.step} on axis {a}; TensorOpt slices with step 1 only")
            begin, end, _ = k.indices(n)
            if begin >= end:
                raise ValueError(f"{x.name}[{key!r}]: axis {a} of size {n} sliced to nothing")
            box.append((begin, end, False))
        else:
            raise ValueError(f"{x.name}[{key!r}]: {k!r} on axis {a} is not an int, a slice or ...; "
                             "tensors, lists and tf.newaxis are not supported as indices")
    return tuple(box)


def strided_slice_of(x: Tensor, key, name=None) -> Tensor:
    """``x[key]`` as TensorFlow's ``Tensor.__getitem__`` (step 1, no newaxis)."""
    return get_default_graph().create_op("strided_slice", [x], {"box": _box_of(x, key)}, name=name).outputs[0]


def slice(input_, begin, size, name=None) -> Tensor:  # noqa: A001 - TensorFlow's name
    """``tf.slice``: ``size[i]`` elements from ``begin[i]`` on each axis (-1: to its end)."""
    input_ = as_tensor("slice", input_)
    begin, size = list(begin), list(size)
    if len(begin) != input_.shape.rank or len(size) != input_.shape.rank:
        raise ValueError(f"slice: begin {begin} and size {size} must each have one entry per axis of "
                         f"{input_.name} {tuple(input_.shape)}")
    key = tuple(builtins.slice(b, n if z == -1 else b + z) for b, z, n in zip(begin, size, input_.shape))
    return strided_slice_of(input_, key, name=name or "Slice")
