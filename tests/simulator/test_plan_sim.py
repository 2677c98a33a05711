"""Plans as task graphs: closed forms by hand, conservation, order, delta == full,
representative == all ranks, memory by liveness and errors."""

import importlib.util
import pathlib
import re

import numpy as np
import pytest

import tensoropt as to
from tensoropt import models
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.configs import config_of
from tensoropt.costs.model import CostModel
from tensoropt.execution import collective_schedule
from tensoropt.search.driver import sample_plan, sampling_space, search_frontier
from tensoropt.simulator import PlanSimulator, SimOptions, TaskGraph, simulate, simulate_plan, summarize
from tensoropt.simulator.plan_tasks import TAKE_TURNS_FROM
from tensoropt.simulator.memory import peak_memory_bytes

_HELPERS = importlib.util.spec_from_file_location(
    "sim_plan_models", pathlib.Path(__file__).with_name("plan_models.py"))
plan_models = importlib.util.module_from_spec(_HELPERS)
_HELPERS.loader.exec_module(plan_models)
PARITY, cluster, parity_search = plan_models.PARITY, plan_models.cluster, plan_models.parity_search

PS = 1e12


def _times(timeline, kinds):
    g = timeline.graph
    mask = np.isin([g.kind(i) for i in range(g.num_tasks)], kinds)
    return int((timeline.end_ps - timeline.start_ps)[mask].sum())


def _collective_order(timeline):
    g = timeline.graph
    return [g.names[i] for i in timeline.order.tolist() if g.kind(i) == "collective"]


# -- closed forms, by hand ----------------------------------------------------------------------
def test_on_one_device_the_simulated_time_is_the_compute_sum_and_the_estimate():
    graph, model, result = parity_search("mlp", devices=1)
    plan = result.plans[0]
    sim = PlanSimulator(graph, model, cluster(1))
    r = sim.plan_result(plan)
    compute = sum(model.op_cost(op, config_of(plan, op)).compute_s for op in graph.operations)
    assert r.network_s == 0 and plan.network_s == 0
    assert r.makespan_s == pytest.approx(compute, rel=1e-12)
    assert r.makespan_s == pytest.approx(plan.time_s, rel=1e-12)


def _data_parallel_mlp(transfer_compute_share: float = 0.0):
    """A two-layer MLP's data-parallel plan on 4 devices, simulated: (graph, model, plan, timeline)."""
    b, d, h, c = 8, 12, 16, 4
    x = to.placeholder(to.float32, [b, d], name="x")
    y = to.placeholder(to.int32, [b], name="y")
    w1, w2 = to.get_variable("w1", [d, h]), to.get_variable("w2", [h, c])
    logits = to.matmul(to.nn.relu(to.matmul(x, w1)), w2)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    to.train.AdamOptimizer().minimize(loss)
    graph = to.get_default_graph()
    model = CostModel(graph, 4, PARITY.AlphaBeta(), 1e10, transfer_compute_share=transfer_compute_share)
    plan = search_frontier(graph, model).data_parallel_plan()
    sim = PlanSimulator(graph, model, cluster(4))
    return graph, model, plan, sim.simulate_full(sim.versions_for_plan(plan))


def test_data_parallel_mlp_overlaps_backward_with_the_gradient_allreduces_as_by_hand():
    graph, model, plan, t = _data_parallel_mlp()
    ops = {op.name: op for op in graph.operations}
    split = {n: [round(s * PS) for s in model.compute_split(op, config_of(plan, op))]
             for n, op in ops.items()}
    calls = collective_schedule(graph, plan)
    ar = [round(model.collectives.time_s(k.kind, k.nbytes, *k.scheme) * PS) for k in calls]
    forward = sum(f for f, _ in split.values())                     # one compute resource
    mean_ar_end = forward + ar[0]                                   # the loss's partial sum
    mm1_bwd_end = forward + sum(split[n][1] for n in ("Mean", "sparse_softmax_cross_entropy_with_logits",
                                                      "MatMul_1"))
    w2_end = max(mm1_bwd_end, mean_ar_end) + ar[1]                  # overlaps relu, MatMul bwd
    mm_bwd_end = mm1_bwd_end + split["relu"][1] + split["MatMul"][1]
    w1_end = max(mm_bwd_end, w2_end) + ar[2]
    assert [c.name for c in calls] == _collective_order(t)
    assert t.makespan_ps == w1_end
    assert t.makespan_ps < forward + sum(s for _, s in split.values()) + sum(ar)   # it overlapped


