"""The event loop on graphs worked out by hand, bad input, and a naive reference."""

import numpy as np
import pytest

from tensoropt.simulator import PS_PER_S, TaskGraph, simulate

US = 1e-6


def _g(*resources):
    return TaskGraph(resources=resources or ["compute:0"])


def _times(t, name):
    i = t.graph.index[name]
    return int(t.start_ps[i]), int(t.end_ps[i])


def _us(x):
    return int(round(x * 1e6))


def test_chain_on_one_resource_takes_the_sum_of_durations():
    g = _g()
    durs = [3.5, 1.25, 7.0, 0.0, 2.0]
    for i, d in enumerate(durs):
        g.add_task(f"t{i}", "compute", ["compute:0"], d * US)
        if i:
            g.add_dependency(f"t{i - 1}", f"t{i}")
    t = simulate(g)
    assert t.makespan_ps == round(sum(durs) * US * PS_PER_S)
    assert t.makespan_s == pytest.approx(sum(durs) * US)
    assert [_times(t, f"t{i}")[0] for i in range(5)] == \
        [round(sum(durs[:i]) * US * PS_PER_S) for i in range(5)]


def test_independent_tasks_overlap_on_two_resources_and_serialize_on_one():
    two = _g("compute:0", "compute:1")
    two.add_task("a", "compute", ["compute:0"], 3 * US)
    two.add_task("b", "compute", ["compute:1"], 5 * US)
    t = simulate(two)
    assert t.makespan_s == pytest.approx(5 * US)
    assert _times(t, "a")[0] == _times(t, "b")[0] == 0
    one = _g()
    one.add_task("a", "compute", ["compute:0"], 3 * US)
    one.add_task("b", "compute", ["compute:0"], 5 * US)
    t = simulate(one)
    assert t.makespan_s == pytest.approx(8 * US)
    assert _times(t, "b")[0] == _times(t, "a")[1]        # a was added first


def test_collectives_serialize_on_one_nic_and_overlap_on_two():
    for nics, expected_us in ((["nic:m0", "nic:m0"], 10), (["nic:m0", "nic:m1"], 6)):
        g = _g("nic:m0", "nic:m1")
        g.add_task("ar0", "collective", [nics[0]], 4 * US)
        g.add_task("ar1", "collective", [nics[1]], 6 * US)
        assert simulate(g).makespan_s == pytest.approx(expected_us * US)


def test_a_task_holds_all_its_resources_at_once():
    g = _g("chain:0", "nic:m0", "nic:m1")
    g.add_task("c0", "collective", ["chain:0", "nic:m0"], 4 * US)
    g.add_task("c1", "collective", ["nic:m0"], 2 * US)      # waits for nic:m0
    g.add_task("c2", "collective", ["chain:0", "nic:m1"], 3 * US)   # waits for chain:0
    t = simulate(g)
    assert _times(t, "c1") == (4 * 10**6, 6 * 10**6)
    assert _times(t, "c2") == (4 * 10**6, 7 * 10**6)


def test_fifo_by_ready_time_not_by_insertion():
    g = _g("compute:0", "a:0", "b:0")
    g.add_task("x", "compute", ["compute:0"], 3 * US)
    g.add_task("late_pred", "other", ["a:0"], 2 * US)
    g.add_task("early_pred", "other", ["b:0"], 1 * US)
    g.add_task("y", "compute", ["compute:0"], 1 * US)      # ready at 2
    g.add_task("z", "compute", ["compute:0"], 1 * US)      # ready at 1: runs before y
    g.add_dependency("late_pred", "y")
    g.add_dependency("early_pred", "z")
    t = simulate(g)
    assert [_us(x) for x in (t.start_s[t.graph.index["z"]], t.start_s[t.graph.index["y"]])] \
        == [3, 4]
    assert [t.graph.names[i] for i in t.order if t.graph.names[i] in "xyz"] == ["x", "z", "y"]


