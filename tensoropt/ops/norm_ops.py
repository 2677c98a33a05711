"""Normalization, composed from recorded primitives exactly as TensorFlow composes it.

Usage::

    mean, var = to.nn.moments(x, axes=[0, 1, 2])
    y = to.nn.batch_normalization(x, mean, var, offset=beta, scale=gamma, variance_epsilon=1e-3)
    z = to.contrib.layers.layer_norm(h)          # gamma/beta variables, last axis normalized
"""

from __future__ import annotations

from tensoropt.graph import get_default_graph, variable_scope
from tensoropt.initializers import ones_initializer, zeros_initializer
from tensoropt.ops import array_ops, math_ops
from tensoropt.ops._common import tf1_alias
from tensoropt.ops.source_ops import get_variable

__all__ = ["moments", "batch_normalization", "layer_norm"]


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """Mean and variance over ``axes``, as ``tf.compat.v1.nn.moments`` (``keep_dims``: the
    1.x name of ``keepdims``)."""
    keepdims = tf1_alias("moments", "keepdims", keepdims, "keep_dims", keep_dims, default=False)
    graph = get_default_graph()
    with graph.name_scope(name or "moments"):
        axes = list(axes)
        mean = math_ops.reduce_mean(x, axis=axes, keepdims=True, name="mean")
        variance = math_ops.reduce_mean(math_ops.square(math_ops.subtract(x, mean)), axis=axes,
                                        keepdims=True, name="variance")
        if not keepdims:
            kept = [n for i, n in enumerate(x.shape) if i not in {a % x.shape.rank for a in axes}]
            mean = array_ops.reshape(mean, kept, name="Squeeze")
            variance = array_ops.reshape(variance, kept, name="Squeeze_1")
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``(x - mean) * scale / sqrt(variance + eps) + offset``, in TensorFlow's op order."""
    with get_default_graph().name_scope(name or "batchnorm"):
        inv = math_ops.rsqrt(math_ops.add(variance, float(variance_epsilon)))
        if scale is not None:
            inv = math_ops.multiply(inv, scale)
        shift = math_ops.negative(math_ops.multiply(mean, inv)) if offset is None else \
            math_ops.subtract(offset, math_ops.multiply(mean, inv))
        return math_ops.add(math_ops.multiply(x, inv), shift)


def layer_norm(inputs, center=True, scale=True, begin_norm_axis=-1, begin_params_axis=-1,
               scope=None, epsilon=1e-12):
    """Layer normalization over the trailing axes, with gamma/beta variables.

    As ``tf.contrib.layers.layer_norm`` (TensorFlow 1.x): variables ``scope/gamma`` and
    ``scope/beta`` of shape ``inputs.shape[begin_params_axis:]``.
    """
    rank = inputs.shape.rank
    norm_axes = list(range(begin_norm_axis % rank, rank))
    params_shape = list(inputs.shape[begin_params_axis % rank:])
    graph = get_default_graph()
    with variable_scope(scope or graph.unique_name("LayerNorm").rsplit("/", 1)[-1]):
        beta = get_variable("beta", params_shape, initializer=zeros_initializer()) if center else None
        gamma = get_variable("gamma", params_shape, initializer=ones_initializer()) if scale else None
        mean, variance = moments(inputs, norm_axes, keepdims=True)
        return batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                   variance_epsilon=epsilon)
