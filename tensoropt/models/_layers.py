"""Layer helpers shared by the zoo, written with the public API as a user would.

Each helper creates its variables under ``variable_scope(name)`` so that names stay
unique and readable ("block3/conv2/kernel").

Usage::

    from tensoropt.models import _layers as L
    h = L.dense(x, 512, "fc1", activation=to.nn.relu)
    y = L.conv_bn(x, 64, 3, "conv1", stride=2, activation=to.nn.relu)
    spec = L.finish(loss, inputs, optimizer="adam", learning_rate=1e-3)
"""

from __future__ import annotations

from typing import Callable, Sequence

import tensoropt as to
from tensoropt.graph import Tensor
from tensoropt.models._registry import IntRange, ModelSpec

__all__ = ["dense", "conv", "batch_norm", "conv_bn", "sparse_xent_loss", "make_train_op",
           "finish", "OPTIMIZERS"]

OPTIMIZERS = ("adam", "sgd", "momentum")


def dense(x: Tensor, units: int, name: str, activation: Callable | None = None,
          use_bias: bool = True, initializer=None) -> Tensor:
    """``x @ kernel + bias`` over the last axis of a rank-2 or rank-3 ``x``.

    Args:
        x: [..., d] input.
        units: output width.
        name: variable scope of ``kernel`` [d, units] and ``bias`` [units].
        activation: applied to the result when given (e.g. ``to.nn.relu``).
        use_bias: whether to add a bias.
        initializer: kernel initializer (glorot-uniform by default).
    """
    with to.variable_scope(name):
        kernel = to.get_variable("kernel", [x.shape[-1], units], initializer=initializer)
        y = to.matmul(x, kernel)
        if use_bias:
            y = to.nn.bias_add(y, to.get_variable("bias", [units], initializer=to.zeros_initializer()))
        return activation(y) if activation is not None else y


def conv(x: Tensor, filters: int, ksize: int | Sequence[int], name: str, stride: int = 1,
         padding: str = "SAME", use_bias: bool = False) -> Tensor:
    """An NHWC convolution with a ``kernel`` [kh, kw, in, filters] (He-normal init)."""
    kh, kw = (ksize, ksize) if isinstance(ksize, int) else tuple(ksize)
    with to.variable_scope(name):
        kernel = to.get_variable("kernel", [kh, kw, x.shape[-1], filters], initializer=to.he_normal())
        y = to.nn.conv2d(x, kernel, strides=stride, padding=padding)
        if use_bias:
            y = to.nn.bias_add(y, to.get_variable("bias", [filters], initializer=to.zeros_initializer()))
        return y


def batch_norm(x: Tensor, name: str, epsilon: float = 1e-3) -> Tensor:
    """Training-mode batch normalization over all axes but the last (``moments`` +
    ``batch_normalization``), with ``gamma``/``beta`` variables of the channel count."""
    channels = x.shape[-1]
    with to.variable_scope(name):
        gamma = to.get_variable("gamma", [channels], initializer=to.ones_initializer())
        beta = to.get_variable("beta", [channels], initializer=to.zeros_initializer())
        mean, variance = to.nn.moments(x, axes=list(range(x.shape.rank - 1)))
        return to.nn.batch_normalization(x, mean, variance, offset=beta, scale=gamma,
                                         variance_epsilon=epsilon)


def conv_bn(x: Tensor, filters: int, ksize: int | Sequence[int], name: str, stride: int = 1,
            padding: str = "SAME", activation: Callable | None = None) -> Tensor:
    """conv (no bias) -> batch norm -> optional activation, under scope ``name``."""
    with to.variable_scope(name):
        y = batch_norm(conv(x, filters, ksize, "conv", stride=stride, padding=padding), "bn")
    return activation(y) if activation is not None else y


def sparse_xent_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean sparse softmax cross-entropy over every row of ``logits`` [..., classes]."""
    return to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def make_train_op(loss: Tensor, optimizer: str, learning_rate: float):
    """Records ``optimizer`` ("adam", "sgd" or "momentum") minimizing ``loss``.

    Raises:
        ValueError: for another optimizer name.
    """
    if optimizer == "adam":
        opt = to.train.AdamOptimizer(learning_rate)
    elif optimizer == "sgd":
        opt = to.train.GradientDescentOptimizer(learning_rate)
    elif optimizer == "momentum":
        opt = to.train.MomentumOptimizer(learning_rate, momentum=0.9)
    else:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
    return opt.minimize(loss)


def finish(loss: Tensor, inputs: dict[str, Tensor], optimizer: str, learning_rate: float,
           logits: Tensor | None = None, int_ranges: dict[str, IntRange] | None = None) -> ModelSpec:
    """Records the training step and packs the ModelSpec (name and params are set by build)."""
    train_op = make_train_op(loss, optimizer, learning_rate)
    return ModelSpec(name="", params={}, inputs=inputs, loss=loss, train_op=train_op, logits=logits,
                     int_ranges=dict(int_ranges or {}))


def fc_classifier(h: Tensor, fc: int, classes: int, images: Tensor, labels: Tensor, optimizer: str,
                  learning_rate: float) -> ModelSpec:
    """AlexNet's and VGG's head: flatten, fc6 and fc7 (ReLU), fc8 logits, softmax
    cross-entropy; returns the finished ModelSpec."""
    h = to.reshape(h, [h.shape[0], h.shape[1] * h.shape[2] * h.shape[3]])
    h = dense(h, fc, "fc6", activation=to.nn.relu)
    h = dense(h, fc, "fc7", activation=to.nn.relu)
    logits = dense(h, classes, "fc8")
    loss = sparse_xent_loss(logits, labels)
    return finish(loss, {"images": images, "labels": labels}, optimizer, learning_rate,
                  logits=logits, int_ranges={"labels": IntRange(0, classes)})
