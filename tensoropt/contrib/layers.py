"""``tensoropt.contrib.layers``: ``layer_norm`` and ``l2_regularizer`` as in ``tf.contrib.layers``."""

from tensoropt.graph_collections import l2_regularizer
from tensoropt.ops.norm_ops import layer_norm

__all__ = ["layer_norm", "l2_regularizer"]
