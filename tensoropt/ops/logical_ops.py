"""Logical ops of bool tensors: ``logical_and``, ``logical_or``, ``logical_xor``,
``logical_not`` (masks built from comparisons).

Usage::

    valid = to.logical_and(to.greater(x, 0.0), to.less(x, 1.0))
    loss = to.reduce_sum(to.where(valid, err, to.zeros_like(err)))

Elementwise, broadcasting, split like any elementwise op; no gradient flows through them.
"""

from __future__ import annotations

from tensoropt.dtypes import bool_
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, op_error
from tensoropt.ops.elementwise_ops import BinaryDef
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import elementwise_space

__all__ = ["logical_and", "logical_or", "logical_xor", "logical_not"]


def _check_bool(op) -> None:
    for t in op.inputs:
        if t.dtype != bool_:
            raise op_error(op, f"{t.name} is {t.dtype.name}", "bool tensors (a comparison, or to.cast(x, to.bool))")


class LogicalDef(BinaryDef):
    """A broadcasting logical op of two bool tensors."""

    out_dtype = bool_
    passes_gradient = False

    def infer(self, op):
        _check_bool(op)
        return super().infer(op)


for _kind in ("logical_and", "logical_or", "logical_xor"):
    register(type(f"{_kind.title().replace('_', '')}Def", (LogicalDef,), {"kind": _kind, "tf_path": f"math.{_kind}"}))


@register
class LogicalNotDef(OpDef):
    kind = "logical_not"
    passes_gradient = False

    def infer(self, op):
        _check_bool(op)
        x = op.inputs[0]
        return Signature(((tuple(x.shape), bool_),), elementwise_space([x.shape], x.shape, 1.0))

    def lower(self, tf, op, inputs, ctx):
        return [tf.math.logical_not(inputs[0])]


def _logical(kind: str, x, y, name) -> Tensor:
    operands = [as_tensor(kind, x), as_tensor(kind, y)]
    return get_default_graph().create_op(kind, operands, {}, name=name).outputs[0]


def logical_and(x, y, name=None):
    return _logical("logical_and", x, y, name)


def logical_or(x, y, name=None):
    return _logical("logical_or", x, y, name)


def logical_xor(x, y, name="LogicalXor"):
    return _logical("logical_xor", x, y, name)


def logical_not(x, name=None):
    return get_default_graph().create_op("logical_not", [as_tensor("logical_not", x)], {}, name=name).outputs[0]
