"""The collective schedule, in one process: the builder issues exactly it, in its order.

A ``RecordingHorovod`` stands in for horovod, so a rank's whole execution graph (forward
and gradients) builds without mpirun; ``issue_order`` reads the order the graph's
dependencies force on its collectives.
"""

import importlib.util
import pathlib
import re

import numpy as np
import pytest

import tensoropt as to
from tensoropt._tf import import_tensorflow
from tensoropt.configs import Config, config_of, gradient_inputs, gradient_tensors, op_collectives
from tensoropt.costs.model import CostModel
from tensoropt.execution import PlanSharding, ScheduleMismatchError, collective_schedule
from tensoropt.execution.accounting import expected_collectives
from tensoropt.execution.recording_hvd import RecordingHorovod, issue_order
from tensoropt.execution.lowering import lower_graph
from tensoropt.search.driver import sample_plan, search_frontier
from tensoropt.stats import saved_bytes

N = 4
_DRIVER = pathlib.Path(__file__).resolve().parents[1] / "parallel" / "parity_driver.py"


def _parity_models():
    spec = importlib.util.spec_from_file_location("parity_driver", _DRIVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PARITY = _parity_models()


def _model(name):
    loss, _, *extra = PARITY.MODELS[name]()
    PARITY.training_step(loss, extra)
    return to.get_default_graph()


def _plans(graph):
    """The parity test's plans: the frontier's ends, data parallel, 8 random plans."""
    search = search_frontier(graph, CostModel(graph, N, PARITY.AlphaBeta(), 1e10))
    rng = np.random.default_rng(123)
    plans = [search.plans[0], search.plans[-1], search.data_parallel_plan()]
    return plans + [sample_plan(search.space, rng) for _ in range(8)], search


def _build(graph, plan, rank, schedule=None):
    tf = import_tensorflow()
    hvd = RecordingHorovod(tf, N)
    sharding = PlanSharding(graph, plan, rank, hvd, hvd.process_sets(), schedule)
    return lower_graph(graph, tf, sharding), hvd, sharding


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm", "activations"])
def test_the_builder_issues_the_schedule_in_its_order_for_every_parity_plan(name):
    graph = _model(name)
    plans, _ = _plans(graph)
    for k, plan in enumerate(plans):
        rank = k % N
        schedule = collective_schedule(graph, plan)
        lowered, hvd, sharding = _build(graph, plan, rank)
        assert issue_order(lowered.tf_graph, hvd) == [c.name for c in schedule], f"{name} plan {k}"
        assert sorted(hvd.made) == sorted((c.kind, c.name, c.group(rank)) for c in schedule)
        assert dict(sharding.collectives.counts) == expected_collectives(graph, plan)
        phases = [c.phase for c in schedule]
        assert phases == sorted(phases, key=lambda p: p != "forward"), "forward first"


def test_a_builder_that_strays_from_the_schedule_fails_when_it_builds():
    graph = _model("mlp")
    plans, _ = _plans(graph)
    plan = max(plans, key=lambda p: len(collective_schedule(graph, p)))
    schedule = collective_schedule(graph, plan)
    forward = [c for c in schedule if c.phase == "forward"]
    assert len(forward) >= 2 and len(schedule) > len(forward)
    swapped = [forward[1], forward[0]] + schedule[2:]
    with pytest.raises(ScheduleMismatchError, match=re.escape(f"as collective #0; the schedule has "
                                                              f"{forward[1].name!r} there")):
        _build(graph, plan, 0, swapped)
    backward = schedule[len(forward)]
    with pytest.raises(ScheduleMismatchError, match=re.escape(f"{backward.name!r}, which the plan's "
                                                              "collective schedule does not list")):
        _build(graph, plan, 0, [c for c in schedule if c is not backward])
    extra = type(backward)(backward.kind, backward.name + "/extra", backward.mesh, backward.axis,
                           backward.nbytes, backward.phase)
    with pytest.raises(ScheduleMismatchError, match="1 collective.*never built.*extra"):
        _build(graph, plan, 0, schedule + [extra])


def test_data_parallel_mlp_schedule_by_hand():
    b, d, h, c = 8, 12, 16, 4
    x = to.placeholder(to.float32, [b, d], name="x")
    y = to.placeholder(to.int32, [b], name="y")
    w1, w2 = to.get_variable("w1", [d, h]), to.get_variable("w2", [h, c])
    logits = to.matmul(to.nn.relu(to.matmul(x, w1)), w2)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    to.train.AdamOptimizer().minimize(loss)
    graph = to.get_default_graph()
    plan = search_frontier(graph, CostModel(graph, N, PARITY.AlphaBeta(), 1e10)).data_parallel_plan()
    calls = collective_schedule(graph, plan)
    # the loss mean's partial sum (forward), then the weights' gradients in reverse order
    assert [(c.phase, c.kind, c.name, c.nbytes) for c in calls] == [
        ("forward", "allreduce", "allreduce/Mean/out0/axis0", 4),
        ("backward", "allreduce", "allreduce/MatMul_1/in1/grad/axis0", h * c * 4),
        ("backward", "allreduce", "allreduce/MatMul/in1/grad/axis0", d * h * 4)]
    assert all(c.group(3) == (0, 1, 2, 3) and c.scheme == (4, 1) for c in calls)
    assert expected_collectives(graph, plan) == {"allreduce": 3}


@pytest.mark.parametrize("name", ["lstm", "transformer"])
def test_the_cost_model_prices_the_collectives_the_schedule_lists(name):
    graph = _model(name)
    plans, search = _plans(graph)
    model = search.space.model
    grads = gradient_tensors(graph)
    own = re.compile(r"^(allreduce|allgather)/(.+)/(out\d+/axis\d+|in\d+/grad/axis\d+|hidden/\d+(/grad)?)$")
    for plan in plans:
        rerun = {e.consumer for e in plan.edges if e.reuse == "keep_producer" and e.forward_steps}
        priced: dict = {}
        for call in collective_schedule(graph, plan):
            found = own.match(call.name)
            if found and found.group(2) not in rerun:
                priced[found.group(2)] = priced.get(found.group(2), 0.0) + model.collectives.time_s(
                    call.kind, call.nbytes, *call.scheme)
        for op in graph.operations:
            if op.name in rerun or op.kind == "variable":
                continue
            cost = model.op_cost(op, config_of(plan, op))
            assert cost.sync_s == pytest.approx(priced.get(op.name, 0.0), rel=1e-12, abs=1e-18), op.name
            assert (cost.sync_s > 0) == bool(op_collectives(op, config_of(plan, op), gradient_inputs(op, grads)))


def test_saved_bytes_are_one_rule_for_statistics_and_costs():
    graph = _model("lstm")
    model = CostModel(graph, 1, PARITY.AlphaBeta(), 1e10)
    checked = 0
    for op in graph.operations:
        if op.kind in ("variable", "placeholder"):
            continue
        assert model.op_cost(op, Config((1,), (None,))).saved_bytes == saved_bytes(op), op.name
        checked += op.kind == "lstm"
    assert checked == 2


def test_two_training_steps_are_refused_by_name_with_what_runs_instead():
    from tensoropt.execution.schedule import check_one_train_step
    x = to.placeholder(to.float32, [8, 4], name="x")
    with to.variable_scope("gen"):
        g = to.get_variable("w", [4, 4])
    with to.variable_scope("disc"):
        d = to.get_variable("w", [4, 1])
    fake = to.matmul(x, g)
    d_loss = to.reduce_mean(to.matmul(fake, d))
    g_loss = -d_loss
    to.train.AdamOptimizer().minimize(d_loss, var_list=[d])
    check_one_train_step(to.get_default_graph())          # one step: nothing to say
    to.train.AdamOptimizer().minimize(g_loss, var_list=[g])
    with pytest.raises(ValueError, match=r"records 2 training steps: 'Adam' \(loss '.*', 1 variables\), "
                       r"'Adam_1' .*Run this script on one process \(without mpirun\), or minimize one loss"):
        check_one_train_step(to.get_default_graph())
    plan = to.find_strategy()          # one process: the search and the run take both steps
    with pytest.raises(ValueError, match="records 2 training steps"):
        collective_schedule(to.get_default_graph(), plan)
