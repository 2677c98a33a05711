"""An edge's alternatives for every pair of layouts, as arrays (``CostModel``'s tables).

``price_edge_table`` turns the conversion-second matrices of an edge (forward, the
gradient's back, the reverse that rebuilds a dropped copy) into one
:class:`EdgeAlternativeTable`: per (source layout u, destination v, alternative j) the
memory, time and compute seconds, in numpy, with the very float operations, in the same
order, that the per-pair formulas below use. The table is also the mapping
``(u, v) -> [EdgeAlternative, ...]`` the plan builders read; each pair's list is built on
first access, so a search builds objects only for the pairs its plans take.

Per pair (``t`` = forward + backward seconds, ``f`` = forward, ``r`` = reverse)::

    neither end keeps the tensor:  [none(0, t)]
    both keep, same layout:        [shared(-src bytes, t)]
    both keep, layouts differ:     [keep_both(0, t),
                                    keep_producer(-dst bytes, t + f + sum(rerun), rerun[0]),
                                    keep_consumer(-src bytes, t + r)]  (when offered and r is not nan)

Usage::

    table = price_edge_table(srcs, dsts, forward, backward, reverse, shape, itemsize, ...)
    table[(u, v)]        # [EdgeAlternative, ...]
    table.grid           # (U, V, W, 2) (memory, time), padded with each pair's first
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from reschedule import Layout

__all__ = ["EdgeAlternative", "EdgeAlternativeTable", "price_edge_table"]


@dataclass(frozen=True)
class EdgeAlternative:
    """One way to carry a tensor over an edge.

    Attributes:
        memory_bytes: memory change relative to both ends keeping their saved copies.
        time_s: re-scheduling forward + backward, plus any re-run for reuse.
        reuse: "none" (no copy kept by both ends), "keep_both", "keep_producer",
            "keep_consumer", or "shared" (same layout: one physical copy).
        src, dst: the producer's and the consumer's layouts.
        grad: whether a gradient flows back over the edge.
        compute_s: the part of ``time_s`` that is compute: a keep_producer consumer's
            forward re-run in backward (``CostModel.rerun_cost``).
    """

    memory_bytes: float
    time_s: float
    reuse: str
    src: Layout
    dst: Layout
    grad: bool
    compute_s: float = 0.0

    @property
    def network_s(self) -> float:
        """The collectives' part of ``time_s`` (the rest, ``compute_s``, is a re-run)."""
        return self.time_s - self.compute_s


#: per pair kind (``EdgeAlternativeTable.kinds``): the reuse of alternative j
_REUSES = (("none",), ("shared",), ("keep_both", "keep_producer", "keep_consumer"))
NONE, SHARED, KEEP = 0, 1, 2


class EdgeAlternativeTable(Mapping):
    """``(u, v) -> [EdgeAlternative, ...]`` for every source layout u and destination v
    (in the order u, then v), held as arrays; a pair's list is built on first access and
    then kept (the same list each time).

    Attributes:
        srcs: the source layouts.
        dsts: the destination layouts.
        grad: whether a gradient flows back over the edge.
        kinds: (U, V) int8: NONE, SHARED or KEEP (keep_both, keep_producer[, keep_consumer]).
        counts: (U, V) int64: how many alternatives each pair has.
        grid: (U, V, W, 2) float64 (memory_bytes, time_s), W = ``counts.max()``; a pair
            with fewer alternatives repeats its first. Read-only.
        compute: (U, V, W) float64 ``compute_s``, padded the same way. Read-only.
    """

    def __init__(self, srcs, dsts, grad: bool, kinds: np.ndarray, counts: np.ndarray,
                 grid: np.ndarray, compute: np.ndarray):
        self.srcs, self.dsts, self.grad = tuple(srcs), tuple(dsts), bool(grad)
        shape = (len(self.srcs), len(self.dsts))
        assert kinds.shape == counts.shape == shape and grid.shape[:2] == shape, "table arrays disagree"
        assert grid.shape[2] == compute.shape[2] == int(counts.max(initial=1)), "table width"
        self.kinds, self.counts, self.grid, self.compute = kinds, counts, grid, compute
        for a in (kinds, counts, grid, compute):
            a.flags.writeable = False
        self._lists: dict = {}

    @property
    def width(self) -> int:
        """The most alternatives any pair has (the grid's third axis)."""
        return self.grid.shape[2]

    def __len__(self) -> int:
        return len(self.srcs) * len(self.dsts)

    def __iter__(self):
        return itertools.product(range(len(self.srcs)), range(len(self.dsts)))

    def __contains__(self, pair) -> bool:
        try:
            u, v = pair
            return 0 <= u < len(self.srcs) and 0 <= v < len(self.dsts) and u == int(u) and v == int(v)
        except (TypeError, ValueError):
            return False

    def __getitem__(self, pair) -> list[EdgeAlternative]:
        alts = self._lists.get(pair)
        if alts is not None:
            return alts
        if pair not in self:
            raise KeyError(pair)
        u, v = int(pair[0]), int(pair[1])
        alts = self._lists.get((u, v))
        if alts is None:
            src, dst, grad = self.srcs[u], self.dsts[v], self.grad
            cells, compute = self.grid[u, v].tolist(), self.compute[u, v].tolist()
            alts = [EdgeAlternative(cells[j][0], cells[j][1], reuse, src, dst, grad, compute[j])
                    for j, reuse in zip(range(int(self.counts[u, v])), _REUSES[self.kinds[u, v]])]
            self._lists[(u, v)] = alts
        self._lists[pair] = alts
        return alts


