"""The tables behind ``conversion_time_matrix`` (``reschedule._tables``): every entry is
what ``conversion_time`` (Dijkstra, one pair alone) gives, while the tables grow as
sources with more pending axes arrive, across shapes that share step lists, and with the
alltoallv boxes built in numpy."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from reschedule import (Layout, NoConversionError, alpha_beta_cost, conversion_time, conversion_time_matrix,
                        enumerate_layouts)
from reschedule import _planner, _steps, _tables


def _meshes(n: int) -> list[tuple[int, ...]]:
    return [(n,), (2, n // 2), (n // 2, 2), (2, 2, n // 4)]


def _want(srcs, dsts, shape, cost):
    out = np.empty((len(srcs), len(dsts)))
    for r, s in enumerate(srcs):
        for c, d in enumerate(dsts):
            try:
                out[r, c] = conversion_time(s, d, shape, 2, cost)
            except NoConversionError:
                out[r, c] = -1.0
    return out


def _partials(mesh, shape):
    return [lay for k in range(1, len(mesh) + 1) for p in itertools.combinations(range(len(mesh)), k)
            for lay in enumerate_layouts(mesh, shape, frozenset(p))]


@pytest.mark.parametrize("seed", range(6))
def test_tables_that_grow_with_pending_axes_keep_every_entry_exact(seed):
    """Sources with one pending axis first, then with two and three (their layouts join
    the mesh's table later): each call's matrix, and the first one asked again, equal
    the pairs priced alone; partial destinations on the source's mesh included."""
    _tables.TABLES.clear()
    rng = random.Random(300 + seed)
    n = rng.choice([8, 16])
    shape = tuple(rng.choice([2, 4, 8, 12]) for _ in range(rng.randint(1, 3)))
    cost = alpha_beta_cost(*((10e-6, 12.5e9) if seed % 2 else (1e-3, 1e12)))
    meshes = _meshes(n)
    plain = [lay for m in meshes for lay in enumerate_layouts(m, shape)]
    partial = [lay for m in meshes for lay in _partials(m, shape)]
    by_axes = lambda k: [lay for lay in partial if len(lay.partial) == k]   # noqa: E731
    first = rng.sample(by_axes(1), min(5, len(by_axes(1)))) + rng.sample(plain, min(4, len(plain)))
    dsts = rng.sample(plain, min(12, len(plain))) + rng.sample(partial, min(10, len(partial)))
    got_first = conversion_time_matrix(first, dsts, shape, 2, cost, unreachable=-1.0)
    assert got_first.tolist() == _want(first, dsts, shape, cost).tolist()
    later = rng.sample(by_axes(2), min(5, len(by_axes(2)))) + by_axes(3)[:2]
    got = conversion_time_matrix(later, dsts, shape, 2, cost, unreachable=-1.0)
    assert got.tolist() == _want(later, dsts, shape, cost).tolist()
    assert (got >= 0).any() and (got == -1.0).any()
    again = conversion_time_matrix(first, dsts, shape, 2, cost, unreachable=-1.0)
    assert again.tolist() == got_first.tolist()


@pytest.mark.parametrize("seed", range(8))
def test_steps_shared_across_shapes_are_each_shapes_own(seed):
    """The step list of a layout is kept per which dims each mesh axis divides; for every
    shape it is the one ``_neighbors`` yields for that shape."""
    rng = random.Random(400 + seed)
    mesh = rng.choice([(4,), (2, 2), (2, 4), (4, 2), (2, 2, 2)])
    ndim = rng.randint(1, 3)
    for _ in range(6):
        shape = tuple(rng.choice([1, 2, 3, 4, 6, 8, 12]) for _ in range(ndim))
        for lay in enumerate_layouts(mesh, shape) + tuple(_partials(mesh, shape)):
            want = tuple(_planner._neighbors(lay, shape, mesh, False, ()))
            assert _planner._neighbors_cached(lay, shape, mesh, None) == want, (lay, shape)


@pytest.mark.parametrize("n,shape", [(4, (8,)), (8, (4, 8, 16)), (16, (16, 8, 4)), (4, ()), (8, (2, 12))])
def test_box_arrays_are_the_rank_boxes(n, shape):
    layouts = [lay for m in _meshes(n) if all(x >= 1 for x in m)
               for lay in tuple(enumerate_layouts(m, shape)) + tuple(_partials(m, shape))]
    got = _steps.box_arrays(layouts, shape)
    want = np.stack([np.array(_steps.rank_boxes(lay, shape), dtype=np.int64).reshape(n, len(shape), 2)
                     for lay in layouts])
    assert got.dtype == np.int64 and got.shape == want.shape
    assert np.array_equal(got, want)


def test_a_rejected_step_cost_names_the_step():
    def bad(step, shape, itemsize):
        return -1.0 if step.kind == "allgather" else 1e-3
    _tables.TABLES.clear()
    with pytest.raises(ValueError, match="allgather.*seconds >= 0"):
        conversion_time_matrix([Layout((4,), (0,))], [Layout((4,), (-1,))], (8,), 4, bad)


@pytest.mark.parametrize("seed", range(10))
def test_max_receives_from_unit_tables_are_the_rank_boxes(seed):
    """``_recv.max_recv_by_units`` (one table per pair of meshes and tensor rank, scaled by
    the shape's elements) gives the integers the shape's own rank boxes give."""
    from reschedule import _recv
    rng = random.Random(500 + seed)
    n = rng.choice([4, 6, 8, 12, 16])
    meshes = [m for m in [(n,), (2, n // 2), (n // 2, 2), (2, 2, n // 4), (3, n // 3)] if math.prod(m) == n]
    ndim = rng.randint(0, 4)
    shape = tuple(rng.choice([1, 2, 3, 4, 6, 8, 12, 24, 36, 48, 96]) for _ in range(ndim))
    for a in meshes:
        for b in meshes:
            la, lb = list(enumerate_layouts(a, shape)), list(enumerate_layouts(b, shape))
            blocks = np.array([math.prod(lay.local_shape(shape)) for lay in lb], dtype=np.int64)
            got = _recv.max_recv_by_units(a, _recv.map_positions(la), b, _recv.map_positions(lb), blocks, shape)
            assert got is not None and got.dtype == np.int64
            assert np.array_equal(got, _steps.alltoallv_max_recv_matrix(la, lb, shape)), (a, b, shape)


def test_max_receives_too_large_for_unit_tables_fall_back():
    from reschedule import _recv
    shape = (1 << 20, 1 << 20, 1 << 10)
    la = list(enumerate_layouts((2, 32), shape))
    pos = _recv.map_positions(la)
    blocks = np.array([math.prod(lay.local_shape(shape)) for lay in la], dtype=np.int64)
    assert _recv.max_recv_by_units((2, 32), pos, (2, 32), pos, blocks, shape) is None  # boxes, then


def test_a_tensor_too_large_for_unit_tables_is_priced_from_its_boxes():
    _tables.TABLES.clear()
    shape = (1 << 20, 1 << 20, 1 << 14)                      # 2**54 elements: U * N >= 2**62
    cost = alpha_beta_cost(10e-6, 12.5e9)
    srcs = list(enumerate_layouts((2, 4), shape))[:6]
    dsts = list(enumerate_layouts((8,), shape)) + list(enumerate_layouts((4, 2), shape))[:5]
    got = conversion_time_matrix(srcs, dsts, shape, 2, cost, unreachable=-1.0)
    assert got.tolist() == _want(srcs, dsts, shape, cost).tolist()


def test_a_bad_layout_past_the_first_is_named():
    shape = (8, 8)
    good = [Layout((4,), (0, -1)), Layout((2, 2), (0, 1))]
    with pytest.raises(ValueError, match="ranks don't match"):
        conversion_time_matrix(good + [Layout((2,), (0, -1))], good, shape)
    with pytest.raises(ValueError, match="indivisible"):
        conversion_time_matrix(good, good + [Layout((4,), (-1, 0))], (8, 6))
    with pytest.raises(ValueError, match="needs two Layout values"):
        conversion_time_matrix(good, good + ["[4] S0,R"], shape)
