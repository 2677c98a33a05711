"""``conversion_times`` (one shortest-path tree per destination mesh) gives, for every
destination, exactly what ``conversion_time`` gives for that pair alone, and says which
destinations cannot be reached."""

from __future__ import annotations

import random

import pytest

from reschedule import (Layout, NoConversionError, alpha_beta_cost, conversion_time,
                        conversion_time_matrix, conversion_times, enumerate_layouts)


def _meshes(n: int) -> list[tuple[int, ...]]:
    meshes = [(n,), (2, n // 2), (n // 2, 2)] if n >= 4 else [(n,)]
    return meshes + ([(2, 2, n // 4)] if n >= 8 else [])


@pytest.mark.parametrize("seed", range(12))
def test_every_destination_as_priced_alone(seed):
    rng = random.Random(seed)
    n = rng.choice([2, 4, 8, 16])
    shape = tuple(rng.choice([4, 8, 16]) for _ in range(rng.randint(1, 3)))
    cost = alpha_beta_cost(*((10e-6, 12.5e9) if seed % 2 else (1e-3, 1e12)))
    dsts = [lay for mesh in _meshes(n) for lay in enumerate_layouts(mesh, shape)]
    srcs = [lay for mesh in _meshes(n) for lay in enumerate_layouts(mesh, shape, frozenset({0}))]
    srcs += rng.sample(dsts, min(4, len(dsts)))
    for src in srcs:
        got = conversion_times(src, dsts, shape, 4, cost)
        assert got == [conversion_time(src, d, shape, 4, cost) for d in dsts]


def test_unreachable_destinations_raise_or_take_the_given_value():
    shape = (8, 8)
    src = Layout((4,), (0, -1))
    partial = Layout((4,), (-1, -1), frozenset({0}))   # no step creates a pending sum
    other_mesh_partial = Layout((2, 2), (-1, -1), frozenset({0}))
    ok = Layout((4,), (-1, 0))
    with pytest.raises(NoConversionError):
        conversion_times(src, [ok, partial], shape)
    got = conversion_times(src, [ok, partial, other_mesh_partial], shape, unreachable=-1.0)
    assert got == [conversion_time(src, ok, shape), -1.0, -1.0]


def test_bad_shapes_and_rank_counts_are_named():
    with pytest.raises(ValueError, match="indivisible"):
        conversion_times(Layout((4,), (0,)), [Layout((4,), (-1,))], (6,))
    with pytest.raises(ValueError, match="ranks don't match"):
        conversion_times(Layout((4,), (0,)), [Layout((2,), (0,))], (8,))


@pytest.mark.parametrize("n,shape,chunk", [(4, (8,), 1 << 22), (8, (4, 8, 16), 1 << 22),
                                           (16, (16, 8, 4), 1 << 22), (16, (16, 8), 64),
                                           (4, (), 1 << 22)])
def test_the_max_receive_matrix_is_the_per_pair_maximum(monkeypatch, n, shape, chunk):
    from reschedule import _steps
    monkeypatch.setattr(_steps, "BROADCAST_ELEMENTS", chunk)    # 64: one row per chunk
    meshes = _meshes(n)
    srcs = [lay for lay in enumerate_layouts(meshes[0], shape)]
    dsts = [lay for mesh in meshes[1:] or meshes for lay in enumerate_layouts(mesh, shape)]
    got = _steps.alltoallv_max_recv_matrix(srcs, dsts, shape)
    want = [[max(_steps.alltoallv_recv_elements(s, d, shape)) for d in dsts] for s in srcs]
    assert got.tolist() == want
    assert got.any() or shape == ()


@pytest.mark.parametrize("seed", range(4))
def test_a_cost_without_volume_pricing_gives_the_same_seconds(seed):
    """conversion_times prices a mesh change per distinct receive volume when the cost
    function has ``alltoallv_seconds``, and step by step otherwise: the same floats."""
    rng = random.Random(100 + seed)
    n = rng.choice([4, 8, 16])
    shape = tuple(rng.choice([4, 8, 16]) for _ in range(rng.randint(1, 3)))
    cost = alpha_beta_cost(1e-3 * (seed + 1), 1e9 * (seed + 1))
    plain = lambda step, shp, itemsize: cost(step, shp, itemsize)   # noqa: E731
    dsts = [lay for mesh in _meshes(n) for lay in enumerate_layouts(mesh, shape)]
    for src in rng.sample(dsts, min(6, len(dsts))):
        assert conversion_times(src, dsts, shape, 2, cost) == \
            conversion_times(src, dsts, shape, 2, plain)


@pytest.mark.parametrize("seed", range(6))
def test_a_matrix_of_sources_priced_together_is_each_pair_alone(seed):
    """Sources on one mesh share the broadcast and the Bellman-Ford rounds toward each
    other mesh; every entry is still what conversion_time gives that pair alone, and an
    unreachable pair takes the given value."""
    from reschedule import _tables
    _tables.TABLES.clear()                   # price the tables afresh, not from the cache
    rng = random.Random(200 + seed)
    n = rng.choice([4, 8, 16])
    shape = tuple(rng.choice([4, 8, 16]) for _ in range(rng.randint(1, 3)))
    cost = alpha_beta_cost(*((10e-6, 12.5e9) if seed % 2 else (1e-3, 1e12)))
    layouts = [lay for mesh in _meshes(n) for lay in enumerate_layouts(mesh, shape)]
    partial = [lay for mesh in _meshes(n) for lay in enumerate_layouts(mesh, shape, frozenset({0}))]
    srcs = rng.sample(layouts, min(8, len(layouts))) + partial[:3]
    dsts = rng.sample(layouts, min(10, len(layouts))) + partial[:2]
    got = conversion_time_matrix(srcs, dsts, shape, 2, cost, unreachable=-1.0)
    for r, s in enumerate(srcs):
        for c, d in enumerate(dsts):
            try:
                want = conversion_time(s, d, shape, 2, cost)
            except NoConversionError:
                want = -1.0
            assert got[r, c] == want, (s, d)
    with pytest.raises(NoConversionError):
        conversion_time_matrix(srcs[:1], [partial[0]], shape, 2, cost)


def test_an_unhashable_cost_function_prices_mesh_changes_too():
    """Nothing is cached for a cost function that cannot be hashed, across meshes as on
    one mesh (the alltoallv and mesh-step tables were cached by it and raised TypeError)."""
    base = alpha_beta_cost(5e-6, 2e10)

    class Unhashable:
        __hash__ = None

        def __call__(self, step, shape, itemsize):
            return base(step, shape, itemsize)

    shape = (8, 16)
    cost = Unhashable()
    layouts = [lay for mesh in _meshes(8) for lay in enumerate_layouts(mesh, shape)]
    got = conversion_time_matrix(layouts[:4], layouts, shape, 2, cost)
    assert got.tolist() == [[conversion_time(s, d, shape, 2, base) for d in layouts]
                            for s in layouts[:4]]
