"""``tensoropt.losses``: TensorFlow 1.x's ``tf.losses`` regularization helpers.

A loss itself is written from ops (``to.nn.sparse_softmax_cross_entropy_with_logits``,
``to.nn.sigmoid_cross_entropy_with_logits``, ``to.squared_difference``); the
regularization losses of ``get_variable(..., regularizer=...)`` are summed here::

    loss = data_loss + to.losses.get_regularization_loss()
"""

from tensoropt.graph_collections import get_regularization_loss, get_regularization_losses

__all__ = ["get_regularization_loss", "get_regularization_losses"]

from tensoropt._missing import missing_name_getter as _missing_name_getter  # noqa: E402

__getattr__ = _missing_name_getter(__name__, "tf.losses", lambda: __all__)
