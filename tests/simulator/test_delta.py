"""Delta simulation == full simulation, on seeded sequences of random changes.

The reference is the plain ``TaskGraph`` of the same version vector (fragments added in
key order), simulated from scratch: a separate path from the fragment layout code.
"""

import numpy as np
import pytest

from tensoropt.simulator import DeltaSimulator, Fragment, TaskGraph, memory_timelines, simulate
from tensoropt.simulator.synthetic import random_fragments, training_step

US = 1e-6


def _memory(t):
    return [(m.rank, m.peak_bytes, m.peak_time_s, m.live_at_peak, m.live_bytes.tolist(),
             m.times_s.tolist()) for m in memory_timelines(t)]


def _assert_same(t, ref):
    assert t.graph.names == ref.graph.names
    assert t.start_ps.tolist() == ref.start_ps.tolist()
    assert t.end_ps.tolist() == ref.end_ps.tolist()
    assert t.makespan_ps == ref.makespan_ps
    assert _memory(t) == _memory(ref)


def _walk(spec, seed, steps, **kw):
    """Yields (simulator, versions, delta timeline) along a random walk that changes 1-3
    keys per step and sometimes returns to an earlier vector."""
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources, cycles=spec.cycles, **kw)
    rng = np.random.default_rng(seed)
    v = spec.random_versions(rng)
    history = [v.copy()]
    for step in range(steps):
        if step and rng.random() < .2:
            v = history[int(rng.integers(len(history)))].copy()
            k = int(rng.integers(len(v)))
            v[k] = rng.integers(spec.num_versions[k])
        else:
            for k in rng.choice(len(v), int(rng.integers(1, 4)), replace=False):
                v[k] = rng.integers(spec.num_versions[k])
        history.append(v.copy())
        yield sim, v, sim.simulate(v)


MODES = {"sparse": dict(min_span=1), "dense": dict(min_span=1, dense_after=0),
         "switch": dict(min_span=1, dense_after=3), "default": {}}


@pytest.mark.parametrize("mode", list(MODES))
def test_delta_equals_full_on_random_fragments(mode):
    realigned = mirrored = deltas = 0
    for seed in range(40):
        spec = random_fragments(seed, n_keys=3 + seed % 9, max_tasks=2 + seed % 7,
                                max_delay_us=(3, 12, 40)[seed % 3],
                                cycle_us=(0, 2, 5)[seed // 3 % 3])
        for sim, v, t in _walk(spec, seed, 12, window=3, **MODES[mode]):
            _assert_same(t, simulate(sim.task_graph(v)))
            deltas += t.stats.mode == "delta"
            realigned += t.stats.segments >= 2
            mirrored += t.stats.mirrored_tasks
    # The walk exercised what it is meant to: deltas, copies, re-alignment mid-run.
    assert deltas > 300 and mirrored > 0
    if mode != "default":
        assert realigned > 50


@pytest.mark.parametrize("cycle_us", [0, 150])
def test_delta_equals_full_on_a_training_step_and_reuses_most_of_it(cycle_us):
    spec = training_step(40, seed=3, cycle_us=cycle_us)
    ops = [k for k, key in enumerate(spec.keys) if key.startswith("op")]
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources, cycles=spec.cycles, min_span=16)
    rng = np.random.default_rng(0)
    v = spec.random_versions(rng)
    sim.simulate(v)
    loop = total = 0
    for _ in range(25):
        k = int(rng.choice(ops))
        v[k] = (v[k] + 1) % spec.num_versions[k]
        t = sim.simulate(v)
        full = sim.simulate_full(v)
        _assert_same(t, full)
        assert t.stats.mode == "delta" and t.stats.changed_keys == 1
        loop, total = loop + t.stats.loop_tasks, total + t.graph.num_tasks
    _assert_same(full, simulate(sim.task_graph(v)))
    assert loop < 0.25 * total, "a one-op change should re-time a small part of the step"


def test_a_full_simulation_assembles_its_graph_from_scratch(monkeypatch):
    # The reference owes nothing to the window (so checking a delta against it checks the
    # splice too), and both kinds of run say how long their graph took.
    from tensoropt.simulator import delta as delta_module

    spec = training_step(10, seed=1)
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources)
    v = spec.random_versions(np.random.default_rng(0))
    sim.simulate(v)
    v[3] = (v[3] + 1) % spec.num_versions[3]
    bases = []
    real = delta_module.splice
    monkeypatch.setattr(delta_module, "splice",
                        lambda old, *a: bases.append(old.graph is None) or real(old, *a))
    sim.simulate(v)
    graph_s, sim_s = sim.last_seconds
    assert bases == [False] and graph_s > 0 and sim_s > 0
    sim.simulate_full(v)
    assert bases == [False, True] and min(sim.last_seconds) > 0