def test_on_a_chain_that_saves_every_output_the_peak_is_the_additive_memory_and_two_gradients_less_the_parameter_gradient():
    x = to.placeholder(to.float32, [16, 32], name="x")
    w = to.get_variable("w", [16, 32])
    h = x * w                                    # saves x and w (w: the parameter itself)
    mul = h.op.name
    tanhs = []
    for _ in range(3):
        h = to.tanh(h)                           # saves its output
        tanhs.append(h.op.name)
    loss = to.reduce_mean(h)
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    graph = to.get_default_graph()
    model = CostModel(graph, 1, PARITY.AlphaBeta(), 1e10)
    plan = search_frontier(graph, model).plans[0]
    r = simulate_plan(graph, plan, cluster(1), model)
    # at the last tanh's backward every saved tensor is still live, and so are two
    # activation gradients of h's size: the one it reads (the mean's backward computed
    # it) and the one it computes for the tanh before it; w's gradient (which the
    # additive estimate counts) is not allocated yet: x * w's backward computes it
    assert r.peak_memory_bytes == plan.memory_bytes - w.nbytes + 2 * h.nbytes
    live = {b.name for b in r.ranks[0].memory.live_at_peak}
    assert {"x:out0", "w:parameter", f"{loss.op.name}:in0/grad",
            f"{tanhs[2]}:in0/grad"} <= live
    assert f"{mul}:in1/grad" not in live


@pytest.mark.parametrize("holds", [False, True])
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_a_parameter_gradient_lives_from_its_consumer_backward_until_its_first_reader_ends(name, holds):
    # TensorFlow allocates a weight's gradient when the op reading the weight runs its
    # backward and frees it when its last reader is done: the first collective of the
    # edge's backward (or the transpose before it, right after the backward), else the
    # optimizer's update; a gradient the edge's backward only slices (a tf.split, which
    # TensorFlow's executor defers behind the backward's chain) at the backward's end.
    # With late_release (the fit check's bound), a collective holds the gradient until
    # the collective's value has been read, and the update that reads it directly may
    # wait for the backward's end.
    from tensoropt.simulator.memory import _held_ends, _lifetimes

    checked, by = 0, {"collective": 0, "moved": 0, "update": 0, "sliced": 0}
    for graph, plan, t in _sampled_timelines(name, 10, options=SimOptions(late_release=holds)):
        sliced = {(e.consumer, e.input) for e in plan.edges if e.backward_steps and
                  all(st.kind == "slice" for st in e.backward_steps)}
        backward_end = max(end for name, end in zip(t.graph.names, t.end_ps.tolist())
                           if name.endswith("/bwd"))
        g, b = t.graph, t.graph.buffers
        alloc, free = _lifetimes(t)
        start = dict(zip(g.names, t.start_ps.tolist()))
        end = dict(zip(g.names, t.end_ps.tolist()))
        held = dict(zip(g.names, _held_ends(t).tolist()))
        ops = {op.name: op for op in graph.operations}
        assert not any(n.endswith(":gradient") for n in b.names)       # none resident
        for j, name in enumerate(b.names):
            found = re.match(r"^([^:]+):in(\d+)/grad$", name)
            if not found or b.why[j] != "parameter gradient":
                continue
            consumer, i = found.group(1), int(found.group(2))
            var = ops[consumer].inputs[i].op
            assert var.kind == "variable"
            assert alloc[j] == start[f"{consumer}/bwd"], name
            calls = sorted((start[n], n) for k, n in enumerate(g.names)
                           if g.kind(k) == "collective" and f"/{consumer}/in{i}/grad/" in n)
            if not calls and (consumer, i) in sliced:
                assert free[j] == max(end[f"{var.name}/update"], backward_end), name
                by["sliced"] += 1
            elif not calls:
                # the update may be deferred to the backward's end (the bound)
                update = end[f"{var.name}/update"]
                assert free[j] == (max(update, backward_end) if holds else update), name
                by["update"] += 1
            elif f"{calls[0][1]}:moved in" in b.names:
                assert free[j] == end[f"{consumer}/bwd"], name
                by["moved"] += 1
            else:
                reader = calls[1][1] if len(calls) > 1 else f"{var.name}/update"
                assert end[calls[0][1]] <= end[reader], name
                # with late_release, each collective also holds it until its rank's next
                # collective ends (``memory._held_ends``)
                assert free[j] == (max(held[calls[0][1]], held[reader]) if holds else end[calls[0][1]]), name
                by["collective"] += 1
            checked += 1
    # the MLP's sampled plans slice no parameter's gradient without all-reducing it first
    assert checked >= 6 and all(n for k, n in by.items() if name == "cnn" or k != "sliced"), by


