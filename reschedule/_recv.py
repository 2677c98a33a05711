"""The largest receive of every alltoallv between two meshes, from one table per pair of
meshes and tensor rank instead of one per shape.

Rank ``r`` holds, of a dim of size ``n`` split over a mesh axis of size ``m``, the interval
``[c n/m, (c+1) n/m)`` (``c``: r's coordinate on that axis), and all of ``[0, n)`` when the
dim is not split. Two such intervals of one dim overlap by ``n`` times the overlap of
``[c/m, (c+1)/m)`` and ``[c'/m', (c'+1)/m')``, a fraction that does not depend on ``n``. So
what rank ``r`` already holds of its destination block is ``N`` (the tensor's elements)
times a product of fractions fixed by the two tensor maps, and for the "unit" shape, every
dim ``L`` = lcm of the mesh sizes (where every tensor map fits), it is ``U = L**ndim``
times the same product::

    held(shape)[x, t] = held(unit)[x, t] * N / U        (an integer: held(shape) is one)
    max receive[x, t] = elements of t's block - min over ranks of held[x, t, rank]

computed in int64 when ``U * N`` fits (else ``max_recv_by_units`` returns None and the
caller takes the rank boxes of the shape itself: ``_steps.max_recv_matrix``). The equality
with the per-pair boxes is ``tests/reschedule/test_conversion_tables.py``.

Usage::

    recv = max_recv_by_units(mesh_a, map_positions(layouts_a), mesh_b, map_positions(layouts_b),
                             block_elements_b, shape)        # int64 [a, b] elements, or None
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ._layout import Layout
from ._steps import box_arrays, max_recv_matrix

__all__ = ["max_recv_by_units", "map_positions"]

_INT64_LIMIT = 1 << 62


def max_recv_by_units(mesh_a: tuple[int, ...], maps_a: np.ndarray, mesh_b: tuple[int, ...], maps_b: np.ndarray,
                      blocks_b: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """``_steps.alltoallv_max_recv_matrix(layouts_a, layouts_b, shape)`` for non-partial
    layouts of ``mesh_a`` and ``mesh_b``, given as their ``map_positions`` and the
    destinations' block elements (``math.prod(local_shape)``), from the unit table of the
    two meshes; None when the int64 products could overflow (``U * N >= 2**62``)."""
    units = math.lcm(*mesh_a, *mesh_b) ** len(shape)
    elements = math.prod(shape)
    if units * elements >= _INT64_LIMIT:
        return None
    held = _unit_held(mesh_a, mesh_b, len(shape))
    return blocks_b[None, :] - held[maps_a[:, None], maps_b] * elements // units


def map_positions(layouts: list[Layout]) -> np.ndarray:
    """Each layout's position among every tensor map of its mesh and rank (``_all_maps``)."""
    return np.array([_all_maps(len(lay.mesh), len(lay.tensor_map))[lay.tensor_map] for lay in layouts],
                    dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _all_maps(num_axes: int, ndim: int) -> dict[tuple[int, ...], int]:
    """Every tensor map of ``ndim`` dims onto ``num_axes`` mesh axes (each axis splits one
    dim at most) -> its position, in ``enumerate_layouts`` order."""
    maps = [m for m in itertools.product(range(-1, num_axes), repeat=ndim)
            if len([a for a in m if a >= 0]) == len({a for a in m if a >= 0})]
    return {m: i for i, m in enumerate(maps)}


@functools.lru_cache(maxsize=4096)
def _unit_held(mesh_a: tuple[int, ...], mesh_b: tuple[int, ...], ndim: int) -> np.ndarray:
    """For the unit shape of the two meshes, per pair of tensor maps (``_all_maps``
    positions) the fewest elements of its destination block a rank already holds."""
    shape = (math.lcm(*mesh_a, *mesh_b),) * ndim
    layouts_a = [Layout(mesh_a, m) for m in _all_maps(len(mesh_a), ndim)]
    layouts_b = [Layout(mesh_b, m) for m in _all_maps(len(mesh_b), ndim)]
    boxes_b = box_arrays(layouts_b, shape)
    wanted = np.prod(boxes_b[:, 0, :, 1] - boxes_b[:, 0, :, 0], axis=1)   # every rank: one block size
    held = wanted[None, :] - max_recv_matrix(box_arrays(layouts_a, shape), boxes_b)
    held.flags.writeable = False
    return held
