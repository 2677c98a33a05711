"""Plans, differentially: delta == full on random sequences of choices, representative ==
all ranks, the builder's collective order, the Chrome trace, check_frontier against brute
force, and errors that say how to fix them."""

import importlib.util
import itertools
import json
import pathlib
from types import SimpleNamespace

import numpy as np
import pytest

from tensoropt.execution import collective_schedule
from tensoropt.simulator import (PlanSimulator, SimOptions, check_frontier, chrome_trace,
                                 simulate_plan, summarize)
from tensoropt.simulator.memory import peak_memory_bytes

_HELPERS = importlib.util.spec_from_file_location(
    "sim_plan_models", pathlib.Path(__file__).with_name("plan_models.py"))
plan_models = importlib.util.module_from_spec(_HELPERS)
_HELPERS.loader.exec_module(plan_models)


def _same(a, b) -> bool:
    return (np.array_equal(a.start_ps, b.start_ps) and np.array_equal(a.end_ps, b.end_ps)
            and a.makespan_ps == b.makespan_ps and peak_memory_bytes(a) == peak_memory_bytes(b))


@pytest.mark.parametrize("name,order,seed,share", [("mlp", "chained", 0, 0.0), ("cnn", "free", 1, 0.0),
                                                   ("lstm", "chained", 2, 0.0), ("transformer", "chained", 3, 0.4),
                                                   ("cnn", "chained", 4, 1.0), ("lstm", "free", 5, 1.0)])
def test_delta_equals_full_on_random_sequences_of_configuration_and_reuse_changes(name, order, seed, share):
    graph, model, result = plan_models.parity_search(name)
    model.transfer_compute_share = share     # CPU ranks: transfers take compute:r's time too
    space = result.space
    sim = PlanSimulator(graph, model, plan_models.cluster(4, 2), SimOptions(collective_order=order),
                        window=4)
    rng = np.random.default_rng(seed)
    n_cfg = [len(space.configs[op]) for op in space.ops]
    nodes = np.array([rng.integers(n) for n in n_cfg])
    alts = rng.integers(0, 3, len(space.edges))
    mirrored = 0
    for _ in range(25):
        for _ in range(int(rng.integers(1, 4))):      # change 1-3 ops or edges
            if rng.random() < .6:
                k = int(rng.integers(len(nodes)))
                nodes[k] = rng.integers(n_cfg[k])
            else:
                alts[int(rng.integers(len(alts)))] = rng.integers(0, 3)
        v = sim.choice_versions(space, nodes, alts)
        delta = sim.simulate(v)
        assert _same(delta, sim.simulate_full(v))
        mirrored += delta.stats.mirrored_tasks
    assert mirrored > 0, "no delta copied anything from its base"


@pytest.mark.parametrize("order", ["chained", "free"])
def test_the_representative_rank_equals_every_rank(order):
    graph, model, result = plan_models.parity_search("cnn")
    cl = plan_models.cluster(4, 2)
    one = PlanSimulator(graph, model, cl, SimOptions(collective_order=order))
    every = PlanSimulator(graph, model, cl, SimOptions(collective_order=order, ranks="all"))
    for plan in plan_models.parity_plans(result, count=3):
        a = summarize(one.simulate_full(one.versions_for_plan(plan)))
        b = summarize(every.simulate_full(every.versions_for_plan(plan)))
        assert len(b.ranks) == 4
        assert a.makespan_s == b.makespan_s
        for r in b.ranks:
            assert r.memory.peak_bytes == a.peak_memory_bytes
            assert r.compute_s == a.compute_s and r.network_s == a.network_s
        times = b.timeline.times_by_name()
        for task, se in a.timeline.times_by_name().items():
            assert times[task + "#r0"] == se


