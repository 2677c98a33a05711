"""Test tables for the merge kernels (shared by test_frontier_leap and test_frontier_caps):
cells on near-parallel staircases, and every candidate of a COMBINE's output cell."""

import numpy as np

from frontier._table import IDX, Table


def staircases(rng, cells, n, radius, spread):
    """Cells of about n points on near-parallel staircases (shifted copies of one curve
    plus noise), so streams run just above one another."""
    base_m = np.sort(rng.random(n)) * 100
    base_t = np.sort(rng.random(n))[::-1] * 100
    mems, times, off = [], [], [0]
    for _ in range(cells):
        m = base_m + rng.random() * spread + rng.random(n) * 0.3
        t = base_t + rng.random() * spread + rng.random(n) * 0.3
        o = np.lexsort((t, m))
        m, t = m[o], t[o]
        keep = t < np.minimum.accumulate(np.r_[np.inf, t[:-1]])
        mems.append(m[keep])
        times.append(t[keep])
        off.append(off[-1] + int(keep.sum()))
    mem, time = np.concatenate(mems), np.concatenate(times)
    rad = None if radius == 0 else rng.random(len(mem)) * radius
    return Table(mem, time, np.array(off, dtype=IDX), rad)


def candidates(a, b, K, P, w, p):
    out = []
    for k in range(K):
        ca, cb = w * K + k, k * P + p
        for i in range(a.off[ca], a.off[ca + 1]):
            for j in range(b.off[cb], b.off[cb + 1]):
                out.append((a.mem[i] + b.mem[j], a.time[i] + b.time[j],
                            a.radii()[i] + b.radii()[j]))
    return np.array(out)
