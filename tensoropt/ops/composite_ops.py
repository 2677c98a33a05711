"""TensorFlow functions that TensorOpt records as several of its own ops.

Each is written with the ops TensorOpt already plans (so every split those ops allow is
open to it), and computes what TensorFlow's function computes:

- ``nn.l2_loss(t)``: ``sum(t ** 2) / 2``;
- ``nn.l2_normalize(x, axis, epsilon)``: ``x * rsqrt(max(sum(x ** 2, axis), epsilon))``;
- ``nn.sigmoid_cross_entropy_with_logits(labels, logits)``: TensorFlow's stable form,
  ``relu(x) - x * z + softplus(-|x|)``;
- ``expand_dims`` and ``squeeze``: a reshape; ``stack``: a concat of reshapes; ``unstack``:
  a split then reshapes;
- ``zeros_like``, ``ones_like`` and a scalar ``constant``: a fill;
- ``clip_by_value(t, lo, hi)``: ``minimum(maximum(t, lo), hi)`` (of a gradient from
  ``compute_gradients``: that gradient clipped, ``tensoropt.clipping``).

Usage::

    loss = to.reduce_mean(to.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    loss += 1e-4 * to.add_n([to.nn.l2_loss(w) for w in weights])
"""

from __future__ import annotations

import numbers

from tensoropt.clipping import Gradient, gradient_clip_by_value
from tensoropt.graph import Tensor
from tensoropt.ops._common import as_tensor, tf1_alias
from tensoropt.dtypes import as_dtype, float32, int32
from tensoropt.ops.array_ops import concat, reshape, split
from tensoropt.ops.rnn_ops import fill
from tensoropt.ops.math_ops import (abs, add, maximum, minimum, multiply, negative, reduce_sum, rsqrt,
                                    square, subtract)
from tensoropt.ops.nn_ops import relu, softplus

__all__ = ["l2_loss", "l2_normalize", "sigmoid_cross_entropy_with_logits", "expand_dims", "squeeze",
           "clip_by_value", "stack", "unstack", "zeros_like", "ones_like", "constant", "shape"]