# -- conservation, on sampled plans of the tiny zoo models --------------------------------------
def _sampled_model(graph, cycle_s: float) -> CostModel:
    """The analytical cost model ``_sampled_timelines`` prices with: 4 devices, 2 per
    machine, horovod's cycle ``cycle_s``."""
    cl = cluster(4, per_machine=2)
    return CostModel(graph, 4, AnalyticalCollectives(cl), cl.peak_flops, collective_overhead_s=cycle_s)


def _sampled_timelines(name: str, count: int, cycle_s: float = 0.0, options=None):
    """``(graph, plan, timeline)`` of ``count`` plans sampled (seed 5) from the tiny
    ``name`` model on 4 devices, 2 per machine, analytically priced (with horovod's
    cycle ``cycle_s``)."""
    models.build(name, size="tiny")
    graph = to.get_default_graph()
    model = _sampled_model(graph, cycle_s)
    space = sampling_space(graph, model)
    sim = PlanSimulator(graph, model, cluster(4, per_machine=2), options)
    rng = np.random.default_rng(5)
    for _ in range(count):
        plan = sample_plan(space, rng)
        yield graph, plan, sim.simulate_full(sim.versions_for_plan(plan))


def _extra_reruns(graph, plan, cycle_s: float) -> tuple[float, float]:
    """``(compute_s, network_s)`` the additive estimate charges beyond the run: an op
    that re-runs its forward for two rebuilt (keep_producer) inputs runs it once, and
    each edge is priced alone."""
    model = _sampled_model(graph, cycle_s)
    rebuilt = {}
    for e in plan.edges:
        if e.reuse == "keep_producer":
            rebuilt[e.consumer] = rebuilt.get(e.consumer, 0) + 1
    compute = network = 0.0
    for name, count in rebuilt.items():
        op = graph.get_operation_by_name(name)
        c, n = model.rerun_cost(op, config_of(plan, op))
        compute, network = compute + (count - 1) * c, network + (count - 1) * n
    return compute, network


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "paper_rnn"])
@pytest.mark.parametrize("cycle_s", [0.0, 2e-4])
def test_durations_add_up_to_the_estimate_and_time_is_between_its_bounds(name, cycle_s):
    # without waiting for cycles, each collective lasts what the estimate charges for it
    for graph, plan, t in _sampled_timelines(name, 6, cycle_s, SimOptions(horovod_cycle=False)):
        r = summarize(t)
        calls = collective_schedule(graph, plan)
        assert _collective_order(t) == [c.name for c in calls]
        rounding = t.graph.num_tasks / PS           # each duration is whole picoseconds
        # keep_producer re-runs (forward compute, an LSTM's gathers) are priced too: once
        # per op, where the additive estimate prices one per rebuilt input
        compute, network = _extra_reruns(graph, plan, cycle_s)
        assert _times(t, ["compute", "collective"]) / PS == \
            pytest.approx(plan.time_s - compute - network, abs=rounding)
        assert _times(t, ["collective"]) / PS == pytest.approx(plan.network_s - network, abs=rounding)
        assert max(r.compute_s, r.network_s) <= r.makespan_s * (1 + 1e-12)
        assert r.makespan_s <= (r.compute_s + r.network_s) * (1 + 1e-12)


