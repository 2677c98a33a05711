"""Local response normalization (``tf.nn.lrn``, AlexNet's and the CIFAR-10 tutorial's).

Usage::

    norm1 = to.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)

Each output divides its input by ``(bias + alpha * sum of squares) ** beta``, the sum over
the ``2 * depth_radius + 1`` channels around it, so the channel axis (the last of NHWC)
cannot be split: a shard would miss its neighbours' channels. Batch, height and width
split freely. Backward (TensorFlow's ``LRNGrad``) reads the input and the output.
"""

from __future__ import annotations

import numbers

from tensoropt.dtypes import float32
from tensoropt.graph import get_default_graph
from tensoropt.ops._common import as_tensor, op_error
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, elementwise_space

__all__ = ["local_response_normalization", "lrn"]


@register
class LRNDef(OpDef):
    kind = "lrn"
    default_name = "LRN"

    def infer(self, op):
        x = op.inputs[0]
        if x.shape.rank != 4 or x.dtype != float32:
            raise op_error(op, f"a {x.dtype.name} input of shape {tuple(x.shape)}", "a 4-D float32 NHWC tensor")
        window = 2 * op.attrs["depth_radius"] + 1
        # forward: a window sum of squares, a power and a product per element; backward
        # about twice that (LRNGrad sums the window again)
        plain = elementwise_space([x.shape], x.shape, 3.0 * (2.0 * window + 12.0),
                                  saved_inputs=(0,), saved_outputs=(0,))
        space = IterationSpace(dims=plain.dims, inputs=plain.inputs, outputs=plain.outputs,
                               unsplittable={"d3"}, flops=plain.flops, saved_inputs=(0,),
                               saved_outputs=(0,), notes="d3: each output sums its neighbours' channels")
        return Signature(((tuple(x.shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        a = op.attrs
        return [tf.nn.lrn(inputs[0], depth_radius=a["depth_radius"], bias=a["bias"], alpha=a["alpha"],
                          beta=a["beta"])]


def local_response_normalization(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5,  # noqa: A002
                                 name=None):
    """``tf.nn.local_response_normalization`` (``tf.nn.lrn``) of a 4-D NHWC tensor.

    Raises:
        ValueError: depth_radius is not an int >= 0, or bias, alpha, beta are not numbers.
    """
    if isinstance(depth_radius, bool) or not isinstance(depth_radius, numbers.Integral) or depth_radius < 0:
        raise ValueError(f"lrn: depth_radius={depth_radius!r}; give an int >= 0 (TensorFlow's default is 5)")
    for key, value in (("bias", bias), ("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"lrn: {key}={value!r} is not a number")
    attrs = {"depth_radius": int(depth_radius), "bias": float(bias), "alpha": float(alpha), "beta": float(beta)}
    return get_default_graph().create_op("lrn", [as_tensor("lrn", input)], attrs, name=name).outputs[0]


lrn = local_response_normalization
