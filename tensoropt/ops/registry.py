"""One definition per op kind, used by recording, cost estimation and lowering.

An ``OpDef`` subclass says, for its kind:

- ``infer(op)``: validate the inputs and attributes and return the outputs' shapes and
  dtypes and the op's ``IterationSpace``. Bad input raises ``ValueError`` naming the op,
  the shapes seen and what was expected.
- ``lower(tf, op, inputs, ctx)``: build the op's (local shard of) computation in
  TensorFlow. ``ctx.output_shapes`` are the shapes this process must produce; on one
  device they are the logical shapes.

Usage::

    from tensoropt.ops import get_op_def
    get_op_def("matmul").infer(op)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from tensoropt.dtypes import DType
from tensoropt.ops.space import IterationSpace

__all__ = ["OpDef", "Signature", "LoweringContext", "register", "get_op_def", "registered_kinds"]


@dataclass(frozen=True)
class Signature:
    """What ``OpDef.infer`` returns: one (shape, dtype) per output, and the iteration space."""

    outputs: tuple[tuple[tuple[int, ...], DType], ...]
    space: IterationSpace


@dataclass
class LoweringContext:
    """What a lowering needs beyond its inputs.

    Attributes:
        output_shapes: the shapes this process produces for the op's outputs.
        dim_sizes: the op's logical (full) dim sizes, e.g. to divide a sharded mean.
        local_dim_sizes: the dim sizes of this process's shard.
        variables: recorded Variable -> TensorFlow variable (for ops that read them).
        seed: the graph-level random seed, or None.
    """

    output_shapes: Sequence[tuple[int, ...]]
    dim_sizes: dict[str, int]
    local_dim_sizes: dict[str, int]
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class OpDef:
    """Base class of op definitions; subclasses set ``kind`` and implement the methods."""

    kind: ClassVar[str] = ""
    default_name: ClassVar[str] = ""

    def infer(self, op) -> Signature:  # pragma: no cover - abstract
        raise NotImplementedError(f"op kind {self.kind!r} defines no infer()")

    def lower(self, tf, op, inputs: Sequence[Any], ctx: LoweringContext) -> list[Any]:  # pragma: no cover
        raise NotImplementedError(f"op kind {self.kind!r} defines no lower()")

    #: False where TensorFlow gives the op's inputs no gradient (``stop_gradient``, ``floor``,
    #: ``sign``, ...): a variable the loss reaches only through such ops is not trained.
    passes_gradient: ClassVar[bool] = True

    #: Whether ``grad_from_output`` exists: the op's backward needs only its output, so a
    #: plan may drop the op's saved copy and rebuild it from a consumer's (tensor reuse).
    grad_from_output_ok: ClassVar[bool] = False

    def grad_from_output(self, tf, op, y, dy):  # pragma: no cover - only where supported
        """The input gradient computed from the output ``y`` and its gradient ``dy``."""
        raise NotImplementedError(f"op kind {self.kind!r} has no gradient from its output")

    # Helpers for error messages.
    @staticmethod
    def shapes_of(op) -> str:
        return ", ".join(f"{t.name} {tuple(t.shape)}" for t in op.inputs)


_REGISTRY: dict[str, OpDef] = {}


def register(cls: type[OpDef]) -> type[OpDef]:
    """Class decorator: registers one instance of ``cls`` under ``cls.kind``."""
    assert cls.kind and cls.kind not in _REGISTRY, f"duplicate or empty op kind {cls.kind!r}"
    if not cls.default_name:
        cls.default_name = cls.kind
    _REGISTRY[cls.kind] = cls()
    return cls


def get_op_def(kind: str) -> OpDef:
    """The definition of ``kind``.

    Raises:
        ValueError: for an unknown op kind, listing the known ones.
    """
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise ValueError(
            f"unknown op kind {kind!r}: TensorOpt defines {', '.join(sorted(_REGISTRY))}. "
            "Write the computation with these ops, or add an OpDef in tensoropt/ops/"
        ) from None


def registered_kinds() -> list[str]:
    return sorted(_REGISTRY)
