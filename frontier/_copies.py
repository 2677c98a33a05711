"""Compiled copies of whole cells of frontier tables (numba).

A gather (``_table.gather``) and the copies of a group's result to its members
(``_shared``) move every point of some cells to a new place, and derive back pointers
from where each point came from. Written with numpy, each step indexes point by point
and makes index arrays as long as the output; here each cell is one contiguous run,
copied by one loop into arrays the caller allocates (with numpy, which backs large
arrays with huge pages: fewer page faults than the compiled code's own allocations).
``kernel_rows`` lays a table out as ``_kernels`` reads it, in one pass.

These functions call no other compiled function, so numba's own disk cache (stamped
with this file alone) stays right; they are not in ``_jit.KERNEL_FILES``.

Usage::

    cell_positions(t.off, cells, off, idx)          # idx: where each point comes from
    copy_cells(t.off, cells, off, t.mem, mem)       # its values, column by column
    member_pointers(cf.off, (W, K, P), (wrep, wg), (c_idx, ia, ib, kk), (ar_src, a.off),
                    (ia_out, ib_out, kk_out))       # combine_shared's rows
    column_pointers(c.off, (W, P, H), (cg, rg, b_cells), (c_idx, ia2, ib2, ia_a2, k_a2),
                    b.off, (ia_out, ib_out, kk_out))    # combine_grouped's
    kernel_rows(t.mem, t.time, radius, t.off, exact, vals)     # vals: (npoints, 4)
    shift_pointers(a.off, b.off, bmap, a_many, off, ia, ib)     # _values.translated's
    add_pairs(a.mem, b.mem, ia, ib, mem)                        # mem = a.mem[ia] + b.mem[ib]
"""

from __future__ import annotations

import numpy as np

from frontier._jit import jit

__all__ = ["cell_positions", "copy_cells", "member_pointers", "column_pointers", "kernel_rows",
           "shift_pointers", "add_pairs"]


@jit
def cell_positions(off, cells, new_off, idx):
    """Cell ``cells[i]`` of a table with offsets ``off`` goes to positions ``new_off[i]
    .. new_off[i + 1] - 1`` (``new_off``: the cells' counts summed, from 0): writes the
    source position of every point into ``idx``."""
    for i in range(len(cells)):
        s, o = off[cells[i]], new_off[i]
        for x in range(new_off[i + 1] - o):
            idx[o + x] = s + x


@jit
def copy_cells(off, cells, new_off, src, dst):
    """As ``cell_positions``, but copies the values ``src`` of the points into ``dst``."""
    for i in range(len(cells)):
        s, o = off[cells[i]], new_off[i]
        for x in range(new_off[i + 1] - o):
            dst[o + x] = src[s + x]


@jit
def member_pointers(off, shape, groups, result, a_map, out):
    """Back pointers of ``combine_shared``'s copies: row w of the output (cells
    ``w*P + p``, offsets ``off``) is a copy of its group's representative row, whose
    result had, per point, the position ``c_idx[x]`` in that result and there the
    pointers ``ia`` (into the gathered representative rows of a, whose points came
    from ``ar_src``), ``ib`` and ``kk``. Writes the pointers of every output point
    into ``out = (ia_out, ib_out, kk_out)``: ib and kk as they are, ia moved from the
    representative row ``wrep[wg[w]]`` of a to row w (the same position within the
    identical cell ``w*K + k``; ``a_off`` is a's offsets)."""
    W, K, P = shape
    wrep, wg = groups
    c_idx, ia, ib, kk = result
    ar_src, a_off = a_map
    ia_out, ib_out, kk_out = out
    for w in range(W):
        rep = wrep[wg[w]]
        for c in range(w * P, (w + 1) * P):
            for x in range(off[c], off[c + 1]):
                y = c_idx[x]
                k = kk[y]
                kk_out[x] = k
                ib_out[x] = ib[y]
                ia_out[x] = a_off[w * K + k] + (ar_src[ia[y]] - a_off[rep * K + k])


@jit
def column_pointers(off, shape, groups, result, b_off, out):
    """Back pointers of ``combine_grouped``'s copies: output cell ``w*P + p`` (offsets
    ``off``) is a copy of cell ``w*H + cg[p]`` of the grouped result, which had, per
    point, the position ``c_idx[x]`` there and the pointers ``ia2`` (into the grouped
    union ``a2``, whose points came from ``ia_a2`` in a, with configuration ``k_a2``)
    and ``ib2`` (into b, in its representative cells: ``b_cells[g*H + h]`` is the cell
    of b that cell (g, h) read, g the row group ``rg[k]``). Writes ``out = (ia_out,
    ib_out, kk_out)``: ia and k as found, ib moved from the representative cell of b to
    cell ``k*P + p`` (the same position within the identical cell; ``b_off`` is b's
    offsets)."""
    W, P, H = shape
    cg, rg, b_cells = groups
    c_idx, ia2, ib2, ia_a2, k_a2 = result
    ia_out, ib_out, kk_out = out
    for w in range(W):
        for p in range(P):
            c = w * P + p
            h = cg[p]
            for x in range(off[c], off[c + 1]):
                y = c_idx[x]
                j = ia2[y]
                k = k_a2[j]
                ia_out[x] = ia_a2[j]
                kk_out[x] = k
                ib_out[x] = b_off[k * P + p] + (ib2[y] - b_off[b_cells[rg[k] * H + h]])


@jit
def kernel_rows(mem, time, radius, off, exact, vals):
    """Fills ``vals`` (a row per point) as ``_kernels`` reads a table: memory, time,
    radius (``radius`` empty: zeros) and, unless ``exact`` (then zeros), the largest
    ``radius - time`` from the point to its cell's end (``_scans.suffix_max``)."""
    has_r = len(radius) > 0
    for c in range(len(off) - 1):
        best = -np.inf
        for x in range(off[c + 1] - 1, off[c] - 1, -1):
            r = radius[x] if has_r else 0.0
            vals[x, 0] = mem[x]
            vals[x, 1] = time[x]
            vals[x, 2] = r
            if exact:
                vals[x, 3] = 0.0
            else:
                best = max(best, r - time[x])
                vals[x, 3] = best


@jit
def shift_pointers(a_off, b_off, bmap, a_many, off, ia, ib):
    """Back pointers of ``_values.translated``: output cell c (positions ``off[c] ..
    off[c + 1] - 1``) pairs a's cell c with b's cell ``bmap[c]``, one of which holds one
    point; ``a_many``: a's cell holds the points walked (else b's)."""
    for c in range(len(bmap)):
        sa, sb = a_off[c], b_off[bmap[c]]
        for x in range(off[c + 1] - off[c]):
            o = off[c] + x
            if a_many:
                ia[o], ib[o] = sa + x, sb
            else:
                ia[o], ib[o] = sa, sb + x


@jit
def add_pairs(xa, xb, ia, ib, out):
    """``out[o] = xa[ia[o]] + xb[ib[o]]``, an empty ``xa`` or ``xb`` read as zeros."""
    has_a, has_b = len(xa) > 0, len(xb) > 0
    for o in range(len(out)):
        out[o] = (xa[ia[o]] if has_a else 0.0) + (xb[ib[o]] if has_b else 0.0)
