"""Data types of recorded tensors, named as TensorFlow names them.

Usage::

    import tensoropt as to
    x = to.placeholder(to.float32, [8, 4])
    x.dtype.itemsize  # 4
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DType", "float32", "int32", "int64", "bool_", "as_dtype"]


@dataclass(frozen=True)
class DType:
    """A tensor element type.

    Attributes:
        name: TensorFlow's name for it (``"float32"``).
        itemsize: bytes per element.
        is_floating: whether gradients flow through tensors of this type.
    """

    name: str
    itemsize: int
    is_floating: bool

    def __repr__(self) -> str:
        return f"tensoropt.{self.name}"


float32 = DType("float32", 4, True)
int32 = DType("int32", 4, False)
int64 = DType("int64", 8, False)
bool_ = DType("bool", 1, False)   # ``to.bool``

#: integer types an op may take as ids or labels
INTEGERS = (int32, int64)

_BY_NAME = {d.name: d for d in (float32, int32, int64, bool_)}


def as_dtype(value: object) -> DType:
    """Converts ``value`` (a DType, its name, or a TensorFlow/numpy dtype) to a DType.

    Raises:
        ValueError: for a dtype TensorOpt does not support; the message lists those it does.
    """
    if isinstance(value, DType):
        return value
    name = getattr(value, "name", value)
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    raise ValueError(
        f"unsupported dtype {value!r}: TensorOpt supports {sorted(_BY_NAME)}; "
        f"pass tensoropt.float32, tensoropt.int32, tensoropt.int64 or tensoropt.bool"
    )
