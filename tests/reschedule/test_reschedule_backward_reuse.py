"""Conversion.backward() (gradient conversions, including partial gradients) and reuse_options()."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reschedule import (
    Layout, ReuseOption, alpha_beta_cost, plan_conversion, reuse_options, run_numpy,
)

ALPHA, BW = 1e-5, 1e9
BETA = 1.0 / BW
COST = alpha_beta_cost(alpha_s=ALPHA, bandwidth_bytes_per_s=BW)


def plan(src: str, dst: str, shape):
    return plan_conversion(Layout.parse(src), Layout.parse(dst), shape, 4, COST)


@pytest.mark.parametrize("src, dst, shape, backward", [
    ("[4] S0,R", "[4] R,R", (8, 8), "slice(axis 0, dim 0)"),                # allgather <- slice
    ("[4] R,R", "[4] R,S0", (8, 8), "allgather(axis 0, dim 1)"),            # slice <- allgather
    ("[4] R,R P{0}", "[4] R,R", (8, 8), "identity"),                        # allreduce <- nothing
    ("[4] S0,R", "[4] R,S0", (8, 8), "alltoall(axis 0, dim 1->0)"),         # alltoall <- reverse
    ("[4] R,R P{0}", "[4] S0,R", (8, 8), "allgather(axis 0, dim 0)"),       # reducescatter <- allgather
    ("[2,4] S0,R,S1", "[2,4] R,S1,R", (8, 8, 8),
     "slice(axis 0, dim 0) -> alltoall(axis 1, dim 1->2)"),
    ("[2,2] S0,S1", "[4] S0,R", (1024, 1024), "alltoallv([4] S0,R -> [2,2] S0,S1)"),
])
def test_backward_closed_form(src, dst, shape, backward):
    conv = plan(src, dst, shape)
    back = conv.backward()
    assert str(back) == backward
    assert back.src == Layout.parse(dst).grad() and back.dst == Layout.parse(src).grad()


def test_backward_of_partial_destination_starts_replicated():
    """grad([2,2] R,R P{1}) = [2,2] R,R: the pending sum's gradient is broadcast."""
    conv = plan("[2,2] R,R P{0,1}", "[2,2] R,R P{1}", (4, 4))
    assert str(conv) == "allreduce(axis 0)"
    back = conv.backward()
    assert back.src == Layout.parse("[2,2] R,R") and str(back) == "identity"
    conv = plan("[2,2] R,R P{0,1}", "[2,2] S0,R P{1}", (4, 4))
    assert str(conv) == "reducescatter(axis 0, dim 0)"
    assert str(conv.backward()) == "allgather(axis 0, dim 0)"


def test_backward_costs():
    assert plan("[4] S0,R", "[4] R,R", (8, 8)).backward().time_s == 0.0
    back = plan("[4] R,R", "[4] R,S0", (8, 8)).backward()
    assert math.isclose(back.time_s, 3 * ALPHA + 3 / 4 * 256 * BETA)
    # [4] S0,R -> [2,2] S0,S1: rank 2i+j holds rows-quarter 2i+j and needs rows-half i,
    # cols-half j; it holds half of that, so it receives n/8 bytes from one other rank.
    n = 1024 * 1024 * 4
    back = plan("[2,2] S0,S1", "[4] S0,R", (1024, 1024)).backward()
    assert back.step_costs[0].bytes_recv_per_rank == n / 8
    assert math.isclose(back.time_s, 3 * ALPHA + n / 8 * BETA)


def test_backward_of_partial_gradient_reduces():
    """A gradient that arrives as a pending sum is reduced on the way back."""
    conv = plan("[4] S0,R", "[4] R,R", (8, 8))
    back = conv.backward(grad_layout=Layout.parse("[4] R,R P{0}"))
    assert str(back) == "reducescatter(axis 0, dim 0)"
    rng = np.random.default_rng(0)
    g = rng.integers(-9, 9, size=(8, 8))
    terms = [rng.integers(-9, 9, size=(8, 8)) for _ in range(3)]
    shards = {0: g - sum(terms), 1: terms[0], 2: terms[1], 3: terms[2]}
    out = run_numpy(back, shards)
    src = Layout.parse("[4] S0,R")
    for r in range(4):
        np.testing.assert_array_equal(out[r], g[src.shard_slices(r, (8, 8))])


def _random_layout(rng, mesh, shape, partial_ok):
    tmap, partial = [-1] * len(shape), set()
    for a in rng.permutation(len(mesh)):
        a = int(a)
        opts = ["R"] + (["P"] if partial_ok else []) + [
            d for d in range(len(shape)) if tmap[d] == -1 and shape[d] % mesh[a] == 0]
        c = opts[rng.integers(len(opts))]
        if c == "P":
            partial.add(a)
        elif c != "R":
            tmap[c] = a
    return Layout(tuple(mesh), tuple(tmap), frozenset(partial))


MESHES = {4: [(4,), (2, 2)], 6: [(6,), (2, 3), (3, 2)], 8: [(8,), (2, 4), (4, 2), (2, 2, 2)],
          12: [(12,), (2, 6), (3, 4), (2, 2, 3)]}


