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

__all__ = ["run_numpy", "run_step_numpy"]


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
    g = step.group_size
    for group in step.groups():
        xs = [cur[r] for r in group]
        if step.kind == "slice":
            res = [_chunk(x, step.dst_dim, g, c) for c, x in enumerate(xs)]
        elif step.kind == "allgather":
            full = np.concatenate(xs, axis=step.src_dim)
            res = [full] * g
        elif step.kind == "alltoall":
            res = [np.concatenate([_chunk(x, step.dst_dim, g, j) for x in xs], axis=step.src_dim)
                   for j in range(g)]
        elif step.kind == "allreduce":
            total = np.sum(np.stack(xs), axis=0)
            res = [total] * g
        elif step.kind == "reducescatter":
            total = np.sum(np.stack(xs), axis=0)
            res = [_chunk(total, step.dst_dim, g, c) for c in range(g)]
        else:  # pragma: no cover - STEP_KINDS is closed
            raise AssertionError(step.kind)
        for r, y in zip(group, res):
            out[r] = np.array(y, copy=True)
    return out