def test_prepare_builds_each_fragment_of_a_vector_once_before_any_run():
    spec = training_step(10, seed=1)
    calls = []
    sim = DeltaSimulator(spec.keys, lambda k, x: calls.append((k, x)) or spec.build(k, x),
                         spec.resources)
    v = spec.random_versions(np.random.default_rng(2))
    sim.prepare(v)
    assert calls == list(zip(spec.keys, v.tolist()))
    sim.simulate(v)
    sim.simulate_full(v)
    assert len(calls) == len(spec.keys)


def test_the_nearest_recent_state_is_the_base():
    spec = random_fragments(7, n_keys=8)
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources, window=2)
    v0 = np.zeros(8, dtype=int)
    far = v0.copy()
    far[:5] = 1
    sim.simulate(v0)
    sim.simulate(far)                          # the most recent, 5 keys away from v0
    near = v0.copy()
    near[7] = 2
    t = sim.simulate(near)
    assert t.stats.mode == "delta" and t.stats.changed_keys == 1
    assert sim.simulate(near) is t             # already in the window
    farther = far.copy()
    farther[6] = 2
    sim.simulate(farther)                      # window 2: v0 drops out
    t = sim.simulate(v0)
    assert t.stats.changed_keys == 1           # from `near`, not from scratch
    _assert_same(t, simulate(sim.task_graph(v0)))


def _two_keys_with_cycle_in_a1():
    def build(key, version):
        f = Fragment(["compute:0"])
        if key == "a":
            f.add_task("a/x", "compute", "compute:0", 2 * US)
            f.add_dependency("a/x", "b/in")
            if version == 1:
                f.add_dependency("b/out", "a/x")
        else:
            f.add_task("b/in", "compute", "compute:0", US * (version + 1))
            f.add_task("b/out", "compute", "compute:0", US)
            f.add_dependency("b/in", "b/out")
        return f
    return DeltaSimulator(["a", "b"], build, ["compute:0"])


def test_a_reference_to_a_task_that_is_gone_is_named():
    def build(key, version):
        f = Fragment(["compute:0"])
        if key == "a":
            f.add_task("a/x", "compute", "compute:0", US)
            f.add_dependency("b/gone" if version == 1 else "b/out", "a/x")
        else:
            f.add_task("b/in", "compute", "compute:0", US)
            if version == 0:
                f.add_task("b/out", "compute", "compute:0", US)
        return f
    sim = DeltaSimulator(["a", "b"], build, ["compute:0"])
    assert sim.simulate([0, 0]).makespan_s == pytest.approx(3 * US)
    # b drops a task that a (unchanged) depends on: delta and full both name it.
    for run in (sim.simulate, sim.simulate_full):
        with pytest.raises(ValueError, match="'b/out', referenced by the fragment of key "
                                             "'a'.*'b' no longer defines it|'b/out'.*key 'a'"):
            run([0, 1])
    # a (changed) now depends on a task no key defines.
    with pytest.raises(ValueError, match="'b/gone', referenced by the fragment of key 'a'"):
        sim.simulate([1, 0])


def test_a_cycle_made_by_a_version_is_named_by_delta_and_full():
    sim = _two_keys_with_cycle_in_a1()
    sim.simulate([0, 0])
    for run in (sim.simulate, sim.simulate_full):
        with pytest.raises(ValueError, match=r"cycle: (a/x -> b/in -> b/out -> a/x|"
                                             r"b/in -> b/out -> a/x -> b/in|"
                                             r"b/out -> a/x -> b/in -> b/out)"):
            run([1, 0])


def test_bad_fragments_and_versions_are_named():
    spec = random_fragments(1, n_keys=3)
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources)
    for bad, what in (([0, 0], "3 ints"), ([0, 0, -1], "'k2' is -1"),
                      ([0.5, 0, 0], "3 ints")):
        with pytest.raises(ValueError, match=what):
            sim.simulate(bad)

    def dup(key, version):
        f = Fragment(["compute:0"])
        f.add_task("same", "compute", "compute:0", US)
        return f
    with pytest.raises(ValueError, match="'same' is defined by key 'a' and by key 'b'"):
        DeltaSimulator(["a", "b"], dup, ["compute:0"]).simulate([0, 0])
    with pytest.raises(ValueError, match="must return a Fragment"):
        DeltaSimulator(["a"], lambda k, v: TaskGraph(["compute:0"]),
                       ["compute:0"]).simulate([0])

    def other_resource(key, version):
        f = Fragment(["gpu:7"])
        f.add_task("t", "compute", "gpu:7", US)
        return f
    with pytest.raises(ValueError, match="gpu:7"):
        DeltaSimulator(["a"], other_resource, ["compute:0"]).simulate([0])
    f = Fragment(["compute:0"])
    with pytest.raises(ValueError, match="must touch one of its own tasks"):
        f.add_dependency("x/elsewhere", "y/elsewhere")
    with pytest.raises(ValueError, match="window"):
        DeltaSimulator(["a"], dup, ["compute:0"], window=0)


