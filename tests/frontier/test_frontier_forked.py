"""Heuristic rules tracked at once (``track`` with threads >= 2): the other rules run in
forked children (``frontier._forked``), and the answer must be the one the rules give
one after another, whatever becomes of the children."""

import importlib
import os
import signal

import numpy as np
import pytest

from frontier import track
from frontier._forked import ForkedRun, ForkedRunFailed
from frontier.synthetic import random_graph
from tests.frontier.test_frontier_heuristic import _mask_graph

track_module = importlib.import_module("frontier.track")
RULES = ["min_memory", "min_time"]


def _same(a, b):
    assert a.points == b.points
    np.testing.assert_array_equal(a.node_configs, b.node_configs)
    np.testing.assert_array_equal(a.edge_alternatives, b.edge_alternatives)
    np.testing.assert_array_equal(a.radii, b.radii)
    assert [r[:2] for r in a.stats.heuristic_runs] == [r[:2] for r in b.stats.heuristic_runs]


# ------------------------------------------------------------------ the forked run itself
def test_a_forked_run_hands_back_what_it_returned():
    parent = os.getpid()
    child = ForkedRun(lambda: (os.getpid() != parent, np.arange(5)))
    forked, values = child.result()
    assert forked
    assert values.tolist() == [0, 1, 2, 3, 4]


def test_a_forked_run_that_raises_names_the_error():
    def fails():
        raise ValueError("no such rule")

    with pytest.raises(ForkedRunFailed, match="the test run: ValueError: no such rule") as err:
        ForkedRun(fails, label="the test run").result()
    assert err.value.ended is None
    assert "in fails" in err.value.child_traceback


def test_a_forked_run_killed_by_a_signal_says_so():
    child = ForkedRun(lambda: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(ForkedRunFailed, match="signal 9 and no result"):
        child.result()


# ------------------------------------------------------------------ track
@pytest.mark.parametrize("epsilon", [None, 0.1])
def test_rules_at_once_give_the_frontier_of_rules_in_turn(epsilon):
    for seed in range(4):
        g = _mask_graph(seed)
        in_turn = track(g, heuristic=RULES, threads=1, epsilon=epsilon)
        at_once = track(g, heuristic=RULES, threads=2, epsilon=epsilon)
        assert in_turn.stats.heuristic_runs, "the mask graphs need heuristic elimination"
        _same(at_once, in_turn)
        assert at_once.stats.threads == 2
        assert at_once.stats.total_s > 0


def test_a_graph_without_heuristic_elimination_stops_the_other_rules():
    g = random_graph(np.random.default_rng(3), "series_parallel")
    at_once = track(g, heuristic=RULES, threads=2)
    assert at_once.stats.heuristic_runs == ()
    assert at_once.points == track(g, heuristic=RULES, threads=1).points


def test_a_child_that_dies_is_tracked_again_here_with_a_warning(monkeypatch):
    parent = os.getpid()
    real = track_module._track_once

    def dies_in_the_child(*args):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)      # as the out-of-memory killer would
        return real(*args)

    g = _mask_graph(1)
    expected = track(g, heuristic=RULES, threads=1)
    monkeypatch.setattr(track_module, "_track_once", dies_in_the_child)
    with pytest.warns(RuntimeWarning, match=r"'min_time' run: .*signal 9.*tracking it again"):
        res = track(g, heuristic=RULES, threads=2)
    _same(res, expected)


def test_runs_at_once_share_one_memo_budget(monkeypatch):
    # each run's memo takes a share of the memory available; two at once take half each
    seen = []
    real = track_module._track_once

    def records_the_budget(*args):
        seen.append(args[-1])
        return real(*args)

    monkeypatch.setattr(track_module, "memo_budget", lambda: 64 * 2**20)
    monkeypatch.setattr(track_module, "_track_once", records_the_budget)
    track(_mask_graph(0), heuristic=RULES, threads=2)
    assert seen == [32 * 2**20]          # this process's run; the child's is the same


def test_a_child_is_the_out_of_memory_killers_first_choice():
    # killed for memory, a child's rule is tracked again; a killed search is lost
    def score():
        with open("/proc/self/oom_score_adj") as f:
            return int(f.read())

    if not os.path.exists("/proc/self/oom_score_adj"):
        pytest.skip("no /proc/self/oom_score_adj on this platform")
    from frontier._forked import OOM_SCORE_ADJ
    assert ForkedRun(score).result() == OOM_SCORE_ADJ == 1000
    assert score() < OOM_SCORE_ADJ