def _collective_order(sim, plan):
    t = sim.simulate_full(sim.versions_for_plan(plan))
    g = t.graph
    return [g.names[i] for i in t.order.tolist() if g.kind(i) == "collective"]


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm"])
def test_the_collective_order_is_the_schedules_for_every_parity_plan(name):
    graph, model, result = plan_models.parity_search(name)
    sim = PlanSimulator(graph, model, plan_models.cluster(4))
    for plan in plan_models.parity_plans(result):
        assert _collective_order(sim, plan) == [c.name for c in collective_schedule(graph, plan)]


@pytest.mark.parametrize("name,count", [("mlp", 1), pytest.param("lstm", 3, marks=pytest.mark.slow)])
def test_the_collective_order_is_the_one_the_builder_issues(name, count):
    """The builder's issue order, read from a rank's TensorFlow graph (RecordingHorovod).
    (tests/execution/test_schedule.py shows the builder issues the schedule for every
    parity plan; the test above, that the simulator follows the schedule.)"""
    from tensoropt._tf import import_tensorflow
    from tensoropt.execution import PlanSharding
    from tensoropt.execution.recording_hvd import RecordingHorovod, issue_order
    from tensoropt.execution.lowering import lower_graph

    tf = import_tensorflow()
    graph, model, result = plan_models.parity_search(name)
    sim = PlanSimulator(graph, model, plan_models.cluster(4))
    for k, plan in enumerate(plan_models.parity_plans(result, count=count)):
        hvd = RecordingHorovod(tf, 4)
        lowered = lower_graph(graph, tf, PlanSharding(graph, plan, k % 4, hvd, hvd.process_sets()))
        assert _collective_order(sim, plan) == issue_order(lowered.tf_graph, hvd), f"{name} plan {k}"


def test_the_trace_of_a_plan_has_its_tasks_collectives_and_peak(tmp_path):
    graph, model, result = plan_models.parity_search("mlp")
    plan = result.plans[-1]
    r = simulate_plan(graph, plan, plan_models.cluster(4), model)
    chrome_trace(r, tmp_path / "step.json")
    events = json.loads((tmp_path / "step.json").read_text())["traceEvents"]
    spans = {e["name"]: e for e in events if e["ph"] == "X"}
    g = r.timeline.graph
    assert len(spans) == g.num_tasks
    for i in range(g.num_tasks):
        assert spans[g.names[i]]["ts"] == pytest.approx(r.timeline.start_ps[i] / 1e6)
    assert {c.name for c in collective_schedule(graph, plan)} <= set(spans)
    assert spans[f"{graph.operations[-1].name}/fwd"]["args"]["step"] == "forward"
    assert max(e["args"]["bytes"] for e in events if e["ph"] == "C") == r.peak_memory_bytes


