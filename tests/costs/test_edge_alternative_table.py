"""``price_edge_table`` builds an edge's alternatives as arrays; every pair's list and
the padded grids must hold what the per-pair rules give, float for float (the rules are
written out here pair by pair, as ``CostModel`` priced them before the arrays)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from reschedule import Layout
from tensoropt.costs._edge_tables import EdgeAlternative, EdgeAlternativeTable, price_edge_table

SHAPE, ITEMSIZE = (8, 8), 4
LAYOUTS = [Layout.parse(t) for t in ("[4] S0,R", "[4] R,S0", "[4] R,R", "[2,2] S0,S1", "[2,2] S1,R",
                                     "[2,2] R,R")]


def _per_pair(srcs, dsts, forward, backward, reverse, reruns, grad, keep_consumer):
    """The rules of ``_edge_tables``' docstring, one pair at a time, in Python floats."""
    src_bytes = [s.local_bytes(SHAPE, ITEMSIZE) for s in srcs]
    dst_bytes = [d.local_bytes(SHAPE, ITEMSIZE) for d in dsts]
    out = {}
    for u, src in enumerate(srcs):
        for v, dst in enumerate(dsts):
            fwd = float(forward[u][v])
            time = fwd + float(backward[v][u]) if grad else fwd
            if reverse is None:
                out[(u, v)] = [EdgeAlternative(0.0, time, "none", src, dst, grad)]
            elif src == dst:
                out[(u, v)] = [EdgeAlternative(-float(src_bytes[u]), time, "shared", src, dst, grad)]
            else:
                rerun = reruns[v]
                alts = [EdgeAlternative(0.0, time, "keep_both", src, dst, grad),
                        EdgeAlternative(float(-dst_bytes[v]), time + fwd + sum(rerun), "keep_producer",
                                        src, dst, grad, float(rerun[0]))]
                rev = float(reverse[v][u])
                if keep_consumer and not math.isnan(rev):
                    alts.append(EdgeAlternative(float(-src_bytes[u]), time + rev, "keep_consumer", src,
                                                dst, grad))
                out[(u, v)] = alts
    return out


def _random_case(seed: int):
    rng = random.Random(seed)
    srcs = rng.sample(LAYOUTS, rng.randint(1, 4))
    dsts = rng.sample(LAYOUTS, rng.randint(1, 4))
    nu, nv = len(srcs), len(dsts)
    # values whose sums round (so a changed order of additions shows)
    forward = [[rng.random() * 10 ** rng.randint(-7, -2) for _ in range(nv)] for _ in range(nu)]
    backward = [[rng.random() / 3 for _ in range(nu)] for _ in range(nv)]
    reverse = [[math.nan if rng.random() < 0.3 else rng.random() / 7 for _ in range(nu)] for _ in range(nv)]
    reruns = [(rng.random() / 11 * rng.randint(0, 1), rng.random() / 13 * rng.randint(0, 1)) for _ in range(nv)]
    return srcs, dsts, forward, backward, reverse, reruns


def _padded(alts, width):
    return alts + [alts[0]] * (width - len(alts))


@pytest.mark.parametrize("seed", range(40))
def test_the_arrays_hold_the_per_pair_alternatives(seed):
    srcs, dsts, forward, backward, reverse, reruns = _random_case(seed)
    grad = seed % 2 == 0
    both = seed % 3 != 0
    keep_consumer = seed % 5 != 0
    table = price_edge_table(srcs, dsts, np.array(forward), np.array(backward) if grad else None,
                             np.array(reverse) if both else None,
                             [s.local_bytes(SHAPE, ITEMSIZE) for s in srcs],
                             [d.local_bytes(SHAPE, ITEMSIZE) for d in dsts], reruns, grad=grad,
                             keep_consumer=keep_consumer)
    want = _per_pair(srcs, dsts, forward, backward, reverse if both else None, reruns, grad, keep_consumer)
    assert list(table) == list(want)                       # every pair, u then v
    assert len(table) == len(want)
    width = max(len(a) for a in want.values())
    assert table.width == width
    for pair, alts in want.items():
        got = table[pair]
        assert got == alts, pair
        for a, b in zip(got, alts):                        # bit for bit, types too
            assert (type(a.memory_bytes), type(a.time_s)) == (float, float)
            assert math.copysign(1, a.memory_bytes) == math.copysign(1, b.memory_bytes)
        assert table.counts[pair] == len(alts)
        padded = _padded(alts, width)
        assert table.grid[pair].tolist() == [[a.memory_bytes, a.time_s] for a in padded]
        assert table.compute[pair].tolist() == [a.compute_s for a in padded]


def test_the_mapping_builds_each_list_once_and_knows_its_pairs():
    srcs, dsts = LAYOUTS[:2], LAYOUTS[1:4]
    table = price_edge_table(srcs, dsts, np.ones((2, 3)), None, np.full((3, 2), 0.5), [64, 64],
                             [64, 64, 64], [(0.0, 0.0)] * 3, grad=False, keep_consumer=True)
    assert isinstance(table, EdgeAlternativeTable)
    first = table[(1, 2)]
    assert table[(1, 2)] is first and table[(np.int64(1), np.int64(2))] is first
    assert (1, 0) in table and (2, 0) not in table and (0, -1) not in table and "x" not in table
    for bad in ((2, 0), (0, 3), (-1, 0)):
        with pytest.raises(KeyError):
            table[bad]
    # (1, 0): the same layout at both ends shares one copy
    assert [a.reuse for a in table[(1, 0)]] == ["shared"]
    assert [a.reuse for a in table[(0, 0)]] == ["keep_both", "keep_producer", "keep_consumer"]
    assert not table.grid.flags.writeable and not table.compute.flags.writeable
