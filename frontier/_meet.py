"""Where a path's two folded halves meet: the union over a node's configurations of the
product of two frontiers per configuration, in one merge.

LDP folds a path from both ends into its middle node (``_ldp``). Both halves then hold
a frontier per configuration k of that node, and the path's frontier is
``reduce(U_k a[k] (x) b[k])``. As a product per configuration followed by a union, every
configuration's whole product frontier is made and then mostly dropped by the union
(on a random 200-node chain, 723,185 points for a frontier of 2,733). As one
``combine`` (W = P = 1, a block per configuration) the merge drops a block's candidates
as soon as any configuration's points dominate them. Radii and thinning are those of
``combine``; with several threads the configurations are split into parts of about
equal work, merged side by side and their frontiers united (within the same budget).

Usage::

    t, ia, ib = meet(a, b, budget=0.01, threads=2)   # a, b: K cells each; t: one cell
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from frontier._table import IDX, Table, gather
from frontier._values import MergeCounts, Shape, _pool, combine, union_all

__all__ = ["meet"]

_SPLIT_MIN_WORK = 1_000_000   # candidates (sum over k of |a[k]| |b[k]|) worth splitting


def _part(a: Table, b: Table, cells: np.ndarray, budget: float, rel: float):
    """``meet`` of the configurations ``cells`` alone, on one thread; returns (table,
    ia, ib, counts) with indices into the whole of a and b."""
    ga, ia_map = gather(a, cells)
    gb, ib_map = gather(b, cells)
    counts = MergeCounts()
    t, ia, ib, _ = combine(ga, gb, Shape(1, len(cells), 1), budget=budget, counts=counts,
                           rel=rel)
    return t, ia_map[ia], ib_map[ib], counts


def meet(a: Table, b: Table, *, budget: float = 0.0, threads: int = 1,
         counts: Optional[MergeCounts] = None, rel: float = 0.0):
    """``reduce(U_k a[k] (x) b[k])`` as a one-cell table, a and b having K cells each.

    ``budget`` and ``rel`` thin as in ``combine`` (a keeper's radius stays within
    ``budget + rel * its time``); ``threads`` split the configurations.

    Returns:
        ``(table, ia, ib)``: the frontier and, per point, its flat index into a and b.
    """
    K = a.ncells
    assert b.ncells == K, "meet: both tables need a cell per configuration"
    work = a.counts().astype(float) * b.counts()
    if threads <= 1 or K < 2 * threads or work.sum() < _SPLIT_MIN_WORK:
        t, ia, ib, _ = combine(a, b, Shape(1, K, 1), budget=budget, counts=counts, rel=rel)
        return t, ia, ib
    cum = np.cumsum(work)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, threads) / threads, side="right")
    bounds = np.unique(np.r_[0, cuts, K])
    cells = [np.arange(s, e, dtype=IDX) for s, e in zip(bounds[:-1], bounds[1:]) if e > s]
    parts = list(_pool(threads).map(lambda c: _part(a, b, c, budget, rel), cells))
    off = np.zeros(len(parts) + 1, dtype=IDX)
    np.cumsum([p[0].npoints for p in parts], out=off[1:])
    radius = None
    if any(p[0].radius is not None for p in parts):
        radius = np.concatenate([p[0].radii() for p in parts])
    joined = Table(np.concatenate([p[0].mem for p in parts]),
                   np.concatenate([p[0].time for p in parts]), off, radius)
    t, idx = union_all(joined, budget=budget, counts=counts, rel=rel)
    if counts is not None:
        for p in parts:
            counts.candidates += p[3].candidates
            counts.blocks += p[3].blocks
            counts.gap_s = max(counts.gap_s, p[3].gap_s)
    ia = np.concatenate([p[1] for p in parts])[idx]
    ib = np.concatenate([p[2] for p in parts])[idx]
    return t, ia, ib
