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

    recv = max_recv_by_units(layouts_a, layouts_b, shape)   # int64 [a, b] elements, or None
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._layout import Layout
from ._planner import enumerate_layouts
from ._steps import box_arrays, max_recv_matrix

__all__ = ["max_recv_by_units"]

_INT64_LIMIT = 1 << 62


def max_recv_by_units(layouts_a: list[Layout], layouts_b: list[Layout], shape: tuple[int, ...]) -> np.ndarray | None:
    """``_steps.alltoallv_max_recv_matrix(layouts_a, layouts_b, shape)`` for non-partial
    layouts of one mesh each, from the unit table of the two meshes; None when the int64
    products could overflow (``U * N >= 2**62``)."""
    if not layouts_a or not layouts_b:
        return np.zeros((len(layouts_a), len(layouts_b)), dtype=np.int64)
    mesh_a, mesh_b = layouts_a[0].mesh, layouts_b[0].mesh
    unit = math.lcm(*mesh_a, *mesh_b)
    units = unit ** len(shape)
    elements = math.prod(shape)
    if units * elements >= _INT64_LIMIT:
        return None
    index_a, index_b, held = _unit_held(mesh_a, mesh_b, len(shape))
    rows = np.array([index_a[lay.tensor_map] for lay in layouts_a], dtype=np.int64)
    cols = np.array([index_b[lay.tensor_map] for lay in layouts_b], dtype=np.int64)
    wanted = np.array([math.prod(lay.local_shape(shape)) for lay in layouts_b], dtype=np.int64)
    return wanted[None, :] - held[rows[:, None], cols] * elements // units


@functools.lru_cache(maxsize=4096)
def _unit_held(mesh_a: tuple[int, ...], mesh_b: tuple[int, ...],
               ndim: int) -> tuple[dict, dict, np.ndarray]:
    """For the unit shape of the two meshes: tensor map -> position on each mesh, and per
    pair the fewest elements of its destination block a rank already holds."""
    shape = (math.lcm(*mesh_a, *mesh_b),) * ndim
    layouts_a, layouts_b = enumerate_layouts(mesh_a, shape), enumerate_layouts(mesh_b, shape)
    boxes_b = box_arrays(layouts_b, shape)
    wanted = np.prod(boxes_b[:, 0, :, 1] - boxes_b[:, 0, :, 0], axis=1)   # every rank: one block size
    held = wanted[None, :] - max_recv_matrix(box_arrays(layouts_a, shape), boxes_b)
    held.flags.writeable = False
    return ({lay.tensor_map: i for i, lay in enumerate(layouts_a)},
            {lay.tensor_map: i for i, lay in enumerate(layouts_b)}, held)
