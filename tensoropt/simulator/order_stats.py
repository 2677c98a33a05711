"""Order statistics for checking a frontier against the simulator.

Usage::

    from tensoropt.simulator.order_stats import adjacent_inversions, dominated, kendall_tau_b

    kendall_tau_b(ft_time, sim_time)          # 1.0: the simulator orders plans as FT does
    adjacent_inversions(ft_time, sim_time)    # positions i where plans i, i+1 swap
    dominated(sim_memory, sim_time)           # per plan: who dominates it, or -1

- ``kendall_tau_b(x, y)``: Kendall's tau-b, which corrects for ties in either ranking:
  ``(concordant - discordant) / sqrt((n0 - ties_x) * (n0 - ties_y))`` with ``n0 = n(n-1)/2``
  and ties counted as tied pairs. NaN when either ranking is all ties. O(n log^2 n),
  vectorized (Knight's method: sort by x then y; discordant pairs are the inversions of
  y, counted by a bottom-up merge sort).
- ``adjacent_inversions(reference, values)``: the ``i`` where ``reference`` and
  ``values`` move in opposite directions from ``i`` to ``i+1`` (a tie in either is not an
  inversion).
- ``tau_on_resolved_pairs(measured, spread, estimated)``: Kendall's tau over the pairs a
  measurement can order (medians further apart than half their spreads together), and
  how many there are: whether the estimate misorders plans that are told apart, when
  others measure within noise of each other. O(n^2) (n: a frontier's sampled plans).
- ``dominated(memory, time)``: point ``j`` dominates ``i`` when it needs no more memory
  and no more time, and strictly less of one. For each point, the dominator with the
  least time (then least memory, then lowest index), or -1. O(n log n).
"""

from __future__ import annotations

import numpy as np

__all__ = ["kendall_tau_b", "tau_on_resolved_pairs", "adjacent_inversions", "dominated",
           "count_inversions"]


def _vector(a, name: str) -> np.ndarray:
    v = np.asarray(a, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} has a NaN or infinite value at index "
                         f"{int(np.flatnonzero(~np.isfinite(v))[0])}")
    return v


def _pair(a, b, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    x, y = _vector(a, names[0]), _vector(b, names[1])
    if len(x) != len(y):
        raise ValueError(f"{names[0]} and {names[1]} must have the same length, got "
                         f"{len(x)} and {len(y)}")
    return x, y


def count_inversions(values) -> int:
    """How many pairs ``i < j`` have ``values[i] > values[j]`` (ties are not counted)."""
    r = np.unique(np.asarray(values), return_inverse=True)[1].astype(np.int64).ravel()
    n = len(r)
    big = n + 1
    idx = np.arange(n, dtype=np.int64)
    inv, width = 0, 1
    while width < n:
        block = idx // (2 * width)
        left = (idx % (2 * width)) < width
        # Halves are sorted: per right element, count the left-half elements above it.
        left_keys = block[left] * big + r[left]
        right = ~left
        below = np.searchsorted(left_keys, block[right] * big + r[right], side="right") \
            - block[right] * width
        left_size = np.minimum(width, n - block[right] * 2 * width)
        inv += int((left_size - below).sum())
        r = np.sort(block * big + r) - block * big          # merge each pair of halves
        width *= 2
    return inv


def _tied_pairs(sorted_values: np.ndarray, *more: np.ndarray) -> int:
    """Pairs tied in all the given (lexicographically sorted) sequences."""
    n = len(sorted_values)
    if n < 2:
        return 0
    same = sorted_values[1:] == sorted_values[:-1]
    for m in more:
        same &= m[1:] == m[:-1]
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    runs = np.diff(np.concatenate([starts, [n]]))
    return int((runs * (runs - 1) // 2).sum())


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b between two rankings of the same items (see module doc).

    Raises:
        ValueError: different lengths, or a NaN/infinite value.
    """
    x, y = _pair(x, y, ("x", "y"))
    n = len(x)
    if n < 2:
        return float("nan")
    order = np.lexsort((y, x))
    xs, ys = x[order], y[order]
    n0 = n * (n - 1) // 2
    n1 = _tied_pairs(xs)
    n2 = _tied_pairs(np.sort(y))
    n3 = _tied_pairs(xs, ys)
    disc = count_inversions(ys)
    denom = (n0 - n1) * (n0 - n2)
    if denom == 0:
        return float("nan")
    return float((n0 - n1 - n2 + n3 - 2 * disc) / np.sqrt(float(denom)))


def tau_on_resolved_pairs(measured, spread, estimated) -> tuple[float, int]:
    """``(tau, pairs)``: over the pairs ``i < j`` whose measured values differ by more
    than ``(spread[i] + spread[j]) / 2`` (e.g. their interquartile ranges), the share
    ordered alike by ``estimated`` less the share ordered oppositely (an estimated tie
    counts as neither); NaN when no pair is resolved.

    Raises:
        ValueError: different lengths, a NaN/infinite value, or a negative spread.
    """
    m, e = _pair(measured, estimated, ("measured", "estimated"))
    s, _ = _pair(spread, measured, ("spread", "measured"))
    if (s < 0).any():
        raise ValueError(f"spread must be >= 0; got {float(s[s < 0][0])} at index "
                         f"{int(np.flatnonzero(s < 0)[0])}")
    i, j = np.triu_indices(len(m), k=1)
    resolved = np.abs(m[i] - m[j]) > (s[i] + s[j]) / 2
    if not resolved.any():
        return float("nan"), 0
    i, j = i[resolved], j[resolved]
    agree = np.sign(m[i] - m[j]) * np.sign(e[i] - e[j])
    return float(agree.mean()), int(resolved.sum())


def adjacent_inversions(reference, values) -> np.ndarray:
    """Indices ``i`` where ``reference`` and ``values`` move apart from ``i`` to ``i+1``.

    Raises:
        ValueError: different lengths, or a NaN/infinite value.
    """
    r, v = _pair(reference, values, ("reference", "values"))
    return np.flatnonzero(np.sign(np.diff(r)) * np.sign(np.diff(v)) < 0)


def dominated(memory, time) -> np.ndarray:
    """Per point, the index of its preferred dominator, or -1 (see module doc).

    Raises:
        ValueError: different lengths, or a NaN/infinite value.
    """
    m, t = _pair(memory, time, ("memory", "time"))
    n = len(m)
    out = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return out
    idx = np.arange(n)
    pref = np.lexsort((idx, m, t))                 # least time, memory, index first
    rank = np.empty(n, dtype=np.int64)
    rank[pref] = idx
    om = np.lexsort((idx, m))                      # by memory
    ms, rs = m[om], rank[om]
    start = np.concatenate([[True], ms[1:] != ms[:-1]])
    group = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    group_best = np.minimum.reduceat(rs, first)    # best of each equal-memory group
    # Best of all points with strictly less memory, for each group (n: none).
    before = np.concatenate([[n], np.minimum.accumulate(group_best)[:-1]])
    ti = t[om]
    cand_before = before[group]
    ok_b = cand_before < n
    ok_b[ok_b] = t[pref[cand_before[ok_b]]] <= ti[ok_b]
    cand_group = group_best[group]
    ok_g = t[pref[cand_group]] < ti
    best = np.where(ok_b, cand_before, n)
    best = np.where(ok_g & (cand_group < best), cand_group, best)
    has = best < n
    out[om[has]] = pref[best[has]]
    return out