def price_edge_table(srcs, dsts, forward: np.ndarray, backward: np.ndarray | None,
                     reverse: np.ndarray | None, src_bytes, dst_bytes, reruns, *, grad: bool,
                     keep_consumer: bool) -> EdgeAlternativeTable:
    """The table of an edge from its conversion seconds.

    Args:
        srcs, dsts: the source and destination layouts (U and V of them).
        forward: (U, V) seconds of each forward conversion.
        backward: (V, U) seconds of the gradient's conversion back (None: no gradient).
        reverse: (V, U) seconds of the conversion dst -> src that rebuilds the producer's
            dropped copy (nan: none can), or None when not both ends keep the tensor.
        src_bytes, dst_bytes: each layout's local bytes (ints).
        reruns: per destination, ``(compute_s, network_s)`` the consumer re-runs in
            backward under keep_producer.
        grad: whether a gradient flows back (``backward`` given).
        keep_consumer: whether keep_consumer may be offered at all.
    """
    nu, nv = len(srcs), len(dsts)
    forward = np.asarray(forward, dtype=np.float64).reshape(nu, nv)
    time = forward + np.asarray(backward, dtype=np.float64).reshape(nv, nu).T if grad else forward
    if reverse is None:
        kinds = np.full((nu, nv), NONE, dtype=np.int8)
        counts = np.ones((nu, nv), dtype=np.int64)
        memory = np.zeros((nu, nv, 1))
        return _table(srcs, dsts, grad, kinds, counts, memory, time[:, :, None], np.zeros((nu, nv, 1)))
    ids: dict = {}
    src_id = np.array([ids.setdefault(s, len(ids)) for s in srcs], dtype=np.int64)
    dst_id = np.array([ids.get(d, -1) for d in dsts], dtype=np.int64)
    shared = src_id[:, None] == dst_id[None, :]
    kinds = np.where(shared, SHARED, KEEP).astype(np.int8)
    rev = np.asarray(reverse, dtype=np.float64).reshape(nv, nu).T
    consumer = ~shared & ~np.isnan(rev) if keep_consumer else np.zeros((nu, nv), dtype=bool)
    counts = np.where(shared, 1, np.where(consumer, 3, 2)).astype(np.int64)
    width = int(counts.max())
    src_free = -np.asarray(src_bytes, dtype=np.float64).reshape(nu, 1)      # -float(bytes)
    dst_free = np.array([float(-b) for b in dst_bytes], dtype=np.float64).reshape(1, nv)
    rerun = np.asarray(reruns, dtype=np.float64).reshape(nv, 2)
    rerun_s = (0.0 + rerun[:, 0]) + rerun[:, 1]                               # sum(rerun)
    memory = np.empty((nu, nv, 3))
    times = np.empty((nu, nv, 3))
    compute = np.zeros((nu, nv, 3))
    memory[:, :, 0] = np.where(shared, src_free, 0.0)
    times[:, :, 0] = time
    memory[:, :, 1] = dst_free
    times[:, :, 1] = (time + forward) + rerun_s[None, :]
    compute[:, :, 1] = rerun[None, :, 0]
    memory[:, :, 2] = src_free
    times[:, :, 2] = time + rev
    # pad: a pair with fewer alternatives repeats its first
    for j in (1, 2):
        pad = counts <= j
        memory[:, :, j][pad] = memory[:, :, 0][pad]
        times[:, :, j][pad] = times[:, :, 0][pad]
        compute[:, :, j][pad] = compute[:, :, 0][pad]
    return _table(srcs, dsts, grad, kinds, counts, memory[:, :, :width], times[:, :, :width],
                  compute[:, :, :width])


def _table(srcs, dsts, grad, kinds, counts, memory, times, compute) -> EdgeAlternativeTable:
    grid = np.ascontiguousarray(np.stack([memory, times], axis=-1))
    return EdgeAlternativeTable(srcs, dsts, grad, kinds, counts, grid, np.ascontiguousarray(compute))
