"""Ops of a script's labels and metrics: ``one_hot``, ``argmax``/``argmin``, comparisons
and ``cast``.

Usage::

    correct = to.equal(to.argmax(logits, 1, output_type=to.int32), labels)
    accuracy = to.reduce_mean(to.cast(correct, to.float32))
    loss, acc, _ = to.run([loss, accuracy, train_op], feed)

None of them carries a gradient (their outputs are integer or bool), except a cast between
float types. ``argmax``'s reduced axis is unsplittable (each index needs its whole row);
the comparisons and ``cast`` are elementwise and split like any elementwise op.
"""

from __future__ import annotations

from tensoropt.dtypes import as_dtype, bool_, float32, int64
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, broadcast_shapes, normalize_axis, op_error, tf1_alias
from tensoropt.ops.elementwise_ops import BinaryDef, binary
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, elementwise_space

__all__ = ["argmax", "argmin", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
           "cast", "one_hot", "where", "where_v2"]


class ArgDef(OpDef):
    """The index of the largest (smallest) element along one axis (``tf.math.<kind>``)."""

    passes_gradient = False

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
        fn = getattr(tf.math, self.kind)
        return [fn(inputs[0], axis=op.attrs["axis"], output_type=getattr(tf, op.attrs["output_type"].name))]


@register
class ArgMaxDef(ArgDef):
    kind = "argmax"


@register
class ArgMinDef(ArgDef):
    kind = "argmin"


def _arg(kind, input, axis, name, dimension, output_type) -> Tensor:
    x = as_tensor(kind, input)
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
    passes_gradient = False


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
    return get_default_graph().create_op("cast", [as_tensor("cast", x)], {"dtype": as_dtype(dtype)},
                                         name=name or "Cast").outputs[0]


@register
class OneHotDef(OpDef):
    """``indices`` [...] -> [..., depth]: ``on_value`` where the index equals the position
    along the new last axis ``c``, else ``off_value``. ``c`` may be split: a shard holding
    positions ``[o, o + k)`` writes ``one_hot(indices - o, k)`` (an index outside it gives
    an all-off row, as TensorFlow gives for any index out of range)."""

    kind = "one_hot"

    def infer(self, op):
        x = op.inputs[0]
        if x.dtype.is_floating or x.dtype == bool_:
            raise op_error(op, f"indices of dtype {x.dtype.name}", "int32 or int64 indices")
        depth = op.attrs["depth"]
        dims = {**{f"d{i}": n for i, n in enumerate(x.shape)}, "c": depth}
        in_axes = tuple(f"d{i}" for i in range(x.shape.rank))
        space = IterationSpace(dims=dims, inputs=(in_axes,), outputs=(in_axes + ("c",),),
                               flops=float(x.shape.num_elements() * depth))
        return Signature(((tuple(x.shape) + (depth,), op.attrs["dtype"]),), space)

    def lower(self, tf, op, inputs, ctx):
        offset = ctx.extra.get("dim_offsets", {}).get("c", 0)
        indices = inputs[0] - offset if offset else inputs[0]
        return [tf.one_hot(indices, ctx.local_dim_sizes["c"], on_value=op.attrs["on_value"],
                           off_value=op.attrs["off_value"], dtype=getattr(tf, op.attrs["dtype"].name))]


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """``tf.one_hot`` along a new last axis (``axis`` -1 or None only)."""
    x = as_tensor("one_hot", indices)
    if axis not in (None, -1):
        raise ValueError(f"one_hot: axis={axis!r}; TensorOpt adds the new axis last (axis=-1), then "
                         "to.transpose it where it is wanted")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"one_hot: depth={depth!r}; give a whole number >= 1")
    dtype = as_dtype(dtype) if dtype is not None else float32
    if not dtype.is_floating:
        raise ValueError(f"one_hot: dtype={dtype.name}; TensorOpt makes float32 one-hot values")
    return get_default_graph().create_op(
        "one_hot", [x], {"depth": depth, "on_value": float(1.0 if on_value is None else on_value),
                         "off_value": float(0.0 if off_value is None else off_value), "dtype": dtype},
        name=name or "one_hot").outputs[0]


@register
class WhereDef(OpDef):
    """``x`` where ``condition`` holds, else ``y``, elementwise with broadcasting; the
    gradient goes to ``x`` and ``y`` (masked), none to the condition."""

    kind = "where"
    default_name = "Select"

    def infer(self, op):
        cond, x, y = op.inputs
        if cond.dtype != bool_:
            raise op_error(op, f"condition of dtype {cond.dtype.name}", "a bool condition (e.g. to.greater(a, b))")
        if x.dtype != y.dtype:
            raise op_error(op, f"x {x.dtype.name} and y {y.dtype.name}", "x and y of one dtype")
        shape = broadcast_shapes(op, broadcast_shapes(op, cond.shape, x.shape), y.shape)
        space = elementwise_space([cond.shape, x.shape, y.shape], shape, 3.0, saved_inputs=(0,))
        return Signature(((shape, x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        return [tf.where(*inputs)]


def where(condition, x=None, y=None, name=None):
    """``tf.where(condition, x, y)`` (TensorFlow 2's broadcasting ``where``). The one-argument
    form (the indices of true elements) has no static shape, so it is not supported."""
    if x is None or y is None:
        raise ValueError("where: give x and y too; the indices of true elements (where(condition)) have "
                         "no fixed shape, which a plan needs")
    return get_default_graph().create_op("where", [as_tensor("where", condition), as_tensor("where", x),
                                                   as_tensor("where", y)], {}, name=name).outputs[0]


where_v2 = where
