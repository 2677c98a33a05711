"""Unit tests of Layout: text form, value semantics, shards, and validation errors."""

from __future__ import annotations

import dataclasses

import pytest

from reschedule import Layout, mesh_coords, mesh_rank


@pytest.mark.parametrize("text", [
    "[2,4] S0,R,S1", "[2,4] S0,R,R P{1}", "[8] R,S0,R", "[4] R", "[2,2,2] S2,S0 P{1}",
    "[4] - P{0}", "[3] -", "[1] S0",
])
def test_str_parse_repr_round_trip(text):
    lay = Layout.parse(text)
    assert str(lay) == text
    assert Layout.parse(str(lay)) == lay
    assert eval(repr(lay), {"Layout": Layout}) == lay  # noqa: S307 - repr round-trips


def test_fields_and_text():
    lay = Layout(mesh=(2, 4), tensor_map=(0, -1, 1), partial=frozenset())
    assert str(lay) == "[2,4] S0,R,S1"
    assert repr(lay) == "Layout(mesh=(2, 4), tensor_map=(0, -1, 1), partial=frozenset())"
    assert Layout.parse("[8] R,S0,R") == Layout((8,), (-1, 0, -1))
    assert Layout.parse(" [ 2 , 4 ]  S0, R ,R  P{ 1 } ") == Layout((2, 4), (0, -1, -1), {1})
    assert Layout.parse("[2,4] S0,R,R P{}") == Layout((2, 4), (0, -1, -1))
    assert str(Layout((2, 4), (0, -1, -1), {1})) == "[2,4] S0,R,R P{1}"


def test_value_semantics():
    a = Layout([2, 4], [0, -1, 1], {1} - {1})
    b = Layout((2, 4), (0, -1, 1), frozenset())
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert isinstance(a.mesh, tuple) and isinstance(a.tensor_map, tuple)
    assert isinstance(a.partial, frozenset)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.mesh = (8,)
    assert Layout((4,), (0,)) != Layout((4,), (-1,))
    assert Layout((2, 2), (-1,), {0}) != Layout((2, 2), (-1,), {1})


def test_mesh_facts():
    lay = Layout.parse("[2,3,4] S2,R P{1}")
    assert lay.num_ranks == 24 and lay.ndim == 2
    assert lay.replicated_axes == (0,)
    assert [lay.axis_role(a) for a in range(3)] == ["R", "P", "S0"]
    assert lay.grad() == Layout.parse("[2,3,4] S2,R")
    # row-major, last axis fastest
    assert lay.coords(0) == (0, 0, 0) and lay.coords(1) == (0, 0, 1)
    assert lay.coords(4) == (0, 1, 0) and lay.coords(12) == (1, 0, 0)
    assert lay.coords(23) == (1, 2, 3)
    for r in range(24):
        assert mesh_rank((2, 3, 4), mesh_coords((2, 3, 4), r)) == r


def test_shard_slices_closed_form():
    lay = Layout(mesh=(2, 4), tensor_map=(0, -1, 1))
    shape = (4, 3, 8)
    assert lay.local_shape(shape) == (2, 3, 2)
    # rank 5 = coords (1, 1): dim 0 block 1 of 2, dim 2 block 1 of 4
    assert lay.shard_slices(5, shape) == (slice(2, 4), slice(0, 3), slice(2, 4))
    assert lay.shard_slices(3, shape) == (slice(0, 2), slice(0, 3), slice(6, 8))
    assert lay.shard_slices(4, shape) == (slice(2, 4), slice(0, 3), slice(0, 2))
    two = Layout.parse("[2,2] S1,S0")   # dim 0 over axis 1 (fast), dim 1 over axis 0
    assert two.shard_slices(1, (4, 6)) == (slice(2, 4), slice(0, 3))
    assert two.shard_slices(2, (4, 6)) == (slice(0, 2), slice(3, 6))
    assert lay.local_bytes(shape, 4) == 2 * 3 * 2 * 4
    part = Layout.parse("[4] R,R P{0}")
    assert all(part.shard_slices(r, (2, 2)) == (slice(0, 2), slice(0, 2)) for r in range(4))


def test_shards_tile_the_tensor():
    """Every element is held by exactly (number of replicas) ranks."""
    import numpy as np
    for text, shape in [("[2,4] S0,R,S1", (4, 3, 8)), ("[2,3,2] S2,S0", (6, 4)),
                        ("[3,2] R,S1 P{0}", (5, 4))]:
        lay = Layout.parse(text)
        count = np.zeros(shape, dtype=int)
        for r in range(lay.num_ranks):
            count[lay.shard_slices(r, shape)] += 1
        copies = lay.num_ranks // np.prod([lay.mesh[a] for a in lay.tensor_map if a >= 0])
        assert (count == copies).all()


@pytest.mark.parametrize("kwargs, words", [
    (dict(mesh=(2, 4), tensor_map=(0, 0, -1)), ["mesh axis 0", "tensor dims [0, 1]", "at most one"]),
    (dict(mesh=(2, 4), tensor_map=(2, -1)), ["mesh axis 2", "axes 0..1"]),
    (dict(mesh=(2, 4), tensor_map=(-2,)), ["mesh axis -2"]),
    (dict(mesh=(2, 4), tensor_map=(0, 1), partial={1}), ["both partial and mapped"]),
    (dict(mesh=(2, 4), tensor_map=(0,), partial={2}), ["partial axis 2"]),
    (dict(mesh=(0, 4), tensor_map=(0,)), ["mesh axis 0 has size 0", "positive"]),
    (dict(mesh=(), tensor_map=()), ["no axes"]),
    (dict(mesh=(2.0,), tensor_map=(0,)), ["size 2.0"]),
])
def test_invalid_layouts_raise(kwargs, words):
    with pytest.raises(ValueError) as err:
        Layout(**kwargs)
    for w in words:
        assert w in str(err.value), (w, str(err.value))
    assert "Layout [" in str(err.value) or "Layout (" in str(err.value)


def test_axis_used_twice_names_layout_and_fix():
    with pytest.raises(ValueError, match=r"\[2,4\] S0,S0: mesh axis 0 .*Map all but one"):
        Layout.parse("[2,4] S0,S0")


def test_indivisible_split_names_layout_shape_and_rule():
    lay = Layout.parse("[4] S0,R")
    with pytest.raises(ValueError) as err:
        lay.shard_slices(0, (6, 3))
    msg = str(err.value)
    for w in ["[4] S0,R", "(6, 3)", "indivisible", "6 % 4 != 0", "Pad dim 0"]:
        assert w in msg, (w, msg)
    with pytest.raises(ValueError, match="indivisible"):
        lay.local_shape((6, 3))
    assert not lay.fits((6, 3)) and lay.fits((8, 3))


def test_shape_rank_mismatch_and_bad_sizes():
    lay = Layout.parse("[4] S0,R")
    with pytest.raises(ValueError, match="has 2 tensor dims but the shape has 3"):
        lay.local_shape((4, 4, 4))
    with pytest.raises(ValueError, match="dim 1 has size 0"):
        lay.local_shape((4, 0))
    with pytest.raises(ValueError, match=r"rank 4 is not in range\(0, 4\)"):
        lay.shard_slices(4, (4, 4))


@pytest.mark.parametrize("text", ["2,4 S0", "[2,4] X0", "[2,4] S0,Q", "[a] R", "[2] S0 P{x}"])
def test_parse_garbage_raises(text):
    with pytest.raises(ValueError, match="parse layout"):
        Layout.parse(text)
