"""Conversion seconds from layouts to layouts (what a cost table over layout pairs needs).

``conversion_times(src, dsts, shape)`` is ``[conversion_time(src, d, shape) for d in dsts]``,
and ``conversion_time_matrix(srcs, dsts, shape)`` the same for many sources, equal bit for
bit, but each destination mesh is priced once (for all sources on one mesh together):

- on ``src``'s own mesh, the seconds are read from ``src``'s shortest-path tree;
- on another mesh ``B``, every path is: steps on ``src``'s mesh to a non-partial layout
  ``X``, one alltoallv ``X -> T``, then steps on ``B``. So, in numpy, with ``dA`` the tree's
  seconds and ``W`` the alltoallv seconds (one matrix per pair of meshes and shape)::

      d0[T] = min over X of (dA[X] + W[X, T])
      d     = Bellman-Ford over B's steps, starting from d0

Each sum is formed in path order, and float addition is monotone, so every value is the
minimum over paths of the very sums Dijkstra forms in ``conversion_time``: the two agree
exactly (``tests/reschedule/test_conversion_times.py``). The alltoallv fan-out, which
dominated the trees (|layouts of A| x |layouts of B| relaxations per source), becomes one
array expression.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from ._cost import CostFn
from ._layout import Layout
from ._planner import (NoConversionError, _checked, _neighbors_cached, _reachable, _tree,
                       enumerate_layouts)
from ._steps import BROADCAST_ELEMENTS, Step, alltoallv_max_recv_matrix

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

    Sources on one mesh are priced together toward each other mesh (one broadcast of the
    alltoallv seconds and one Bellman-Ford over the rows), and each source's row toward
    a mesh is kept for later tables of the same shape (a cost table's edges share
    sources across repeated layers).

    Raises:
        ValueError, NoConversionError: as :func:`~reschedule.conversion_time`, for the
        first pair (row by row) that fails, when ``unreachable`` is None.
    """
    srcs, dsts = list(srcs), list(dsts)
    out = np.empty((len(srcs), len(dsts)), dtype=np.float64)
    if not srcs or not dsts:
        return out
    shape_t, cost = _checked(srcs[0], dsts[0], shape, itemsize, cost_fn, "conversion_times")
    for s in srcs[1:]:
        _checked(s, dsts[0], shape_t, itemsize, cost_fn, "conversion_times")
    for d in dsts[1:]:
        _checked(srcs[0], d, shape_t, itemsize, cost_fn, "conversion_times")
    itemsize = int(itemsize)
    by_mesh: dict[tuple[int, ...], list[int]] = {}
    for col, d in enumerate(dsts):
        by_mesh.setdefault(d.mesh, []).append(col)
    for mesh, cols in by_mesh.items():
        layouts_b, index_b = _layouts(mesh, shape_t)
        # non-partial destinations: their positions among the mesh's layouts
        plain = [c for c in cols if not dsts[c].partial]
        pos = np.array([index_b[dsts[c]] for c in plain], dtype=np.int64)
        partial = [c for c in cols if dsts[c].partial]
        cross = [r for r, s in enumerate(srcs) if s.mesh != mesh]
        rows = _cross_rows([srcs[r] for r in cross], mesh, shape_t, itemsize, cost)
        for r, row in zip(cross, rows):
            out[r, plain] = row[pos]
            out[r, partial] = math.inf       # a mesh change cannot carry a pending sum
        for r, s in enumerate(srcs):
            if s.mesh == mesh:
                best = _tree(s, mesh, shape_t, itemsize, cost)[0]
                out[r, cols] = [best.get(dsts[c], _NONE)[0] for c in cols]
    bad = np.isinf(out)
    if bad.any():
        if unreachable is None:
            r, c = np.argwhere(bad)[0]
            _reachable(srcs[r], dsts[c], shape_t)
            raise NoConversionError(srcs[r], dsts[c], shape_t,
                                    "no sequence of allowed steps with finite cost reaches it.")
        out[bad] = unreachable
    return out


_NONE = (math.inf, 0)
#: (src, mesh, shape, itemsize, cost) -> seconds to each of ``_layouts(mesh, shape)``
_ROWS: dict = {}
_ROWS_MAX = 65536


def _cross_rows(srcs: list[Layout], mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                cost: CostFn) -> list[np.ndarray]:
    """Per source (on another mesh than ``mesh``), the seconds to every non-partial
    layout on ``mesh`` (inf: unreachable), computed together for those not kept yet."""
    try:
        keys = [(s, mesh, shape, itemsize, cost) for s in srcs]
        rows = [_ROWS.get(k) for k in keys]
    except TypeError:                        # an unhashable cost function: nothing is kept
        keys, rows = None, [None] * len(srcs)
    todo: dict[tuple[int, ...], list[int]] = {}
    for x, (s, row) in enumerate(zip(srcs, rows)):
        if row is None:
            todo.setdefault(s.mesh, []).append(x)
    for xs in todo.values():
        for x, row in zip(xs, _cross_mesh_rows([srcs[x] for x in xs], mesh, shape, itemsize, cost)):
            rows[x] = row
            if keys is not None:
                if len(_ROWS) >= _ROWS_MAX:
                    _ROWS.clear()
                _ROWS[keys[x]] = row
    return rows


