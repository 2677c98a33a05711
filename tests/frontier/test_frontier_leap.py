"""The merge's leader leap (``_kernels._leap``): a stream's next candidates that a point
of the stream that last made a kept point (the leader) stands for are left out. Exact,
they are dominated, so the frontier is that of every candidate; with radii, the leader's
point must also cover their radii, or the exact points they stand for would be lost.
Checked on COMBINEs of staircases that run side by side (where the leap acts) with
random radii: every candidate is covered by an output point of no more memory within
that point's radius."""

import numpy as np
import pytest

from frontier._table import IDX, Table
from frontier._values import Shape, combine


def _staircases(rng, cells, n, radius, spread):
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


def _candidates(a, b, K, P, w, p):
    out = []
    for k in range(K):
        ca, cb = w * K + k, k * P + p
        for i in range(a.off[ca], a.off[ca + 1]):
            for j in range(b.off[cb], b.off[cb + 1]):
                out.append((a.mem[i] + b.mem[j], a.time[i] + b.time[j],
                            a.radii()[i] + b.radii()[j]))
    return np.array(out)


@pytest.mark.parametrize("radius", [0.0, 0.5, 3.0])
def test_every_candidate_is_covered_within_a_radius(radius):
    rng = np.random.default_rng(21)
    W, K, P = 2, 10, 3
    for _ in range(6):
        a = _staircases(rng, W * K, 80, radius, 2.0)
        b = _staircases(rng, K * P, 3, 0.0, 0.5)
        t, ia, ib, kk = combine(a, b, Shape(W, K, P))
        r = t.radii()
        assert np.array_equal(t.mem, a.mem[ia] + b.mem[ib])
        for w in range(W):
            for p in range(P):
                c = w * P + p
                om, ot, orr = t.mem[t.off[c]:t.off[c + 1]], t.time[t.off[c]:t.off[c + 1]], \
                    r[t.off[c]:t.off[c + 1]]
                cand = _candidates(a, b, K, P, w, p)
                if radius == 0.0:                 # exact: the frontier of the candidates
                    o = np.lexsort((cand[:, 1], cand[:, 0]))
                    m, tt = cand[o, 0], cand[o, 1]
                    keep = tt < np.minimum.accumulate(np.r_[np.inf, tt[:-1]])
                    assert np.array_equal(om, m[keep]) and np.array_equal(ot, tt[keep])
                    continue
                x = np.searchsorted(om, cand[:, 0], side="right") - 1
                assert np.all(x >= 0)
                low = np.minimum.accumulate(ot - orr)[x]   # any point of no more memory
                assert np.all(low <= cand[:, 1] - cand[:, 2] + 1e-9), \
                    "a candidate's exact points are no longer stood for"
