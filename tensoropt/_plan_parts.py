"""The parts of a plan: ``OpConfig`` (an op's mesh and split), ``EdgePlan`` (how one data
edge carries its tensor) and ``FrozenMap``, each a frozen value checked when made and
read from JSON field by field. ``tensoropt.plan`` assembles them into a ``Plan`` (and
re-exports them); import them from there.

Usage::

    OpConfig((2, 2), (("b", 0), ("n", 1)))            # [2,2] b:0,n:1
    EdgePlan.from_dict(json.loads(text)["edges"][0])   # ValueError naming the field
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from reschedule import Layout, Step

__all__ = ["OpConfig", "EdgePlan", "FrozenMap", "REUSE_CHOICES"]

#: How an edge carries a tensor both ends keep for backward (``costs.EdgeAlternative``):
#: "none" (not both keep it), "shared" (same layout, one copy), "keep_both",
#: "keep_producer" (the consumer's copy is rebuilt in backward) and "keep_consumer" (the
#: producer's copy is rebuilt from the consumer's).
REUSE_CHOICES = ("none", "shared", "keep_both", "keep_producer", "keep_consumer")

_EDGE_FIELDS = ("producer", "output", "consumer", "input", "src_layout", "dst_layout", "reuse",
                "forward_steps", "backward_steps", "rebuild_steps")
_LEGACY_EDGE_FIELDS = ("forward",)   # the forward conversion as text, written before EdgePlan


class FrozenMap(Mapping):
    """An immutable, hashable mapping that keeps its insertion order."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping | None = None) -> None:
        self._items = dict(items or {})
        self._hash = None

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self) -> Iterator:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        return isinstance(other, Mapping) and self._items == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"

    def __reduce__(self):
        return FrozenMap, (self._items,)


def is_int(x) -> bool:
    return type(x) is int


@dataclass(frozen=True)
class OpConfig:
    """One op's configuration.

    Attributes:
        mesh: the device mesh, e.g. ``(2, 4)``; ``()`` or ``(1,)`` on one device.
        dim_axes: iteration dim -> mesh axis that splits it, in mesh-axis order. A mesh
            axis split over a reduction dim leaves a partial sum; an axis that splits
            nothing means the op is computed redundantly along it.
        partial_out: the op does not all-reduce that partial sum itself; its output
            stays partial and each out-edge reduces it on the way (a reduce-scatter straight
            into the consumer's split, or an all-reduce).

    Raises:
        ValueError: for a mesh size that is not a positive int, an axis outside the mesh,
            or a dim or axis used twice.
    """

    mesh: tuple[int, ...] = ()
    dim_axes: tuple[tuple[str, int], ...] = ()
    partial_out: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.partial_out, bool):
            raise ValueError(f"field 'partial_out': expected true or false, found {self.partial_out!r}")
        mesh, dim_axes = tuple(self.mesh), tuple(tuple(p) for p in self.dim_axes)
        if not all(is_int(m) and m >= 1 for m in mesh):
            raise ValueError(f"field 'mesh': {list(mesh)} is not a list of positive ints, e.g. [2, 4]")
        for pair in dim_axes:
            if len(pair) != 2 or not isinstance(pair[0], str) or not is_int(pair[1]) \
                    or not 0 <= pair[1] < len(mesh):
                raise ValueError(f"field 'dim_axes': {pair!r} is not (dim name, mesh axis) with an "
                                 f"axis of mesh {list(mesh)}")
        dims, axes = [d for d, _ in dim_axes], [a for _, a in dim_axes]
        if len(set(dims)) != len(dims) or len(set(axes)) != len(axes):
            raise ValueError(f"field 'dim_axes': {dict(dim_axes)} splits a dim twice or uses a "
                             "mesh axis twice; each axis splits at most one dim")
        object.__setattr__(self, "mesh", mesh)
        object.__setattr__(self, "dim_axes", tuple(sorted(dim_axes, key=lambda p: p[1])))  # by mesh axis

    @property
    def devices(self) -> int:
        """The number of devices of the mesh."""
        return math.prod(self.mesh)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"mesh": list(self.mesh), "dim_axes": dict(self.dim_axes)}
        if self.partial_out:
            d["partial_out"] = True
        return d

    @classmethod
    def from_dict(cls, data: Any) -> "OpConfig":
        """Raises ValueError naming the bad field."""
        check_fields(data, ("mesh", "dim_axes"), ("partial_out",))
        if not isinstance(data["mesh"], list):
            raise ValueError(f"field 'mesh': expected a list of ints, found {data['mesh']!r}")
        if not isinstance(data["dim_axes"], dict):
            raise ValueError(f"field 'dim_axes': expected an object dim -> mesh axis, found "
                             f"{data['dim_axes']!r}")
        return cls(tuple(data["mesh"]), tuple(data["dim_axes"].items()), data.get("partial_out", False))

    def __str__(self) -> str:
        mesh = "[" + ",".join(map(str, self.mesh)) + "]"
        split = ",".join(f"{d}:{a}" for d, a in self.dim_axes) or "-"
        return f"{mesh} {split}" + (" partial-out" if self.partial_out else "")


def _chain(steps, start: Layout, end: Layout, what: str) -> None:
    """Checks that ``steps`` take ``start`` to ``end``, each step from the last one's output."""
    at = start
    for k, step in enumerate(steps):
        if not isinstance(step, Step):
            raise ValueError(f"field {what!r}: item {k} is a {type(step).__name__}, not a reschedule.Step")
        if step.src != at:
            raise ValueError(f"field {what!r}: step {k} ({step}) starts from {step.src}, but the "
                             f"steps before it leave the tensor in {at}")
        at = step.dst
    if at != end:
        raise ValueError(f"field {what!r}: the steps end in {at}, not in {end}")