def l2_loss(t, name=None) -> Tensor:
    """Half the sum of squares of every element, a scalar (``tf.nn.l2_loss``)."""
    return multiply(reduce_sum(square(as_tensor("l2_loss", t))), 0.5, name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None) -> Tensor:
    """``x`` divided by its L2 norm along ``axis`` (every axis when None), the squared norm
    held at ``epsilon`` or more, as ``tf.nn.l2_normalize``; ``dim`` is the 1.x name of ``axis``."""
    x = as_tensor("l2_normalize", x)
    axis = tf1_alias("l2_normalize", "axis", axis, "dim", dim)
    squares = reduce_sum(square(x), axis=axis, keepdims=True)
    return multiply(x, rsqrt(maximum(squares, float(epsilon))), name=name)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None) -> Tensor:
    """Elementwise logistic loss of ``logits`` against ``labels`` in [0, 1] (same shape),
    as ``tf.nn.sigmoid_cross_entropy_with_logits``."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: pass both labels= and logits= by name")
    labels, logits = as_tensor("sigmoid_cross_entropy_with_logits", labels), as_tensor(
        "sigmoid_cross_entropy_with_logits", logits)
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"sigmoid_cross_entropy_with_logits: labels {labels.name} {tuple(labels.shape)} and "
                         f"logits {logits.name} {tuple(logits.shape)} differ in shape; they must be the same")
    if labels.dtype != logits.dtype:
        raise ValueError(f"sigmoid_cross_entropy_with_logits: labels are {labels.dtype.name}, logits "
                         f"{logits.dtype.name}; labels must be float probabilities of the logits' dtype")
    return add(subtract(relu(logits), multiply(logits, labels)), softplus(negative(abs(logits))), name=name)


def expand_dims(input, axis=None, name=None, dim=None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """``input`` with a dim of size 1 inserted at ``axis`` (``tf.expand_dims``; ``dim`` is 1.x's name)."""
    x = as_tensor("expand_dims", input)
    axis = tf1_alias("expand_dims", "axis", axis, "dim", dim)
    if axis is None or isinstance(axis, bool) or not isinstance(axis, int):
        raise ValueError(f"expand_dims: axis={axis!r}; give an int in [{-x.shape.rank - 1}, {x.shape.rank}]")
    rank = x.shape.rank + 1
    if not -rank <= axis < rank:
        raise ValueError(f"expand_dims: axis {axis} is out of range for {x.name} of shape {tuple(x.shape)}; "
                         f"give an int in [{-rank}, {rank - 1}]")
    axis %= rank
    shape = list(x.shape)
    return reshape(x, shape[:axis] + [1] + shape[axis:], name=name)


def squeeze(input, axis=None, name=None, squeeze_dims=None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """``input`` without its size-1 dims (those in ``axis`` when given), as ``tf.squeeze``."""
    x = as_tensor("squeeze", input)
    axis = tf1_alias("squeeze", "axis", axis, "squeeze_dims", squeeze_dims)
    shape = tuple(x.shape)
    if axis is None:
        drop = {i for i, n in enumerate(shape) if n == 1}
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        drop = {_axis_of(x, a) for a in axes}
        wrong = sorted(i for i in drop if shape[i] != 1)
        if wrong:
            raise ValueError(f"squeeze: {x.name} of shape {shape} has size {[shape[i] for i in wrong]} at axis "
                             f"{wrong}; only dims of size 1 can be squeezed")
    return reshape(x, [n for i, n in enumerate(shape) if i not in drop], name=name)


def _axis_of(x: Tensor, axis) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.shape.rank <= axis < x.shape.rank:
        raise ValueError(f"squeeze: axis {axis!r} is not an axis of {x.name} of shape {tuple(x.shape)}")
    return axis % x.shape.rank


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """``t`` with every element held to [min, max], as ``tf.clip_by_value``: a tensor, or a
    gradient from ``optimizer.compute_gradients`` (clipped before its update)."""
    if isinstance(t, Gradient):
        return gradient_clip_by_value(t, clip_value_min, clip_value_max)
    x = as_tensor("clip_by_value", t)
    low, high = clip_value_min, clip_value_max
    for label, value in (("clip_value_min", low), ("clip_value_max", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"clip_by_value: {label}={value!r}; give a Python number")
    if low > high:
        raise ValueError(f"clip_by_value: clip_value_min={low!r} is above clip_value_max={high!r}")
    return minimum(maximum(x, float(low)), float(high), name=name)


def stack(values, axis=0, name="stack") -> Tensor:
    """The tensors of ``values`` (one shape) stacked along a new dim ``axis`` (``tf.stack``)."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"stack: expected a non-empty list of tensors, got {values!r}")
    shapes = {tuple(as_tensor("stack", v).shape) for v in values}
    if len(shapes) > 1:
        raise ValueError(f"stack: the tensors' shapes differ: {sorted(shapes)}; stack needs one shape")
    parts = [expand_dims(v, axis) for v in values]
    return parts[0] if len(parts) == 1 else concat(parts, axis=parts[0].shape.rank + axis if axis < 0 else axis,
                                                   name=name)


def unstack(value, num=None, axis=0, name="unstack") -> list:
    """``value`` cut along ``axis`` into its slices, that dim removed (``tf.unstack``)."""
    x = as_tensor("unstack", value)
    axis = _axis_of(x, axis)
    n = x.shape[axis]
    if num is not None and num != n:
        raise ValueError(f"unstack: num={num!r}, but {x.name} has {n} slices along axis {axis}")
    parts = [x] if n == 1 else split(x, n, axis=axis, name=name)
    return [squeeze(p, axis=[axis]) for p in parts]


def _filled_like(kind: str, tensor, value: int, dtype, name) -> Tensor:
    x = as_tensor(kind, tensor)
    dtype = as_dtype(dtype or x.dtype)
    return fill(list(x.shape), float(value) if dtype.is_floating else value, name=name or kind, dtype=dtype)


def zeros_like(tensor, dtype=None, name=None) -> Tensor:
    return _filled_like("zeros_like", tensor, 0, dtype, name)


def ones_like(tensor, dtype=None, name=None) -> Tensor:
    return _filled_like("ones_like", tensor, 1, dtype, name)


def constant(value, dtype=None, shape=None, name="Const") -> Tensor:
    """A scalar ``value`` as a tensor of ``shape`` (default ``[]``), as ``tf.constant``.

    An array value is refused: a plan splits tensors, and a graph holds no array data; feed
    it through a placeholder, or hold it in a non-trainable variable made with
    ``constant_initializer``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        raise ValueError(f"constant: value {type(value).__name__} is not a Python number; TensorOpt records "
                         "scalar constants only. Feed an array through a placeholder, or keep it in "
                         "to.get_variable(name, shape, initializer=to.constant_initializer(array), trainable=False)")
    dtype = as_dtype(dtype) if dtype is not None else (int32 if isinstance(value, numbers.Integral) else float32)
    value = float(value) if dtype.is_floating else int(value)
    return fill(list(shape or []), value, name=name, dtype=dtype)


def shape(input, name=None, out_type=None) -> list:  # noqa: A002 - TensorFlow's name
    """``input``'s shape as a list of ints. TensorOpt's shapes are all known, so where a
    1.x script writes ``to.reshape(x, [to.shape(x)[0], -1])`` this gives the number; it is
    not a tensor (nothing to fetch or compute with in the graph)."""
    return list(as_tensor("shape", input).shape)
