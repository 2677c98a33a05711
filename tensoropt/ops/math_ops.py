"""Math ops: elementwise functions, broadcasting binary ops, matmul and reductions.

Usage::

    y = to.matmul(x, w, transpose_b=False) + b
    z = to.tanh(y) * 0.5
    m = to.reduce_mean(z, axis=1, keepdims=True)
"""

from __future__ import annotations

import numbers

from tensoropt.dtypes import float32
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import (as_tensor, broadcast_shapes, normalize_axis, op_error, prod,
                                   tf1_alias)
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, elementwise_space

__all__ = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "squared_difference",
    "negative", "abs", "tanh", "sigmoid", "sqrt", "rsqrt", "exp", "log", "square", "identity",
    "matmul", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "add_n",
]

# --- unary elementwise ------------------------------------------------------------------

# kind -> (TensorFlow function path, flops per element forward+backward, what backward keeps:
# the tensor TensorFlow's registered gradient reads)
_UNARY = {
    "tanh": ("math.tanh", 6.0, "output"),
    "sigmoid": ("math.sigmoid", 6.0, "output"),
    "sqrt": ("math.sqrt", 3.0, "output"),
    "rsqrt": ("math.rsqrt", 4.0, "output"),
    "exp": ("math.exp", 3.0, "output"),
    "log": ("math.log", 3.0, "input"),
    "square": ("math.square", 3.0, "input"),
    "negative": ("math.negative", 2.0, None),
    "abs": ("math.abs", 2.0, "input"),
    "identity": ("identity", 0.0, None),
    "relu": ("nn.relu", 2.0, "output"),
    "gelu": ("nn.gelu", 20.0, "input"),
    "relu6": ("nn.relu6", 2.0, "output"),
    "elu": ("nn.elu", 6.0, "output"),
    "selu": ("nn.selu", 7.0, "output"),
    "leaky_relu": ("nn.leaky_relu", 3.0, "input"),
    "softplus": ("nn.softplus", 10.0, "input"),
    "silu": ("nn.silu", 12.0, "input"),
}

# attributes a unary op passes to its TensorFlow function, by keyword
_UNARY_ATTRS = {"gelu": ("approximate",), "leaky_relu": ("alpha",), "silu": ("beta",)}

# tf.nn.selu's constants
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _tf_function(tf, path: str):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


# d(input) from the output y and dy, for the ops whose backward keeps their output
_GRAD_FROM_OUTPUT = {
    "relu": lambda tf, y, dy: dy * tf.cast(y > 0, dy.dtype),
    "tanh": lambda tf, y, dy: dy * (1.0 - y * y),
    "sigmoid": lambda tf, y, dy: dy * y * (1.0 - y),
    "sqrt": lambda tf, y, dy: dy * 0.5 / y,
    "rsqrt": lambda tf, y, dy: dy * -0.5 * y * y * y,
    "exp": lambda tf, y, dy: dy * y,
    "relu6": lambda tf, y, dy: dy * tf.cast((y > 0) & (y < 6), dy.dtype),
    "elu": lambda tf, y, dy: dy * tf.where(y > 0, tf.ones_like(y), y + 1.0),
    "selu": lambda tf, y, dy: dy * tf.where(y > 0, tf.fill(tf.shape(y), _SELU_SCALE), y + _SELU_SCALE * _SELU_ALPHA),
}


