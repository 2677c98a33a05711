"""Busy time, exposed network and the critical path, by hand."""

import numpy as np
import pytest

from tensoropt.simulator import TaskGraph, critical_path, simulate, summarize
from tensoropt.simulator.result import union_length_ps

US = 1e-6


def _overlap_graph(collective_us):
    g = TaskGraph(["compute:0", "nic:m0"])
    g.add_task("f", "compute", "compute:0", 2 * US)
    g.add_task("b", "compute", "compute:0", 2 * US)
    g.add_task("ar", "collective", "nic:m0", collective_us * US)
    g.add_task("step", "update", "compute:0", 1 * US)
    for a, c in (("f", "b"), ("f", "ar"), ("b", "step"), ("ar", "step")):
        g.add_dependency(a, c)
    return g


def test_exposed_network_is_the_collective_time_compute_does_not_hide():
    r = summarize(simulate(_overlap_graph(5)))         # ar 2-7 us, b 2-4 us
    (rank,) = r.ranks
    assert rank.compute_s == pytest.approx(4 * US)
    assert rank.network_s == pytest.approx(5 * US)
    assert rank.exposed_network_s == pytest.approx(3 * US)
    assert rank.busy_s_by_kind == pytest.approx({"compute": 4 * US, "collective": 5 * US,
                                                  "update": 1 * US})
    assert r.makespan_s == pytest.approx(8 * US)
    assert r.exposed_network_s == pytest.approx(3 * US)
    hidden = summarize(simulate(_overlap_graph(1)))
    assert hidden.exposed_network_s == 0
    with_update = summarize(simulate(_overlap_graph(5)),
                            compute_kinds=("compute", "update"))
    assert with_update.compute_s == pytest.approx(5 * US)
    with pytest.raises(ValueError, match="both compute and network"):
        summarize(simulate(_overlap_graph(1)), network_kinds=("collective", "compute"))


def test_critical_path_names_what_each_step_waited_for():
    path = critical_path(simulate(_overlap_graph(5)))
    assert [(s.name, s.bound_by) for s in path] == \
        [("f", "start"), ("ar", "dependency"), ("step", "dependency")]
    g = TaskGraph(["compute:0"])
    g.add_task("a", "compute", "compute:0", 3 * US)
    g.add_task("b", "compute", "compute:0", 1 * US)
    path = critical_path(simulate(g))
    assert [(s.name, s.bound_by) for s in path] == [("a", "start"), ("b", "compute:0")]
    assert path[-1].end_s == pytest.approx(4 * US)


def test_critical_path_is_a_chain_from_zero_to_the_makespan():
    rng = np.random.default_rng(5)
    for _ in range(20):
        g = TaskGraph(["r:0", "r:1"])
        n = 25
        for i in range(n):
            g.add_task(f"t{i}", "compute", [f"r:{int(rng.integers(2))}"],
                       int(rng.integers(0, 4)) * US)
        for _ in range(30):
            a, b = sorted(rng.choice(n, 2, replace=False))
            g.add_dependency(f"t{a}", f"t{b}")
        t = simulate(g)
        path = critical_path(t)
        assert path[0].start_s == 0 and path[-1].end_s == pytest.approx(t.makespan_s)
        for prev, cur in zip(path, path[1:]):
            assert prev.end_s == cur.start_s


def test_union_length_matches_a_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(100):
        s = rng.integers(0, 30, 12)
        e = s + rng.integers(0, 8, 12)
        covered = np.zeros(40, dtype=bool)
        for a, b in zip(s, e):
            covered[a:b] = True
        assert union_length_ps(s, e) == covered.sum()


def test_a_collective_waiting_for_its_cycle_is_busy_from_ready_and_on_the_critical_path():
    us = 1e-6
    g = TaskGraph(["compute:0", "chain:0"], cycles={"chain:0": 10 * us})
    g.add_task("x", "compute", ["compute:0"], 4 * us)
    g.add_task("c", "collective", ["chain:0"], 3 * us)        # ready at 4, starts at 10
    g.add_task("y", "compute", ["compute:0"], 1 * us)
    g.add_dependency("x", "c")
    g.add_dependency("c", "y")
    r = summarize(simulate(g))
    assert r.makespan_s == pytest.approx(14 * us)
    assert r.network_s == pytest.approx(9 * us)               # 4 .. 13: waiting inside
    assert r.compute_s == pytest.approx(5 * us)
    assert r.exposed_network_s == pytest.approx(9 * us)
    path = [(s.name, s.bound_by) for s in r.critical_path]
    assert path == [("x", "start"), ("c", "chain:0 cycle"), ("y", "dependency")]
