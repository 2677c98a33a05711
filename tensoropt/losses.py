"""``tensoropt.losses``: TensorFlow 1.x's ``tf.losses``.

The loss functions build the loss from ops, reduce it as ``tf.compat.v1.losses`` does,
and add it to the ``LOSSES`` collection (``get_losses``, ``get_total_loss``)::

    mse = to.losses.mean_squared_error(labels=y, predictions=pred)
    xent = to.losses.sparse_softmax_cross_entropy(labels=ids, logits=logits)
    loss = to.losses.get_total_loss()      # every loss above + the regularization losses

``weights`` is a Python number (the default 1.0); the default reduction,
``SUM_BY_NONZERO_WEIGHTS``, is then the weight times the mean of the elementwise loss
(0 for a weight of 0). A weights tensor is refused with what to write instead.
"""

from __future__ import annotations

import numbers

from tensoropt.graph_collections import (GraphKeys, add_to_collection, get_collection,
                                         get_regularization_loss, get_regularization_losses)
from tensoropt.ops import composite_ops, nn_ops
from tensoropt.ops.elementwise_ops import (abs, add, log, minimum, multiply, negative, square,
                                           subtract)
from tensoropt.ops.math_ops import add_n, reduce_mean, reduce_sum

__all__ = ["Reduction", "mean_squared_error", "absolute_difference", "huber_loss", "log_loss",
           "sparse_softmax_cross_entropy", "softmax_cross_entropy", "sigmoid_cross_entropy",
           "get_losses", "get_total_loss", "get_regularization_loss", "get_regularization_losses"]


class Reduction:
    """How a loss function reduces its weighted elementwise loss (``tf.losses.Reduction``)."""

    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_BY_NONZERO_WEIGHTS)


def _weight(where: str, weights) -> float:
    if isinstance(weights, bool) or not isinstance(weights, numbers.Real):
        raise ValueError(f"losses.{where}: weights={weights!r}; TensorOpt takes a Python number here. For "
                         f"per-example weights, multiply the elementwise loss by them and reduce it yourself, "
                         f"e.g. to.reduce_mean(w * to.squared_difference(predictions, labels))")
    return float(weights)


def _reduce(where: str, elementwise, weights, reduction: str, loss_collection: str | None, name: str | None):
    """``elementwise`` weighted and reduced as ``tf.compat.v1.losses.compute_weighted_loss``."""
    w = _weight(where, weights)
    if reduction not in Reduction.all():
        raise ValueError(f"losses.{where}: reduction={reduction!r}; use one of to.losses.Reduction's "
                         f"{list(Reduction.all())}")
    if reduction == Reduction.NONE:
        loss = multiply(elementwise, w, name=name)
    elif reduction == Reduction.SUM:
        loss = reduce_sum(multiply(elementwise, w), name=name)
    elif reduction == Reduction.MEAN:          # sum(w l) / sum(w): the mean, for a nonzero weight
        loss = reduce_mean(multiply(elementwise, 1.0 if w else 0.0), name=name)
    else:                                      # / batch size, / nonzero weights: w * mean
        loss = reduce_mean(multiply(elementwise, w), name=name)
    if loss_collection:
        add_to_collection(loss_collection, loss)
    return loss


def _pair(where: str, first: str, a, second: str, b):
    if a is None or b is None:
        raise ValueError(f"losses.{where}: pass both {first}= and {second}=")
    return a, b


def mean_squared_error(labels=None, predictions=None, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    labels, predictions = _pair("mean_squared_error", "labels", labels, "predictions", predictions)
    return _reduce("mean_squared_error", square(subtract(predictions, labels)), weights, reduction,
                   loss_collection, scope)


def absolute_difference(labels=None, predictions=None, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    labels, predictions = _pair("absolute_difference", "labels", labels, "predictions", predictions)
    return _reduce("absolute_difference", abs(subtract(predictions, labels)), weights, reduction,
                   loss_collection, scope)


def huber_loss(labels=None, predictions=None, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta), e = predictions - labels."""
    labels, predictions = _pair("huber_loss", "labels", labels, "predictions", predictions)
    error = abs(subtract(predictions, labels))
    quadratic = minimum(error, float(delta))
    elementwise = add(multiply(square(quadratic), 0.5), multiply(subtract(error, quadratic), float(delta)))
    return _reduce("huber_loss", elementwise, weights, reduction, loss_collection, scope)


def log_loss(labels=None, predictions=None, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels log(p + eps) - (1 - labels) log(1 - p + eps), p the predicted probabilities."""
    labels, predictions = _pair("log_loss", "labels", labels, "predictions", predictions)
    eps = float(epsilon)
    positive = multiply(labels, log(add(predictions, eps)))
    negative_part = multiply(subtract(1.0, labels), log(add(subtract(1.0, predictions), eps)))
    return _reduce("log_loss", negative(add(positive, negative_part)), weights, reduction,
                   loss_collection, scope)


def _smoothed(labels, smoothing: float, uniform: float):
    """``labels (1 - smoothing) + smoothing * uniform``: toward the uniform label."""
    if not smoothing:
        return labels
    return add(multiply(labels, 1.0 - smoothing), smoothing * uniform)


def sparse_softmax_cross_entropy(labels=None, logits=None, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    labels, logits = _pair("sparse_softmax_cross_entropy", "labels", labels, "logits", logits)
    return _reduce("sparse_softmax_cross_entropy",
                   nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                   weights, reduction, loss_collection, scope)


def softmax_cross_entropy(onehot_labels=None, logits=None, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """With ``label_smoothing`` s: labels (1 - s) + s / classes."""
    labels, logits = _pair("softmax_cross_entropy", "onehot_labels", onehot_labels, "logits", logits)
    labels = _smoothed(labels, label_smoothing, 1.0 / int(logits.shape[-1]))
    return _reduce("softmax_cross_entropy",
                   nn_ops.softmax_cross_entropy_with_logits(labels=labels, logits=logits),
                   weights, reduction, loss_collection, scope)


def sigmoid_cross_entropy(multi_class_labels=None, logits=None, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """With ``label_smoothing`` s: labels (1 - s) + s / 2."""
    labels, logits = _pair("sigmoid_cross_entropy", "multi_class_labels", multi_class_labels, "logits", logits)
    labels = _smoothed(labels, label_smoothing, 0.5)
    return _reduce("sigmoid_cross_entropy",
                   composite_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits),
                   weights, reduction, loss_collection, scope)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list:
    """The losses the loss functions (or ``add_to_collection``) put in ``loss_collection``."""
    return get_collection(loss_collection, scope)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None):
    """The sum of ``get_losses()`` and, by default, the regularization losses.

    Raises:
        ValueError: there is no loss to sum.
    """
    losses = get_losses(scope) + (get_regularization_losses(scope) if add_regularization_losses else [])
    if not losses:
        raise ValueError("losses.get_total_loss: no losses were recorded; build one with a to.losses "
                         "function (e.g. to.losses.mean_squared_error) or to.add_to_collection('losses', loss)")
    return add_n(losses, name=name)


from tensoropt._missing import missing_name_getter as _missing_name_getter  # noqa: E402

__getattr__ = _missing_name_getter(__name__, "tf.losses", lambda: __all__)
