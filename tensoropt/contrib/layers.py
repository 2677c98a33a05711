"""``tensoropt.contrib.layers``: ``layer_norm`` as in ``tf.contrib.layers``."""

from tensoropt.ops.norm_ops import layer_norm

__all__ = ["layer_norm"]
