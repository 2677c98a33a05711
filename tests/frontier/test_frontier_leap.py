"""The merge's leader leap (``_kernels._leap``): a stream's next candidates that a point
of the stream that last made a kept point (the leader) stands for are left out. Exact,
they are dominated, so the frontier is that of every candidate; with radii, the leader's
point must also cover their radii, or the exact points they stand for would be lost.
Checked on COMBINEs of staircases that run side by side (where the leap acts) with
random radii: every candidate is covered by an output point of no more memory within
that point's radius."""

import importlib.util
import pathlib

import numpy as np
import pytest

from frontier._values import Shape, combine


_HELPERS = importlib.util.spec_from_file_location("frontier_staircases",
                                                  pathlib.Path(__file__).with_name("staircases.py"))
_staircase_module = importlib.util.module_from_spec(_HELPERS)
_HELPERS.loader.exec_module(_staircase_module)
_staircases, _candidates = _staircase_module.staircases, _staircase_module.candidates


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
