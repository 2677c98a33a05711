"""One-collective re-scheduling steps between layouts.

A :class:`Step` is a frozen value naming one collective (or a free local slice), the mesh
axis whose groups run it, the tensor dims it touches, and its input/output layouts::

    from reschedule import Layout, Step
    src = Layout.parse("[2,4] S0,R,R")
    step = Step.make_slice(src, axis=1, dim=2)         # '[2,4] S0,R,R' -> '[2,4] S0,R,S1', free
    step.group_size, step.group_stride                  # (4, 1)
    step.groups()                                       # [(0, 1, 2, 3), (4, 5, 6, 7)]

Allowed transitions (one mesh axis ``a`` changes role; all other axes keep theirs)::

    kind           axis a before -> after   tensor dims           group / notes
    -------------  ----------------------   --------------------  ---------------------------
    slice          R     -> S(d)            dst_dim=d (was R)     local, no communication
    allgather      S(d)  -> R               src_dim=d             groups along axis a
    alltoall       S(d1) -> S(d2)           src_dim=d1, dst_dim=d2 (d2 was R)  along axis a
    allreduce      P     -> R               -                     groups along axis a
    reducescatter  P     -> S(d)            dst_dim=d (was R)     groups along axis a
    alltoallv      any non-partial layout on mesh A -> any non-partial layout on mesh B != A,
                   one exchange over all ranks (see :meth:`Step.exchange`)

Never allowed: creating a pending sum (R/S -> P), a step on a partial axis other than the
two reductions, and a mesh change of a partial layout (reduce first).

The "groups along axis a" are the sets of ranks that differ only in coordinate ``a`` (ranks
row-major, last axis fastest), listed in increasing coordinate ``a``; neighbours in a group
are ``group_stride = prod(mesh[a+1:])`` rank numbers apart. Group member ``c`` (coordinate
``c``) owns block ``c`` of the split dim. Collective semantics, per group:

* allgather: concatenate members' blocks along ``src_dim`` in member order.
* alltoall: member ``i`` cuts its block into ``g`` equal chunks along ``dst_dim`` and sends
  chunk ``j`` to member ``j``; member ``j`` concatenates what it receives along ``src_dim``
  in member order (one ``hvd.alltoall`` on the group's process set with splits along
  ``dst_dim`` after moving it to the front).
* allreduce: sum; reducescatter: sum, then member ``c`` keeps chunk ``c`` along ``dst_dim``.
* slice: member ``c`` keeps chunk ``c`` along ``dst_dim``.

Byte counts are per rank; ``bytes_recv`` is the textbook ring volume each rank receives
(max over ranks for alltoallv).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._layout import Layout, mesh_coords
from ._step_data import step_from_dict

__all__ = ["STEP_KINDS", "Step", "Piece", "Exchange"]

STEP_KINDS = ("slice", "allgather", "alltoall", "allreduce", "reducescatter", "alltoallv")


@dataclass(frozen=True)
class Piece:
    """One contiguous box sent from ``src_rank`` to ``dst_rank`` by an alltoallv step.

    Attributes:
        src_rank: Rank that sends (holds the box in the step's input layout).
        dst_rank: Rank that receives (needs the box in the step's output layout).
        src_slices: Where the box lies in ``src_rank``'s local block.
        dst_slices: Where the box goes in ``dst_rank``'s local block.
        global_slices: Where the box lies in the full tensor.
        num_elements: Elements in the box.
    """

    src_rank: int
    dst_rank: int
    src_slices: tuple[slice, ...]
    dst_slices: tuple[slice, ...]
    global_slices: tuple[slice, ...]
    num_elements: int


@dataclass(frozen=True)
class Exchange:
    """Every piece of an alltoallv step, in the order a single ``hvd.alltoall`` needs.

    Lowering with one ``hvd.alltoall(x, splits=...)`` over all ranks: rank ``p`` builds a
    1-D buffer ``x`` by flattening (C order) the pieces of :meth:`sends` ``(p)`` in order
    and concatenating them, and calls ``hvd.alltoall(x, splits=send_splits(p))``. The result
    on rank ``q`` is the flattened pieces of :meth:`recvs` ``(q)`` in order, with sizes
    :meth:`recv_splits` ``(q)``; each is reshaped and written to ``dst_slices`` of a new
    local block of the output layout. Pieces with ``src_rank == dst_rank`` are local copies
    (they may go through the buffer or be copied directly).

    Attributes:
        num_ranks: Number of ranks.
        pieces: All pieces, sorted by (src_rank, dst_rank, global start).
    """

    num_ranks: int
    pieces: tuple[Piece, ...]

    def sends(self, rank: int) -> tuple[Piece, ...]:
        """Pieces ``rank`` sends, in buffer order (by destination rank, then position)."""
        return tuple(p for p in self.pieces if p.src_rank == rank)

    def recvs(self, rank: int) -> tuple[Piece, ...]:
        """Pieces ``rank`` receives, in buffer order (by source rank, then position)."""
        return tuple(p for p in self.pieces if p.dst_rank == rank)

    def send_splits(self, rank: int) -> list[int]:
        """Elements ``rank`` sends to each rank (``splits`` argument of ``hvd.alltoall``)."""
        out = [0] * self.num_ranks
        for p in self.sends(rank):
            out[p.dst_rank] += p.num_elements
        return out

    def recv_splits(self, rank: int) -> list[int]:
        """Elements ``rank`` receives from each rank."""
        out = [0] * self.num_ranks
        for p in self.recvs(rank):
            out[p.src_rank] += p.num_elements
        return out


@dataclass(frozen=True)
class Step:
    """One collective (or free local slice) taking layout ``src`` to layout ``dst``.

    Build steps with the ``make_*`` class methods, which check that the step applies.

    Attributes:
        kind: One of :data:`STEP_KINDS`.
        src: Input layout.
        dst: Output layout (same mesh except for ``alltoallv``).
        axis: Mesh axis whose groups run the collective; None for ``alltoallv``.
        src_dim: Tensor dim split over ``axis`` before the step (allgather, alltoall).
        dst_dim: Tensor dim split over ``axis`` after the step (slice, alltoall,
            reducescatter).
    """

    kind: str
    src: Layout
    dst: Layout
    axis: int | None = None
    src_dim: int | None = None
    dst_dim: int | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def make_slice(cls, src: Layout, axis: int, dim: int) -> "Step":
        """R -> S(dim) on replicated mesh axis ``axis``: each rank keeps its block (free)."""
        _need(src, axis, "R", "slice")
        _need_unsplit(src, dim, "slice")
        return cls("slice", src, _remap(src, dim, axis), axis, None, dim)

    @classmethod
    def make_allgather(cls, src: Layout, axis: int) -> "Step":
        """S(d) -> R on mesh axis ``axis``."""
        dim = _need_split(src, axis, "allgather")
        return cls("allgather", src, _remap(src, dim, -1), axis, dim, None)

    @classmethod
    def make_alltoall(cls, src: Layout, axis: int, dim: int) -> "Step":
        """S(d) -> S(dim) on mesh axis ``axis``: the split moves from dim d to ``dim``."""
        old = _need_split(src, axis, "alltoall")
        _need_unsplit(src, dim, "alltoall")
        tmap = list(src.tensor_map)
        tmap[old], tmap[dim] = -1, axis
        return cls("alltoall", src, Layout(src.mesh, tuple(tmap), src.partial), axis, old, dim)

    @classmethod
    def make_allreduce(cls, src: Layout, axis: int) -> "Step":
        """P -> R on partial mesh axis ``axis``."""
        _need(src, axis, "P", "allreduce")
        return cls("allreduce", src, Layout(src.mesh, src.tensor_map, src.partial - {axis}),
                   axis)

    @classmethod
    def make_reducescatter(cls, src: Layout, axis: int, dim: int) -> "Step":
        """P -> S(dim) on partial mesh axis ``axis``."""
        _need(src, axis, "P", "reducescatter")
        _need_unsplit(src, dim, "reducescatter")
        tmap = list(src.tensor_map)
        tmap[dim] = axis
        return cls("reducescatter", src, Layout(src.mesh, tuple(tmap), src.partial - {axis}),
                   axis, None, dim)

    @classmethod
    def make_alltoallv(cls, src: Layout, dst: Layout) -> "Step":
        """Any non-partial layout -> any non-partial layout on another mesh of as many ranks."""
        if src.partial or dst.partial:
            raise ValueError(
                f"alltoallv {src} -> {dst}: a mesh change moves data but cannot sum pending "
                f"partial values; reduce the partial axes first (allreduce/reducescatter).")
        if src.num_ranks != dst.num_ranks or src.ndim != dst.ndim:
            raise ValueError(
                f"alltoallv {src} -> {dst}: both layouts need the same number of ranks and "
                f"tensor dims.")
        if src.mesh == dst.mesh:
            raise ValueError(
                f"alltoallv {src} -> {dst}: both layouts use mesh {list(src.mesh)}; a same-mesh "
                f"conversion uses the per-axis collectives.")
        return cls("alltoallv", src, dst)

    def __post_init__(self) -> None:
        assert self.kind in STEP_KINDS, self.kind

    # ------------------------------------------------------------------ plain data
    def to_dict(self) -> dict:
        """The step as plain JSON data: its kind, layouts as text, axis and dims.

        ``Step.from_dict(step.to_dict()) == step``.
        """
        return {"kind": self.kind, "src": str(self.src), "dst": str(self.dst), "axis": self.axis,
                "src_dim": self.src_dim, "dst_dim": self.dst_dim}

    @classmethod
    def from_dict(cls, data: dict) -> "Step":
        """Rebuilds a step from :meth:`to_dict`'s data, through the ``make_*`` constructor of
        its kind, which checks that the step applies to its input layout.

        Raises:
            ValueError: naming the field that is missing or wrong: an unknown kind, a layout
                that does not parse, an axis or dim the kind does not allow, or a ``dst``,
                ``axis``, ``src_dim`` or ``dst_dim`` other than what the step from ``src``
                gives.
        """
        return step_from_dict(cls, data, STEP_KINDS)

    # ------------------------------------------------------------------ groups
    @property
    def mesh(self) -> tuple[int, ...]:
        """Mesh the collective runs on (the input's mesh)."""
        return self.src.mesh

    @property
    def dims(self) -> tuple[int, ...]:
        """Tensor dims the step touches (all dims for alltoallv)."""
        if self.kind == "alltoallv":
            return tuple(range(self.src.ndim))
        return tuple(d for d in (self.src_dim, self.dst_dim) if d is not None)

    @property
    def group_size(self) -> int:
        """Ranks per group (all ranks for alltoallv)."""
        if self.axis is None:
            return self.src.num_ranks
        return self.src.mesh[self.axis]

    @property
    def group_stride(self) -> int:
        """Distance in rank numbers between neighbours of a group (1 for alltoallv)."""
        if self.axis is None:
            return 1
        return math.prod(self.src.mesh[self.axis + 1:])

    def groups(self) -> list[tuple[int, ...]]:
        """The rank groups (process sets), each in increasing coordinate along ``axis``."""
        return axis_groups(self.src.mesh, self.axis)

    @property
    def communicates(self) -> bool:
        """False for a slice (local).

        An alltoallv may also move nothing: when ``bytes_recv(shape, itemsize) == 0`` every
        piece of its :meth:`exchange` is a self-copy, so it lowers to local slicing with no
        collective (the alpha-beta model prices it 0).
        """
        return self.kind != "slice"

    # ------------------------------------------------------------------ bytes
    def bytes_in(self, shape: Sequence[int], itemsize: int) -> int:
        """Bytes each rank holds before the step."""
        return self.src.local_bytes(shape, itemsize)

    def bytes_out(self, shape: Sequence[int], itemsize: int) -> int:
        """Bytes each rank holds after the step."""
        return self.dst.local_bytes(shape, itemsize)

    def bytes_recv(self, shape: Sequence[int], itemsize: int) -> float:
        """Bytes a rank receives (ring algorithms; max over ranks for alltoallv).

        slice 0; allgather (g-1)/g * out; alltoall (g-1)/g * in; reducescatter
        (g-1)/g * in; allreduce 2(g-1)/g * in; alltoallv max over ranks of the bytes of its
        output block that it did not hold in the input.
        """
        g = self.group_size
        if self.kind == "slice":
            return 0.0
        if self.kind == "allgather":
            return (g - 1) / g * self.bytes_out(shape, itemsize)
        if self.kind in ("alltoall", "reducescatter"):
            return (g - 1) / g * self.bytes_in(shape, itemsize)
        if self.kind == "allreduce":
            return 2 * (g - 1) / g * self.bytes_in(shape, itemsize)
        return float(max(alltoallv_recv_elements(self.src, self.dst, tuple(shape))) * itemsize)

    def exchange(self, shape: Sequence[int]) -> Exchange:
        """Per-rank send/receive pieces of an alltoallv step (see :class:`Exchange`).

        Each rank receives every part of its output block from a rank holding it in the
        input: itself if it can, else holder number ``rank % len(holders)`` among the ranks
        holding that input block (in increasing rank order), which spreads sends over
        replicas.

        Raises:
            ValueError: If the step is not an alltoallv.
        """
        if self.kind != "alltoallv":
            raise ValueError(f"{self}: exchange() describes alltoallv steps only.")
        return _exchange(self.src, self.dst, tuple(shape))

    # ------------------------------------------------------------------ text
    def __str__(self) -> str:
        if self.kind == "slice":
            return f"slice(axis {self.axis}, dim {self.dst_dim})"
        if self.kind == "allgather":
            return f"allgather(axis {self.axis}, dim {self.src_dim})"
        if self.kind == "alltoall":
            return f"alltoall(axis {self.axis}, dim {self.src_dim}->{self.dst_dim})"
        if self.kind == "allreduce":
            return f"allreduce(axis {self.axis})"
        if self.kind == "reducescatter":
            return f"reducescatter(axis {self.axis}, dim {self.dst_dim})"
        return f"alltoallv({self.src} -> {self.dst})"


# ---------------------------------------------------------------------- helpers
def axis_groups(mesh: Sequence[int], axis: int | None) -> list[tuple[int, ...]]:
    """Groups of ranks that differ only in coordinate ``axis`` (all ranks if None)."""
    n = math.prod(mesh)
    if axis is None:
        return [tuple(range(n))]
    stride = math.prod(mesh[axis + 1:])
    size = mesh[axis]
    return [tuple(r + i * stride for i in range(size))
            for r in range(n) if (r // stride) % size == 0]


def _need(src: Layout, axis: int, role: str, kind: str) -> None:
    if not 0 <= axis < len(src.mesh):
        raise ValueError(f"{kind} on {src}: mesh axis {axis} does not exist.")
    have = src.axis_role(axis)
    if (have[0] if role == "S" else have) != role:
        raise ValueError(
            f"{kind} on {src}: mesh axis {axis} is {have}, but {kind} needs it to be {role}.")


def _need_split(src: Layout, axis: int, kind: str) -> int:
    _need(src, axis, "S", kind)
    return src.tensor_map.index(axis)


def _need_unsplit(src: Layout, dim: int, kind: str) -> None:
    if not 0 <= dim < src.ndim or src.tensor_map[dim] != -1:
        raise ValueError(
            f"{kind} on {src}: tensor dim {dim} must exist and not be split already.")


def _remap(src: Layout, dim: int, axis: int) -> Layout:
    tmap = list(src.tensor_map)
    tmap[dim] = axis
    return Layout(src.mesh, tuple(tmap), src.partial)


@functools.lru_cache(maxsize=4096)
def rank_boxes(layout: Layout, shape: tuple[int, ...]) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per rank, per dim, the half-open interval ``(lo, hi)`` of the full tensor it holds."""
    local = layout.local_shape(shape)
    out = []
    for r in range(layout.num_ranks):
        c = mesh_coords(layout.mesh, r)
        out.append(tuple((c[a] * n, c[a] * n + n) if a >= 0 else (0, n)
                         for n, a in zip(local, layout.tensor_map)))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _box_array(layout: Layout, shape: tuple[int, ...]) -> np.ndarray:
    """``rank_boxes`` as an int64 array [rank, dim, (lo, hi)] (shape (ranks, 0, 2) for a scalar)."""
    boxes = np.array(rank_boxes(layout, shape), dtype=np.int64).reshape(layout.num_ranks, len(shape), 2)
    boxes.flags.writeable = False
    return boxes


BROADCAST_ELEMENTS = 1 << 22   # elements per chunk of a layout-pair broadcast (32 MiB of 8-byte values)


@functools.lru_cache(maxsize=65536)
def alltoallv_recv_elements(src: Layout, dst: Layout, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Per rank, elements of its ``dst`` block that it does not hold under ``src``."""
    sb, db = _box_array(src, shape), _box_array(dst, shape)
    extent = np.minimum(sb[:, :, 1], db[:, :, 1]) - np.maximum(sb[:, :, 0], db[:, :, 0])
    held = np.prod(np.maximum(extent, 0), axis=1)
    wanted = np.prod(db[:, :, 1] - db[:, :, 0], axis=1)
    return tuple((wanted - held).tolist())


def alltoallv_max_recv_matrix(srcs, dsts, shape: tuple[int, ...]) -> np.ndarray:
    """``max(alltoallv_recv_elements(s, d, shape))`` for every pair, as an int64 array
    [len(srcs), len(dsts)], in numpy (the largest receive is what an alltoallv's time
    depends on). The same integers as the per-pair function; rows are taken in chunks
    so that the broadcast [rows, dsts, ranks, dims] stays near ``BROADCAST_ELEMENTS``."""
    if not srcs or not dsts:
        return np.zeros((len(srcs), len(dsts)), dtype=np.int64)
    return max_recv_matrix(box_arrays(srcs, shape), box_arrays(dsts, shape))


def box_arrays(layouts, shape: tuple[int, ...]) -> np.ndarray:
    """``rank_boxes`` of every layout (all on one number of ranks), as one int64 array
    [layout, rank, dim, (lo, hi)], in numpy: rank r holds ``[c*n, c*n + n)`` of a dim split
    over mesh axis a (c: r's coordinate on a, n: the local size) and all of an unsplit one."""
    layouts = list(layouts)
    shape = tuple(shape)
    out = np.empty((len(layouts), layouts[0].num_ranks if layouts else 0, len(shape), 2), dtype=np.int64)
    for mesh, where in _group(layouts).items():
        coords = np.array([mesh_coords(mesh, r) for r in range(math.prod(mesh))], dtype=np.int64)
        coords = np.concatenate([coords, np.zeros((len(coords), 1), dtype=np.int64)], axis=1)
        tmap = np.array([layouts[i].tensor_map for i in where], dtype=np.int64).reshape(len(where), len(shape))
        local = np.array([layouts[i].local_shape(shape) for i in where], dtype=np.int64).reshape(tmap.shape)
        # an unsplit dim reads the appended 0 coordinate: [0, n) with n the full size
        lo = coords[:, tmap].transpose(1, 0, 2) * local[:, None, :]   # [layout, rank, dim]
        out[where, :, :, 0] = lo
        out[where, :, :, 1] = lo + local[:, None, :]
    return out


def _group(layouts) -> dict:
    out: dict = {}
    for i, lay in enumerate(layouts):
        out.setdefault(lay.mesh, []).append(i)
    return out


def max_recv_matrix(sb: np.ndarray, db: np.ndarray) -> np.ndarray:
    """``alltoallv_max_recv_matrix`` from the box arrays (``box_arrays``) of the sources
    [A, rank, dim, (lo, hi)] and of the destinations [B, rank, dim, (lo, hi)]."""
    if sb.shape[1] != db.shape[1]:
        raise ValueError(f"alltoallv: the source layouts have {sb.shape[1]} ranks and the "
                         f"destinations {db.shape[1]}; an alltoallv needs as many on both.")
    out = np.empty((len(sb), len(db)), dtype=np.int64)
    if not len(sb) or not len(db):
        return out
    wanted = np.prod(db[:, :, :, 1] - db[:, :, :, 0], axis=2)     # [B, rank]
    per_row = max(1, BROADCAST_ELEMENTS // max(1, db.shape[0] * db.shape[1] * max(1, db.shape[2])))
    for r0 in range(0, len(sb), per_row):
        s = sb[r0:r0 + per_row, None]
        extent = (np.minimum(s[..., 1], db[None, ..., 1])
                  - np.maximum(s[..., 0], db[None, ..., 0]))     # [rows, B, rank, dim]
        held = np.prod(np.maximum(extent, 0), axis=3)
        out[r0:r0 + per_row] = (wanted[None] - held).max(axis=2)
    return out


@functools.lru_cache(maxsize=1024)
def _exchange(src: Layout, dst: Layout, shape: tuple[int, ...]) -> Exchange:
    sb, db = rank_boxes(src, shape), rank_boxes(dst, shape)
    holders: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for r, box in enumerate(sb):
        holders.setdefault(box, []).append(r)
    pieces = []
    for q, dbox in enumerate(db):
        for sbox, hold in holders.items():
            inter = tuple((max(a[0], b[0]), min(a[1], b[1])) for a, b in zip(sbox, dbox))
            if any(lo >= hi for lo, hi in inter):
                continue
            p = q if q in hold else hold[q % len(hold)]
            pieces.append(Piece(
                src_rank=p, dst_rank=q,
                src_slices=tuple(slice(lo - s[0], hi - s[0]) for (lo, hi), s in zip(inter, sbox)),
                dst_slices=tuple(slice(lo - d[0], hi - d[0]) for (lo, hi), d in zip(inter, dbox)),
                global_slices=tuple(slice(lo, hi) for lo, hi in inter),
                num_elements=math.prod(hi - lo for lo, hi in inter)))
    pieces.sort(key=lambda p: (p.src_rank, p.dst_rank, tuple(s.start for s in p.global_slices)))
    return Exchange(num_ranks=src.num_ranks, pieces=tuple(pieces))
