"""Products computed once per group of identical configurations, then copied.

Repeated layers make many configurations' frontiers identical: rows of an edge table
that are equal in every column, or columns equal in every row. These wrappers find the
groups (``row_groups``), run the kernels of ``_values`` on one representative each,
and map the results and back pointers to every member. The results are the same as
without grouping. The points per cell bound the groups from below (``count_groups``):
when even they leave too few configurations equal, the rows are not compared at all.

Usage::

    t, ia, ib, k = combine_shared(a, b, Shape(W, K, P), mid=m, threads=2, budget=0.0)
    t, ia, ib = cell_product_shared(a, b, R, C)
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from frontier._copies import column_pointers, member_pointers
from frontier._table import (IDX, Table, cell_ids, col_groups, count_groups, gather,
                             radius_max, row_groups, single_point_cells)
from frontier._values import MergeCounts, Shape, cell_product, combine, translated, union_groups

__all__ = ["combine_grouped", "combine_shared", "cell_product_shared"]

POINTER_BLOCK = 1 << 22    # points per block when ``cell_product_shared`` maps pointers


def _note(counts: Optional[MergeCounts], **add: int) -> None:
    if counts is not None:
        for key, value in add.items():
            setattr(counts, key, getattr(counts, key) + value)


def combine_grouped(a: Table, b: Table, shape: Shape, *, mid: Optional[Table] = None,
                    post: Optional[Table] = None, threads: int = 1, budget: float = 0.0,
                    counts: Optional[MergeCounts] = None, rel: float = 0.0):
    """``combine`` with equal configurations shared.

    Configurations k whose rows of ``b`` are identical are merged first: the union over
    them of ``a[w,k] (x) mid[k]`` is reduced once per group (``union_groups``; exact,
    since union distributes over product; only dominated points go there, so radii stay
    within what the inputs had). Configurations p whose columns of ``b`` are identical
    share one result, translated by ``post[p]``. Same output and back pointers as
    ``combine``; falls back to it when few configurations are equal.
    """
    W, K, P = shape.W, shape.K, shape.P
    cb = b.counts().reshape(K, P)
    if count_groups(cb) * count_groups(cb.T) * 4 > K * P * 3:    # too few equal, surely
        return combine(a, b, shape, mid=mid, post=post, threads=threads, budget=budget,
                       counts=counts, rel=rel)
    rg, rrep = row_groups(b, K, P)
    cg, crep = col_groups(b, K, P)
    G, H = len(rrep), len(crep)
    _note(counts, row_groups=G, col_groups=H, rows=K, cols=P)
    if G * H * 4 > K * P * 3:
        return combine(a, b, shape, mid=mid, post=post, threads=threads, budget=budget,
                       counts=counts, rel=rel)
    a2, ia_a2, k_a2 = union_groups(a, Shape(W, K, G), rg, mid=mid, threads=threads,
                                   counts=counts)
    # b's representative cells are read in place (``b_cells``), not gathered: a copy of
    # them had taken 62M of an 88M-point edge table's points (about 2 GB) beside it.
    b_cells = (rrep[:, None] * P + crep[None, :]).reshape(-1)
    if post is not None:
        assert single_point_cells(post) and post.ncells == P
        budget = max(0.0, budget - radius_max(post))
    c2, ia2, ib2, _ = combine(a2, b, Shape(W, G, H), threads=threads, budget=budget,
                              counts=counts, rel=rel, b_cells=b_cells)
    c, cidx = gather(c2, (np.arange(W)[:, None] * H + cg[None, :]).reshape(-1))
    del c2, a2                 # freed before the pointers are made (100M-point results)
    ia, ib, kk = (np.empty(c.npoints, dtype=IDX) for _ in range(3))
    column_pointers(c.off, (W, P, H), (cg, rg, b_cells), (cidx, ia2, ib2, ia_a2, k_a2),
                    np.asarray(b.off, dtype=IDX), (ia, ib, kk))
    del cidx, ia2, ib2, ia_a2, k_a2
    if post is not None:
        pc = cell_ids(c) % P
        rad = None
        if c.radius is not None or post.radius is not None:
            rad = c.radii() + post.radii()[pc]
        c = Table(c.mem + post.mem[pc], c.time + post.time[pc], c.off, rad)
    return c, ia, ib, kk


def combine_shared(a: Table, b: Table, shape: Shape, *, mid: Optional[Table] = None,
                   post: Optional[Table] = None, threads: int = 1, budget: float = 0.0,
                   counts: Optional[MergeCounts] = None, rel: float = 0.0):
    """``combine_grouped`` computed once per group of identical rows w of ``a``.

    Rows w, w' of ``a`` with identical frontiers give identical result rows, so only
    one representative per group is computed and then copied; back pointers are moved
    to each row's own cells (same position within an identical frontier).
    """
    W, K, P = shape.W, shape.K, shape.P
    if W > 1 and count_groups(a.counts().reshape(W, K)) == W:     # all rows differ
        return combine_grouped(a, b, shape, mid=mid, post=post, threads=threads,
                               budget=budget, counts=counts, rel=rel)
    wg, wrep = row_groups(a, W, K) if W > 1 else (np.zeros(1, IDX), np.zeros(1, IDX))
    if len(wrep) == W:
        return combine_grouped(a, b, shape, mid=mid, post=post, threads=threads,
                               budget=budget, counts=counts, rel=rel)
    ar, ar_src = gather(a, (wrep[:, None] * K + np.arange(K)[None, :]).reshape(-1))
    c, ia, ib, kk = combine_grouped(ar, b, Shape(len(wrep), K, P), mid=mid, post=post,
                                    threads=threads, budget=budget, counts=counts, rel=rel)
    cf, cidx = gather(c, (wg[:, None] * P + np.arange(P)[None, :]).reshape(-1))
    del c, ar
    out = tuple(np.empty(cf.npoints, dtype=IDX) for _ in range(3))
    member_pointers(cf.off, (W, K, P), (wrep, wg), (cidx, ia, ib, kk),
                    (ar_src, np.asarray(a.off, dtype=IDX)), out)
    return (cf, *out)


def _joint_groups(x: Table, y: Table, R: int, C: int, columns: bool = False):
    """The groups of rows (columns) identical in both x and y."""
    groups = col_groups if columns else row_groups
    gx, _ = groups(x, R, C)
    gy, _ = groups(y, R, C)
    n = len(gx)
    _, first, gid = np.unique(gx * (n + 1) + gy, return_index=True, return_inverse=True)
    return gid.reshape(-1).astype(IDX), first.astype(IDX)


def cell_product_shared(a: Table, b: Table, R: int, C: int, *, budget: float = 0.0,
                        threads: int = 1, counts: Optional[MergeCounts] = None,
                        rel: float = 0.0):
    """``cell_product(a, b, identity)`` for two R x C tables, computed once per group of
    rows identical in both and columns identical in both, then copied (Eq. 5).

    When either table holds one point per cell (an original edge, say), the product is
    the other table shifted cell by cell (``translated``), without grouping: grouping
    reads both tables whole and gathers copies of them, and a node elimination's edge
    table can hold over 100M points (InceptionV3 on 64 devices: 117M, 3.5 GB, which the
    grouping's transposes and gathers once took past 18 GB). Columns are grouped in
    place (``col_groups``), without a transposed copy."""
    if np.all(a.counts() == 1) or np.all(b.counts() == 1):
        return translated(a, b, np.arange(R * C))
    ca, cb = a.counts().reshape(R, C), b.counts().reshape(R, C)
    if count_groups(ca, cb) * count_groups(ca.T, cb.T) * 4 > R * C * 3:
        return cell_product(a, b, np.arange(R * C), budget=budget, threads=threads,
                            counts=counts, rel=rel)
    rg, rrep = _joint_groups(a, b, R, C)
    cg, crep = _joint_groups(a, b, R, C, columns=True)
    if len(rrep) * len(crep) * 4 > R * C * 3:
        return cell_product(a, b, np.arange(R * C), budget=budget, threads=threads,
                            counts=counts, rel=rel)
    cells = (rrep[:, None] * C + crep[None, :]).reshape(-1)
    asub, asrc = gather(a, cells)
    bsub, bsrc = gather(b, cells)
    csub, ia, ib = cell_product(asub, bsub, np.arange(len(cells)), budget=budget,
                                threads=threads, counts=counts, rel=rel)
    del asub, bsub
    H = len(crep)
    c, cidx = gather(csub, (rg[:, None] * H + cg[None, :]).reshape(-1))
    del csub
    # The pointers, a block of points at a time: whole-array temporaries of 8 bytes a
    # point (a dozen of them) had made this step's peak on 100M-point products.
    ia_full = np.empty(c.npoints, dtype=IDX)
    ib_full = np.empty(c.npoints, dtype=IDX)
    for s in range(0, c.npoints, POINTER_BLOCK):
        e = min(s + POINTER_BLOCK, c.npoints)
        first = int(np.searchsorted(c.off, s, side="right")) - 1    # the cell of point s
        last = int(np.searchsorted(c.off, e, side="left"))          # cells starting < e
        out_cell = np.repeat(np.arange(first, last, dtype=IDX),
                             np.minimum(c.off[first + 1:last + 1], e)
                             - np.maximum(c.off[first:last], s))
        rep_cell = cells[rg[out_cell // C] * H + cg[out_cell % C]]
        ci = cidx[s:e]
        ia_full[s:e] = a.off[out_cell] + (asrc[ia[ci]] - a.off[rep_cell])
        ib_full[s:e] = b.off[out_cell] + (bsrc[ib[ci]] - b.off[rep_cell])
    return c, ia_full, ib_full
