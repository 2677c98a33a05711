"""Run a conversion on numpy shards, simulating every collective over its groups.

This is the reference semantics of each step (the execution builder must match it)::

    import numpy as np
    from reschedule import Layout, plan_conversion, run_numpy
    src, dst = Layout.parse("[4] S0,R"), Layout.parse("[2,2] R,S1")
    full = np.arange(32.0).reshape(8, 4)
    shards = {r: full[src.shard_slices(r, full.shape)] for r in range(4)}
    out = run_numpy(plan_conversion(src, dst, full.shape), shards)
    # out[r] == full[dst.shard_slices(r, full.shape)] for every rank r

The alltoallv step is simulated the way it is lowered: each rank packs its pieces into one
flat buffer, chunks are exchanged by ``send_splits``, and each rank unpacks by
``recv_splits`` (see :class:`~reschedule.Exchange`).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ._planner import Conversion
from ._steps import Step

__all__ = ["run_numpy", "run_step_numpy", "group_collective_numpy"]


def run_numpy(conv: Conversion, shards: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Execute ``conv`` on per-rank numpy blocks.

    Args:
        conv: A conversion from :func:`~reschedule.plan_conversion`.
        shards: ``{rank: block}`` for every rank of ``conv.src``'s mesh, each block of shape
            ``conv.src.local_shape(conv.shape)`` (for a partial source, one term of the sum).

    Returns:
        ``{rank: block}`` in ``conv.dst``'s layout (new arrays; inputs are not modified).

    Raises:
        ValueError: If ranks are missing or extra, or a block has the wrong shape.
    """
    want = conv.src.local_shape(conv.shape)
    ranks = set(shards)
    if ranks != set(range(conv.src.num_ranks)):
        raise ValueError(
            f"run_numpy({conv.src} -> {conv.dst}): shards has ranks {sorted(ranks)}, but the "
            f"source mesh {list(conv.src.mesh)} needs exactly ranks 0..{conv.src.num_ranks - 1}.")
    cur = {}
    for r in range(conv.src.num_ranks):
        x = np.asarray(shards[r])
        if x.shape != want:
            raise ValueError(
                f"run_numpy({conv.src} -> {conv.dst}): rank {r}'s block has shape {x.shape}, "
                f"but layout {conv.src} of shape {conv.shape} gives each rank {want}.")
        cur[r] = x
    for step in conv.steps:
        cur = run_step_numpy(step, cur, conv.shape)
    return {r: np.array(x, copy=True) for r, x in cur.items()}


def _chunk(x: np.ndarray, dim: int, parts: int, idx: int) -> np.ndarray:
    n = x.shape[dim] // parts
    index = [slice(None)] * x.ndim
    index[dim] = slice(idx * n, (idx + 1) * n)
    return x[tuple(index)]


def run_step_numpy(step: Step, cur: Mapping[int, np.ndarray],
                   shape: tuple[int, ...]) -> dict[int, np.ndarray]:
    """Execute one step on ``{rank: block}``; returns the blocks of ``step.dst``."""
    out: dict[int, np.ndarray] = {}
    if step.kind == "alltoallv":
        ex = step.exchange(shape)
        n = step.src.num_ranks
        # Pack: rank p's flat send buffer, cut into chunks per destination.
        chunks = {}
        for p in range(n):
            parts = [np.ascontiguousarray(cur[p][pc.src_slices]).ravel() for pc in ex.sends(p)]
            buf = np.concatenate(parts) if parts else np.zeros(0, dtype=cur[p].dtype)
            splits = np.cumsum([0] + ex.send_splits(p))
            for q in range(n):
                chunks[p, q] = buf[splits[q]:splits[q + 1]]
        local = step.dst.local_shape(shape)
        for q in range(n):
            buf = np.concatenate([chunks[p, q] for p in range(n)])
            assert buf.size == sum(ex.recv_splits(q))
            y = np.zeros(local, dtype=cur[q].dtype)
            filled = 0
            off = 0
            for pc in ex.recvs(q):
                box = y[pc.dst_slices]
                y[pc.dst_slices] = buf[off:off + pc.num_elements].reshape(box.shape)
                off += pc.num_elements
                filled += pc.num_elements
            assert filled == y.size, "alltoallv pieces do not tile the output block"
            out[q] = y
        return out
    for group in step.groups():
        res = group_collective_numpy(step.kind, [cur[r] for r in group], src_dim=step.src_dim,
                                     dst_dim=step.dst_dim)
        for r, y in zip(group, res):
            out[r] = np.array(y, copy=True)
    return out


def group_collective_numpy(kind: str, blocks: list[np.ndarray], *, src_dim: int | None = 0,
                           dst_dim: int | None = 0) -> list[np.ndarray]:
    """One group's collective on its members' blocks (in member order): each member's
    result. ``src_dim`` is the dim an allgather concatenates (an alltoall's received
    chunks too); ``dst_dim`` the dim a slice, reducescatter or alltoall cuts (horovod's
    collectives: both 0).

    Raises:
        ValueError: an unknown kind, or blocks an allreduce/reducescatter cannot sum
            (their shapes differ).
    """
    g = len(blocks)
    if kind in ("allreduce", "reducescatter"):
        shapes = {np.shape(x) for x in blocks}
        if len(shapes) != 1:
            raise ValueError(f"{kind}: the group's blocks have different shapes {sorted(shapes)}; "
                             "every member must contribute a block of one shape")
    if kind == "slice":
        return [_chunk(x, dst_dim, g, c) for c, x in enumerate(blocks)]
    if kind == "allgather":
        full = np.concatenate(blocks, axis=src_dim)
        return [full] * g
    if kind == "alltoall":
        return [np.concatenate([_chunk(x, dst_dim, g, j) for x in blocks], axis=src_dim)
                for j in range(g)]
    if kind == "allreduce":
        total = np.sum(np.stack(blocks), axis=0)
        return [total] * g
    if kind == "reducescatter":
        total = np.sum(np.stack(blocks), axis=0)
        return [_chunk(total, dst_dim, g, c) for c in range(g)]
    raise ValueError(f"unknown collective kind {kind!r}; one of slice, allgather, alltoall, "
                     "allreduce, reducescatter")