def _delay_outlives(key, version):
    """A's delay y lasts 0 us (version 0) or 30 us (version 1); B's delay d follows it,
    and D waits for d and for C's chain of 16 two-us compute tasks (ends at 34 us)."""
    f = Fragment(["compute:0"])
    if key == "A":
        f.add_task("A/x", "compute", "compute:0", 2 * US)
        f.add_task("A/y", "delay", [], 30 * US * version)
    elif key == "B":
        f.add_task("B/d", "delay", [], 5 * US)
        f.add_dependency("A/y", "B/d")
    elif key == "C":
        for i in range(16):
            f.add_task(f"C/c{i}", "compute", "compute:0", 2 * US)
            f.add_dependency("A/x" if i == 0 else f"C/c{i - 1}", f"C/c{i}")
    else:
        f.add_task("D/b", "compute", "compute:0", 1 * US)
        f.add_dependency("B/d", "D/b")
        f.add_dependency("C/c15", "D/b")
    return f


@pytest.mark.parametrize("base,new,d_ready_us", [(0, 1, 35), (1, 0, 34)])
def test_a_delay_running_on_one_side_only_blocks_realignment(base, new, d_ready_us):
    # When the runs first look aligned (after C/c13, delta 0), B/d is still running in
    # one of them only; D/b's ready time depends on it.
    sim = DeltaSimulator(list("ABCD"), _delay_outlives, ["compute:0"], min_span=1)
    sim.simulate([base, 0, 0, 0])
    t = sim.simulate([new, 0, 0, 0])
    assert t.stats.mode == "delta"
    _assert_same(t, sim.simulate_full([new, 0, 0, 0]))
    i = t.graph.index["D/b"]
    assert int(t.ready_ps[i]) == d_ready_us * 10**6


def test_fragments_may_declare_resources_in_any_order():
    def build(key, version):
        f = Fragment(["nic:m0", "compute:0"] if key == "b" else ["compute:0"])
        f.add_task(f"{key}/t", "compute", "compute:0", (version + 1) * US)
        if key == "b":
            f.add_task("b/c", "collective", "nic:m0", 2 * US)
            f.add_dependency("a/t", "b/t")
        return f
    sim = DeltaSimulator(["a", "b"], build, ["compute:0", "nic:m0"])
    t = sim.simulate([1, 0])
    assert t.graph.task_resources(t.graph.index["b/c"]) == ("nic:m0",)
    assert t.makespan_s == pytest.approx(3 * US)
    _assert_same(t, simulate(sim.task_graph([1, 0])))


def test_simulate_full_can_join_the_window():
    spec = random_fragments(2, n_keys=5)
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources)
    v = np.array([0, 1, 2, 0, 1])
    full = sim.simulate_full(v, remember=True)
    assert full.stats.mode == "full" and full.stats.loop_tasks == full.graph.num_tasks
    assert sim.simulate(v) is full
    v[2] = 0
    assert sim.simulate(v).stats.changed_keys == 1


def _moved_early(key, version):
    """Key A's task A/x runs on its own resource, after the 40-task chain C (version 0) or
    at once (version 1); D/b waits for A/x and the chain's end. A/x is a boundary task
    (dirty, with a clean successor) that one run does at its start and the other at its
    end: as where a rebuild moves a tensor's producer from backward to forward."""
    f = Fragment(["compute:0", "nic:m0"])
    if key == "A":
        f.add_task("A/x", "collective", "nic:m0", 3 * US)
        if version == 0:
            f.add_dependency("C/c39", "A/x")
    elif key == "C":
        for i in range(40):
            f.add_task(f"C/c{i}", "compute", "compute:0", 2 * US)
            if i:
                f.add_dependency(f"C/c{i - 1}", f"C/c{i}")
    else:
        f.add_task("D/b", "compute", "compute:0", 1 * US)
        f.add_dependency("A/x", "D/b")
        f.add_dependency("C/c39", "D/b")
    return f


@pytest.mark.parametrize("base,new", [(0, 1), (1, 0)])
def test_a_boundary_task_done_in_one_run_only_does_not_block_realignment(base, new):
    # The chain is the same in both runs (shift 0), though A/x is done in one run only
    # for most of it: the delta copies the chain instead of looping over it.
    sim = DeltaSimulator(list("ACD"), _moved_early, ["compute:0", "nic:m0"], min_span=4)
    sim.simulate([base, 0, 0])
    t = sim.simulate([new, 0, 0])
    _assert_same(t, sim.simulate_full([new, 0, 0]))
    assert t.stats.mode == "delta"
    assert t.stats.mirrored_tasks >= 30, t.stats


def test_a_fragment_made_without_the_simulator_s_cycles_is_refused():
    def build(key, version):
        f = Fragment(["chain:0"])                    # not new_fragment(): no cycle on chain:0
        f.add_task(f"{key}/c", "collective", ["chain:0"], 1e-6)
        return f

    sim = DeltaSimulator(["a"], build, ["chain:0"], cycles={"chain:0": 1e-3})
    with pytest.raises(ValueError, match="make fragments with new_fragment"):
        sim.simulate([0])
