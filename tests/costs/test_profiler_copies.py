"""Conversion copies timed by the compute profiler (``ComputeProfiler.copies_s``) and priced
by the cost model (``CostModel.copies_s``)."""

import json

import pytest

import tensoropt as to
from tensoropt.costs.profiler import _copies
from tensoropt.costs.model import CostModel
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.costs.profiler import ComputeProfiler
from tensoropt.cluster import get_cluster
from tensoropt.simulator.step_buffers import StepBuffers

OPS = (("transpose", (64, 32, 16), (2, 0, 1)), ("split", (64, 32, 16), 1, 2),
       ("concat", (64, 16, 16), 2, 1))


def _profiler():
    return ComputeProfiler(cache_path=None, threads=1, warmup=1, min_runs=3, max_runs=5, min_time_s=0.0)


def test_copies_are_timed_once_and_then_served_from_the_cache():
    profiler = _profiler()
    seconds = profiler.copies_s(OPS)
    assert 0 < seconds < 1.0 and profiler.measurements == 1
    assert profiler.copies_s(OPS) == seconds and profiler.hits == 1 and profiler.measurements == 1
    assert profiler.copies_s(OPS, itemsize=8) >= 0 and profiler.measurements == 2   # another key
    assert profiler.copies_s(()) == 0.0 and profiler.measurements == 2


def test_a_cache_entry_timed_before_cold_inputs_is_measured_again(tmp_path):
    path = tmp_path / "compute-profile.json"
    profiler = ComputeProfiler(cache_path=path, threads=1, warmup=1, min_runs=3, max_runs=5, min_time_s=0.0)
    machine = profiler._machine_key()
    hot_key = json.dumps({"kind": "copies", "ops": [list(map(_copies._plain, op)) for op in OPS[:1]],
                          "itemsize": 4}, separators=(",", ":"))      # the key of in-cache timings
    profiler.cache.put(f"{machine}|{hot_key}", 123.0)
    assert profiler.copies_s(OPS[:1]) != 123.0 and profiler.measurements == 1


def test_the_last_level_cache_is_read_from_sysfs(tmp_path):
    for index, level, size in (("index0", 1, "32K"), ("index2", 2, "512K"), ("index3", 3, "32768K")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "level").write_text(f"{level}\n")
        (tmp_path / index / "size").write_text(f"{size}\n")
    assert _copies.last_level_cache_bytes(str(tmp_path)) == 32 * 2**20
    assert _copies.last_level_cache_bytes(str(tmp_path / "none")) == _copies.DEFAULT_CACHE_BYTES


class _Capture:
    """Stands in for the profiler's timing: keeps the graph, and says each step takes
    ``step`` seconds and an empty one ``empty``."""

    seed = 0

    def __init__(self, step, empty):
        self.step, self.empty, self.graph, self.target = step, empty, None, None

    _empty_fetches = staticmethod(ComputeProfiler._empty_fetches)

    def time_steps(self, tf, graph, init, target, empty_target):
        self.graph, self.target = graph, target
        return self.step, self.empty, 5, None


def test_copies_run_on_inputs_that_together_exceed_the_cache_one_replica_after_another(monkeypatch):
    monkeypatch.setattr(_copies, "cold_bytes", lambda: 2**20)
    ops = (("transpose", (32, 16, 16), (2, 0, 1)), ("split", (32, 16, 16), 1, 2))    # 64 KiB a replica
    timing = _Capture(step=0.0330, empty=0.0010)
    seconds = _copies.measure_copies(timing, ops)
    variables = [op for op in timing.graph.get_operations() if op.type == "VarHandleOp" and op.name != "tiny"]
    assert len(variables) == 2 * 16                          # 16 replicas of 64 KiB: 1 MiB
    assert seconds == pytest.approx((0.0330 - 0.0010) / 16)  # the step's time per replica
    assert len([op for op in timing.graph.get_operations() if op.type == "Transpose"]) == 16
    # each replica's reads wait for the replica before: nothing runs side by side
    reads = [op for op in timing.graph.get_operations()
             if op.type == "ReadVariableOp" and op.inputs[0].op.name.startswith("copy_input_")]
    waits = {op.inputs[0].op.name: op.control_inputs for op in reads}
    assert not waits["copy_input_0_0"]
    assert all(waits[f"copy_input_{r}_{k}"] for r in range(1, 16) for k in range(2))
    assert len(timing.target) == 16 * 3                      # one fetch per output, every replica


def test_an_unknown_copy_op_is_named():
    with pytest.raises(ValueError, match="expected a transpose, split or concat"):
        _profiler().copies_s((("reverse", (4, 4), 0),))


def _model(compute=None, copy_bytes_per_s=0.0):
    x = to.placeholder(to.float32, [8, 4], name="x")
    to.reduce_mean(x)
    cluster = get_cluster("paper-v100x16", devices=2)
    return CostModel(to.get_default_graph(), 2, AnalyticalCollectives(cluster), cluster.peak_flops,
                     compute=compute, copy_bytes_per_s=copy_bytes_per_s)


class _Timed:
    """A compute provider that times copies: 1 ms per op."""

    def compute_s(self, op, config):
        return 0.0

    def copies_s(self, ops, itemsize=4):
        return 1e-3 * len(ops)


def test_the_cost_model_asks_a_provider_that_times_copies_and_else_uses_the_copy_speed():
    held = StepBuffers(0, 0, 0, copied=2_000_000, copy_ops=OPS)
    assert _model(_Timed(), copy_bytes_per_s=1e9).copies_s(held) == pytest.approx(3e-3)
    assert _model(copy_bytes_per_s=1e9).copies_s(held) == pytest.approx(2e-3)     # the roofline times none
    assert _model().copies_s(held) == 0.0
    assert _model(_Timed()).copies_s(StepBuffers(0, 0, 0)) == 0.0                # no copies, no time