def _cross_mesh_rows(srcs: list[Layout], mesh: tuple[int, ...], shape: tuple[int, ...],
                     itemsize: int, cost: CostFn) -> np.ndarray:
    """Sources on one mesh A -> every non-partial layout on ``mesh`` (rows, as the module
    doc says: the alltoallv from the best layout reached on A, then Bellman-Ford on B)."""
    mesh_a = srcs[0].mesh
    layouts_a, index_a = _layouts(mesh_a, shape)
    layouts_b, _ = _layouts(mesh, shape)
    d_a = np.full((len(srcs), len(layouts_a)), math.inf)
    for x, src in enumerate(srcs):
        for lay, best in _tree(src, mesh_a, shape, itemsize, cost)[0].items():
            if not lay.partial:
                d_a[x, index_a[lay]] = best[0]
    weights = _kept(_alltoallv_seconds, mesh_a, mesh, shape, itemsize, cost)
    d = np.empty((len(srcs), len(layouts_b)))
    chunk = max(1, BROADCAST_ELEMENTS // max(1, weights.size))
    for x0 in range(0, len(srcs), chunk):
        d[x0:x0 + chunk] = np.min(d_a[x0:x0 + chunk, :, None] + weights[None], axis=1)
    froms, tos, w = _kept(_mesh_steps, mesh, shape, itemsize, cost)
    for _ in range(len(layouts_b)):          # Bellman-Ford: at most |B| - 1 rounds change d
        relaxed = d.copy()
        np.minimum.at(relaxed.T, tos, (d[:, froms] + w).T)
        if np.array_equal(relaxed, d):
            break
        d = relaxed
    return d


def _kept(fn, *args):
    """``fn(*args)`` from its cache, or computed afresh when an argument (a cost
    function) is unhashable, as ``_planner._tree`` does."""
    try:
        return fn(*args)
    except TypeError:
        return fn.__wrapped__(*args)


@functools.lru_cache(maxsize=1024)
def _layouts(mesh: tuple[int, ...], shape: tuple[int, ...]) -> tuple[tuple[Layout, ...], dict]:
    """The non-partial layouts on ``mesh`` that fit ``shape``, and their positions."""
    layouts = enumerate_layouts(mesh, shape)
    return layouts, {lay: i for i, lay in enumerate(layouts)}


def _step_seconds(cost: CostFn, step: Step, shape: tuple[int, ...], itemsize: int) -> float:
    return _checked_seconds(cost(step, shape, itemsize), f"step {step} ({step.src} -> {step.dst})")


def _checked_seconds(w, what: str) -> float:
    if not (w >= 0):
        raise ValueError(f"cost_fn returned {w!r} for {what}; costs must be seconds >= 0 "
                         f"(math.inf forbids).")
    return float(w)


@functools.lru_cache(maxsize=1024)
def _alltoallv_seconds(mesh_a: tuple[int, ...], mesh_b: tuple[int, ...], shape: tuple[int, ...],
                       itemsize: int, cost: CostFn) -> np.ndarray:
    """Seconds of the alltoallv from every layout on ``mesh_a`` to every one on ``mesh_b``."""
    layouts_a, _ = _layouts(mesh_a, shape)
    layouts_b, _ = _layouts(mesh_b, shape)
    by_volume = getattr(cost, "alltoallv_seconds", None)
    if by_volume is not None and layouts_a and layouts_b:
        # The seconds depend only on the largest receive: price each distinct volume once.
        recv = alltoallv_max_recv_matrix(layouts_a, layouts_b, shape) * itemsize
        volumes, where = np.unique(recv, return_inverse=True)
        g = math.prod(mesh_a)
        seconds = np.array([_checked_seconds(by_volume(int(v), g), f"an alltoallv {mesh_a} -> "
                                             f"{mesh_b} receiving {int(v)} bytes at most")
                            for v in volumes], dtype=np.float64)
        out = seconds[where.reshape(recv.shape)]
    else:
        out = np.array([[_step_seconds(cost, Step.make_alltoallv(x, t), shape, itemsize)
                         for t in layouts_b] for x in layouts_a], dtype=np.float64)
    out.flags.writeable = False
    return out.reshape(len(layouts_a), len(layouts_b))


@functools.lru_cache(maxsize=1024)
def _mesh_steps(mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                cost: CostFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every step between non-partial layouts of ``mesh`` with finite seconds, as
    (from, to, seconds) arrays over ``_layouts(mesh, shape)``."""
    layouts, index = _layouts(mesh, shape)
    froms, tos, seconds = [], [], []
    for i, lay in enumerate(layouts):
        for step in _neighbors_cached(lay, shape, mesh, None):
            w = _step_seconds(cost, step, shape, itemsize)
            if w != math.inf:
                froms.append(i)
                tos.append(index[step.dst])
                seconds.append(w)
    return (np.array(froms, dtype=np.int64), np.array(tos, dtype=np.int64),
            np.array(seconds, dtype=np.float64))