@pytest.mark.parametrize("seed_block", range(4))
def test_backward_moves_the_gradient_exactly(seed_block):
    """For random conversions, backward() takes the full gradient G laid out as grad(dst)
    (optionally arriving partial) to exactly G laid out as grad(src)."""
    for seed in range(seed_block * 100, seed_block * 100 + 100):
        rng = np.random.default_rng(seed)
        n = [4, 6, 8, 12][seed % 4]
        mesh_a = MESHES[n][rng.integers(len(MESHES[n]))]
        mesh_b = MESHES[n][rng.integers(len(MESHES[n]))]
        shape = tuple(int(rng.choice([2, 4, 6, 12])) for _ in range(rng.integers(1, 4)))
        src = _random_layout(rng, mesh_a, shape, True)
        dst = _random_layout(rng, mesh_b, shape, False)
        conv = plan_conversion(src, dst, shape, 4, COST)
        grad_in = dst.grad()
        back = conv.backward()            # the default: the gradient arrives as grad(dst)
        if rng.random() < 0.3:
            grad_in = _random_layout(rng, mesh_b, shape, True)
            back = conv.backward(grad_layout=grad_in)
        assert back.src == grad_in
        assert back.dst == src.grad() and not back.dst.partial
        g = rng.integers(-99, 99, size=shape)
        shards = {r: g[grad_in.shard_slices(r, shape)].copy() for r in range(grad_in.num_ranks)}
        if grad_in.partial:   # random terms per group that sum to the block
            groups = {}
            for r in range(grad_in.num_ranks):
                c = grad_in.coords(r)
                groups.setdefault(tuple(x for a, x in enumerate(c) if a not in grad_in.partial),
                                  []).append(r)
            for grp in groups.values():
                rest = [rng.integers(-9, 9, size=shards[grp[0]].shape) for _ in grp[1:]]
                shards[grp[0]] = shards[grp[0]] - sum(rest)
                for r, t in zip(grp[1:], rest):
                    shards[r] = t
        out = run_numpy(back, shards)
        for r in range(src.num_ranks):
            np.testing.assert_array_equal(out[r], g[src.shard_slices(r, shape)], err_msg=str(seed))


# ------------------------------------------------------------------ tensor reuse
def test_reuse_three_options():
    src, dst, shape = Layout.parse("[4] S0,R"), Layout.parse("[4] R,R"), (8, 8)
    opts = reuse_options(src, dst, shape, itemsize=4, cost_fn=COST)
    gather = 3 * ALPHA + 3 / 4 * 256 * BETA
    assert [o.name for o in opts] == ["keep_both", "keep_producer", "keep_consumer"]
    assert opts[0] == ReuseOption("keep_both", 0, 0.0)
    assert opts[1].extra_memory_bytes == -256 and math.isclose(opts[1].extra_time_s, gather)
    assert opts[2] == ReuseOption("keep_consumer", -64, 0.0)   # re-slicing back is free
    opts8 = reuse_options(src, dst, shape, itemsize=8, cost_fn=COST)
    assert opts8[1].extra_memory_bytes == -512 and opts8[2].extra_memory_bytes == -128


def test_reuse_reverse_direction_costs_reverse_conversion():
    src, dst, shape = Layout.parse("[4] R,R"), Layout.parse("[4] R,S0"), (8, 8)
    opts = {o.name: o for o in reuse_options(src, dst, shape, cost_fn=COST)}
    assert opts["keep_producer"] == ReuseOption("keep_producer", -64, 0.0)
    assert opts["keep_consumer"].extra_memory_bytes == -256
    assert math.isclose(opts["keep_consumer"].extra_time_s, 3 * ALPHA + 3 / 4 * 256 * BETA)


def test_reuse_same_layout_is_one_shared_copy():
    lay = Layout.parse("[2,2] S0,R")
    assert reuse_options(lay, lay, (4, 6), itemsize=2) == [
        ReuseOption("keep_producer", -(2 * 6 * 2), 0.0)]


def test_reuse_partial_producer_cannot_be_rebuilt():
    """A pending sum's terms cannot be recovered from the reduced value: no keep_consumer."""
    src, dst = Layout.parse("[4] R,R P{0}"), Layout.parse("[4] R,R")
    opts = reuse_options(src, dst, (8, 8), cost_fn=COST)
    assert [o.name for o in opts] == ["keep_both", "keep_producer"]
    assert opts[1].extra_memory_bytes == -256
    assert math.isclose(opts[1].extra_time_s, 2 * 3 * ALPHA + 2 * 3 / 4 * 256 * BETA)


def test_reuse_mesh_change():
    src, dst, shape = Layout.parse("[2,2] S0,S1"), Layout.parse("[4] S0,R"), (1024, 1024)
    opts = {o.name: o for o in reuse_options(src, dst, shape, cost_fn=COST)}
    n = 1024 * 1024 * 4
    assert opts["keep_producer"].extra_memory_bytes == -n // 4
    assert math.isclose(opts["keep_producer"].extra_time_s, 3 * ALPHA + n / 8 * BETA)
    assert opts["keep_consumer"].extra_memory_bytes == -n // 4
    assert math.isclose(opts["keep_consumer"].extra_time_s, 3 * ALPHA + n / 8 * BETA)
    small = {o.name: o for o in reuse_options(src, dst, (8, 8), cost_fn=COST)}
    # small tensor: forward = allgather on axis 1 + free alltoallv (alpha-bound); back is
    # still the direct alltoallv (every other way moves more, with as many messages)
    assert math.isclose(small["keep_producer"].extra_time_s, ALPHA + 1 / 2 * 128 * BETA)
    assert math.isclose(small["keep_consumer"].extra_time_s, 3 * ALPHA + 256 / 8 * BETA)


def test_reuse_rejects_bad_input():
    with pytest.raises(ValueError, match="ranks don't match"):
        reuse_options(Layout.parse("[4] S0"), Layout.parse("[8] S0"), (8,))
    with pytest.raises(ValueError, match="no re-scheduling path"):
        reuse_options(Layout.parse("[4] S0"), Layout.parse("[4] R P{0}"), (8,))
