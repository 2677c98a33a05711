"""Elementwise ops: unary functions (tanh, relu, ...) and broadcasting binary ops (add,
multiply, ...), a tensor with a tensor or with a Python number.

Usage::

    y = to.tanh(x)
    z = to.add(y, 1.0)            # or y + 1.0
    d = to.squared_difference(y, z)

``math_ops`` re-exports every function here, as ``tf.math`` holds them.
"""

from __future__ import annotations

import numbers

from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, broadcast_shapes, op_error
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import elementwise_space

__all__ = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "squared_difference",
    "negative", "abs", "tanh", "sigmoid", "sqrt", "rsqrt", "exp", "log", "square", "identity",
    "log1p", "reciprocal", "erf", "sin", "cos", "softsign", "floor", "ceil", "round", "sign",
    "stop_gradient", "UnaryDef", "BinaryDef", "binary",
]

# --- unary elementwise ------------------------------------------------------------------

# kind -> (TensorFlow function path, flops per element forward+backward, what backward keeps:
# the tensor TensorFlow's registered gradient reads)
_UNARY = {
    "tanh": ("math.tanh", 6.0, "output"),
    "sigmoid": ("math.sigmoid", 6.0, "output"),
    "sqrt": ("math.sqrt", 3.0, "output"),
    "rsqrt": ("math.rsqrt", 4.0, "output"),
    "exp": ("math.exp", 3.0, "output"),
    "log": ("math.log", 3.0, "input"),
    "square": ("math.square", 3.0, "input"),
    "negative": ("math.negative", 2.0, None),
    "abs": ("math.abs", 2.0, "input"),
    "identity": ("identity", 0.0, None),
    "relu": ("nn.relu", 2.0, "output"),
    "gelu": ("nn.gelu", 20.0, "input"),
    "relu6": ("nn.relu6", 2.0, "output"),
    "elu": ("nn.elu", 6.0, "output"),
    "selu": ("nn.selu", 7.0, "output"),
    "leaky_relu": ("nn.leaky_relu", 3.0, "input"),
    "softplus": ("nn.softplus", 10.0, "input"),
    "silu": ("nn.silu", 12.0, "input"),
    "log1p": ("math.log1p", 3.0, "input"),
    "reciprocal": ("math.reciprocal", 3.0, "output"),
    "erf": ("math.erf", 12.0, "input"),
    "sin": ("math.sin", 8.0, "input"),
    "cos": ("math.cos", 8.0, "input"),
    "softsign": ("nn.softsign", 6.0, "input"),
    # no gradient: TensorFlow's is zero (floor, ceil, round, sign) or stopped
    "floor": ("math.floor", 1.0, None),
    "ceil": ("math.ceil", 1.0, None),
    "round": ("math.round", 1.0, None),
    "sign": ("math.sign", 1.0, None),
    "stop_gradient": ("stop_gradient", 0.0, None),
}

# attributes a unary op passes to its TensorFlow function, by keyword
_UNARY_ATTRS = {"gelu": ("approximate",), "leaky_relu": ("alpha",), "silu": ("beta",)}

# tf.nn.selu's constants
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _tf_function(tf, path: str):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


# d(input) from the output y and dy, for the ops whose backward keeps their output
_GRAD_FROM_OUTPUT = {
    "relu": lambda tf, y, dy: dy * tf.cast(y > 0, dy.dtype),
    "tanh": lambda tf, y, dy: dy * (1.0 - y * y),
    "sigmoid": lambda tf, y, dy: dy * y * (1.0 - y),
    "sqrt": lambda tf, y, dy: dy * 0.5 / y,
    "rsqrt": lambda tf, y, dy: dy * -0.5 * y * y * y,
    "exp": lambda tf, y, dy: dy * y,
    "relu6": lambda tf, y, dy: dy * tf.cast((y > 0) & (y < 6), dy.dtype),
    "elu": lambda tf, y, dy: dy * tf.where(y > 0, tf.ones_like(y), y + 1.0),
    "selu": lambda tf, y, dy: dy * tf.where(y > 0, tf.fill(tf.shape(y), _SELU_SCALE), y + _SELU_SCALE * _SELU_ALPHA),
    "reciprocal": lambda tf, y, dy: -dy * y * y,
}


