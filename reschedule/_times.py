"""Conversion seconds from layouts to layouts (what a cost table over layout pairs needs).

``conversion_times(src, dsts, shape)`` is ``[conversion_time(src, d, shape) for d in dsts]``,
and ``conversion_time_matrix(srcs, dsts, shape)`` the same for many sources, equal bit for
bit, read from tables (``_tables``) kept per (meshes, shape, itemsize, cost function):

- on a mesh ``A``, from every non-partial layout to every other at once: Bellman-Ford over
  A's steps starting from the identity (a partial source gets a row of its own, over the
  layouts its pending sums reduce to);
- from ``A`` to another mesh ``B``, every path is: steps on A to a non-partial layout ``X``,
  one alltoallv ``X -> T``, then steps on ``B``. So, in numpy, with ``dA`` the seconds on A
  and ``W`` the alltoallv seconds (one matrix per pair of meshes and shape)::

      d0[T] = min over X of (dA[X] + W[X, T])
      d     = Bellman-Ford over B's steps, starting from d0

Each sum is formed in path order, and float addition is monotone, so every value is the
minimum over paths of the very sums Dijkstra forms in ``conversion_time``: the two agree
exactly (``tests/reschedule/test_conversion_times.py``). No shortest-path tree is grown per
source: each table is a few array expressions, shared by every cost table of that shape.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ._cost import CostFn
from ._layout import Layout
from ._planner import NoConversionError, _checked, _checked_shape, _reachable
from ._tables import TABLES, cross_table, mesh_table

__all__ = ["conversion_times", "conversion_time_matrix"]


def conversion_times(src: Layout, dsts: Sequence[Layout], shape: Sequence[int], itemsize: int = 4,
                     cost_fn: CostFn | None = None, *,
                     unreachable: float | None = None) -> list[float]:
    """``[conversion_time(src, dst, ...) for dst in dsts]``, each destination mesh priced once.

    Args:
        unreachable: the value given for a destination no step sequence reaches; None
            raises ``NoConversionError`` as :func:`~reschedule.conversion_time` does.

    Raises:
        ValueError, NoConversionError: as :func:`~reschedule.conversion_time`.
    """
    return conversion_time_matrix([src], dsts, shape, itemsize, cost_fn,
                                  unreachable=unreachable)[0].tolist()


def conversion_time_matrix(srcs: Sequence[Layout], dsts: Sequence[Layout], shape: Sequence[int],
                           itemsize: int = 4, cost_fn: CostFn | None = None, *,
                           unreachable: float | None = None) -> np.ndarray:
    """``[conversion_times(s, dsts, ...) for s in srcs]`` as a float array, the same values.

    The seconds are read from tables kept per (meshes, shape, itemsize, cost function)
    (``_tables``): between every pair of non-partial layouts of a mesh and of two meshes,
    and from each partial source asked for, so the cost tables of many edges, of repeated
    layers and of other tensors of the same shape share them.

    Raises:
        ValueError, NoConversionError: as :func:`~reschedule.conversion_time`, for the
        first pair (row by row) that fails, when ``unreachable`` is None.
    """
    srcs, dsts = list(srcs), list(dsts)
    out = np.empty((len(srcs), len(dsts)), dtype=np.float64)
    if not srcs or not dsts:
        return out
    shape_t, cost = _checked(srcs[0], dsts[0], shape, itemsize, cost_fn, "conversion_times")
    if not _all_fit(srcs[1:] + dsts[1:], shape_t, srcs[0].num_ranks):
        for s in srcs[1:]:                    # raise as the pairs (s, dsts[0]), (srcs[0], d) do
            _checked(s, dsts[0], shape_t, itemsize, cost_fn, "conversion_times")
        for d in dsts[1:]:
            _checked(srcs[0], d, shape_t, itemsize, cost_fn, "conversion_times")
    itemsize = int(itemsize)
    try:
        hash(cost)
        cache = TABLES
    except TypeError:                        # an unhashable cost function: nothing is kept
        cache = {}
    cols_by_mesh = []
    for mesh_b, cols in _by_mesh(dsts).items():
        table_b = mesh_table(cache, mesh_b, shape_t, itemsize, cost)
        plain_c, partial_c = _split(dsts, cols)
        pos_c = np.array([table_b.index[dsts[c]] for c in plain_c.tolist()], dtype=np.int64)
        cols_by_mesh.append((mesh_b, plain_c, partial_c, pos_c))
    for mesh_a, rows in _by_mesh(srcs).items():
        table_a = mesh_table(cache, mesh_a, shape_t, itemsize, cost)
        plain_r, partial_r = _split(srcs, rows)
        pos_r = np.array([table_a.index[srcs[r]] for r in plain_r.tolist()], dtype=np.int64)[:, None]
        plain_r = plain_r[:, None]
        for mesh_b, plain_c, partial_c, pos_c in cols_by_mesh:
            same = mesh_b == mesh_a
            block = table_a if same else cross_table(cache, mesh_a, mesh_b, shape_t, itemsize, cost)
            out[plain_r, plain_c] = block.plain[pos_r, pos_c]
            # no step creates a pending sum, and a mesh change cannot carry one
            out[plain_r, partial_c] = math.inf
            if not len(partial_r):
                continue
            rows_p = block.rows([srcs[r] for r in partial_r])
            if same:                          # a partial source reaches partial layouts too
                cols = np.concatenate([plain_c, partial_c])
                where = [table_a.index.get(dsts[c], _FAR) for c in cols.tolist()]
                out[partial_r[:, None], cols] = [[row[i] if i < len(row) else math.inf for i in where]
                                                 for row in rows_p]
            else:
                out[partial_r[:, None], plain_c] = np.stack(rows_p)[:, pos_c]
                out[partial_r[:, None], partial_c] = math.inf
    bad = np.isinf(out)
    if bad.any():
        if unreachable is None:
            r, c = np.argwhere(bad)[0]
            _reachable(srcs[r], dsts[c], shape_t)
            raise NoConversionError(srcs[r], dsts[c], shape_t,
                                    "no sequence of allowed steps with finite cost reaches it.")
        out[bad] = unreachable
    return out


_FAR = 1 << 62                                # a position past every row


def _all_fit(layouts: list[Layout], shape: tuple[int, ...], num_ranks: int) -> bool:
    """Whether every one is a Layout over ``num_ranks`` ranks that fits ``shape`` (what
    ``_checked`` asks of each, without naming the first that does not)."""
    try:
        for lay in layouts:
            if not isinstance(lay, Layout) or lay.num_ranks != num_ranks:
                return False
            _checked_shape(lay, shape)
    except ValueError:
        return False
    return True


def _split(layouts: list[Layout], where: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``where`` of ``layouts``: the non-partial ones, and the partial ones."""
    plain = [i for i in where if not layouts[i].partial]
    partial = [i for i in where if layouts[i].partial]
    return np.array(plain, dtype=np.int64), np.array(partial, dtype=np.int64)


def _by_mesh(layouts: list[Layout]) -> dict[tuple[int, ...], list[int]]:
    """Positions of ``layouts``, grouped by mesh (in order of first appearance)."""
    out: dict[tuple[int, ...], list[int]] = {}
    for i, lay in enumerate(layouts):
        out.setdefault(lay.mesh, []).append(i)
    return out