@pytest.mark.parametrize("name", ["mlp", "transformer", "paper_rnn"])
def test_each_collective_waits_for_the_first_cycle_after_its_rank_s_last_collective(name):
    cycle = 2e-4
    c_ps = round(cycle * PS)
    for graph, plan, t in _sampled_timelines(name, 4, cycle):
        g = t.graph
        calls = collective_schedule(graph, plan)
        order = [g.index[n] for n in _collective_order(t)]
        assert len(order) == len(calls)
        anchor = 0                                   # the step's start, before any collective
        for i in order:
            ready, start = int(t.ready_ps[i]), int(t.start_ps[i])
            assert start - anchor == c_ps * max(1, -((anchor - ready) // c_ps)), g.names[i]
            anchor = int(t.end_ps[i])
        # each lasts its transfer: the estimate's price less one cycle
        transfers = int((t.end_ps - t.start_ps)[order].sum()) / PS
        extra = _extra_reruns(graph, plan, cycle)[1]     # see test_durations_add_up...
        assert transfers + cycle * len(calls) == pytest.approx(plan.network_s - extra, abs=g.num_tasks / PS)


def test_a_converted_activation_gradient_lives_until_its_producer_backward_ends():
    # the last buffer of an edge's backward conversion is the gradient the producer's
    # backward reads (TensorFlow holds e.g. an all-gathered gradient until then)
    from tensoropt.simulator.memory import _lifetimes

    checked = 0
    for graph, _, t in _sampled_timelines("transformer", 4):
        ops = {op.name: op for op in graph.operations}
        g, b = t.graph, t.graph.buffers
        alloc, free = _lifetimes(t)
        end = dict(zip(g.names, t.end_ps.tolist()))
        for j, name in enumerate(b.names):
            if b.why[j] != "activation gradient" or not name.endswith(":buf"):
                continue
            found = re.match(r"^[a-z]+/(.+)/in(\d+)/grad", name)   # kind/consumer/in{i}/grad...
            consumer, i = found.group(1), int(found.group(2))
            producer = ops[consumer].inputs[i].op.name
            step = g.names[b.alloc[j]]
            assert free[j] == max(end[step], end[f"{producer}/bwd"]), name
            checked += 1
    assert checked > 0, "no sampled plan converts an activation gradient; pick another seed"


@pytest.mark.parametrize("name", ["transformer", "paper_rnn"])
def test_a_keep_producer_rebuild_waits_for_the_gradients_of_its_consumer_outputs(name):
    # TensorFlow rebuilds an input inside the consumer's gradient function, so a rebuilt
    # parameter (all-gathered again from its shards) is not held from the backward's start
    checked = 0
    for graph, _, t in _sampled_timelines(name, 8):
        g = t.graph
        end = dict(zip(g.names, t.end_ps.tolist()))
        readers = {}
        for producer, _, consumer, index in graph.edges():
            readers.setdefault(producer.name, []).append(f"{consumer.name}/in{index}/grad")
        for i, name_i in enumerate(g.names):
            found = re.match(r"^[a-z]+/(.+)/in\d+/rebuild", name_i)
            if g.kind(i) != "collective" or not found:
                continue
            grads = [r for r in readers.get(found.group(1), ()) if r in end]
            assert grads, name_i
            assert int(t.start_ps[i]) >= max(end[r] for r in grads), name_i
            checked += 1
    assert checked > 0, "no sampled plan rebuilds an input; pick another seed"


def test_on_cpu_ranks_transfers_take_turns_with_compute():
    # the by-hand plan above, with the transfers made by the cores that compute: nothing overlaps
    graph, model, plan, t = _data_parallel_mlp(transfer_compute_share=1.0)
    compute = sum(round(s * PS) for op in graph.operations for s in model.compute_split(op, config_of(plan, op)))
    ar = [round(model.collectives.time_s(k.kind, k.nbytes, *k.scheme) * PS) for k in collective_schedule(graph, plan)]
    assert t.makespan_ps == compute + sum(ar)


@pytest.mark.parametrize("share", [0.1, 0.25, 0.4])
def test_a_transfer_takes_its_share_of_its_time_from_the_compute_beside_it(share):
    # the by-hand plan: every compute task and, beside each all-reduce, a compute task of
    # ``share`` times its transfer on the same compute resource; the all-reduce's value is
    # read only after both
    graph, model, plan, t = _data_parallel_mlp(transfer_compute_share=share)
    g = t.graph
    dur = {g.names[i]: int(t.end_ps[i] - t.start_ps[i]) for i in range(g.num_tasks)}
    calls = collective_schedule(graph, plan)
    assert calls
    for call in calls:
        transfer = round(model.collectives.time_s(call.kind, call.nbytes, *call.scheme) * PS)
        assert dur[call.name] == transfer
        assert abs(dur[f"{call.name}/cpu"] - transfer * share) <= 1          # picoseconds, rounded
        moved = g.index[f"{call.name}/moved"]
        assert t.start_ps[moved] == max(t.end_ps[g.index[call.name]], t.end_ps[g.index[f"{call.name}/cpu"]])
    compute = sum(round(s * PS) for op in graph.operations for s in model.compute_split(op, config_of(plan, op)))
    busy = _times(t, ["compute"])
    shares = sum(model.collectives.time_s(k.kind, k.nbytes, *k.scheme) * PS * share for k in calls)
    assert abs(busy - compute - shares) <= len(calls)
    # between freely overlapping (share 0) and taking turns (share 1)
    to.reset_default_graph()
    free = _data_parallel_mlp(0.0)[3].makespan_ps
    to.reset_default_graph()
    turns = _data_parallel_mlp(1.0)[3].makespan_ps
    assert free <= t.makespan_ps <= turns and free < turns


@pytest.mark.parametrize("share", [TAKE_TURNS_FROM, 0.91, 0.97])
def test_a_share_near_one_takes_turns(share):
    graph, model, plan, t = _data_parallel_mlp(transfer_compute_share=share)
    to.reset_default_graph()
    turns = _data_parallel_mlp(1.0)[3]
    assert np.array_equal(t.start_ps, turns.start_ps) and t.graph.names == turns.graph.names


def test_a_task_that_waits_for_a_cycle_it_does_not_hold_starts_with_the_task_that_holds_it():
    # horovod's loop issues the transfer a cycle after the last one ended; the join marking
    # that moment leaves the chain free, so the transfer waits for the same cycle, not two
    g = TaskGraph(resources=["compute:0", "chain:0"], cycles={"chain:0": 1e-3})
    g.add_task("first", "collective", ["chain:0"], 2e-3)
    g.add_task("issue", "join", [], 0.0, waits_for_cycle_of="chain:0")
    g.add_task("second", "collective", ["chain:0"], 2e-3)
    g.add_task("beside", "compute", ["compute:0"], 1e-3)
    g.add_dependency("first", "issue")
    g.add_dependency("first", "second")
    g.add_dependency("issue", "beside")
    t = simulate(g)
    at = {n: (int(t.start_ps[i]), int(t.end_ps[i])) for i, n in enumerate(t.graph.names)}
    # "first" waits one cycle from time 0 and ends at 3 ms; the next waits one more
    assert at["first"] == (10**9, 3 * 10**9)
    assert at["issue"][0] == at["second"][0] == at["beside"][0] == 4 * 10**9
    with pytest.raises(ValueError, match="waits_for_cycle_of='compute:0' must name a cycled resource"):
        g.add_task("bad", "join", [], 0.0, waits_for_cycle_of="compute:0")
    with pytest.raises(ValueError, match="for a task that holds none"):
        g.add_task("bad", "collective", ["chain:0"], 0.0, waits_for_cycle_of="chain:0")


def test_a_transfer_share_outside_0_to_1_is_refused_naming_the_field():
    graph = to.get_default_graph()
    with pytest.raises(ValueError, match=r"transfer_compute_share=1.5: .*\[0, 1\]"):
        CostModel(graph, 4, PARITY.AlphaBeta(), 1e10, transfer_compute_share=1.5)
