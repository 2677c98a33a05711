"""Transient memory the cost model and the simulator count beyond the additive estimate:
the profiler's measured per-pass workspace (a CPU convolution's backprop buffers), the
cost model's ``workspace_bytes``, and the simulator's workspace buffers, hand-priced."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tensoropt as to
from tensoropt.configs import Config
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.costs.model import CostModel
from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler, local_shard
from tensoropt.cluster.presets import get_cluster
from tensoropt.cluster.threads import available_cpus
from tensoropt.costs.cpu_workspaces import conv2d_backprop_input_buffer_bytes
from tensoropt.search.driver import search_frontier
from tensoropt.simulator import simulate_plan


def fast_profiler(path=None) -> ComputeProfiler:
    return ComputeProfiler(cache_path=path, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)


def conv_op():
    x = to.placeholder(to.float32, [8, 16, 16, 8], name="x")
    w = to.get_variable("w", [3, 3, 8, 16])
    return to.nn.conv2d(x, w, strides=1, padding="SAME").op


# The measurements run in a fresh interpreter: once a TensorFlow session with another
# thread configuration has run a oneDNN convolution backward in a process, later traces of
# one show no scratch buffers (backward workspace 24.5 MB in a fresh process, 0-32 bytes
# after tests/api/test_api_compare_tf.py's reference session; the same with
# TF_ENABLE_ONEDNN_OPTS=0 is fine). The profiler measures in the search's rank-0 process
# before any training session, as the fresh interpreter does.
_MEASURE = """
import json, sys
import tensoropt as to
from tensoropt.configs import Config
from tensoropt.costs.profiler import ComputeProfiler, local_shard

def fast_profiler(path=None):
    return ComputeProfiler(cache_path=path, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)

x = to.placeholder(to.float32, [8, 16, 16, 8], name="x")
w = to.get_variable("w", [3, 3, 8, 16])
op = to.nn.conv2d(x, w, strides=1, padding="SAME").op
config = Config((1,), (None,))
path, old = sys.argv[1], sys.argv[2] == "old"
out = {}
if old:   # a profile written before workspaces were recorded: only the shard's time
    key = fast_profiler().key(local_shard(op, config))
    with open(path, "w") as f:
        json.dump({"format": "tensoropt.compute_profile", "version": 1, "entries": {key: 0.25}}, f)
