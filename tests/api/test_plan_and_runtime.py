"""Plans as JSON values, and the runtime's checks and messages."""

import dataclasses
import json
import re

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
    with pytest.raises(ValueError, match=r"no plan for 1 device\(s\) fits in 100 B.*least memory any plan needs "
                                         r"is 144 B \(144 bytes\); find_strategy\('mini_parallelism'"):
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


def _searched_plan_with_steps():
    """A sampled 4-device plan of a small MLP whose edges carry re-scheduling steps."""
    from tensoropt.costs.model import CostModel
    from tensoropt.search.driver import sample_plan, sampling_space

    class Prices:
        def time_s(self, collective, nbytes, group_size, stride):
            return 1e-5 * group_size + nbytes * 1e-9

    x = to.placeholder(to.float32, [8, 12], name="x")
    y = to.placeholder(to.int32, [8], name="y")
    h = to.nn.relu(to.matmul(x, to.get_variable("w1", [12, 16])))
    logits = to.matmul(h, to.get_variable("w2", [16, 4]))
    to.train.AdamOptimizer().minimize(to.reduce_mean(
        to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)))
    graph = to.get_default_graph()
    space = sampling_space(graph, CostModel(graph, 4, Prices(), 1e12))
    rng = np.random.default_rng(5)
    plans = [sample_plan(space, rng) for _ in range(20)]
    return max(plans, key=lambda p: sum(len(e.forward_steps) + len(e.backward_steps or ()) for e in p.edges))


def test_a_searched_plan_round_trips_through_json_step_for_step(tmp_path):
    plan = _searched_plan_with_steps()
    path = tmp_path / "plan.json"
    plan.save(str(path))
    again = Plan.load(str(path))
    assert again == plan and hash(again) == hash(plan)
    assert len(again.edges) == len(plan.edges) > 0
    for a, b in zip(again.edges, plan.edges):
        assert a == b and a.forward_steps == b.forward_steps and a.backward_steps == b.backward_steps
        assert a.rebuild_steps == b.rebuild_steps and a.src_layout == b.src_layout
    assert sum(len(e.forward_steps) for e in again.edges) > 0
    assert {s.kind for e in again.edges for s in e.forward_steps} - {"slice"}, "some step communicates"
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.option = "changed"
    with pytest.raises(TypeError):
        plan.ops["x"] = OpConfig()


def _corrupt(tmp_path, plan, change) -> str:
    data = plan.to_dict()
    change(data)
    path = tmp_path / "corrupt.json"
    path.write_text(json.dumps(data))
    return str(path)


def _move_an_edge_to_another_mesh(data):
    """Edge 0 made a well-formed edge (no steps, one layout at both ends) on another mesh
    than its ops'."""
    edge = data["edges"][0]
    mesh, dims = edge["src_layout"].split(" ", 1)
    other = "[2,2]" if mesh == "[4]" else "[4]"
    edge["src_layout"] = edge["dst_layout"] = f"{other} " + ",".join("R" for _ in dims.split(","))
    edge.update(reuse="none", forward_steps=[], rebuild_steps=None,
                backward_steps=None if edge["backward_steps"] is None else [])


def _first_edge_with_steps(data):
    return next(k for k, e in enumerate(data["edges"]) if e["forward_steps"])


@pytest.mark.parametrize("change, message", [
    (lambda d: d["edges"][_first_edge_with_steps(d)]["forward_steps"][0].update(kind="broadcast"),
     r"edge \d+ \(.* -> .*\): field 'forward_steps': step 0: step field 'kind': 'broadcast' is not one of"),
    (_move_an_edge_to_another_mesh,
     r"edge 0 \(.*\): field 'src_layout': layout \[[\d,]+\] R.* is on mesh \[[\d, ]+\], but op '.*' "
     r"runs on mesh \[[\d, ]+\]"),
    (lambda d: d["edges"][1].pop("reuse"), r"edge 1 \(.*\): missing field 'reuse'"),
    (lambda d: d["ops"]["MatMul"].update(mesh=[2, 3]),
     r"op 'MatMul': field 'mesh': mesh \[2, 3\] has 6 device\(s\), the plan's parallelism is 4"),
    (lambda d: d["edges"][2].update(reuse="keep_all"), r"edge 2 \(.*\): field 'reuse': 'keep_all' is not one of"),
])
def test_a_corrupt_plan_file_names_the_file_the_edge_or_op_and_the_field(tmp_path, change, message):
    plan = _searched_plan_with_steps()
    path = _corrupt(tmp_path, plan, change)
    with pytest.raises(ValueError, match=r"corrupt\.json: " + message):
        Plan.load(path)


def test_a_plan_for_another_graph_names_the_edge_and_field():
    plan = _searched_plan_with_steps()
    edge = next(e for e in plan.edges if e.forward_steps and e.src_layout.mesh == e.dst_layout.mesh
                and e.reuse in ("none", "keep_both"))
    other = dataclasses.replace(edge, dst_layout=edge.src_layout, forward_steps=(),
                                backward_steps=None if edge.backward_steps is None else ())
    broken = dataclasses.replace(plan, edges=tuple(other if e is edge else e for e in plan.edges))
    from tensoropt.execution import check_plan_for_graph

    with pytest.raises(ValueError, match=rf"edge {re.escape(edge.name)}: field 'dst_layout' is .*, but the "
                                         r"ops' configurations give"):
        check_plan_for_graph(to.get_default_graph(), broken)


def test_the_training_session_computes_with_the_rank_share_of_the_cpus(monkeypatch):
    # the compute profiler prices shards with these threads (tensoropt.cluster.threads)
    from tensoropt.runtime import _runtime

    _tiny_model()
    monkeypatch.delenv("TENSOROPT_THREADS", raising=False)
    monkeypatch.setattr("tensoropt.cluster.threads.available_cpus", lambda: 16)
    monkeypatch.setattr(_runtime, "local_ranks", 4)
    to.build_execution_graph(plan=to.find_strategy())
    assert _runtime.session._config.intra_op_parallelism_threads == 4
    monkeypatch.setenv("TENSOROPT_THREADS", "3")
    to.build_execution_graph(plan=to.find_strategy())
    assert _runtime.session._config.intra_op_parallelism_threads == 3