def test_check_frontier_matches_brute_force():
    graph, model, result = plan_models.parity_search("mlp")
    limit = sorted(m for m, _ in result.plans.points)[len(result.plans) // 2]
    check = check_frontier(result, plan_models.cluster(4), memory_limit=limit, verify_every=3)
    n = len(result.plans)
    assert [r.index for r in check.rows] == list(range(n)) + [-1]
    assert check.delta_mismatches == () and check.verified >= n // 3
    rows = check.frontier_rows
    est_t, sim_t = [r.estimated_time_s for r in rows], [r.simulated_time_s for r in rows]
    est_m, sim_m = [r.estimated_memory_bytes for r in rows], [r.simulated_peak_bytes for r in rows]

    def tau(x, y):
        s = [np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i, j in itertools.combinations(range(n), 2)]
        tx = sum(x[i] == x[j] for i, j in itertools.combinations(range(n), 2))
        ty = sum(y[i] == y[j] for i, j in itertools.combinations(range(n), 2))
        pairs = n * (n - 1) / 2
        return sum(s) / np.sqrt((pairs - tx) * (pairs - ty))

    assert check.kendall_tau_time == pytest.approx(tau(est_t, sim_t))
    assert check.kendall_tau_memory == pytest.approx(tau(est_m, sim_m))
    brute = {i for i in range(n) if any(sim_m[j] <= sim_m[i] and sim_t[j] <= sim_t[i] and
                                        (sim_m[j], sim_t[j]) != (sim_m[i], sim_t[i]) for j in range(n))}
    assert {a for a, _ in check.dominated} == brute
    for a, b in check.dominated:
        assert sim_m[b] <= sim_m[a] and sim_t[b] <= sim_t[a]
    fits = [i for i in range(n) if sim_m[i] <= limit]
    best = min(fits, key=lambda i: (sim_t[i], sim_m[i]))
    mini = max(i for i, (m, _) in enumerate(result.plans.points) if m <= limit)
    assert check.mini_time_index == mini and check.simulator_choice_index == best
    assert check.mini_time_fits == (sim_m[mini] <= limit)
    assert check.regret == pytest.approx(sim_t[mini] / sim_t[best] - 1)
    d = check.to_dict()
    assert {"kendall_tau_time", "kendall_tau_memory", "dominated", "regret"} <= set(d)
    assert check.delta_speedup == pytest.approx(check.full_s_per_plan / check.delta_s_per_plan)
    # Each side's graph seconds are part of its total; the other two figures follow.
    fg, dg = check.full_graph_s_per_plan, check.delta_graph_s_per_plan
    assert 0 < fg < check.full_s_per_plan and 0 < dg < check.delta_s_per_plan
    assert check.simulation_speedup == pytest.approx(
        (check.full_s_per_plan - fg) / (check.delta_s_per_plan - dg))
    assert check.spliced_speedup == pytest.approx(
        (dg + check.full_s_per_plan - fg) / check.delta_s_per_plan)
    assert d["simulation_speedup"] == check.simulation_speedup
    json.dumps(d, allow_nan=False)


def test_one_checked_plan_has_no_delta_speed_up():
    # Nothing to delta from: the speed-up is not a figure (n/a; null in JSON), not 0x.
    graph, model, result = plan_models.parity_search("mlp")
    last = len(result.plans) - 1                      # the mini_time plan without a limit
    check = check_frontier(result, plan_models.cluster(4), only=[last], verify_every=1)
    assert [r.index for r in check.rows] == [last, -1] and check.delta_s_per_plan == 0.0
    assert np.isnan(check.delta_speedup)
    assert "delta n/ax" in check.summary_lines()[0]
    d = check.to_dict()
    assert d["delta_speedup"] is None
    assert d["simulation_speedup"] is None and d["spliced_speedup"] is None
    json.dumps(d, allow_nan=False)


def test_a_budget_keeps_both_ends_the_turning_point_and_mini_time():
    from tensoropt.search.strategy import turning_point
    from tensoropt.simulator.check import checked_indices

    points = [(float(i), 100.0 / (i + 1)) for i in range(200)]
    got = checked_indices(points, 10, 77)
    assert len(got) == 10 and got == sorted(got)
    assert {0, 199, 77, turning_point(SimpleNamespace(points=points))} <= set(got)
    assert checked_indices(points[:5], 10, 2) == [0, 1, 2, 3, 4]


def test_bad_input_says_how_to_fix_it(tmp_path):
    graph, model, result = plan_models.parity_search("mlp")
    plan = result.plans[0]
    sim = PlanSimulator(graph, model, plan_models.cluster(4))
    other_graph, other_model, other = plan_models.parity_search("cnn")
    with pytest.raises(ValueError, match="does not configure .* op"):
        PlanSimulator(other_graph, other_model, plan_models.cluster(4)).versions_for_plan(plan)
    _, _, two = plan_models.parity_search("mlp", devices=2)
    with pytest.raises(ValueError, match="--devices 2"):
        sim.versions_for_plan(two.plans[0])
    with pytest.raises(ValueError, match="collective_order='sometimes'"):
        SimOptions(collective_order="sometimes")
    with pytest.raises(ValueError, match="ranks='some'"):
        SimOptions(ranks="some")
    with pytest.raises(ValueError, match="late_release='yes': give True or False"):
        SimOptions(late_release="yes")
    with pytest.raises(ValueError, match="cannot write the trace"):
        chrome_trace(sim.plan_result(plan), tmp_path / "missing" / "t.json")