@pytest.mark.parametrize("first", ["p", "q"])
def test_ties_at_the_same_ready_time_go_by_insertion_order(first):
    g = _g()
    second = "q" if first == "p" else "p"
    g.add_task(first, "compute", ["compute:0"], 2 * US)
    g.add_task(second, "compute", ["compute:0"], 2 * US)
    t = simulate(g)
    assert _times(t, first) == (0, 2 * 10**6)
    assert _times(t, second) == (2 * 10**6, 4 * 10**6)


def test_no_back_filling_an_earlier_ready_task_keeps_its_place():
    g = _g("r:1", "r:2", "d:0")
    g.add_task("busy", "compute", ["r:2"], 10 * US)
    g.add_task("wide", "compute", ["r:1", "r:2"], 1 * US)   # ready 0, waits for r:2
    g.add_task("delay", "other", ["d:0"], 1 * US)
    g.add_task("narrow", "compute", ["r:1"], 1 * US)       # ready 1, r:1 idle until 10
    g.add_dependency("delay", "narrow")
    t = simulate(g)
    assert _times(t, "wide") == (10 * 10**6, 11 * 10**6)
    assert _times(t, "narrow") == (11 * 10**6, 12 * 10**6)


def test_a_task_on_no_resource_is_a_pure_delay():
    g = _g()
    g.add_task("a", "compute", ["compute:0"], 2 * US)
    g.add_task("wait", "delay", [], 5 * US)
    g.add_task("b", "compute", ["compute:0"], 1 * US)
    g.add_dependency("a", "wait")
    g.add_dependency("wait", "b")
    g.add_task("c", "compute", ["compute:0"], 3 * US)      # fills the gap: ready at 0
    t = simulate(g)
    assert _times(t, "c") == (2 * 10**6, 5 * 10**6)
    assert _times(t, "b") == (7 * 10**6, 8 * 10**6)


def test_a_cycle_raises_naming_it():
    g = _g()
    for n in "abcd":
        g.add_task(n, "compute", ["compute:0"], US)
    g.add_dependency("d", "a")
    g.add_dependency("a", "b")
    g.add_dependency("b", "c")
    g.add_dependency("c", "a")
    with pytest.raises(ValueError, match=r"cycle: (a -> b -> c -> a|b -> c -> a -> b|"
                                         r"c -> a -> b -> c)"):
        simulate(g)
    with pytest.raises(ValueError, match="x -> x"):
        g.add_task("x", "compute", [], US)
        g.add_dependency("x", "x")


def test_bad_input_is_named():
    g = _g("compute:0")
    with pytest.raises(ValueError, match="unknown resource 'nic:m9'.*declared"):
        g.add_task("a", "collective", ["nic:m9"], US)
    with pytest.raises(ValueError, match="'<kind>:<id>'"):
        TaskGraph(resources=["gpu0"])
    g.add_task("a", "compute", ["compute:0"], US)
    with pytest.raises(ValueError, match="'a' is already"):
        g.add_task("a", "compute", ["compute:0"], US)
    with pytest.raises(ValueError, match="duration_s"):
        g.add_task("b", "compute", ["compute:0"], -1.0)
    with pytest.raises(ValueError, match="duration_s"):
        g.add_task("b", "compute", ["compute:0"], float("nan"))
    with pytest.raises(ValueError, match="twice"):
        g.add_task("b", "compute", ["compute:0", "compute:0"], US)
    with pytest.raises(ValueError, match="unknown task 'zz'"):
        g.add_dependency("a", "zz")
    with pytest.raises(ValueError, match="rank"):
        g.add_task("b", "compute", ["compute:0"], US, rank=-1)


def naive_simulate(cg):
    """The scheduling rule, written the slow and obvious way."""
    n = cg.num_tasks
    preds = [[] for _ in range(n)]
    for a, b in zip(cg.edge_src.tolist(), cg.edge_dst.tolist()):
        preds[b].append(a)
    start, end = [None] * n, [None] * n
    free = [0] * len(cg.resources)
    for _ in range(n):
        ready = [(max((end[p] for p in preds[t]), default=0), t) for t in range(n)
                 if start[t] is None and all(end[p] is not None for p in preds[t])]
        r, t = min(ready)
        res = cg.res_idx[cg.res_ptr[t]:cg.res_ptr[t + 1]].tolist()
        start[t] = max([r] + [free[q] for q in res])
        end[t] = start[t] + int(cg.duration_ps[t])
        for q in res:
            free[q] = end[t]
    return start, end


