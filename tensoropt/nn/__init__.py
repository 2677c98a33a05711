"""``tensoropt.nn``: TensorFlow's ``tf.nn`` names.

Usage::

    h = to.nn.relu(to.nn.conv2d(x, w, strides=1, padding="SAME"))
"""

from tensoropt.nn import rnn_cell
from tensoropt.ops.conv_ops import avg_pool, avg_pool2d, conv2d, max_pool, max_pool2d
from tensoropt.ops.composite_ops import l2_loss, l2_normalize, sigmoid_cross_entropy_with_logits
from tensoropt.ops.elementwise_ops import softsign
from tensoropt.ops.lrn_ops import local_response_normalization, lrn
from tensoropt.ops.math_ops import sigmoid, tanh
from tensoropt.ops.nn_ops import (bias_add, dropout, elu, embedding_lookup, gelu, leaky_relu,
                                  log_softmax, relu, relu6, selu, silu, softmax,
                                  softmax_cross_entropy_with_logits,
                                  softmax_cross_entropy_with_logits_v2, softplus,
                                  sparse_softmax_cross_entropy_with_logits, swish)
from tensoropt.ops.norm_ops import batch_normalization, moments
from tensoropt.ops.rnn_ops import dynamic_rnn, static_rnn

__all__ = [
    "rnn_cell", "relu", "relu6", "elu", "selu", "leaky_relu", "softplus", "silu", "swish", "gelu",
    "softmax", "log_softmax", "bias_add", "dropout", "embedding_lookup",
    "conv2d", "max_pool2d", "avg_pool2d", "max_pool", "avg_pool", "moments", "batch_normalization",
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "sigmoid_cross_entropy_with_logits", "l2_loss", "l2_normalize",
    "static_rnn", "dynamic_rnn", "sigmoid", "tanh", "lrn", "local_response_normalization", "softsign",
]

from tensoropt._missing import NEW_OP as _NEW_OP, missing_name_getter as _missing_name_getter

__getattr__ = _missing_name_getter(__name__, "tf.nn", lambda: __all__, _NEW_OP)
