"""Plans as JSON values, and the runtime's checks and messages."""

import json

import numpy as np
import pytest

import tensoropt as to
from tensoropt.plan import OpConfig, Plan
from tensoropt.stats import graph_stats


def _tiny_model():
    x = to.placeholder(to.float32, [4, 3], name="x")
    w = to.get_variable("w", [3, 2])
    loss = to.reduce_mean(to.matmul(x, w))
    return x, w, loss, to.train.AdamOptimizer(0.1).minimize(loss)


def test_single_device_plan_memory_is_exact():
    x, w, loss, step = _tiny_model()
    plan = to.find_strategy(option="mini_time")
    assert plan.parallelism == 1 and set(plan.ops) == {op.name for op in to.get_default_graph().operations}
    # weights + gradients + 2 Adam slots, plus matmul's saved input x (w is the parameter itself)
    assert plan.memory_bytes == 6 * 4 * (2 + 2) + 12 * 4
    assert plan.memory_bytes == graph_stats(to.get_default_graph()).single_device_bytes
    assert plan.network_s == 0.0 and plan.time_s == plan.compute_s > 0
    result = to.search_strategy(option="mini_time")
    assert result.chosen == plan and len(result.frontier) == 1
    assert result.data_parallel.memory_bytes == plan.memory_bytes


def test_plan_round_trips_through_json(tmp_path):
    plan = Plan(parallelism=4, option="mini_time",
                ops={"matmul": OpConfig((2, 2), (("m", 0), ("n", 1)))}, memory_bytes=1e9, time_s=0.25)
    path = tmp_path / "plan.json"
    plan.save(str(path))
    again = Plan.load(str(path))
    assert again == plan
    assert str(again.ops["matmul"]) == "[2,2] m:0,n:1"


def test_corrupt_plan_file_names_the_file_and_the_fix(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"format_version": 1, "parallelism": 4')
    with pytest.raises(ValueError, match=r"plan.json: not valid JSON.*find_strategy"):
        Plan.load(str(path))
    path.write_text(json.dumps({"format_version": 1, "parallelism": 4, "option": "x", "ops": {"a": {}}}))
    with pytest.raises(ValueError, match=r"plan.json: op 'a': missing field 'mesh'"):
        Plan.load(str(path))
    path.write_text(json.dumps({"format_version": 99}))
    with pytest.raises(ValueError, match="format_version 99"):
        Plan.load(str(path))


def test_find_strategy_errors():
    with pytest.raises(ValueError, match="the recorded graph is empty"):
        to.find_strategy()
    _tiny_model()
    with pytest.raises(ValueError, match="unknown option 'fastest'.*mini_time"):
        to.find_strategy(option="fastest")
    with pytest.raises(ValueError, match=r"no plan for 1 device\(s\) fits.*least memory any plan needs is "
                                         r"0.000 GiB \(144 bytes\); the smallest device count that fits is 2"):
        to.find_strategy(memory_limit=100)
    result = to.search_strategy(parallelism=4, cluster="paper-v100x16")
    plan = result.chosen
    assert plan.parallelism == 4 and plan.time_s > 0 and plan in result.frontier


def test_plan_for_another_world_size_gives_the_mpirun_command():
    _tiny_model()
    plan = to.find_strategy(parallelism=4, cluster="paper-v100x16")
    with pytest.raises(ValueError, match=r"plan is for 4 device\(s\).*1 MPI rank.*mpirun .*-np 4 "):
        to.build_execution_graph(plan=plan)


def test_plan_for_another_graph_is_rejected():
    _tiny_model()
    plan = to.find_strategy()
    to.reset_default_graph()
    to.nn.relu(to.placeholder(to.float32, [2], name="other"))
    with pytest.raises(ValueError, match="searched for another graph"):
        to.build_execution_graph(plan=plan)


def test_run_checks_feeds_and_fetches():
    x, w, loss, step = _tiny_model()
    with pytest.raises(ValueError, match="engine 'torch' is not supported"):
        to.build_execution_graph(engine="torch", plan=to.find_strategy())
    to.build_execution_graph(plan=to.find_strategy())
    with pytest.raises(ValueError, match=r"fed x a value of shape \(2, 3\); the placeholder has shape \(4, 3\)"):
        to.run(loss, {x: np.zeros((2, 3), np.float32)})
    with pytest.raises(ValueError, match="cannot fetch 'loss'"):
        to.run("loss")
    value, none = to.run([loss, step], {x: np.ones((4, 3), np.float32)})
    assert np.isfinite(value) and none is None
