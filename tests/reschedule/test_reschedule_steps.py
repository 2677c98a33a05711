"""Step objects: groups, strides, byte counts, constructors, and the alltoallv exchange."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from reschedule import Layout, Step, axis_groups, enumerate_layouts, plan_conversion, run_numpy


def test_groups_and_strides_row_major():
    lay = Layout.parse("[2,4] S0,S1")
    g0 = Step.make_allgather(lay, 0)
    assert (g0.group_size, g0.group_stride) == (2, 4)
    assert g0.groups() == [(0, 4), (1, 5), (2, 6), (3, 7)]
    g1 = Step.make_allgather(lay, 1)
    assert (g1.group_size, g1.group_stride) == (4, 1)
    assert g1.groups() == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert axis_groups((2, 3, 4), 1)[:2] == [(0, 4, 8), (1, 5, 9)]
    assert len(axis_groups((2, 3, 4), 1)) == 8
    for mesh in [(2, 3, 4), (3, 2), (5,)]:
        for a in range(len(mesh)):
            groups = axis_groups(mesh, a)
            assert sorted(itertools.chain(*groups)) == list(range(int(np.prod(mesh))))
            lay = Layout(mesh, (-1,), frozenset({a}))
            for grp in groups:   # members differ only in coordinate a, in increasing order
                cs = [lay.coords(r) for r in grp]
                assert [c[a] for c in cs] == list(range(mesh[a]))
                assert all(c[:a] + c[a + 1:] == cs[0][:a] + cs[0][a + 1:] for c in cs)


def test_step_fields():
    src = Layout.parse("[2,4] S0,R,S1")
    st = Step.make_alltoall(src, 1, 1)
    assert st.kind == "alltoall" and st.mesh == (2, 4) and st.axis == 1
    assert st.dims == (2, 1) and st.src_dim == 2 and st.dst_dim == 1
    assert st.src == src and st.dst == Layout.parse("[2,4] S0,S1,R")
    assert str(st) == "alltoall(axis 1, dim 2->1)"
    shape = (4, 8, 8)
    assert st.bytes_in(shape, 4) == st.bytes_out(shape, 4) == 2 * 8 * 2 * 4
    assert st.bytes_recv(shape, 4) == 3 / 4 * 128
    rs = Step.make_reducescatter(Layout.parse("[2,4] S0,R P{1}"), 1, 1)
    assert rs.dst == Layout.parse("[2,4] S0,S1") and rs.dims == (1,)
    assert str(rs) == "reducescatter(axis 1, dim 1)"
    ar = Step.make_allreduce(Layout.parse("[2,4] S0,R P{1}"), 1)
    assert ar.dst == Layout.parse("[2,4] S0,R") and ar.dims == ()
    assert ar.bytes_recv((4, 8), 4) == 2 * 3 / 4 * 64
    sl = Step.make_slice(Layout.parse("[2,4] S0,R"), 1, 1)
    assert sl.bytes_recv((4, 8), 4) == 0 and sl.bytes_out((4, 8), 4) == 2 * 2 * 4
    hash(st)  # frozen, usable as a key


@pytest.mark.parametrize("make, args, words", [
    (Step.make_slice, ("[2,4] S0,R", 0, 1), "mesh axis 0 is S0, but slice needs it to be R"),
    (Step.make_slice, ("[2,4] S0,R", 1, 0), "tensor dim 0 must exist and not be split"),
    (Step.make_allgather, ("[2,4] S0,R", 1), "needs it to be S"),
    (Step.make_allreduce, ("[2,4] S0,R", 1), "needs it to be P"),
    (Step.make_alltoall, ("[2,4] S0,S1", 0, 1), "tensor dim 1 must exist"),
    (Step.make_reducescatter, ("[2,4] R,R P{1}", 0, 0), "needs it to be P"),
    (Step.make_allgather, ("[2,4] S0,R", 5), "mesh axis 5 does not exist"),
])
def test_step_constructors_reject_inapplicable_steps(make, args, words):
    with pytest.raises(ValueError, match=words):
        make(Layout.parse(args[0]), *args[1:])


def test_alltoallv_constructor_rules():
    with pytest.raises(ValueError, match="reduce the partial axes first"):
        Step.make_alltoallv(Layout.parse("[2,2] R P{0}"), Layout.parse("[4] R"))
    with pytest.raises(ValueError, match="same number of ranks"):
        Step.make_alltoallv(Layout.parse("[2,2] R"), Layout.parse("[8] R"))
    with pytest.raises(ValueError, match="same-mesh"):
        Step.make_alltoallv(Layout.parse("[4] R"), Layout.parse("[4] S0"))
    st = Step.make_alltoallv(Layout.parse("[2,2] S0,S1"), Layout.parse("[4] S0,R"))
    assert (st.group_size, st.group_stride, st.axis) == (4, 1, None)
    assert st.groups() == [(0, 1, 2, 3)] and st.dims == (0, 1)
    with pytest.raises(ValueError, match="alltoallv steps only"):
        Step.make_allgather(Layout.parse("[4] S0"), 0).exchange((4,))


@pytest.mark.parametrize("src, dst, shape", [
    ("[2,2] S0,S1", "[4] S0,R", (8, 4)),
    ("[4] R,R", "[2,2] S1,S0", (4, 6)),
    ("[2,3] S1,R,S0", "[3,2] R,S0,S1", (6, 9, 4)),
    ("[6] R,S0", "[2,3] S0,R", (4, 6)),
    ("[2,2,2] S2,S0,S1", "[4,2] S1,R,S0", (4, 8, 4)),
])
def test_alltoallv_exchange_is_consistent(src, dst, shape):
    st = Step.make_alltoallv(Layout.parse(src), Layout.parse(dst))
    ex = st.exchange(shape)
    n = st.src.num_ranks
    for q in range(n):
        # pieces tile q's output block exactly once
        cover = np.zeros(st.dst.local_shape(shape), dtype=int)
        for pc in ex.recvs(q):
            cover[pc.dst_slices] += 1
            # the box is where the global slices say, in both ranks' blocks
            g = pc.global_slices
            s_off = [sl.start for sl in st.src.shard_slices(pc.src_rank, shape)]
            d_off = [sl.start for sl in st.dst.shard_slices(q, shape)]
            assert all(a.start - o == b.start for a, o, b in zip(g, s_off, pc.src_slices))
            assert all(a.start - o == b.start for a, o, b in zip(g, d_off, pc.dst_slices))
        assert (cover == 1).all()
        for p in range(n):
            assert ex.send_splits(p)[q] == ex.recv_splits(q)[p]
    # a rank receives from itself whatever it already holds
    recv_other = [sum(c for p, c in enumerate(ex.recv_splits(q)) if p != q) for q in range(n)]
    assert max(recv_other) * 4 == st.bytes_recv(shape, 4)


def test_alltoallv_runs_through_flat_buffers():
    src, dst = Layout.parse("[2,3] S1,R,S0"), Layout.parse("[3,2] R,S0,S1")
    shape = (6, 9, 4)
    full = np.arange(np.prod(shape)).reshape(shape)
    conv = plan_conversion(src, dst, shape)
    out = run_numpy(conv, {r: full[src.shard_slices(r, shape)] for r in range(6)})
    for r in range(6):
        np.testing.assert_array_equal(out[r], full[dst.shard_slices(r, shape)])


def test_enumerate_layouts():
    lays = enumerate_layouts((2, 4), (4, 4))
    # each axis: R or one of two dims, dims distinct: 3*3 - 2 collisions = 7
    assert len(lays) == 7 and len(set(lays)) == 7
    assert all(not lay.partial and lay.fits((4, 4)) for lay in lays)
    assert len(enumerate_layouts((2, 4), (2, 3))) == 2   # only dim 0 over axis 0 fits
