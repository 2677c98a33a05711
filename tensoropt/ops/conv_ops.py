"""Convolution and pooling, NHWC.

The spatial dims are not split (as in PaSE): splitting them needs halo exchanges that
the layout model does not express. Batch, input channels (a reduction) and output
channels can be split.

Usage::

    y = to.nn.conv2d(x, filters, strides=[1, 2, 2, 1], padding="SAME")
    p = to.nn.max_pool2d(y, ksize=2, strides=2, padding="VALID")
"""

from __future__ import annotations

import math

from tensoropt.dtypes import float32
from tensoropt.graph import get_default_graph
from tensoropt.ops._common import as_tensor, op_error
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "max_pool", "avg_pool"]


def _pair(op, value, name: str) -> tuple[int, int]:
    """Accepts TensorFlow's int, [h, w] or [1, h, w, 1] forms."""
    if isinstance(value, int):
        return value, value
    v = [int(x) for x in value]
    if len(v) == 1:
        return v[0], v[0]
    if len(v) == 2:
        return v[0], v[1]
    if len(v) == 4 and v[0] == 1 and v[3] == 1:
        return v[1], v[2]
    raise op_error(op, f"{name}={value!r}", f"an int, [h, w] or [1, h, w, 1] for {name}")


def _out_size(op, size: int, k: int, s: int, padding: str) -> int:
    if padding == "SAME":
        return math.ceil(size / s)
    if padding == "VALID":
        if size < k:
            raise op_error(op, f"window {k} larger than input {size} with VALID padding",
                           "a window no larger than the input, or padding='SAME'")
        return math.ceil((size - k + 1) / s)
    raise op_error(op, f"padding={padding!r}", "padding 'SAME' or 'VALID'")


def _spatial_space_dims(x, oh, ow):
    b, h, w, _ = x.shape
    return {"b": b, "ih": h, "iw": w, "oh": oh, "ow": ow}


@register
class Conv2DDef(OpDef):
    """conv2d, NHWC input [b, h, w, ci], filters [kh, kw, ci, co].

    FLOPs: 2·b·oh·ow·kh·kw·ci·co forward, twice that backward.
    """

    kind = "conv2d"
    default_name = "Conv2D"

    def infer(self, op):
        x, f = op.inputs
        if x.shape.rank != 4 or f.shape.rank != 4 or x.dtype != float32:
            raise op_error(op, f"input rank {x.shape.rank}, filter rank {f.shape.rank}",
                           "an NHWC float32 input [b, h, w, ci] and filters [kh, kw, ci, co]")
        kh, kw, ci, co = f.shape
        if x.shape[3] != ci:
            raise op_error(op, f"input channels {x.shape[3]} vs filter in-channels {ci}",
                           f"filters of shape [kh, kw, {x.shape[3]}, co]")
        sh, sw = _pair(op, op.attrs["strides"], "strides")
        op.attrs["strides"] = (sh, sw)
        oh = _out_size(op, x.shape[1], kh, sh, op.attrs["padding"])
        ow = _out_size(op, x.shape[2], kw, sw, op.attrs["padding"])
        dims = {**_spatial_space_dims(x, oh, ow), "ci": ci, "co": co, "kh": kh, "kw": kw}
        flops = 3 * 2.0 * x.shape[0] * oh * ow * kh * kw * ci * co
        space = IterationSpace(
            dims=dims, inputs=(("b", "ih", "iw", "ci"), ("kh", "kw", "ci", "co")),
            outputs=(("b", "oh", "ow", "co"),), reductions={"ci", "kh", "kw"},
            unsplittable={"ih", "iw", "oh", "ow", "kh", "kw"}, flops=flops, saved_inputs=(0, 1),
            notes="spatial dims are not split (halo exchange is not modelled)")
        return Signature(((((x.shape[0], oh, ow, co)), float32),), space)

    def lower(self, tf, op, inputs, ctx):
        sh, sw = op.attrs["strides"]
        return [tf.nn.conv2d(inputs[0], inputs[1], strides=[1, sh, sw, 1],
                             padding=op.attrs["padding"])]


class PoolDef(OpDef):
    is_max = True

    def infer(self, op):
        x = op.inputs[0]
        if x.shape.rank != 4:
            raise op_error(op, f"input rank {x.shape.rank}", "an NHWC input [b, h, w, c]")
        kh, kw = _pair(op, op.attrs["ksize"], "ksize")
        sh, sw = _pair(op, op.attrs["strides"], "strides")
        op.attrs["ksize"], op.attrs["strides"] = (kh, kw), (sh, sw)
        oh = _out_size(op, x.shape[1], kh, sh, op.attrs["padding"])
        ow = _out_size(op, x.shape[2], kw, sw, op.attrs["padding"])
        dims = {**_spatial_space_dims(x, oh, ow), "c": x.shape[3]}
        b, c = x.shape[0], x.shape[3]
        space = IterationSpace(
            dims=dims, inputs=(("b", "ih", "iw", "c"),), outputs=(("b", "oh", "ow", "c"),),
            unsplittable={"ih", "iw", "oh", "ow"}, flops=2.0 * b * oh * ow * c * kh * kw,
            saved_inputs=(0,) if self.is_max else (), saved_outputs=(0,) if self.is_max else (),
            notes="spatial dims are not split")
        return Signature((((b, oh, ow, c), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = tf.nn.max_pool2d if self.is_max else tf.nn.avg_pool2d
        kh, kw = op.attrs["ksize"]
        sh, sw = op.attrs["strides"]
        return [fn(inputs[0], ksize=[1, kh, kw, 1], strides=[1, sh, sw, 1], padding=op.attrs["padding"])]


@register
class MaxPoolDef(PoolDef):
    kind = "max_pool2d"
    default_name = "MaxPool2d"


@register
class AvgPoolDef(PoolDef):
    kind = "avg_pool2d"
    default_name = "AvgPool2D"
    is_max = False


def _check_format(kind, data_format):
    if data_format not in ("NHWC", None):
        raise ValueError(f"{kind}: data_format {data_format!r} is not supported; use 'NHWC'")


def conv2d(input, filters=None, strides=1, padding="VALID", data_format="NHWC",  # noqa: A002
           dilations=None, name=None, *, filter=None, use_cudnn_on_gpu=True):  # noqa: A002
    """2-D convolution, as ``tf.nn.conv2d`` (``filters=``) or TF 1.x (``filter=``)."""
    _check_format("conv2d", data_format)
    filters = filters if filters is not None else filter
    if filters is None:
        raise ValueError("conv2d: pass filters= (a [kh, kw, in, out] variable)")
    if dilations not in (None, 1, [1, 1, 1, 1], (1, 1, 1, 1)):
        raise ValueError("conv2d: dilations are not supported; leave dilations=None")
    return get_default_graph().create_op(
        "conv2d", [as_tensor("conv2d", input), as_tensor("conv2d", filters)],
        {"strides": strides, "padding": padding}, name=name).outputs[0]


def _pool(kind, input, ksize, strides, padding, data_format, name):  # noqa: A002
    _check_format(kind, data_format)
    return get_default_graph().create_op(
        kind, [as_tensor(kind, input)], {"ksize": ksize, "strides": strides, "padding": padding},
        name=name).outputs[0]


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool("max_pool2d", input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool("avg_pool2d", input, ksize, strides, padding, data_format, name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None):
    """TensorFlow 1.x's name for max_pool2d."""
    return max_pool2d(value, ksize, strides, padding, data_format, name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None):
    """TensorFlow 1.x's name for avg_pool2d."""
    return avg_pool2d(value, ksize, strides, padding, data_format, name)
