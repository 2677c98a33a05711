"""``python -m tensoropt.bench approximation``: its error measure, and a run on a tiny model."""

import numpy as np
import pytest

from tensoropt.bench import approximation


def test_actual_errors_takes_the_fastest_plan_with_no_more_memory():
    exact = [(1.0, 9.0), (2.0, 7.0), (3.0, 4.0)]
    approx = [(1.0, 9.5), (2.5, 5.0)]
    assert approximation.actual_errors(exact, approx) == pytest.approx([0.5, 2.5, 1.0])
    assert np.all(approximation.actual_errors(exact, exact) == 0)
    assert approximation.actual_errors([(0.5, 1.0)], approx)[0] == np.inf


def test_bench_reports_every_approximation_within_its_bound(capsys):
    assert approximation.main(["--model", "transformer", "--size", "tiny", "--devices", "4",
                               "--epsilon", "0.1", "--max-candidates", "50"]) == 0
    out = capsys.readouterr().out
    assert "exact" in out and "epsilon 0.1" in out and "max_candidates 50" in out
    assert "every approximation within its bound" in out
