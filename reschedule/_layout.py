"""Tensor layouts on a device mesh (paper Section 2.1).

A layout says which part of a tensor each rank holds::

    from reschedule import Layout
    lay = Layout(mesh=(2, 4), tensor_map=(0, -1, 1))   # dim 0 over mesh axis 0, dim 2 over axis 1
    str(lay)                                           # '[2,4] S0,R,S1'
    Layout.parse("[2,4] S0,R,R P{1}")                  # a pending sum over mesh axis 1
    lay.shard_slices(5, (4, 3, 8))                     # (slice(2, 4), slice(0, 3), slice(2, 4))
    lay.local_shape((4, 3, 8))                         # (2, 3, 2)

Conventions (``shared/DESIGN.md``):

* Ranks ``0..N-1`` lie on the mesh row-major: the LAST mesh axis varies fastest, so the
  coordinates of rank ``r`` on mesh ``(2, 4)`` are ``(r // 4, r % 4)``.
* ``tensor_map[d]`` is the mesh axis that splits tensor dim ``d`` into ``mesh[axis]`` equal
  contiguous blocks (block ``c`` goes to the ranks with coordinate ``c`` on that axis), or
  ``-1`` when dim ``d`` is not split. Each mesh axis splits at most one tensor dim.
* ``partial`` is the set of mesh axes over which the value is a pending sum: the tensor's
  value is the sum, over the ranks that differ only in the partial axes' coordinates, of
  what they hold. A partial axis is not also mapped.
* Mesh axes that are neither mapped nor partial hold replicas.

Divisibility of split dims needs the tensor's shape, so it is checked by the methods that
take a shape (:meth:`Layout.check_shape`, :meth:`Layout.shard_slices`, ...).
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

__all__ = ["Layout", "mesh_coords", "mesh_rank"]


def mesh_coords(mesh: Sequence[int], rank: int) -> tuple[int, ...]:
    """Coordinates of ``rank`` on ``mesh`` under the row-major convention (last axis fastest).

    Args:
        mesh: Sizes of the mesh axes.
        rank: A rank in ``range(prod(mesh))``.

    Returns:
        One coordinate per mesh axis.
    """
    coords = []
    for size in reversed(mesh):
        coords.append(rank % size)
        rank //= size
    return tuple(reversed(coords))


def mesh_rank(mesh: Sequence[int], coords: Sequence[int]) -> int:
    """Rank of the mesh position ``coords`` (inverse of :func:`mesh_coords`)."""
    rank = 0
    for size, c in zip(mesh, coords):
        rank = rank * size + c
    return rank


def _raw_text(mesh: Sequence[int], tensor_map: Sequence[int], partial: Iterable[int]) -> str:
    """Text form of possibly invalid layout fields, for error messages."""
    dims = ",".join("R" if a == -1 else f"S{a}" for a in tensor_map) or "-"
    text = f"[{','.join(str(m) for m in mesh)}] {dims}"
    partial = sorted(partial)
    if partial:
        text += " P{" + ",".join(str(a) for a in partial) + "}"
    return text


_TEXT_RE = re.compile(
    r"^\s*\[\s*(?P<mesh>\d+(?:\s*,\s*\d+)*)\s*\]\s*(?P<map>[^P\s][^P]*?|)\s*"
    r"(?:P\{\s*(?P<partial>\d+(?:\s*,\s*\d+)*)?\s*\})?\s*$"
)


@dataclass(frozen=True)
class Layout:
    """How a tensor is laid out on a device mesh; an immutable, hashable value.

    Attributes:
        mesh: Sizes of the mesh axes, e.g. ``(2, 4)``; their product is the number of ranks.
        tensor_map: One entry per tensor dim: the mesh axis splitting it, or -1.
        partial: Mesh axes over which the value is a pending sum.

    Raises:
        ValueError: If a mesh size is not a positive int, a mapped axis is out of range, a
            mesh axis splits two tensor dims, or a partial axis is out of range or mapped.
    """

    mesh: tuple[int, ...]
    tensor_map: tuple[int, ...]
    partial: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        mesh = tuple(self.mesh)
        tmap = tuple(self.tensor_map)
        partial = frozenset(self.partial)

        def raw() -> str:  # built only for an error message
            return _raw_text(mesh, tmap, partial) if _all_ints(mesh, tmap, partial) else repr(
                (self.mesh, self.tensor_map, self.partial))
        if not mesh:
            raise ValueError(f"Layout {raw()}: the mesh has no axes; use mesh=(1,) for one rank.")
        for i, m in enumerate(mesh):
            if not _is_int(m) or m < 1:
                raise ValueError(
                    f"Layout {raw()}: mesh axis {i} has size {m!r}; mesh sizes must be positive "
                    f"ints, e.g. mesh=(2, 4).")
        for d, a in enumerate(tmap):
            if not _is_int(a) or not -1 <= a < len(mesh):
                raise ValueError(
                    f"Layout {raw()}: tensor dim {d} maps to mesh axis {a!r}, but the mesh "
                    f"{list(mesh)} has axes 0..{len(mesh) - 1}; use one of those or -1 "
                    f"(not split).")
        for a in set(tmap) - {-1}:
            users = [d for d, b in enumerate(tmap) if b == a]
            if len(users) > 1:
                raise ValueError(
                    f"Layout {raw()}: mesh axis {a} is used by tensor dims {users}; each mesh "
                    f"axis may split at most one tensor dim. Map all but one of them to -1 or "
                    f"to an unused mesh axis.")
        for a in sorted(partial, key=repr):
            if not _is_int(a) or not 0 <= a < len(mesh):
                raise ValueError(
                    f"Layout {raw()}: partial axis {a!r} is not a mesh axis of {list(mesh)}; "
                    f"partial axes must be in 0..{len(mesh) - 1}.")
            if a in tmap:
                raise ValueError(
                    f"Layout {raw()}: mesh axis {a} is both partial and mapped to tensor dim "
                    f"{tmap.index(a)}; a partial axis holds pending sums of the same block, so "
                    f"it cannot also split a dim. Drop it from partial or from tensor_map.")
        object.__setattr__(self, "mesh", tuple(int(m) for m in mesh))
        object.__setattr__(self, "tensor_map", tuple(int(a) for a in tmap))
        object.__setattr__(self, "partial", frozenset(int(a) for a in partial))
        # Layouts key the planner's dictionaries: hash once.
        object.__setattr__(self, "_hash", hash((self.mesh, self.tensor_map, self.partial)))

    def __hash__(self) -> int:
        return self._hash

    # ---------------------------------------------------------------- text form
    def __str__(self) -> str:
        return _raw_text(self.mesh, self.tensor_map, self.partial)

    @classmethod
    def parse(cls, text: str) -> "Layout":
        """Parse the text form printed by ``str``.

        The form is ``[mesh sizes] dims [P{axes}]``: e.g. ``"[2,4] S0,R,S1"`` or
        ``"[2,4] S0,R,R P{1}"``. A dim is ``R`` (not split) or ``S<axis>``; a rank-0 tensor
        is written ``-``.

        Args:
            text: The text form.

        Returns:
            The layout.

        Raises:
            ValueError: If the text is not of that form or the layout is invalid.
        """
        m = _TEXT_RE.match(text)
        if m is None:
            raise ValueError(
                f"cannot parse layout {text!r}: expected '[mesh] dims [P{{axes}}]', e.g. "
                f"'[2,4] S0,R,S1' or '[2,4] S0,R,R P{{1}}'.")
        mesh = tuple(int(x) for x in m.group("mesh").split(","))
        map_text = m.group("map").strip()
        tmap: list[int] = []
        if map_text not in ("", "-"):
            for tok in map_text.split(","):
                tok = tok.strip()
                if tok == "R":
                    tmap.append(-1)
                elif re.fullmatch(r"S\d+", tok):
                    tmap.append(int(tok[1:]))
                else:
                    raise ValueError(
                        f"cannot parse layout {text!r}: dim token {tok!r} is neither 'R' nor "
                        f"'S<mesh axis>' (e.g. 'S0').")
        partial_text = m.group("partial")
        partial = frozenset(int(x) for x in partial_text.split(",")) if partial_text else frozenset()
        return cls(mesh=mesh, tensor_map=tuple(tmap), partial=partial)

    # ---------------------------------------------------------------- mesh facts
    @property
    def num_ranks(self) -> int:
        """Number of ranks of the mesh (product of its sizes)."""
        return math.prod(self.mesh)

    @property
    def ndim(self) -> int:
        """Rank of the tensor (number of tensor dims)."""
        return len(self.tensor_map)

    def coords(self, rank: int) -> tuple[int, ...]:
        """Mesh coordinates of ``rank`` (row-major, last axis fastest)."""
        self._check_rank(rank)
        return mesh_coords(self.mesh, rank)

    def axis_role(self, axis: int) -> str:
        """``'P'``, ``'S<dim>'`` or ``'R'``: what mesh axis ``axis`` does to the tensor."""
        if axis in self.partial:
            return "P"
        if axis in self.tensor_map:
            return f"S{self.tensor_map.index(axis)}"
        return "R"

    @property
    def replicated_axes(self) -> tuple[int, ...]:
        """Mesh axes that neither split a dim nor are partial (they hold replicas)."""
        return tuple(a for a in range(len(self.mesh))
                     if a not in self.partial and a not in self.tensor_map)

    def grad(self) -> "Layout":
        """Layout of this tensor's gradient: partial axes become replicated axes.

        The derivative of a sum with respect to each of its terms is the identity, so every
        rank that held a term receives the whole (identical) gradient of the block.
        """
        if not self.partial:
            return self              # a frozen value: the gradient's layout is this one
        return Layout(self.mesh, self.tensor_map, frozenset())

    # ---------------------------------------------------------------- shape-dependent
    def check_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Check that ``shape`` fits this layout and return it as a tuple of ints.

        Raises:
            ValueError: If the tensor rank differs from ``len(tensor_map)``, a size is not a
                positive int, or a split dim is not divisible by its mesh axis size.
        """
        shape_t = tuple(shape)
        if len(shape_t) != len(self.tensor_map):
            raise ValueError(
                f"Layout {self} with shape {shape_t}: the layout has {len(self.tensor_map)} "
                f"tensor dims but the shape has {len(shape_t)}; give one tensor_map entry per "
                f"dim.")
        for d, n in enumerate(shape_t):
            if not _is_int(n) or n < 1:
                raise ValueError(
                    f"Layout {self} with shape {shape_t}: dim {d} has size {n!r}; sizes must "
                    f"be positive ints.")
        for d, a in enumerate(self.tensor_map):
            if a >= 0 and shape_t[d] % self.mesh[a] != 0:
                raise ValueError(
                    f"Layout {self} with shape {shape_t}: tensor dim {d} of size {shape_t[d]} "
                    f"is split over mesh axis {a} of size {self.mesh[a]}, but "
                    f"{shape_t[d]} % {self.mesh[a]} != 0 (indivisible split). Pad dim {d} to a "
                    f"multiple of {self.mesh[a]} or do not split it over axis {a}.")
        return tuple(int(n) for n in shape_t)

    def fits(self, shape: Sequence[int]) -> bool:
        """Whether :meth:`check_shape` would accept ``shape``."""
        if len(shape) != len(self.tensor_map):
            return False
        return all(a < 0 or shape[d] % self.mesh[a] == 0 for d, a in enumerate(self.tensor_map))

    def local_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Shape of the block each rank holds."""
        shape_t = self.check_shape(shape)
        return tuple(n // self.mesh[a] if a >= 0 else n for n, a in zip(shape_t, self.tensor_map))

    def local_bytes(self, shape: Sequence[int], itemsize: int) -> int:
        """Bytes each rank holds for a tensor of ``shape`` with ``itemsize`` bytes per element."""
        return math.prod(self.local_shape(shape)) * int(itemsize)

    def shard_slices(self, rank: int, shape: Sequence[int]) -> tuple[slice, ...]:
        """The part of the full tensor that ``rank`` holds, one slice per tensor dim.

        For a partial layout the rank holds one term of the sum for that part.
        """
        local = self.local_shape(shape)
        coords = self.coords(rank)
        out = []
        for d, a in enumerate(self.tensor_map):
            start = coords[a] * local[d] if a >= 0 else 0
            out.append(slice(start, start + local[d]))
        return tuple(out)

    def _check_rank(self, rank: int) -> None:
        if not _is_int(rank) or not 0 <= rank < self.num_ranks:
            raise ValueError(
                f"Layout {self}: rank {rank!r} is not in range(0, {self.num_ranks}) of mesh "
                f"{list(self.mesh)}.")


def _is_int(x: object) -> bool:
    # type() first: plain ints are the common case, and the ABC check is slow
    return type(x) is int or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


def _all_ints(*seqs: Iterable[object]) -> bool:
    return all(_is_int(x) for s in seqs for x in s)
