"""Conversion seconds from one layout to many (what a cost table over layout pairs needs).

``conversion_times(src, dsts, shape)`` is ``[conversion_time(src, d, shape) for d in dsts]``,
equal bit for bit, but each destination mesh is priced once:

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
from ._planner import (NoConversionError, _checked, _checked_shape, _neighbors_cached, _reachable,
                       _tree, enumerate_layouts)
from ._steps import Step, alltoallv_max_recv_matrix

__all__ = ["conversion_times"]


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
    out: list[float] = []
    by_mesh: dict = {}
    shape_t = cost = None
    for dst in dsts:
        if type(dst) is Layout and dst.mesh in by_mesh:   # src, itemsize and this mesh checked
            _checked_shape(dst, shape_t)
        else:
            shape_t, cost = _checked(src, dst, shape, itemsize, cost_fn, "conversion_times")
        try:
            _reachable(src, dst, shape_t)
            seconds = by_mesh.get(dst.mesh)
            if seconds is None:
                seconds = by_mesh[dst.mesh] = _seconds_on(src, dst.mesh, shape_t, int(itemsize), cost)
            t = seconds.get(dst, math.inf)
            if t == math.inf:
                raise NoConversionError(src, dst, shape_t,
                                        "no sequence of allowed steps with finite cost reaches it.")
        except NoConversionError:
            if unreachable is None:
                raise
            out.append(unreachable)
            continue
        out.append(t)
    return out


def _seconds_on(src: Layout, mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                cost: CostFn) -> dict:
    """Layout on ``mesh`` -> seconds from ``src`` (missing or inf: unreachable)."""
    same_mesh = _tree(src, src.mesh, shape, itemsize, cost)[0]
    if mesh == src.mesh:
        return {lay: best[0] for lay, best in same_mesh.items()}
    try:
        return _cross_mesh_seconds(src, mesh, shape, itemsize, cost)
    except TypeError:   # an unhashable cost function: nothing is cached
        return _cross_mesh_seconds.__wrapped__(src, mesh, shape, itemsize, cost)


@functools.lru_cache(maxsize=16384)
def _cross_mesh_seconds(src: Layout, mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                        cost: CostFn) -> dict:
    layouts_a, index_a = _layouts(src.mesh, shape)
    layouts_b, _ = _layouts(mesh, shape)
    reached = [(index_a[lay], best[0]) for lay, best in
               _tree(src, src.mesh, shape, itemsize, cost)[0].items() if not lay.partial]
    rows = np.fromiter((i for i, _ in reached), dtype=np.int64, count=len(reached))
    d_a = np.fromiter((t for _, t in reached), dtype=np.float64, count=len(reached))
    weights = _alltoallv_seconds(src.mesh, mesh, shape, itemsize, cost)
    if not reached:
        return {}
    d = np.min(d_a[:, None] + weights[rows], axis=0)
    froms, tos, w = _mesh_steps(mesh, shape, itemsize, cost)
    for _ in range(len(layouts_b)):          # Bellman-Ford: at most |B| - 1 rounds change d
        relaxed = d.copy()
        np.minimum.at(relaxed, tos, d[froms] + w)
        if np.array_equal(relaxed, d):
            break
        d = relaxed
    return dict(zip(layouts_b, d.tolist()))


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
        if math.prod(mesh_a) != math.prod(mesh_b):
            Step.make_alltoallv(layouts_a[0], layouts_b[0])     # raises, naming the meshes
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