class UnaryDef(OpDef):
    """A unary elementwise op; subclasses are generated from ``_UNARY``."""

    tf_path = ""
    flops_per_element = 1.0
    keeps: str | None = None

    def grad_from_output(self, tf, op, y, dy):
        return _GRAD_FROM_OUTPUT[self.kind](tf, y, dy)

    def infer(self, op):
        if len(op.inputs) != 1:
            raise op_error(op, f"got {len(op.inputs)} inputs", "exactly one tensor")
        x = op.inputs[0]
        if not x.dtype.is_floating and self.kind not in ("identity", "negative"):
            raise op_error(op, f"dtype {x.dtype.name} is not floating", "a float32 tensor")
        space = elementwise_space([x.shape], x.shape, self.flops_per_element,
                                  saved_inputs=(0,) if self.keeps == "input" else (),
                                  saved_outputs=(0,) if self.keeps == "output" else ())
        return Signature(((tuple(x.shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = _tf_function(tf, self.tf_path)
        return [fn(inputs[0], **{a: op.attrs[a] for a in _UNARY_ATTRS.get(self.kind, ())})]


for _kind, (_path, _flops, _keeps) in _UNARY.items():
    register(type(f"{_kind.capitalize()}Def", (UnaryDef,), {
        "kind": _kind, "tf_path": _path, "flops_per_element": _flops, "keeps": _keeps,
        "grad_from_output_ok": _kind in _GRAD_FROM_OUTPUT}))


def _unary(kind: str, x, name: str | None, **attrs) -> Tensor:
    x = as_tensor(kind, x)
    return get_default_graph().create_op(kind, [x], attrs, name=name).outputs[0]



def tanh(x, name=None):
    return _unary("tanh", x, name)


def sigmoid(x, name=None):
    return _unary("sigmoid", x, name)


def sqrt(x, name=None):
    return _unary("sqrt", x, name)


def rsqrt(x, name=None):
    return _unary("rsqrt", x, name)


def exp(x, name=None):
    return _unary("exp", x, name)


def log(x, name=None):
    return _unary("log", x, name)


def square(x, name=None):
    return _unary("square", x, name)


def negative(x, name=None):
    return _unary("negative", x, name)


def identity(input, name=None):  # noqa: A002 - TensorFlow's argument name
    return _unary("identity", input, name)


def abs(x, name=None):  # noqa: A001 - TensorFlow's name
    return _unary("abs", x, name)


# --- binary elementwise -----------------------------------------------------------------

# kind -> (TensorFlow function path, flops per output element forward+backward, keeps inputs)
_BINARY = {
    "add": ("math.add", 1.0, False),
    "subtract": ("math.subtract", 1.0, False),
    "multiply": ("math.multiply", 3.0, True),
    "divide": ("math.divide", 5.0, True),
    "maximum": ("math.maximum", 2.0, True),
    "minimum": ("math.minimum", 2.0, True),
    "pow": ("math.pow", 12.0, True),
    "squared_difference": ("math.squared_difference", 4.0, True),
}


class BinaryDef(OpDef):
    """A broadcasting binary elementwise op, or one tensor and a Python scalar.

    With a scalar, the op has one input and ``attrs["scalar"]``; ``attrs["scalar_first"]``
    says whether the scalar is the left operand (``2.0 - x``).
    """

    tf_path = ""
    flops_per_element = 1.0
    keeps_inputs = False
    out_dtype = None   # the inputs' dtype, unless set (comparisons: bool)

    def infer(self, op):
        ins = op.inputs
        if "scalar" in op.attrs:
            if len(ins) != 1:
                raise op_error(op, f"got {len(ins)} tensor inputs with a scalar", "one tensor")
            out_shape = tuple(ins[0].shape)
        else:
            if len(ins) != 2:
                raise op_error(op, f"got {len(ins)} inputs", "two tensors")
            if ins[0].dtype != ins[1].dtype:
                raise op_error(op, f"dtypes {ins[0].dtype.name} and {ins[1].dtype.name} differ",
                               "both operands of the same dtype (to.cast one)")
            out_shape = broadcast_shapes(op, ins[0].shape, ins[1].shape)
        keeps = tuple(range(len(ins))) if self.keeps_inputs else ()
        space = elementwise_space([t.shape for t in ins], out_shape, self.flops_per_element,
                                  saved_inputs=keeps)
        return Signature(((out_shape, self.out_dtype or ins[0].dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = _tf_function(tf, self.tf_path)
        if "scalar" in op.attrs:
            scalar = tf.constant(op.attrs["scalar"], dtype=inputs[0].dtype)
            return [fn(scalar, inputs[0]) if op.attrs["scalar_first"] else fn(inputs[0], scalar)]
        return [fn(inputs[0], inputs[1])]


for _kind, (_path, _flops, _keeps) in _BINARY.items():
    register(type(f"{_kind.capitalize()}Def", (BinaryDef,), {
        "kind": _kind, "tf_path": _path, "flops_per_element": _flops, "keeps_inputs": _keeps}))


def binary(kind: str, x, y, name: str | None) -> Tensor:
    """Records binary op ``kind`` of two tensors, or of a tensor and a Python number."""
    graph = get_default_graph()
    x_scalar = isinstance(x, numbers.Number)
    y_scalar = isinstance(y, numbers.Number)
    if x_scalar and y_scalar:
        raise ValueError(f"{kind}: both operands are Python numbers ({x!r}, {y!r}); "
                         "at least one must be a tensoropt Tensor")
    if x_scalar or y_scalar:
        tensor = as_tensor(kind, y if x_scalar else x)
        value = x if x_scalar else y
        attrs = {"scalar": float(value) if tensor.dtype.is_floating else int(value), "scalar_first": x_scalar}
        return graph.create_op(kind, [tensor], attrs, name=name).outputs[0]
    return graph.create_op(kind, [as_tensor(kind, x), as_tensor(kind, y)], {}, name=name).outputs[0]


def add(x, y, name=None):
    return binary("add", x, y, name)


def subtract(x, y, name=None):
    return binary("subtract", x, y, name)


def multiply(x, y, name=None):
    return binary("multiply", x, y, name)


def divide(x, y, name=None):
    return binary("divide", x, y, name)


def maximum(x, y, name=None):
    return binary("maximum", x, y, name)


def minimum(x, y, name=None):
    return binary("minimum", x, y, name)


def pow(x, y, name=None):  # noqa: A001 - TensorFlow's name
    return binary("pow", x, y, name)


def squared_difference(x, y, name=None):
    return binary("squared_difference", x, y, name)


# --- matmul -----------------------------------------------------------------------------

@register
class MatMulDef(OpDef):
    """``a @ b`` for rank 2, or batched over equal leading dims (``b`` may be rank 2).

    Dims: batch ``b0..``, rows ``m``, contraction ``k`` (a reduction), columns ``n``.
    FLOPs: 2·B·m·k·n forward, twice that backward (the gradients of both operands).
    """

    kind = "matmul"

    def infer(self, op):
        a, b = op.inputs
        ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
        if a.dtype != float32 or b.dtype != float32:
            raise op_error(op, "non-float operand", "float32 tensors")
        if a.shape.rank < 2 or b.shape.rank < 2:
            raise op_error(op, f"ranks {a.shape.rank} and {b.shape.rank}", "rank >= 2 operands")
        batch = tuple(a.shape[:-2])
        if b.shape.rank > 2 and tuple(b.shape[:-2]) != batch:
            raise op_error(op, f"batch dims {batch} and {tuple(b.shape[:-2])} differ",
                           "equal leading (batch) dims, or a rank-2 right operand")
        m, ka = (a.shape[-1], a.shape[-2]) if ta else (a.shape[-2], a.shape[-1])
        kb, n = (b.shape[-1], b.shape[-2]) if tb else (b.shape[-2], b.shape[-1])
        if ka != kb:
            raise op_error(op, f"inner dimensions differ: {ka} (a, transpose_a={ta}) vs {kb} "
                               f"(b, transpose_b={tb})",
                           f"the contraction sizes to match, e.g. b of shape ({ka}, {n})")
        bnames = tuple(f"b{i}" for i in range(len(batch)))
        dims = {**dict(zip(bnames, batch)), "m": m, "k": ka, "n": n}
        a_axes = bnames + (("k", "m") if ta else ("m", "k"))
        b_axes = (bnames if b.shape.rank > 2 else ()) + (("n", "k") if tb else ("k", "n"))
        flops = 3 * 2 * prod(batch) * m * ka * n
        space = IterationSpace(dims=dims, inputs=(a_axes, b_axes), outputs=(bnames + ("m", "n"),),
                               reductions={"k"}, flops=flops, saved_inputs=(0, 1))
        return Signature(((batch + (m, n), float32),), space)

    def lower(self, tf, op, inputs, ctx):
        return [tf.linalg.matmul(inputs[0], inputs[1], transpose_a=op.attrs["transpose_a"],
                                 transpose_b=op.attrs["transpose_b"])]


def matmul(a, b, transpose_a=False, transpose_b=False, name=None):
    """Matrix product, as ``tf.linalg.matmul`` (rank 2 or batched)."""
    a, b = as_tensor("matmul", a), as_tensor("matmul", b)
    return get_default_graph().create_op(
        "matmul", [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)},
        name=name or "MatMul").outputs[0]


# --- reductions -------------------------------------------------------------------------

class ReduceDef(OpDef):
    """Sum or mean over axes. Splitting a reduced dim leaves a partial sum; a max or min
    (``extreme``) keeps its reduced dims whole instead (a partial max is no partial sum)."""

    mean = False
    extreme = ""   # "max" or "min"

    def infer(self, op):
        x = op.inputs[0]
        rank = x.shape.rank
        axis = op.attrs["axis"]
        axes = tuple(range(rank)) if axis is None else tuple(sorted(
            {normalize_axis(op, a, rank) for a in ((axis,) if isinstance(axis, int) else axis)}))
        keep = op.attrs["keepdims"]
        dims = {f"d{i}": n for i, n in enumerate(x.shape)}
        out_axes, out_shape = [], []
        for i, n in enumerate(x.shape):
            if i in axes:
                if keep:
                    out_axes.append(None)
                    out_shape.append(1)
            else:
                out_axes.append(f"d{i}")
                out_shape.append(n)
        reduced = {f"d{i}" for i in axes}
        if self.extreme and not x.dtype.is_floating:
            raise op_error(op, f"dtype {x.dtype.name}", "a float32 tensor")
        how = dict(unsplittable=reduced, saved_inputs=(0,), saved_outputs=(0,),
                   notes=f"reduced dims kept whole: a partial {self.extreme} is no partial sum") \
            if self.extreme else dict(reductions=reduced)
        space = IterationSpace(dims=dims, inputs=(tuple(dims),), outputs=(tuple(out_axes),),
                               flops=2.0 * x.shape.num_elements(), **how)
        op.attrs["axes"] = axes
        return Signature(((tuple(out_shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        axes, keep = list(op.attrs["axes"]), op.attrs["keepdims"]
        if self.extreme:
            return [getattr(tf.math, f"reduce_{self.extreme}")(inputs[0], axis=axes, keepdims=keep)]
        if not self.mean:
            return [tf.math.reduce_sum(inputs[0], axis=axes, keepdims=keep)]
        full = prod(ctx.dim_sizes[f"d{i}"] for i in axes)
        local = prod(ctx.local_dim_sizes[f"d{i}"] for i in axes)
        if full == local:
            return [tf.math.reduce_mean(inputs[0], axis=axes, keepdims=keep)]
        # A split reduced dim: each shard contributes its partial sum / the full count.
        return [tf.math.reduce_sum(inputs[0], axis=axes, keepdims=keep) / float(full)]


@register
class ReduceSumDef(ReduceDef):
    kind = "reduce_sum"
    default_name = "Sum"


@register
class ReduceMeanDef(ReduceDef):
    kind = "reduce_mean"
    default_name = "Mean"
    mean = True


@register
class ReduceMaxDef(ReduceDef):
    kind = "reduce_max"
    default_name = "Max"
    extreme = "max"


@register
class ReduceMinDef(ReduceDef):
    kind = "reduce_min"
    default_name = "Min"
    extreme = "min"


def _reduce(kind: str, input_tensor, axis, keepdims, name, reduction_indices, keep_dims) -> Tensor:
    """``tf.compat.v1.reduce_*``: ``reduction_indices`` and ``keep_dims`` are the 1.x names
    of ``axis`` and ``keepdims``."""
    x = as_tensor(kind, input_tensor)
    axis = tf1_alias(kind, "axis", axis, "reduction_indices", reduction_indices)
    keepdims = tf1_alias(kind, "keepdims", keepdims, "keep_dims", keep_dims, default=False)
    return get_default_graph().create_op(kind, [x], {"axis": axis, "keepdims": bool(keepdims)},
                                         name=name).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("reduce_sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("reduce_mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def add_n(inputs, name=None) -> Tensor:
    """The sum of a list of same-shaped tensors, as ``tf.add_n`` (recorded as chained adds)."""
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else inputs
    if not isinstance(inputs, list) or not inputs:
        raise ValueError(f"add_n: expected a non-empty list of tensors, got {inputs!r}")
    shapes = {tuple(as_tensor("add_n", t).shape) for t in inputs}
    if len(shapes) > 1:
        raise ValueError(f"add_n: the inputs' shapes differ: {sorted(shapes)}; tf.add_n needs one shape "
                         "(use to.add to broadcast)")
    total = inputs[0]
    for i, t in enumerate(inputs[1:], 1):
        total = add(total, t, name=name if i == len(inputs) - 1 else None)
    return identity(total, name=name) if len(inputs) == 1 else total


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("reduce_max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("reduce_min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def _install_tensor_operators() -> None:
    """Gives ``Tensor`` the Python operators of ``tf.Tensor``: + - * / @ and unary -."""
    Tensor.__add__ = lambda self, other: add(self, other)
    Tensor.__radd__ = lambda self, other: add(other, self)
    Tensor.__sub__ = lambda self, other: subtract(self, other)
    Tensor.__rsub__ = lambda self, other: subtract(other, self)
    Tensor.__mul__ = lambda self, other: multiply(self, other)
    Tensor.__rmul__ = lambda self, other: multiply(other, self)
    Tensor.__truediv__ = lambda self, other: divide(self, other)
    Tensor.__rtruediv__ = lambda self, other: divide(other, self)
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)
    Tensor.__pow__ = lambda self, other: pow(self, other)
    Tensor.__rpow__ = lambda self, other: pow(other, self)
    Tensor.__matmul__ = lambda self, other: matmul(self, other)
    from tensoropt.ops.slice_ops import strided_slice_of  # noqa: PLC0415 - slice_ops needs Tensor first
    Tensor.__getitem__ = lambda self, key: strided_slice_of(self, key)


_install_tensor_operators()
