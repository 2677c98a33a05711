"""Kendall tau-b, inversions and dominance against O(n^2) brute force, with ties."""

import math

import numpy as np
import pytest

from tensoropt.simulator.order_stats import (adjacent_inversions, count_inversions, dominated,
                                             kendall_tau_b, tau_on_resolved_pairs)


def tau_brute(x, y):
    n, s, tx, ty = len(x), 0, 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            s += a * b
            tx += a == 0
            ty += b == 0
    n0 = n * (n - 1) // 2
    d = (n0 - tx) * (n0 - ty)
    return math.nan if d == 0 else s / math.sqrt(d)


def dominated_brute(m, t):
    out = []
    for i in range(len(m)):
        by = [j for j in range(len(m)) if m[j] <= m[i] and t[j] <= t[i]
              and (m[j] < m[i] or t[j] < t[i])]
        out.append(min(by, key=lambda j: (t[j], m[j], j)) if by else -1)
    return out


def _inputs(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(0, 60)), int(rng.integers(1, 10))    # few values: many ties
    x = rng.integers(0, k, n) * 0.5
    y = rng.integers(0, k, n) * 0.25 if rng.random() < .8 else rng.normal(size=n)
    return x, y


@pytest.mark.parametrize("seed", range(60))
def test_kendall_tau_b_matches_brute_force(seed):
    x, y = _inputs(seed)
    got, want = kendall_tau_b(x, y), tau_brute(x, y)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)
    assert count_inversions(y) == sum(y[i] > y[j] for i in range(len(y))
                                      for j in range(i + 1, len(y)))


@pytest.mark.parametrize("seed", range(60))
def test_dominated_matches_brute_force(seed):
    m, t = _inputs(seed)
    assert dominated(m, t).tolist() == dominated_brute(m, t)


@pytest.mark.parametrize("seed", range(20))
def test_adjacent_inversions_match_brute_force(seed):
    x, y = _inputs(seed)
    want = [i for i in range(len(x) - 1)
            if (x[i + 1] - x[i]) * (y[i + 1] - y[i]) < 0]
    assert adjacent_inversions(x, y).tolist() == want


def test_known_values():
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    # Frontier: memory up, time down; the third point is dominated by the second.
    assert dominated([1, 2, 3, 4], [9, 5, 6, 1]).tolist() == [-1, -1, 1, -1]
    assert adjacent_inversions([9, 8, 7, 6], [9, 7, 8, 6]).tolist() == [1]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="same length"):
        kendall_tau_b([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN or infinite value at index 1"):
        dominated([1, float("nan")], [1, 2])
    with pytest.raises(ValueError, match="one-dimensional"):
        adjacent_inversions([[1, 2]], [[1, 2]])


def test_tau_on_resolved_pairs_leaves_out_the_pairs_within_noise():
    # plans 0-2 measure 10 +- 1 ms apart from 20 ms and 30 ms (spreads 1 and 2): pairs
    # (0,1), (0,2), (1,2) are within noise, the other 7 of 10 pairs are resolved
    measured = [10.0, 10.4, 9.8, 20.0, 30.0]
    spread = [1.0, 1.0, 1.0, 2.0, 2.0]
    estimated = [12.0, 11.0, 13.0, 19.0, 33.0]       # misorders only the tied three
    assert tau_on_resolved_pairs(measured, spread, estimated) == (1.0, 7)
    assert kendall_tau_b(measured, estimated) < 0.8
    swapped = [12.0, 11.0, 13.0, 35.0, 33.0]         # now misorders 20 ms against 30 ms
    tau, pairs = tau_on_resolved_pairs(measured, spread, swapped)
    assert pairs == 7 and tau == pytest.approx(5 / 7)
    # a pair just beyond half the spreads counts; at it, not
    assert tau_on_resolved_pairs([0.0, 1.01], [1.0, 1.0], [0.0, 1.0]) == (1.0, 1)
    assert tau_on_resolved_pairs([0.0, 1.0], [1.0, 1.0], [0.0, 1.0])[1] == 0
    assert math.isnan(tau_on_resolved_pairs([0.0, 1.0], [1.0, 1.0], [0.0, 1.0])[0])
    with pytest.raises(ValueError, match="spread must be >= 0"):
        tau_on_resolved_pairs([0.0, 1.0], [1.0, -1.0], [0.0, 1.0])