p = fast_profiler(path)
out["compute_before"] = p.compute_s(op, config) if old else None
out["measurements_before"] = p.measurements
out["workspace"] = p.workspace_bytes(op, config)
out["measurements"] = p.measurements
out["compute_after"] = p.compute_s(op, config) if old else None
p.workspace_bytes(op, config)
out["measurements_again"] = p.measurements
p.save()
print(json.dumps(out))
"""


def _measure_in_fresh_process(path, old: bool = False) -> dict:
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(path), "old" if old else "new"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_convolution_backward_workspace_is_measured_and_cached(tmp_path):
    path = tmp_path / "profile.json"
    measured = _measure_in_fresh_process(path)
    forward, backward = measured["workspace"]
    # TensorFlow's CPU Conv2DBackpropFilter/Input unfold the input patches: far more than
    # one output (8*16*16*16*4 = 128 KiB) in scratch, freed before the node ends
    out_bytes = 8 * 16 * 16 * 16 * 4
    assert backward > out_bytes
    # ... as ``costs.cpu_workspaces`` prices it: 333 images' im2col on this test's threads
    # (the profiler's default: every CPU), within what the pass hands on
    threads = fast_profiler().threads or available_cpus()
    formula = conv2d_backprop_input_buffer_bytes(8, 16 * 16, 3 * 3 * 8, 16, 4, threads)
    assert abs(backward - formula) <= 1e-3 * formula, (backward, formula)
    assert forward >= 0
    assert measured["measurements"] == 1 and measured["measurements_again"] == 1
    op, config = conv_op(), Config((1,), (None,))
    again = fast_profiler(path)
    assert again.workspace_bytes(op, config) == (forward, backward)
    assert again.measurements == 0                   # from the file
    assert again.compute_s(op, config) >= 0 and again.measurements == 0


def test_a_profile_file_without_workspaces_still_loads_and_measures_them_once(tmp_path):
    measured = _measure_in_fresh_process(tmp_path / "old.json", old=True)
    assert measured["compute_before"] == 0.25 and measured["measurements_before"] == 0
    assert measured["workspace"][1] > 0 and measured["measurements"] == 1
    assert measured["compute_after"] == 0.25         # the recorded time is kept
    assert measured["measurements_again"] == 1


class _Workspaces(AnalyticalCompute):
    """The roofline, with given workspaces per op name (forward, backward)."""

    def __init__(self, peak_flops, sizes):
        super().__init__(peak_flops)
        self.sizes = sizes

    def workspace_bytes(self, op, config):
        return self.sizes.get(op.name, (0, 0))


def test_the_simulated_peak_holds_an_op_workspace_during_its_task():
    x = to.placeholder(to.float32, [16, 32], name="x")
    w = to.get_variable("w", [16, 32])
    h = to.tanh(x * w)
    loss = to.reduce_mean(h)
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    graph = to.get_default_graph()
    cluster = get_cluster("paper-v100x16", devices=1)
    plain = CostModel(graph, 1, AnalyticalCollectives(cluster), 1e10)
    big = 1 << 20                                    # dwarfs every other buffer (2 KiB each)
    model = CostModel(graph, 1, AnalyticalCollectives(cluster), 1e10,
                      compute=_Workspaces(1e10, {h.op.name: (0, big)}))
    assert model.workspace_bytes(h.op, Config((1,), (None,))) == (0, big)
    plan = search_frontier(graph, plain).plans[0]
    base = simulate_plan(graph, plan, cluster, plain)
    r = simulate_plan(graph, plan, cluster, model)
    # at the tanh's backward: parameter w (its gradient comes later, with x * w's
    # backward), x and the tanh's output (both saved), the gradient the tanh reads and the
    # one it computes, and its workspace
    n = h.nbytes
    assert r.peak_memory_bytes == 5 * n + big
    assert base.peak_memory_bytes < r.peak_memory_bytes
    live = {b.name: b for b in r.ranks[0].memory.live_at_peak}
    assert live[f"{h.op.name}:backward workspace"].size_bytes == big
    assert live[f"{h.op.name}:backward workspace"].why == "workspace"


def test_an_op_no_gradient_flows_through_has_no_backward_workspace():
    x = to.placeholder(to.float32, [4, 8], name="x")
    y = to.tanh(x)
    w = to.get_variable("w", [4, 8])
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_mean(y * w))
    graph = to.get_default_graph()
    cluster = get_cluster("paper-v100x16", devices=1)
    model = CostModel(graph, 1, AnalyticalCollectives(cluster), 1e10,
                      compute=_Workspaces(1e10, {y.op.name: (5, 7)}))
    assert model.workspace_bytes(y.op, Config((1,), (None,))) == (5, 0)
    assert CostModel(graph, 1, AnalyticalCollectives(cluster), 1e10).workspace_bytes(
        y.op, Config((1,), (None,))) == (0, 0)


def test_workspace_of_a_hand_made_trace_is_the_pass_peak_less_what_it_hands_on():
    from tensoropt._tf import import_tensorflow
    from tensoropt.costs.profiler import workspace_of_trace

    tf = import_tensorflow()
    metadata = tf.compat.v1.RunMetadata()
    device = metadata.step_stats.dev_stats.add()

    def node(name, records):
        n = device.node_stats.add()
        n.node_name = name
        used = n.memory.add()
        for micros, nbytes in records:
            r = used.allocation_records.add()
            r.alloc_micros, r.alloc_bytes = micros, nbytes

    node("MatMul", [(1, 100), (9, -100)])                   # forward output, 100 bytes
    node("gradients/MatMul_grad/MatMul_1", [(5, 1000), (7, -1000)])   # an intermediate...
    node("gradients/MatMul_grad/Sum", [(6, 40), (9, -40)])  # ...summed into the gradient
    node("gradients/MatMul_grad/MatMul", [(8, 60), (9, -60)])  # freed while the other is not live
    # forward: peak 100, hands on 100 -> 0; backward: 1000 + 40 live at 6, hands on 40 + 60
    assert workspace_of_trace(metadata, 100, 100) == (0, 940)
    assert workspace_of_trace(metadata, 30, 2000) == (70, 0)      # floored at 0
