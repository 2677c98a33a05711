"""Small helpers shared by the op definitions: error messages, broadcasting, axes."""

from __future__ import annotations

from typing import Sequence

from tensoropt.graph import Tensor

__all__ = ["as_tensor", "op_error", "broadcast_shapes", "normalize_axis", "prod", "tf1_alias"]


def as_tensor(kind: str, x) -> Tensor:
    """``x`` if it is a recorded tensor, else a ValueError naming ``kind`` and what was given."""
    if not isinstance(x, Tensor):
        raise ValueError(f"{kind}: expected a tensoropt Tensor, got {type(x).__name__} {x!r}")
    return x


def op_error(op, problem: str, expected: str) -> ValueError:
    """A ValueError naming the op, the input shapes seen and what was expected."""
    seen = ", ".join(f"{t.name} {tuple(t.shape)} {t.dtype.name}" for t in op.inputs) or "no inputs"
    return ValueError(f"{op.kind} '{op.name}': {problem}; inputs seen: {seen}; expected {expected}")


def tf1_alias(function: str, name: str, value, old_name: str, old_value, default=None):
    """The value of argument ``name``, also accepted by its TensorFlow 1.x name
    (``keep_dims`` for ``keepdims``, ``reduction_indices`` for ``axis``, ``dim`` for
    ``axis``), as ``tf.compat.v1`` accepts both; ``default`` when neither is given.

    Raises:
        ValueError: both are given, with different values.
    """
    if old_value is None:
        return default if value is None else value
    if value is not None and value != old_value:
        raise ValueError(f"{function}: {name}={value!r} and {old_name}={old_value!r} name the same "
                         f"argument; pass only {name}")
    return old_value


def prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def broadcast_shapes(op, a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """numpy/TensorFlow broadcasting of two shapes, or a ValueError naming the op."""
    rank = max(len(a), len(b))
    a2 = (1,) * (rank - len(a)) + tuple(a)
    b2 = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a2, b2):
        if x != y and 1 not in (x, y):
            raise op_error(op, f"shapes {tuple(a)} and {tuple(b)} do not broadcast",
                           "equal sizes, or size 1, in every aligned axis")
        out.append(max(x, y))
    return tuple(out)


def normalize_axis(op, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise op_error(op, f"axis {axis} is out of range for rank {rank}",
                       f"an axis in [{-rank}, {rank})")
    return axis % rank