def random_graph(rng, n, n_res=3):
    g = TaskGraph([f"r:{i}" for i in range(n_res)])
    for i in range(n):
        res = rng.choice(n_res, int(rng.integers(0, 3)), replace=False)
        g.add_task(f"t{i}", "compute", [f"r:{q}" for q in res], int(rng.integers(0, 4)) * US)
    for _ in range(2 * n):
        a, b = sorted(rng.choice(n, 2, replace=False))
        g.add_dependency(f"t{a}", f"t{b}")
    return g


@pytest.mark.parametrize("seed", range(40))
def test_matches_a_naive_reference_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    g = random_graph(rng, int(rng.integers(2, 40)))
    t = simulate(g)
    start, end = naive_simulate(t.graph)
    assert t.start_ps.tolist() == start
    assert t.end_ps.tolist() == end
    assert t.makespan_ps == max(end)
    # Ready times leave the queue in order (what delta simulation relies on).
    assert np.all(np.diff(t.ready_ps[t.order]) >= 0)


# -- cycled resources (horovod's background loop) -------------------------------------------
def _cycled(cycle_us=10):
    return TaskGraph(["compute:0", "chain:0"], cycles={"chain:0": cycle_us * US})


def _in_order(g, *names):
    for a, b in zip(names, names[1:]):
        g.add_dependency(a, b)


def test_a_task_on_a_cycled_resource_starts_a_cycle_after_the_last_end_or_after_it_is_issued():
    g = _cycled()
    g.add_task("c0", "collective", ["chain:0"], 2 * US)      # ready at 0: the first cycle, 10
    g.add_task("c1", "collective", ["chain:0"], 3 * US)      # back to back: 12 + 10
    g.add_task("x", "compute", ["compute:0"], 15 * US)
    g.add_task("c2", "collective", ["chain:0"], 1 * US)      # ready at 25 + 15 = 40
    _in_order(g, "c0", "c1", "x", "c2")
    t = simulate(g)
    assert _times(t, "c0") == (10 * 10**6, 12 * 10**6)
    assert _times(t, "c1") == (22 * 10**6, 25 * 10**6)
    assert _times(t, "x") == (25 * 10**6, 40 * 10**6)
    # issued 15 after c1's end, a whole cycle after it: the loop idled; a cycle later, 50
    assert _times(t, "c2") == (50 * 10**6, 51 * 10**6)


def test_a_task_issued_within_the_cycle_after_the_last_end_starts_on_it_and_others_have_no_cycle():
    g = _cycled()
    g.add_task("c0", "collective", ["chain:0"], 2 * US)      # 10 .. 12
    g.add_task("x", "compute", ["compute:0"], 7 * US)        # 12 .. 19, within c0's end + 10
    g.add_task("c1", "collective", ["chain:0"], 1 * US)      # on that cycle: 22
    g.add_task("y", "compute", ["compute:0"], 1 * US)         # after c1, no cycle: at once
    _in_order(g, "c0", "x", "c1", "y")
    t = simulate(g)
    assert _times(t, "c1") == (22 * 10**6, 23 * 10**6)
    assert _times(t, "y") == (23 * 10**6, 24 * 10**6)


def test_cycles_are_validated():
    with pytest.raises(ValueError, match="not declared"):
        TaskGraph(["chain:0"], cycles={"chain:1": 1e-3})
    with pytest.raises(ValueError, match="cycle_s"):
        TaskGraph(["chain:0"], cycles={"chain:0": -1.0})
    g = TaskGraph(["chain:0", "chain:1"], cycles={"chain:0": 1e-3, "chain:1": 1e-3})
    with pytest.raises(ValueError, match="two cycled resources"):
        g.add_task("c", "collective", ["chain:0", "chain:1"], 1e-3)
    g.add_task("c", "collective", ["chain:0"], 1e-3)
    with pytest.raises(ValueError, match="already held by a task"):
        g.add_resource("chain:0", 2e-3)
