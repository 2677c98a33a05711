"""The calibrated overheads in the estimates, priced by hand: a collective costs its
chained cycle plus what its size adds over a tiny one; every op that computes pays its
launch forward and again backward; a profile's ``overheads`` is read and checked."""

import json

import pytest

import tensoropt as to
from tensoropt.cluster.calibration import CalibrationProfile, profile_overheads
from tensoropt.configs import Config
from tensoropt.costs.model import FORWARD_SHARE, CostModel, WithCycle
from tensoropt.execution.calibration_overheads import transfer_share
from tensoropt.search.strategy import make_cost_model
from tensoropt.simulator.step_buffers import StepBuffers

ALPHA, BW = 5e-4, 1e9     # the standalone profile: 0.5 ms per call + bytes / 1 GB/s
PEAK = 1e9


class Linear:
    def time_s(self, collective, nbytes, group_size, stride):
        return ALPHA + nbytes / BW


def test_a_chained_collective_costs_the_cycle_plus_what_its_size_adds():
    c = WithCycle(Linear(), cycle_s=1e-4)
    assert c.time_s("allreduce", 4096, 2, 1) == pytest.approx(1e-4 + (4096 - 8) / BW)
    assert c.time_s("allgather", 1 << 20, 4, 1) == pytest.approx(1e-4 + ((1 << 20) - 16) / BW)
    assert c.time_s("allreduce", 4096, 1, 1) == Linear().time_s("allreduce", 4096, 1, 1)   # no group
    assert c.time_s("alltoall", 0, 2, 1) == 1e-4              # issued, moving nothing: its cycle


def test_the_tiny_time_is_the_least_over_tiny_sizes_so_one_outlier_does_not_swallow_a_transfer():
    class FirstSizeSlow(Linear):
        def time_s(self, collective, nbytes, group_size, stride):
            return (3e-3 if nbytes <= 8 else 0.0) + super().time_s(collective, nbytes, group_size, stride)
    c = WithCycle(FirstSizeSlow(), cycle_s=1e-4)
    assert c.tiny_s("allgather", 2, 1) == pytest.approx(ALPHA + 16 / BW)
    assert c.time_s("allgather", 1 << 20, 2, 1) == pytest.approx(1e-4 + ((1 << 20) - 16) / BW)


def _graph():
    x = to.placeholder(to.float32, [8, 16], name="x")
    w = to.get_variable("w", [16, 16])
    h = to.nn.relu(to.matmul(x, w, name="mm"), name="act")
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_sum(h))
    return to.get_default_graph()


def test_every_op_that_computes_pays_its_launch_forward_and_backward():
    graph = _graph()
    plain = CostModel(graph, 2, Linear(), PEAK)
    model = CostModel(graph, 2, Linear(), PEAK, op_overhead_s=1e-3, collective_overhead_s=1e-4)
    act, x = graph.get_operation_by_name("act"), graph.get_operation_by_name("x")
    rows = Config((2,), ("d0",))
    work = 2.0 * 8 * 16 / 2 / PEAK                      # relu: 2 FLOPs per element, split 2 ways
    assert model.op_cost(act, rows).compute_s == pytest.approx(work + 2e-3)
    assert model.compute_split(act, rows) == pytest.approx((work * FORWARD_SHARE + 1e-3,
                                                            work * (1 - FORWARD_SHARE) + 1e-3))
    assert model.op_cost(x, Config((2,), ("d0",))).compute_s == 0.0      # sources launch nothing
    # the matmul split over k all-reduces its [8, 16] output: a chained cycle, not a standalone call
    mm = graph.get_operation_by_name("mm")
    over_k = Config((2,), ("k",))
    assert plain.op_cost(mm, over_k).sync_s == pytest.approx(ALPHA + 8 * 16 * 4 / BW)
    assert model.op_cost(mm, over_k).sync_s == pytest.approx(1e-4 + (8 * 16 * 4 - 8) / BW)


