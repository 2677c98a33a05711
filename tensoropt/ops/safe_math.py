"""Composites written as TensorFlow writes them, for their numerics: ``reduce_logsumexp``
(the max taken out, with no gradient through it) and ``clip_by_norm`` (a zero norm
guarded, so that its gradient is not NaN).

Usage::

    lse = to.reduce_logsumexp(scores, axis=1)                 # log sum exp, without overflow
    h = to.clip_by_norm(h, 5.0, axes=[1])                     # each row's L2 norm at most 5

Both are recorded ops (``reduce_max``, ``exp``, ``reduce_sum``, ``where``, ...), split as
those are: the reduced axes of the max stay whole.
"""

from __future__ import annotations

import numbers

from tensoropt.clipping import Gradient
from tensoropt.graph import Tensor
from tensoropt.ops._common import as_tensor, tf1_alias
from tensoropt.ops.array_ops import reshape
from tensoropt.ops.compare_ops import greater, where
from tensoropt.ops.composite_ops import ones_like
from tensoropt.ops.elementwise_ops import (add, divide, exp, log, maximum, multiply, sqrt, stop_gradient,
                                           subtract)
from tensoropt.ops.math_ops import reduce_max, reduce_sum

__all__ = ["reduce_logsumexp", "clip_by_norm"]


def _axes(where_: str, x: Tensor, axis) -> list[int]:
    if axis is None:
        return list(range(x.shape.rank))
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    return sorted({_axis(where_, x, a) for a in axes})


def _axis(where_: str, x: Tensor, a) -> int:
    rank = x.shape.rank
    if isinstance(a, bool) or not isinstance(a, numbers.Integral) or not -rank <= a < rank:
        raise ValueError(f"{where_}: axis {a!r} is out of range for {x.name} of rank {rank}; "
                         f"give ints in [{-rank}, {rank - 1}]")
    return int(a) % rank


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """``log(sum(exp(x)))`` over ``axis``, as ``tf.reduce_logsumexp``: the max is taken out
    first and carries no gradient."""
    x = as_tensor("reduce_logsumexp", input_tensor)
    axis = tf1_alias("reduce_logsumexp", "axis", axis, "reduction_indices", reduction_indices)
    keepdims = tf1_alias("reduce_logsumexp", "keepdims", keepdims, "keep_dims", keep_dims, default=False)
    axes = _axes("reduce_logsumexp", x, axis)
    peak = stop_gradient(reduce_max(x, axis=axes, keepdims=True))
    out = add(log(reduce_sum(exp(subtract(x, peak)), axis=axes, keepdims=True)), peak)
    if keepdims:
        return out
    return reshape(out, [n for i, n in enumerate(x.shape) if i not in axes], name=name)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t`` scaled so that its L2 norm over ``axes`` (all by default) is at most
    ``clip_norm``, as ``tf.clip_by_norm``.

    Raises:
        ValueError: ``clip_norm`` is not a positive number, or ``t`` is a gradient of
            ``compute_gradients`` (clip those by their global norm).
    """
    if isinstance(t, Gradient):
        raise ValueError("clip_by_norm: clipping each gradient by its own norm is not supported under a plan; "
                         "clip them together with to.clip_by_global_norm(grads, clip_norm), or each element "
                         "with to.clip_by_value")
    if isinstance(clip_norm, bool) or not isinstance(clip_norm, numbers.Real) or clip_norm <= 0:
        raise ValueError(f"clip_by_norm: clip_norm={clip_norm!r}; give a positive Python number")
    x = as_tensor("clip_by_norm", t)
    squares = reduce_sum(multiply(x, x), axis=_axes("clip_by_norm", x, axes), keepdims=True)
    positive = greater(squares, 0.0)
    norm = where(positive, sqrt(where(positive, squares, ones_like(squares))), squares)
    return divide(multiply(x, float(clip_norm)), maximum(norm, float(clip_norm)), name=name)