@dataclass(frozen=True)
class EdgePlan:
    """How one data edge carries its tensor: output ``output`` of op ``producer`` to input
    ``input`` of op ``consumer``.

    Attributes:
        src_layout, dst_layout: the producer's and the consumer's layouts of the tensor.
        reuse: one of :data:`REUSE_CHOICES`.
        forward_steps: the conversion ``src_layout -> dst_layout``.
        backward_steps: the gradient's conversion ``dst_layout -> src_layout`` (partial
            axes dropped), or None when no gradient flows back over the edge.
        rebuild_steps: for "keep_producer" the forward steps re-run in backward, for
            "keep_consumer" the conversion ``dst_layout -> src_layout`` that rebuilds the
            producer's copy; None otherwise.

    Raises:
        ValueError: naming the field: a name or index of the wrong type, an unknown reuse,
            steps that do not chain from one layout to the other, or rebuild steps given for
            a reuse that has none (or missing for one that needs them).
    """

    producer: str
    output: int
    consumer: str
    input: int
    src_layout: Layout
    dst_layout: Layout
    reuse: str
    forward_steps: tuple[Step, ...] = ()
    backward_steps: tuple[Step, ...] | None = None
    rebuild_steps: tuple[Step, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("producer", "consumer"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"field {name!r}: expected an op name, found {getattr(self, name)!r}")
        for name in ("output", "input"):
            if not is_int(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(f"field {name!r}: expected an index >= 0, found {getattr(self, name)!r}")
        for name in ("src_layout", "dst_layout"):
            if not isinstance(getattr(self, name), Layout):
                raise ValueError(f"field {name!r}: expected a reschedule.Layout, found {getattr(self, name)!r}")
        if self.src_layout.num_ranks != self.dst_layout.num_ranks:
            raise ValueError(f"field 'dst_layout': {self.dst_layout} has {self.dst_layout.num_ranks} ranks, "
                             f"the src_layout {self.src_layout} {self.src_layout.num_ranks}")
        if self.reuse not in REUSE_CHOICES:
            raise ValueError(f"field 'reuse': {self.reuse!r} is not one of {', '.join(REUSE_CHOICES)}")
        src, dst = self.src_layout, self.dst_layout
        object.__setattr__(self, "forward_steps", tuple(self.forward_steps))
        _chain(self.forward_steps, src, dst, "forward_steps")
        if self.backward_steps is not None:
            object.__setattr__(self, "backward_steps", tuple(self.backward_steps))
            _chain(self.backward_steps, dst.grad(), src.grad(), "backward_steps")
        rebuild = {"keep_producer": (src, dst), "keep_consumer": (dst, src)}.get(self.reuse)
        if (rebuild is None) != (self.rebuild_steps is None):
            raise ValueError(f"field 'rebuild_steps': reuse {self.reuse!r} "
                             + ("has no rebuild steps" if rebuild is None else "needs rebuild steps"))
        if rebuild is not None:
            object.__setattr__(self, "rebuild_steps", tuple(self.rebuild_steps))
            _chain(self.rebuild_steps, *rebuild, "rebuild_steps")

    @property
    def name(self) -> str:
        """``producer:output -> consumer:input``, as error messages name the edge."""
        return f"{self.producer}:{self.output} -> {self.consumer}:{self.input}"

    def to_dict(self) -> dict[str, Any]:
        def steps(s):
            return None if s is None else [step.to_dict() for step in s]

        return {"producer": self.producer, "output": self.output, "consumer": self.consumer,
                "input": self.input, "src_layout": str(self.src_layout),
                "dst_layout": str(self.dst_layout), "reuse": self.reuse,
                "forward_steps": steps(self.forward_steps), "backward_steps": steps(self.backward_steps),
                "rebuild_steps": steps(self.rebuild_steps)}

    @classmethod
    def from_dict(cls, data: Any) -> "EdgePlan":
        """Raises ValueError naming the bad field (and the step, for a bad step)."""
        check_fields(data, _EDGE_FIELDS, _LEGACY_EDGE_FIELDS)
        layouts = {}
        for name in ("src_layout", "dst_layout"):
            if not isinstance(data[name], str):
                raise ValueError(f"field {name!r}: expected layout text such as '[2,2] S0,R', "
                                 f"found {data[name]!r}")
            try:
                layouts[name] = Layout.parse(data[name])
            except ValueError as e:
                raise ValueError(f"field {name!r}: {e}") from None
        steps = {}
        for name in ("forward_steps", "backward_steps", "rebuild_steps"):
            items = data[name]
            if items is None and name != "forward_steps":
                steps[name] = None
                continue
            if not isinstance(items, list):
                raise ValueError(f"field {name!r}: expected a list of steps, found {items!r}")
            parsed = []
            for k, item in enumerate(items):
                try:
                    parsed.append(Step.from_dict(item))
                except ValueError as e:
                    raise ValueError(f"field {name!r}: step {k}: {e}") from None
            steps[name] = tuple(parsed)
        return cls(data["producer"], data["output"], data["consumer"], data["input"], **layouts,
                   reuse=data["reuse"], **steps)


def check_fields(data: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"expected an object with fields {', '.join(required)}, found {data!r}")
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"missing field {missing[0]!r}")
    unknown = sorted(set(data) - set(required) - set(optional))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (fields: {', '.join(required + optional)})")