def test_a_re_scheduling_step_is_priced_in_a_chain_too_and_transfers_leave_the_cycle_out():
    from reschedule import Layout, plan_conversion
    graph = _graph()
    model = CostModel(graph, 2, Linear(), PEAK, collective_overhead_s=1e-4)
    plain = CostModel(graph, 2, Linear(), PEAK)
    rows, full = Layout((2,), (0, -1)), Layout((2,), (-1, -1))
    gather = plan_conversion(rows, full, (8, 16), 4, model.step_cost).steps
    assert [s.kind for s in gather] == ["allgather"]
    nbytes = 8 * 16 * 4          # the gathered [8, 16] float32; a tiny one: 4 bytes per rank
    assert model.step_cost(gather[0], (8, 16), 4) == pytest.approx(1e-4 + (nbytes - 8) / BW)
    assert model.step_transfer(gather[0], (8, 16), 4) == pytest.approx((nbytes - 8) / BW)
    assert model.transfers.time_s("allreduce", 4096, 2, 1) == pytest.approx((4096 - 8) / BW)
    # without a calibrated cycle, both are the provider's standalone times
    assert plain.step_cost(gather[0], (8, 16), 4) == plain.step_transfer(gather[0], (8, 16), 4) \
        == pytest.approx(ALPHA + nbytes / BW)


def _profile(overheads, busy=None):
    """``busy``: a function of bytes giving each measurement's ``busy_seconds``."""
    extra = {} if overheads is None else {"overheads": overheads}
    return CalibrationProfile(world_size=2, hostnames=["h", "h"], machines=1, devices_per_machine=2,
                              measurements=[{"collective": c, "group_size": 2, "stride": 1, "bytes": n,
                                             "seconds": ALPHA + n / BW,
                                             **({"busy_seconds": busy(n)} if busy else {})}
                                            for c in ("allreduce", "allgather", "reducescatter", "alltoall")
                                            for n in (8, 1 << 10, 1 << 20)],
                              peak_flops=PEAK, memory_bytes_per_device=2**30, tensoropt_version="test",
                              extra=extra)


def test_the_profiled_cost_model_takes_the_profile_overheads(tmp_path, monkeypatch):
    path = tmp_path / "local.json"
    _profile({"collective_s": 2e-4, "op_s": 3e-5, "copy_bytes_per_s": 2e9, "transfer_compute_share": 0.6}).save(path)
    monkeypatch.setenv("TENSOROPT_PROFILE", str(path))
    model = make_cost_model(_graph(), "paper-v100x16", 2, "profiled")
    assert (model.op_overhead_s, model.collective_overhead_s) == (3e-5, 2e-4)
    assert model.transfer_compute_share == 0.6
    assert model.copy_bytes_per_s == 2e9 and model.copies_s(StepBuffers(0, 0, 0, copied=int(4e9))) == 2.0
    assert model.collectives.time_s("allreduce", 8, 2, 1) == pytest.approx(2e-4)


def test_a_profile_that_has_not_measured_the_transfer_share_takes_turns(tmp_path, monkeypatch):
    # an older profile (its compute_slowdown is not a share, and is ignored)
    path = tmp_path / "local.json"
    _profile({"collective_s": 2e-4, "compute_slowdown": 1.08}).save(path)
    monkeypatch.setenv("TENSOROPT_PROFILE", str(path))
    graph = _graph()
    assert make_cost_model(graph, "paper-v100x16", 2, "profiled").transfer_compute_share == 1.0
    assert make_cost_model(graph, "paper-v100x16", 2, "analytical").transfer_compute_share == 0.0


@pytest.mark.parametrize("compute, transfer, both, share", [
    (10.0, 10.0, 20.0, 1.0),      # they take turns
    (10.0, 10.0, 10.0, 0.0),      # they overlap freely
    (10.0, 20.0, 24.0, 0.4),      # the shorter loses 4 of its 10
    (20.0, 10.0, 24.0, 0.4),      # whichever of the two it is
    (10.0, 10.0, 9.0, 0.0),       # noise below the longer: clamped
    (10.0, 10.0, 31.0, 1.0),      # and above both: clamped
])
def test_the_transfer_share_is_what_the_pair_costs_beyond_the_longer_over_the_shorter(compute, transfer, both, share):
    assert transfer_share(compute, transfer, both) == pytest.approx(share)


