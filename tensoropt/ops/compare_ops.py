"""Ops of a training script's metrics: ``argmax``/``argmin``, comparisons and ``cast``.

Usage::

    correct = to.equal(to.argmax(logits, 1, output_type=to.int32), labels)
    accuracy = to.reduce_mean(to.cast(correct, to.float32))
    loss, acc, _ = to.run([loss, accuracy, train_op], feed)

None of them carries a gradient (their outputs are integer or bool), except a cast between
float types. ``argmax``'s reduced axis is unsplittable (each index needs its whole row);
the comparisons and ``cast`` are elementwise and split like any elementwise op.
"""

from __future__ import annotations

from tensoropt.dtypes import as_dtype, bool_, int64
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import normalize_axis, tf1_alias
from tensoropt.ops.math_ops import BinaryDef, binary
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, elementwise_space

__all__ = ["argmax", "argmin", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
           "cast"]


def _tensor(kind: str, x) -> Tensor:
    if not isinstance(x, Tensor):
        raise ValueError(f"{kind}: expected a tensoropt Tensor, got {type(x).__name__} {x!r}")
    return x


class ArgDef(OpDef):
    """The index of the largest (smallest) element along one axis."""

    tf_name = ""

    def infer(self, op):
        x = op.inputs[0]
        axis = normalize_axis(op, op.attrs["axis"], x.shape.rank)
        op.attrs["axis"] = axis
        dims = {f"d{i}": n for i, n in enumerate(x.shape)}
        out_axes = tuple(f"d{i}" for i in range(x.shape.rank) if i != axis)
        space = IterationSpace(dims=dims, inputs=(tuple(dims),), outputs=(out_axes,),
                               unsplittable={f"d{axis}"}, flops=float(x.shape.num_elements()),
                               notes=f"d{axis}: each index needs its whole row")
        shape = tuple(n for i, n in enumerate(x.shape) if i != axis)
        return Signature(((shape, op.attrs["output_type"]),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = getattr(tf.math, self.tf_name)
        return [fn(inputs[0], axis=op.attrs["axis"], output_type=getattr(tf, op.attrs["output_type"].name))]


@register
class ArgMaxDef(ArgDef):
    kind = "argmax"
    tf_name = "argmax"


@register
class ArgMinDef(ArgDef):
    kind = "argmin"
    tf_name = "argmin"


def _arg(kind, input, axis, name, dimension, output_type) -> Tensor:
    x = _tensor(kind, input)
    axis = tf1_alias(kind, "axis", axis, "dimension", dimension, default=0)
    output_type = as_dtype(output_type)
    if output_type.is_floating or output_type == bool_:
        raise ValueError(f"{kind}: output_type={output_type.name}; give to.int32 or to.int64")
    return get_default_graph().create_op(kind, [x], {"axis": axis, "output_type": output_type},
                                         name=name).outputs[0]


def argmax(input, axis=None, name=None, dimension=None, output_type=int64):  # noqa: A002 - TF's name
    return _arg("argmax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=int64):  # noqa: A002 - TF's name
    return _arg("argmin", input, axis, name, dimension, output_type)


class CompareDef(BinaryDef):
    """A broadcasting elementwise comparison, bool out; one operand may be a Python number."""

    out_dtype = bool_


for _kind in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"):
    register(type(f"{_kind.title().replace('_', '')}Def", (CompareDef,), {"kind": _kind, "tf_path": f"math.{_kind}"}))


def equal(x, y, name=None):
    return binary("equal", x, y, name)


def not_equal(x, y, name=None):
    return binary("not_equal", x, y, name)


def greater(x, y, name=None):
    return binary("greater", x, y, name)


def greater_equal(x, y, name=None):
    return binary("greater_equal", x, y, name)


def less(x, y, name=None):
    return binary("less", x, y, name)


def less_equal(x, y, name=None):
    return binary("less_equal", x, y, name)


@register
class CastDef(OpDef):
    """``x`` as another dtype, elementwise (a gradient only from float to float)."""

    kind = "cast"

    def infer(self, op):
        x = op.inputs[0]
        return Signature(((tuple(x.shape), op.attrs["dtype"]),), elementwise_space([x.shape], x.shape, 1.0))

    def lower(self, tf, op, inputs, ctx):
        return [tf.cast(inputs[0], getattr(tf, op.attrs["dtype"].name))]


def cast(x, dtype, name=None):
    return get_default_graph().create_op("cast", [_tensor("cast", x)], {"dtype": as_dtype(dtype)},
                                         name=name or "Cast").outputs[0]
