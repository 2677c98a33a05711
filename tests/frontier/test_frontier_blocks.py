"""F0, the frontier of the blocks' extreme points (``_blocks.live_blocks``), is found by
one pass that keeps a staircase (``f0_minima``); it must give exactly the points and
radii that repeated minima of time below a memory bound give (the definition), ties,
infinite points and a cut to the fastest points included. (End to end, the hard chains
of ``test_frontier_differential`` have cells with richer F0s and check the merges.)"""

import warnings

import numpy as np
import pytest

from frontier._blocks import f0_minima


def _corners(rng, n, levels):
    """Rows as ``corners`` writes them: 0 least memory, 1 least time, 3 the time of the
    least-memory point, 4 the memory of the least-time point, 5 and 6 their radii.
    Small integers: many ties."""
    w = np.zeros((7, n))
    m0 = rng.integers(0, levels, n).astype(float)
    t1 = (levels - m0) + rng.integers(0, 3, n)      # anti-correlated: rich frontiers
    w[0], w[1] = m0, t1
    w[3] = t1 + rng.integers(0, 3, n)             # the least-memory point is no faster
    w[4] = m0 + rng.integers(0, 3, n)             # the least-time point has no less memory
    w[2] = rng.random(n)
    w[5], w[6] = rng.random(n), rng.random(n)
    return w


def _repeated_minima(w, n, cols, exact):
    """F0 by its definition: the fastest extreme point (ties: less memory, then the
    lower block, its least-memory point first), then the fastest with less memory, and
    so on, at most ``cols`` points; as rows memory, time, radius, memory ascending."""
    out = []
    bound = np.inf
    while len(out) < cols:
        tb, mb, rb = np.inf, np.inf, 0.0
        for x in range(n):
            if w[0, x] < bound and (w[3, x] < tb or (w[3, x] == tb and w[0, x] < mb)):
                tb, mb, rb = w[3, x], w[0, x], w[5, x]
            if w[4, x] < bound and (w[1, x] < tb or (w[1, x] == tb and w[4, x] < mb)):
                tb, mb, rb = w[1, x], w[4, x], w[6, x]
        if tb == np.inf:
            break
        out.append((mb, tb, 0.0 if exact else rb))
        bound = mb
    return np.array(out[::-1]).reshape(-1, 3).T


@pytest.mark.parametrize("exact", [True, False])
def test_f0_equals_repeated_minima_with_ties(exact):
    rng = np.random.default_rng(5)
    sizes = 0
    for trial in range(400):
        n = int(rng.integers(1, 80))
        w = _corners(rng, n, int(rng.integers(2, 60)))
        if trial % 3 == 0:                        # empty blocks, points of infinite time
            w[0, rng.random(n) < 0.2] = np.inf
            w[rng.choice([1, 3]), rng.random(n) < 0.2] = np.inf
        cols = int(rng.choice([4, 256]))          # also F0 cut to its fastest points
        ref = _repeated_minima(w, n, cols, exact)
        got = np.full((3, cols), -1.0)
        nf = f0_minima(w, n, got, np.empty((3, 2 * n)), exact)
        assert nf == ref.shape[1], trial
        assert np.array_equal(got[:, :nf], ref), trial
        assert np.all(np.diff(got[0, :nf]) > 0) and np.all(np.diff(got[1, :nf]) < 0)
        sizes = max(sizes, nf)
    assert sizes > 8                              # rich staircases were compared


def test_f0_of_one_block_and_of_none():
    w = np.zeros((7, 1))
    w[[0, 3, 5], 0] = 1.0, 5.0, 0.5               # least memory: (1, 5), radius 0.5
    w[[4, 1, 6], 0] = 3.0, 2.0, 0.25              # least time: (3, 2), radius 0.25
    f0 = np.zeros((3, 4))
    assert f0_minima(w, 1, f0, np.empty((3, 2)), False) == 2
    assert np.array_equal(f0[:, :2], [[1.0, 3.0], [5.0, 2.0], [0.5, 0.25]])
    w[3, 0] = 2.0                                 # the least-memory point is as fast
    assert f0_minima(w, 1, f0, np.empty((3, 2)), False) == 1
    assert np.array_equal(f0[:, 0], [1.0, 2.0, 0.5])
    w[0, 0] = w[4, 0] = np.inf                    # an empty block: no F0
    assert f0_minima(w, 1, f0, np.empty((3, 2)), True) == 0