class UnaryDef(OpDef):
    """A unary elementwise op; subclasses are generated from ``_UNARY``."""

    tf_path = ""
    flops_per_element = 1.0
    keeps: str | None = None

    def grad_from_output(self, tf, op, y, dy):
        return _GRAD_FROM_OUTPUT[self.kind](tf, y, dy)

    def infer(self, op):
        if len(op.inputs) != 1:
            raise op_error(op, f"got {len(op.inputs)} inputs", "exactly one tensor")
        x = op.inputs[0]
        if not x.dtype.is_floating and self.kind not in ("identity", "negative", "stop_gradient", "sign"):
            raise op_error(op, f"dtype {x.dtype.name} is not floating", "a float32 tensor")
        space = elementwise_space([x.shape], x.shape, self.flops_per_element,
                                  saved_inputs=(0,) if self.keeps == "input" else (),
                                  saved_outputs=(0,) if self.keeps == "output" else ())
        return Signature(((tuple(x.shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = _tf_function(tf, self.tf_path)
        return [fn(inputs[0], **{a: op.attrs[a] for a in _UNARY_ATTRS.get(self.kind, ())})]


#: the unary kinds whose input TensorFlow gives no gradient
_NO_GRADIENT = ("floor", "ceil", "round", "sign", "stop_gradient")

for _kind, (_path, _flops, _keeps) in _UNARY.items():
    register(type(f"{_kind.capitalize()}Def", (UnaryDef,), {
        "kind": _kind, "tf_path": _path, "flops_per_element": _flops, "keeps": _keeps,
        "grad_from_output_ok": _kind in _GRAD_FROM_OUTPUT, "passes_gradient": _kind not in _NO_GRADIENT}))


def _unary(kind: str, x, name: str | None, **attrs) -> Tensor:
    x = as_tensor(kind, x)
    return get_default_graph().create_op(kind, [x], attrs, name=name).outputs[0]


def tanh(x, name=None):
    return _unary("tanh", x, name)


def sigmoid(x, name=None):
    return _unary("sigmoid", x, name)


def sqrt(x, name=None):
    return _unary("sqrt", x, name)


def rsqrt(x, name=None):
    return _unary("rsqrt", x, name)


def exp(x, name=None):
    return _unary("exp", x, name)


def log(x, name=None):
    return _unary("log", x, name)


def square(x, name=None):
    return _unary("square", x, name)


def negative(x, name=None):
    return _unary("negative", x, name)


def identity(input, name=None):  # noqa: A002 - TensorFlow's argument name
    return _unary("identity", input, name)


def abs(x, name=None):  # noqa: A001 - TensorFlow's name
    return _unary("abs", x, name)


def log1p(x, name=None):
    return _unary("log1p", x, name)


def reciprocal(x, name=None):
    return _unary("reciprocal", x, name)


def erf(x, name=None):
    return _unary("erf", x, name)


def sin(x, name=None):
    return _unary("sin", x, name)


def cos(x, name=None):
    return _unary("cos", x, name)


def softsign(features, name=None):
    return _unary("softsign", features, name)


def floor(x, name=None):
    return _unary("floor", x, name)


def ceil(x, name=None):
    return _unary("ceil", x, name)


def round(x, name=None):  # noqa: A001 - TensorFlow's name
    return _unary("round", x, name)


def sign(x, name=None):
    return _unary("sign", x, name)


def stop_gradient(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """The input's value, through which no gradient flows (``tf.stop_gradient``)."""
    return _unary("stop_gradient", input, name)


# --- binary elementwise -----------------------------------------------------------------

# kind -> (TensorFlow function path, flops per output element forward+backward, keeps inputs)
_BINARY = {
    "add": ("math.add", 1.0, False),
    "subtract": ("math.subtract", 1.0, False),
    "multiply": ("math.multiply", 3.0, True),
    "divide": ("math.divide", 5.0, True),
    "maximum": ("math.maximum", 2.0, True),
    "minimum": ("math.minimum", 2.0, True),
    "pow": ("math.pow", 12.0, True),
    "squared_difference": ("math.squared_difference", 4.0, True),
}


class BinaryDef(OpDef):
    """A broadcasting binary elementwise op, or one tensor and a Python scalar.

    With a scalar, the op has one input and ``attrs["scalar"]``; ``attrs["scalar_first"]``
    says whether the scalar is the left operand (``2.0 - x``).
    """

    tf_path = ""
    flops_per_element = 1.0
    keeps_inputs = False
    out_dtype = None   # the inputs' dtype, unless set (comparisons: bool)

    def infer(self, op):
        ins = op.inputs
        if "scalar" in op.attrs:
            if len(ins) != 1:
                raise op_error(op, f"got {len(ins)} tensor inputs with a scalar", "one tensor")
            out_shape = tuple(ins[0].shape)
        else:
            if len(ins) != 2:
                raise op_error(op, f"got {len(ins)} inputs", "two tensors")
            if ins[0].dtype != ins[1].dtype:
                raise op_error(op, f"dtypes {ins[0].dtype.name} and {ins[1].dtype.name} differ",
                               "both operands of the same dtype (to.cast one)")
            out_shape = broadcast_shapes(op, ins[0].shape, ins[1].shape)
        keeps = tuple(range(len(ins))) if self.keeps_inputs else ()
        space = elementwise_space([t.shape for t in ins], out_shape, self.flops_per_element,
                                  saved_inputs=keeps)
        return Signature(((out_shape, self.out_dtype or ins[0].dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = _tf_function(tf, self.tf_path)
        if "scalar" in op.attrs:
            scalar = tf.constant(op.attrs["scalar"], dtype=inputs[0].dtype)
            return [fn(scalar, inputs[0]) if op.attrs["scalar_first"] else fn(inputs[0], scalar)]
        return [fn(inputs[0], inputs[1])]


for _kind, (_path, _flops, _keeps) in _BINARY.items():
    register(type(f"{_kind.capitalize()}Def", (BinaryDef,), {
        "kind": _kind, "tf_path": _path, "flops_per_element": _flops, "keeps_inputs": _keeps}))


def binary(kind: str, x, y, name: str | None) -> Tensor:
    """Records binary op ``kind`` of two tensors, or of a tensor and a Python number."""
    graph = get_default_graph()
    x_scalar = isinstance(x, numbers.Number)
    y_scalar = isinstance(y, numbers.Number)
    if x_scalar and y_scalar:
        raise ValueError(f"{kind}: both operands are Python numbers ({x!r}, {y!r}); "
                         "at least one must be a tensoropt Tensor")
    if x_scalar or y_scalar:
        tensor = as_tensor(kind, y if x_scalar else x)
        value = x if x_scalar else y
        attrs = {"scalar": float(value) if tensor.dtype.is_floating else int(value), "scalar_first": x_scalar}
        return graph.create_op(kind, [tensor], attrs, name=name).outputs[0]
    return graph.create_op(kind, [as_tensor(kind, x), as_tensor(kind, y)], {}, name=name).outputs[0]


def add(x, y, name=None):
    return binary("add", x, y, name)


def subtract(x, y, name=None):
    return binary("subtract", x, y, name)


def multiply(x, y, name=None):
    return binary("multiply", x, y, name)


def divide(x, y, name=None):
    return binary("divide", x, y, name)


def maximum(x, y, name=None):
    return binary("maximum", x, y, name)


def minimum(x, y, name=None):
    return binary("minimum", x, y, name)


def pow(x, y, name=None):  # noqa: A001 - TensorFlow's name
    return binary("pow", x, y, name)


def squared_difference(x, y, name=None):
    return binary("squared_difference", x, y, name)
