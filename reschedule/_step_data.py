"""Steps as plain JSON data, and back through the constructors that check them.

Usage::

    data = step.to_dict()        # {'kind': 'allgather', 'src': '[2,2] S0,R', ...}
    Step.from_dict(data)         # ValueError naming the field if the data is not a valid step
"""

from __future__ import annotations

from ._layout import Layout

__all__ = ["STEP_FIELDS", "step_from_dict"]

STEP_FIELDS = ("kind", "src", "dst", "axis", "src_dim", "dst_dim")


def step_from_dict(cls, data: dict, kinds: tuple[str, ...]):
    """``Step.from_dict`` (``cls`` is ``Step``, ``kinds`` its ``STEP_KINDS``): see there."""
    if not isinstance(data, dict):
        raise ValueError(f"step: expected an object with fields {', '.join(STEP_FIELDS)}; "
                         f"found {type(data).__name__}")
    missing = [k for k in STEP_FIELDS if k not in data]
    unknown = sorted(set(data) - set(STEP_FIELDS))
    if missing or unknown:
        raise ValueError(f"step {data!r}: " + "; ".join(
            ([f"missing field(s) {missing}"] if missing else [])
            + ([f"unknown field(s) {unknown}"] if unknown else [])))
    kind = data["kind"]
    if kind not in kinds:
        raise ValueError(f"step field 'kind': {kind!r} is not one of {', '.join(kinds)}")
    src, dst = _layout_field(data, "src"), _layout_field(data, "dst")
    axis, src_dim, dst_dim = (_int_field(data, k) for k in ("axis", "src_dim", "dst_dim"))
    try:
        if kind == "alltoallv":
            step = cls.make_alltoallv(src, dst)
        elif axis is None:
            raise ValueError(f"a {kind} step needs a mesh axis")
        elif kind == "slice":
            step = cls.make_slice(src, axis, _need_dim(dst_dim, "dst_dim", kind))
        elif kind == "allgather":
            step = cls.make_allgather(src, axis)
        elif kind == "alltoall":
            step = cls.make_alltoall(src, axis, _need_dim(dst_dim, "dst_dim", kind))
        elif kind == "allreduce":
            step = cls.make_allreduce(src, axis)
        else:
            step = cls.make_reducescatter(src, axis, _need_dim(dst_dim, "dst_dim", kind))
    except ValueError as e:
        raise ValueError(f"step {kind} from {src}: {e}") from None
    for name, value in (("dst", dst), ("axis", axis), ("src_dim", src_dim), ("dst_dim", dst_dim)):
        if getattr(step, name) != value:
            raise ValueError(f"step {kind} from {src}: field {name!r} is {_show(value)}, but that step "
                             f"gives {_show(getattr(step, name))}")
    return step


def _show(value) -> str:
    return f"'{value}'" if isinstance(value, Layout) else repr(value)


def _layout_field(data: dict, name: str) -> Layout:
    text = data[name]
    if not isinstance(text, str):
        raise ValueError(f"step field {name!r}: expected layout text such as '[2,4] S0,R', "
                         f"found {text!r}")
    try:
        return Layout.parse(text)
    except ValueError as e:
        raise ValueError(f"step field {name!r}: {e}") from None


def _int_field(data: dict, name: str) -> int | None:
    value = data[name]
    if value is not None and type(value) is not int:
        raise ValueError(f"step field {name!r}: expected an int or null, found {value!r}")
    return value


def _need_dim(dim: int | None, name: str, kind: str) -> int:
    if dim is None:
        raise ValueError(f"a {kind} step needs {name}")
    return dim
