"""F0, the frontier of the blocks' extreme points (``_blocks.live_blocks``), has two ways
to be found: repeated minima (a pass over the blocks per point) and, when it has more
than ``F0_MINIMA`` points, one stable sort and a scan (``_f0_sorted``). Both must give
the same points and radii, ties included. (End to end, the hard chains of
``test_frontier_differential`` have cells with richer F0s and check the merges.)"""

import numpy as np
import pytest

from frontier._blocks import F0_MINIMA, _f0_minima, _f0_sorted


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


@pytest.mark.parametrize("exact", [True, False])
def test_sorted_f0_equals_repeated_minima_with_ties(exact):
    rng = np.random.default_rng(5)
    sizes = 0
    for trial in range(300):
        n = int(rng.integers(1, 80))
        w = _corners(rng, n, int(rng.integers(2, 60)))
        cols = int(rng.choice([4, 256]))          # also F0 cut to its fastest points
        ref, got = np.zeros((3, cols)), np.zeros((3, cols))
        nf = _f0_minima(w, n, ref, cols + 1, exact)
        assert nf >= 1
        assert _f0_sorted(w, n, got, exact) == nf, trial
        assert np.array_equal(got[:, :nf], ref[:, :nf]), trial
        assert np.all(np.diff(got[0, :nf]) > 0) and np.all(np.diff(got[1, :nf]) < 0)
        sizes = max(sizes, nf)
        if nf > F0_MINIMA:
            assert _f0_minima(w, n, np.zeros((3, cols)), F0_MINIMA, exact) == -1
    assert sizes > F0_MINIMA                      # the sorted path was compared