@pytest.mark.parametrize("overheads, pattern", [
    ([1, 2], "not an object"),
    ({"transfer_compute_share": 1.3}, r"overheads.transfer_compute_share is 1.3, not a number in \[0, 1\]"),
    ({"op_s": -1.0}, "overheads.op_s is -1.0"),
    ({"collective_s": "fast"}, "overheads.collective_s is 'fast'"),
])
def test_bad_overheads_are_named_with_the_command_that_rewrites_them(overheads, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        profile_overheads(_profile(overheads))
    assert "tensoropt calibrate" in str(info.value)


def test_profiles_without_overheads_still_load(tmp_path):
    assert profile_overheads(_profile(None)) == {}
    path = tmp_path / "p.json"
    _profile({"op_s": 1e-5}).save(path)
    assert json.loads(path.read_text())["overheads"] == {"op_s": 1e-5}
    assert profile_overheads(CalibrationProfile.load(path)) == {"op_s": 1e-5}


@pytest.mark.parametrize("devices, per_machine", [(1, 1), (2, 2), (4, 4), (16, 8)])
def test_the_profiled_cost_model_times_shards_with_the_threads_a_rank_trains_with(
        tmp_path, monkeypatch, devices, per_machine):
    # paper-v100x16 has 8 devices per machine: fewer devices sit on one machine
    path = tmp_path / "local.json"
    _profile({"op_s": 1e-5}).save(path)
    monkeypatch.setenv("TENSOROPT_PROFILE", str(path))
    monkeypatch.delenv("TENSOROPT_THREADS", raising=False)
    monkeypatch.setattr("tensoropt.cluster.threads.available_cpus", lambda: 16)
    model = make_cost_model(_graph(), "paper-v100x16", devices, "profiled")
    assert model.compute.threads == 16 // per_machine


def _busy(n):
    return 1e-4 + n / 4e9     # horovod's own work: 0.1 ms, then 4 GB/s


def test_a_transfer_is_the_larger_of_horovod_s_busy_time_and_what_a_chained_call_exceeds_a_tiny_one(
        tmp_path, monkeypatch):
    path = tmp_path / "local.json"
    _profile({"collective_s": 2e-4}, busy=_busy).save(path)
    monkeypatch.setenv("TENSOROPT_PROFILE", str(path))
    model = make_cost_model(_graph(), "paper-v100x16", 2, "profiled")
    # 1 KiB: its chained excess (1 us) hides inside the cycle; horovod worked 0.1 ms on it
    assert model.transfers.time_s("allreduce", 1 << 10, 2, 1) == pytest.approx(_busy(1 << 10))
    # 1 MiB: the chain shows more than horovod's own work (TensorFlow's side of the call)
    assert model.transfers.time_s("allgather", 1 << 20, 2, 1) == pytest.approx(((1 << 20) - 8) / BW)
    # the additive estimate's chained price is unchanged: the cycle plus the chained excess
    assert model.collectives.time_s("allreduce", 1 << 10, 2, 1) == pytest.approx(2e-4 + (1024 - 8) / BW)
    assert model.transfers.time_s("allreduce", 1 << 10, 1, 1) == 0.0       # a group of one: none


def test_without_busy_seconds_on_every_measurement_a_transfer_is_the_chained_excess(tmp_path, monkeypatch):
    profile = _profile({"collective_s": 2e-4}, busy=_busy)
    del profile.measurements[0]["busy_seconds"]
    assert not profile.has_busy_seconds() and _profile(None, busy=_busy).has_busy_seconds()
    path = tmp_path / "local.json"
    profile.save(path)
    monkeypatch.setenv("TENSOROPT_PROFILE", str(path))
    model = make_cost_model(_graph(), "paper-v100x16", 2, "profiled")
    assert model.transfers.time_s("allreduce", 1 << 10, 2, 1) == pytest.approx((1024 - 8) / BW)


def test_busy_seconds_are_read_per_size_and_a_bad_one_is_named(tmp_path):
    profile = _profile(None, busy=_busy)
    assert profile.points("busy_seconds")[("alltoall", 2, 1)] == [(n, pytest.approx(_busy(n)))
                                                                 for n in (8, 1 << 10, 1 << 20)]
    data = profile.to_dict()
    data["measurements"][3]["busy_seconds"] = -1
    with pytest.raises(ValueError, match=r"measurements\[3\]\.busy_seconds must be a positive number") as info:
        CalibrationProfile.from_dict(data)
    assert "tensoropt calibrate" in str(info.value)
