"""Ops of sequence models: ``range``, ``sequence_mask`` and ``cumsum``.

Usage::

    mask = to.sequence_mask(lengths, maxlen=T, dtype=to.float32)   # [B, T]: 1 where t < length
    positions = to.range(T)                                        # [T] int32
    totals = to.cumsum(x, axis=1)

The time axis stays whole on every rank (``range`` and the mask's ``maxlen`` axis are made
whole; a running sum needs every earlier element); the batch splits. No gradient flows
into the lengths, and ``cumsum``'s backward needs no saved tensor.
"""

from __future__ import annotations

import builtins
import numbers

from tensoropt.dtypes import INTEGERS, as_dtype, bool_, int32
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, normalize_axis, op_error
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, whole_axes_space

__all__ = ["range", "sequence_mask", "cumsum"]


def _static_int(where: str, what: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{where}: {what}={value!r}; give a Python int >= {minimum} (TensorOpt plans need "
                         "every shape known)")
    return int(value)


@register
class RangeDef(OpDef):
    """``[start, start + delta, ...)``, ``limit`` excluded: a source, whole on every rank."""

    kind = "range"

    def infer(self, op):
        a = op.attrs
        n = len(builtins.range(a["start"], a["limit"], a["delta"]))
        if n < 1:
            raise op_error(op, f"start={a['start']}, limit={a['limit']}, delta={a['delta']} give no element",
                           "a non-empty range")
        space = IterationSpace(dims={"d0": n}, inputs=(), outputs=(("d0",),), unsplittable={"d0"})
        return Signature((((n,), int32),), space)

    def lower(self, tf, op, inputs, ctx):
        a = op.attrs
        return [tf.range(a["start"], a["limit"], a["delta"], dtype=tf.int32)]


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TensorFlow's name
    """``tf.range`` of Python ints (int32): ``range(n)`` or ``range(start, limit, delta)``."""
    if limit is None:
        start, limit = 0, start
    for what, value in (("start", start), ("limit", limit), ("delta", delta)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"range: {what}={value!r}; give Python ints (TensorOpt plans need every shape known)")
    if delta == 0:
        raise ValueError("range: delta=0; give a nonzero step")
    if dtype is not None and as_dtype(dtype) != int32:
        raise ValueError(f"range: dtype={dtype!r}; TensorOpt's range is int32 (to.cast it after)")
    attrs = {"start": int(start), "limit": int(limit), "delta": int(delta)}
    return get_default_graph().create_op("range", [], attrs, name=name).outputs[0]


@register
class SequenceMaskDef(OpDef):
    """lengths [...] -> [..., maxlen]: true (1) where the position is below the length."""

    kind = "sequence_mask"
    passes_gradient = False

    def infer(self, op):
        lengths = op.inputs[0]
        if lengths.dtype not in INTEGERS:
            raise op_error(op, f"lengths of dtype {lengths.dtype.name}", "int32 or int64 lengths")
        dims = {f"d{i}": n for i, n in enumerate(lengths.shape)}
        axes = tuple(dims)
        space = IterationSpace(dims=dims, inputs=(axes,), outputs=(axes + (None,),),
                               flops=float(lengths.shape.num_elements() * op.attrs["maxlen"]))
        shape = tuple(lengths.shape) + (op.attrs["maxlen"],)
        return Signature(((shape, op.attrs["dtype"]),), space)

    def lower(self, tf, op, inputs, ctx):
        return [tf.sequence_mask(inputs[0], op.attrs["maxlen"], dtype=getattr(tf, op.attrs["dtype"].name))]


def sequence_mask(lengths, maxlen=None, dtype=bool_, name=None):
    """``tf.sequence_mask`` with a static ``maxlen`` (the mask's last axis)."""
    if maxlen is None:
        raise ValueError("sequence_mask: give maxlen= (a Python int, e.g. the time steps); without it the "
                         "mask's shape would depend on the lengths' values, and plans need every shape known")
    attrs = {"maxlen": _static_int("sequence_mask", "maxlen", maxlen, 1), "dtype": as_dtype(dtype)}
    return get_default_graph().create_op("sequence_mask", [as_tensor("sequence_mask", lengths)], attrs,
                                         name=name).outputs[0]


@register
class CumsumDef(OpDef):
    """A running sum along one axis, which stays whole; the others split."""

    kind = "cumsum"

    def infer(self, op):
        x = op.inputs[0]
        axis = normalize_axis(op, op.attrs["axis"], x.shape.rank)
        op.attrs["axis"] = axis
        space = whole_axes_space(x.shape, {axis}, flops=2.0 * x.shape.num_elements())
        return Signature(((tuple(x.shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        a = op.attrs
        return [tf.math.cumsum(inputs[0], axis=a["axis"], exclusive=a["exclusive"], reverse=a["reverse"])]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None) -> Tensor:
    """``tf.cumsum``: the running sum along ``axis`` (``exclusive``: without the element
    itself; ``reverse``: from the end)."""
    attrs = {"axis": axis, "exclusive": bool(exclusive), "reverse": bool(reverse)}
    return get_default_graph().create_op("cumsum", [as_tensor("cumsum", x)], attrs, name=name).outputs[0]
