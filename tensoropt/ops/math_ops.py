"""Math ops: matmul and reductions here; the elementwise functions and broadcasting binary
ops live in ``elementwise_ops`` and are re-exported, as ``tf.math`` holds them all.

Usage::

    y = to.matmul(x, w, transpose_b=False) + b
    z = to.tanh(y) * 0.5
    m = to.reduce_mean(z, axis=1, keepdims=True)
"""

from __future__ import annotations

from tensoropt.dtypes import float32
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, normalize_axis, op_error, prod, tf1_alias
from tensoropt.ops.elementwise_ops import (abs, add, divide, exp, identity, log,  # noqa: F401
                                           maximum, minimum, multiply, negative, pow, rsqrt, sigmoid,
                                           sqrt, square, squared_difference, subtract, tanh)
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace

__all__ = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "squared_difference",
    "negative", "abs", "tanh", "sigmoid", "sqrt", "rsqrt", "exp", "log", "square", "identity",
    "matmul", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "add_n",
]

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