def test_per_candidate_helpers_count_no_references():
    """The helpers called once per candidate or block take arrays without numba's
    reference counts (``_jit.jit_leaf``); with them the atomic counts took a third of
    a search's CPU time. They must be compiled without NRT, and their code (when freshly
compiled, not read from numba's cache) must call none."""
    from frontier._blocks import block_of, f0_covers
    from frontier._heap import enqueue, new_buckets, new_heap, pop, push, refill, root
    from frontier._kernels import _next_in_stream, _next_stream

    layout = np.array([0, 2, 1, 0, 1, 0, 0, 0, 0, 0, 0], dtype=np.int64)
    assert block_of(layout, np.zeros(0, dtype=np.int64), 0, 1) == (1, 1, 1)
    hf, hx = new_heap(8)
    Q = new_buckets(8, 2)
    Q[2][:8] = np.r_[np.arange(1, 8), -1]
    Q[2][8] = 0
    key = (1.0, 2.0, 3, 4, 5)
    assert enqueue(hf, hx, 0, Q, key, 0.0, 0.0, 2, 0) == 1
    assert refill(Q, hf, hx, 1, 2, 0) == (1, 0)
    assert root(hf, hx) == key and pop(hf, hx, 1) == 0
    push(hf, hx, 0, key)
    av = np.array([[0.0, 2.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    blk = (0, 2, 0, 2, 0.0, 0.0, 0.0, False, False)
    assert _next_stream(av, av, blk, (0.0, 4.0, 1, 0, 0), np.inf, True, np.zeros(1, dtype=np.int64), False)[0][2] == 1
    assert _next_in_stream(av, av, blk, (0.0, 4.0, 1, 0, 0), np.inf, True, 2)[0][4] == 1
    assert f0_covers(np.array([[0.0], [1.0], [0.0]]), 1, 1.0, 1.0, 0.0, True)
    for fn in (block_of, enqueue, refill, root, pop, push, _next_stream, _next_in_stream,
               f0_covers):
        assert fn.targetoptions.get("_nrt") is False, fn
        with warnings.catch_warnings():          # code loaded from numba's disk cache
            warnings.simplefilter("ignore")      # cannot be inspected: checked if fresh
            for sig, ir in fn.inspect_llvm().items():
                if "define" in ir:
                    assert "NRT_incref" not in ir and "NRT_decref" not in ir, (fn, sig)


def test_merge_loop_inlines_its_per_candidate_helpers():
    """The merge loop and its per-cell helpers count no references, and the helpers it
    calls once per candidate are inlined into it (``_jit.jit_leaf_inline``): calls
    passed every array as nine words on the stack, about a fifth of a node
    elimination's CPU time."""
    from frontier._blocks import block_in, cell_row
    from frontier._heap import enqueue, next_bucket, pop, push, refill, root
    from frontier._kernels import (_cell_size, _keep_sorted, _merge_cell, _next_in_stream,
                                   _next_stream, _raise)

    for fn in (_merge_cell, _cell_size, _keep_sorted):
        assert fn.targetoptions.get("_nrt") is False, fn
    for fn in (enqueue, refill, next_bucket, root, pop, push, _next_stream, _next_in_stream,
               _raise, block_in, cell_row):
        assert fn.targetoptions.get("_nrt") is False, fn
        assert fn.targetoptions.get("inline") == "always", fn


@pytest.mark.parametrize("walk_a", [True, False])
def test_stream_step_skips_a_dominated_run_with_the_loop_s_radius(walk_a):
    """With radii, ``_next_in_stream`` walks a stream's dominated run keeping two
    running maxima of the radius its keeper needs; it must stop where the plain loop
    over the run stopped and give its radius, bit for bit, for runs of every length
    (odd and even)."""
    from frontier._kernels import _next_in_stream

    rng = np.random.default_rng(3)
    n = 40
    t = np.sort(rng.random(n) * 10.0)[::-1].copy()          # times descending
    long = np.zeros((n, 4))
    long[:, 0] = np.arange(n, dtype=float)
    long[:, 1] = t
    long[:, 2] = rng.random(n) * 0.3
    one = np.array([[0.5, 0.25, 0.125, 0.0]])                # the other side: one point
    tk, rk = 0.1, 0.01
    for v in np.r_[t[::3] + 0.2, 11.0]:
        if walk_a:
            av, bv, cur = long, one, (0.0, 0.0, 2, 0, 0)
            blk = (0, n, 0, 1, 0.0, tk, rk, True, False)
            rad, add1, add2 = one[0, 2] + rk, tk, one[0, 1]
        else:
            av, bv, cur = one, long, (0.0, 0.0, 2, 0, 0)
            blk = (0, 1, 0, n, 0.0, tk, rk, False, True)
            rad, add1, add2 = one[0, 2] + rk, one[0, 1] + tk, 0.0
        s, need = 1, -np.inf                                 # the plain loop
        while s < n and (long[s, 1] + add1) + add2 >= v:
            need = max(need, ((rad + long[s, 2]) + v) - ((long[s, 1] + add1) + add2))
            s += 1
        nxt, got = _next_in_stream(av, bv, blk, cur, v, False, blk[1])
        if (long[n - 1, 1] + add1) + add2 >= v:               # all dominated: no next
            assert nxt[2] == -1
            continue
        assert (nxt[3] if walk_a else nxt[4]) == s
        assert got == need
