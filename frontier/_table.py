"""Frontier tables: one Pareto frontier per cell, stored flat, with per-point error radii.

A *frontier table* holds one frontier per *cell* (a configuration, or a pair of
configurations), in CSR form::

    t = Table(mem, time, off)         # cell c owns points off[c]:off[c+1]
    t.mem[off[c]:off[c+1]]            # ascending memory
    t.time[off[c]:off[c+1]]           # strictly descending time
    t.radius                          # None (exact) or seconds per point, see below

A point's *radius* r says how far the exact frontier may lie below it: every exact point
of the cell that the point stands for has at least its memory and at most ``r`` seconds
less time. Radii add under products; a point dropped for a kept one with no more memory
hands the keeper ``max(r_keeper, r_dropped + t_keeper - t_dropped)`` (``_kernels``). A
table whose radius is None is exact.

Usage::

    t.ncells, t.npoints, t.counts(), t.max_cell()
    sub, idx = gather(t, np.array([3, 1]))        # cells 3 and 1 of t, and their points
    tt, idx = transpose(t, R, C)                  # cell c*R + r = cell r*C + c of t
    gid, reps = row_groups(t, R, C)               # rows with identical frontiers
    gid, reps = col_groups(t, R, C)               # columns with identical frontiers
    count_groups(t.counts().reshape(R, C))        # at most as many: rows of counts
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from frontier._copies import cell_positions, copy_cells
from frontier._rowhash import group_rows

__all__ = ["Table", "IDX", "offsets", "cell_ids", "gather", "transpose", "row_groups",
           "col_groups", "count_groups", "single_point_cells", "radius_max"]

IDX = np.int64


@dataclass
class Table:
    """A frontier per cell, flat. ``off`` has ``ncells + 1`` entries; ``radius`` is None
    (every point exact) or one float per point."""

    mem: np.ndarray
    time: np.ndarray
    off: np.ndarray
    radius: Optional[np.ndarray] = None

    @property
    def ncells(self) -> int:
        return len(self.off) - 1

    @property
    def npoints(self) -> int:
        return len(self.mem)

    def counts(self) -> np.ndarray:
        return np.diff(self.off)

    def max_cell(self) -> int:
        return int(self.counts().max()) if self.ncells else 0

    def radii(self) -> np.ndarray:
        """The radius of every point (zeros when exact)."""
        return np.zeros(self.npoints) if self.radius is None else self.radius


def radius_max(t: Table) -> float:
    """The largest radius of the table (0.0 when exact or empty)."""
    return float(t.radius.max()) if t.radius is not None and len(t.radius) else 0.0


def single_point_cells(t: Table) -> bool:
    """True when every cell holds exactly one point (then point index == cell index)."""
    return t.npoints == t.ncells


def offsets(cells: np.ndarray, ncells: int) -> np.ndarray:
    """CSR offsets of points whose (sorted) cells are ``cells``."""
    off = np.zeros(ncells + 1, dtype=IDX)
    if len(cells):
        np.cumsum(np.bincount(cells, minlength=ncells), out=off[1:])
    return off


def cell_ids(t: Table) -> np.ndarray:
    """The cell of every point."""
    return np.repeat(np.arange(t.ncells, dtype=IDX), t.counts())


def gather(a: Table, cells: np.ndarray) -> tuple[Table, np.ndarray]:
    """A new table whose cell i is a copy of ``a``'s cell ``cells[i]``, and the index in
    ``a`` of each of its points."""
    cells = np.asarray(cells, dtype=IDX)
    off = np.zeros(len(cells) + 1, dtype=IDX)
    np.cumsum(a.counts()[cells], out=off[1:])
    a_off = np.asarray(a.off, dtype=IDX)
    idx = np.empty(int(off[-1]), dtype=IDX)
    cell_positions(a_off, cells, off, idx)
    cols = []
    for x in (a.mem, a.time, a.radius):
        if x is not None:
            cols.append(np.empty(len(idx), dtype=x.dtype))
            copy_cells(a_off, cells, off, x, cols[-1])
    return Table(cols[0], cols[1], off, cols[2] if a.radius is not None else None), idx


def transpose(t: Table, R: int, C: int) -> tuple[Table, np.ndarray]:
    """The table with cell ``c*R + r`` = cell ``r*C + c`` of ``t``."""
    perm = (np.arange(R)[None, :] * C + np.arange(C)[:, None]).reshape(-1)
    return gather(t, perm)


def row_groups(t: Table, R: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Groups the rows of a table with R x C cells (cell ``r*C + c``) whose frontiers
    (and radii) are identical in every column.

    Returns:
        ``(gid, reps)``: the group of each row, and one representative row per group
        (its first row; groups are numbered in the order of their first rows). Rows are
        compared bit for bit (``_rowhash``), as comparing their bytes would.
    """
    return group_rows(np.asarray(t.off, dtype=IDX), R, C, (C, 1), _bits(t))


def col_groups(t: Table, R: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    """``row_groups`` of the columns of a table with R x C cells: the same as
    ``row_groups(transpose(t, R, C)[0], C, R)``, without the copy."""
    return group_rows(np.asarray(t.off, dtype=IDX), C, R, (1, C), _bits(t))


def _bits(t: Table) -> tuple[np.ndarray, ...]:
    """The table's memories, times and radii (when it has them) as int64 bit patterns."""
    return tuple(np.ascontiguousarray(x, dtype=np.float64).view(np.int64)
                 for x in (t.mem, t.time, t.radius) if x is not None)


def count_groups(*counts: np.ndarray) -> int:
    """A lower bound on the groups ``row_groups`` finds, without reading a point: how
    many distinct rows the (R, C_i) matrices of points per cell have side by side, as
    told apart by one random linear hash per row (rows that collide count once, which
    keeps it a lower bound)."""
    both = np.concatenate([np.asarray(c, dtype=np.int64).reshape(len(c), -1)
                           for c in counts], axis=1)
    if len(both) <= 1:
        return len(both)
    w = np.random.default_rng(len(both[0])).integers(1, 2**62, len(both[0]), dtype=np.int64)
    with np.errstate(over="ignore"):
        return len(np.unique(both @ w))
