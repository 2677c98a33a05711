"""``tensoropt.layers``: TensorFlow 1.x's ``tf.layers`` functions, written with planned ops.

Usage::

    h = to.layers.conv2d(images, 32, 3, padding="same", activation=to.nn.relu)
    h = to.layers.max_pooling2d(h, 2, 2)
    h = to.layers.dense(to.layers.flatten(h), 128, activation=to.nn.relu)
    h = to.layers.dropout(h, rate=0.3, training=True)

Each layer makes its variables as TensorFlow 1.x does: ``{name}/kernel`` and
``{name}/bias``, the name defaulting to the layer's kind made unique in the current scope
(``dense``, ``dense_1``, ...); the kernel starts glorot-uniform and the bias at zero
unless told otherwise. Only ``channels_last`` and a dilation of 1 are supported.
``batch_normalization`` is not mirrored: its moving averages are updated by extra ops a
training step would have to run (write ``to.nn.moments`` and ``to.nn.batch_normalization``).
(TensorFlow 2.21 itself no longer has ``tf.compat.v1.layers`` under Keras 3; these follow
TensorFlow 1.15's definitions.)
"""

from __future__ import annotations

from typing import Callable

from tensoropt.graph import Tensor, get_default_graph, variable_scope
from tensoropt.initializers import zeros_initializer
from tensoropt.ops import conv_ops, nn_ops
from tensoropt.ops._common import as_tensor
from tensoropt.ops.array_ops import reshape
from tensoropt.ops.compare_ops import cast
from tensoropt.ops.elementwise_ops import multiply
from tensoropt.ops.math_ops import matmul
from tensoropt.ops.source_ops import get_variable

__all__ = ["dense", "conv2d", "max_pooling2d", "average_pooling2d", "flatten", "dropout"]


def _tensor(kind: str, x) -> Tensor:
    return as_tensor(f"layers.{kind}", x)


def _layer_name(kind: str, name: str | None) -> str:
    """``name``, or ``kind`` made unique among the variable scopes used in the current one."""
    if name is not None:
        return name
    graph = get_default_graph()
    prefix = graph._scope_prefix()
    taken = {v.split("/", prefix.count("/") + 1)[prefix.count("/")] for v in graph.variables if v.startswith(prefix)}
    candidate, i = kind, 0
    while candidate in taken:
        i += 1
        candidate = f"{kind}_{i}"
    return candidate


def _pair(kind: str, what: str, value) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pair):
        raise ValueError(f"layers.{kind}: {what}={value!r}; give an int >= 1 or two of them")
    return pair


def _padding(kind: str, padding: str) -> str:
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"layers.{kind}: padding={padding!r}; give 'same' or 'valid'")
    return padding.upper()


def _channels_last(kind: str, data_format: str) -> None:
    if data_format != "channels_last":
        raise ValueError(f"layers.{kind}: data_format={data_format!r}; TensorOpt supports 'channels_last' only")


def _bias_and_activation(y, units, use_bias, bias_initializer, bias_regularizer, trainable, activation):
    if use_bias:
        bias = get_variable("bias", [units], initializer=bias_initializer or zeros_initializer(),
                            regularizer=bias_regularizer, trainable=trainable)
        y = nn_ops.bias_add(y, bias)
    return activation(y) if activation is not None else y


def dense(inputs, units, activation: Callable | None = None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
          kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None) -> Tensor:
    """``activation(inputs @ kernel + bias)`` over the last axis (``tf.layers.dense``)."""
    x = _tensor("dense", inputs)
    if activity_regularizer is not None or kernel_constraint is not None or bias_constraint is not None:
        raise ValueError("layers.dense: activity_regularizer and constraints are not supported; leave them None")
    with variable_scope(_layer_name("dense", name), reuse=reuse):
        kernel = get_variable("kernel", [x.shape[-1], units], initializer=kernel_initializer,
                              regularizer=kernel_regularizer, trainable=trainable)
        return _bias_and_activation(matmul(x, kernel), units, use_bias, bias_initializer, bias_regularizer,
                                    trainable, activation)


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid", data_format="channels_last",
           dilation_rate=(1, 1), activation: Callable | None = None, use_bias=True, kernel_initializer=None,
           bias_initializer=None, kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
           kernel_constraint=None, bias_constraint=None, trainable=True, name=None, reuse=None) -> Tensor:
    """A 2-D convolution with a ``kernel`` [kh, kw, in, filters] and a bias (``tf.layers.conv2d``)."""
    x = _tensor("conv2d", inputs)
    _channels_last("conv2d", data_format)
    if _pair("conv2d", "dilation_rate", dilation_rate) != (1, 1):
        raise ValueError(f"layers.conv2d: dilation_rate={dilation_rate!r}; TensorOpt supports 1 only")
    if activity_regularizer is not None or kernel_constraint is not None or bias_constraint is not None:
        raise ValueError("layers.conv2d: activity_regularizer and constraints are not supported; leave them None")
    kh, kw = _pair("conv2d", "kernel_size", kernel_size)
    sh, sw = _pair("conv2d", "strides", strides)
    with variable_scope(_layer_name("conv2d", name), reuse=reuse):
        kernel = get_variable("kernel", [kh, kw, x.shape[-1], filters], initializer=kernel_initializer,
                              regularizer=kernel_regularizer, trainable=trainable)
        y = conv_ops.conv2d(x, kernel, strides=[1, sh, sw, 1], padding=_padding("conv2d", padding))
        return _bias_and_activation(y, filters, use_bias, bias_initializer, bias_regularizer, trainable, activation)


def _pooling(kind, pool, inputs, pool_size, strides, padding, data_format, name):
    x = _tensor(kind, inputs)
    _channels_last(kind, data_format)
    ph, pw = _pair(kind, "pool_size", pool_size)
    sh, sw = _pair(kind, "strides", strides)
    return pool(x, ksize=[1, ph, pw, 1], strides=[1, sh, sw, 1], padding=_padding(kind, padding), name=name)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    return _pooling("max_pooling2d", conv_ops.max_pool2d, inputs, pool_size, strides, padding, data_format, name)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    return _pooling("average_pooling2d", conv_ops.avg_pool2d, inputs, pool_size, strides, padding, data_format,
                    name)


def flatten(inputs, name=None, data_format="channels_last") -> Tensor:
    """``inputs`` as [batch, everything else]."""
    x = _tensor("flatten", inputs)
    _channels_last("flatten", data_format)
    return reshape(x, [x.shape[0], -1], name=name)


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None) -> Tensor:
    """``tf.layers.dropout``: drops only when ``training`` is true: a Python bool, or a
    bool scalar tensor (e.g. an ``is_training`` placeholder, fed per step: the rate is
    then ``rate * cast(training)``)."""
    x = _tensor("dropout", inputs)
    if isinstance(training, Tensor):
        if tuple(training.shape) != () or training.dtype.name != "bool":
            raise ValueError(f"layers.dropout: training is {training.name} of shape {list(training.shape)} and "
                             f"dtype {training.dtype.name}; give a bool scalar (to.placeholder(to.bool, [])) "
                             "or True/False")
        switch = multiply(cast(training, x.dtype), float(rate))
        return nn_ops.dropout(x, rate=switch, noise_shape=noise_shape, seed=seed, name=name)
    if not isinstance(training, bool):
        raise ValueError(f"layers.dropout: training={training!r}; give True or False, or a bool scalar tensor")
    return nn_ops.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed, name=name) if training else x


from tensoropt._missing import missing_name_getter as _missing_name_getter  # noqa: E402

__getattr__ = _missing_name_getter(__name__, "tf.layers", lambda: __all__)
