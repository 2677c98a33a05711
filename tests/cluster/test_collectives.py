"""Collective-time providers: analytical closed forms, profile interpolation, profile files."""

import json
import warnings

import pytest

from tensoropt.cluster import COLLECTIVES, CalibrationProfile, Cluster, Link, get_cluster
from tensoropt.cluster.presets import local_cluster
from tensoropt.costs.collective_times import AnalyticalCollectives, ProfiledCollectives

V100 = get_cluster("paper-v100x16")
A_IN, B_IN = 5e-6, 130e9      # NVLink
A_X, B_X = 10e-6, 12.5e9      # EDR RDMA, one per machine


@pytest.fixture
def an():
    return AnalyticalCollectives(V100)


@pytest.mark.parametrize("g", [2, 4, 8])
def test_allreduce_inside_one_machine(an, g):
    n = 3e6
    assert an.time_s("allreduce", n, g, 1) == pytest.approx(2 * (g - 1) * A_IN + 2 * (g - 1) / g * n / B_IN)
    assert an.link_of(g, 1) == "intra"


@pytest.mark.parametrize("c", ["allgather", "reducescatter", "alltoall"])
def test_one_pass_collectives_inside_one_machine(an, c):
    n, g = 2**20, 4
    assert an.time_s(c, n, g, 2) == pytest.approx((g - 1) * A_IN + (g - 1) / g * n / B_IN)


def test_spanning_groups_share_the_network_card(an):
    n = 2**24
    # 8 groups (i, i+8): every rank's ring leaves its machine; 8 streams share 12.5 GB/s
    assert an.link_of(2, 8) == "inter"
    assert an.time_s("allreduce", n, 2, 8) == pytest.approx(2 * (A_X + n / 2 / (B_X / 8)))
    # 4 groups of 4 with stride 4: 2 members per machine, 4 streams per card
    assert an.time_s("allgather", n, 4, 4) == pytest.approx(3 * (A_X + n / 4 / (B_X / 4)))
    # the one group of 16: one stream, bounded by the inter link
    assert an.time_s("allreduce", n, 16, 1) == pytest.approx(30 * (A_X + n / 16 / B_X))
    # alltoall (i, i+8): each rank sends n/2 off-machine, 8 ranks per card
    assert an.time_s("alltoall", n, 2, 8) == pytest.approx(A_X + 8 * (n / 2) / B_X)
    # slower network, slower spanning collectives; intra-machine ones unchanged
    nordma = AnalyticalCollectives(get_cluster("paper-nordma"))
    assert nordma.time_s("allreduce", n, 2, 8) > an.time_s("allreduce", n, 2, 8)
    assert nordma.time_s("allreduce", n, 8, 1) == an.time_s("allreduce", n, 8, 1)


def test_trivial_and_bad_arguments(an):
    assert an.time_s("allreduce", 1e6, 1, 1) == 0.0
    assert an.time_s("allgather", 0, 4, 1) == 0.0
    assert an.time_group_s("allreduce", 1e6, (1, 9)) == an.time_s("allreduce", 1e6, 2, 8)
    with pytest.raises(ValueError, match="unknown collective 'broadcast'"):
        an.time_s("broadcast", 1e6, 2, 1)
    with pytest.raises(ValueError, match="does not partition"):
        an.time_s("allreduce", 1e6, 3, 1)
    with pytest.raises(ValueError, match="nbytes"):
        an.time_s("allreduce", -1, 2, 1)


def test_bigger_messages_take_longer(an):
    for c in COLLECTIVES:
        times = [an.time_s(c, 2.0**i, 4, 4) for i in range(4, 30)]
        assert times == sorted(times)


# ---- profiled ---------------------------------------------------------------------------

def _profile(measurements, world_size=4, machines=1, dpm=4):
    return CalibrationProfile(world_size=world_size, hostnames=["h"] * world_size, machines=machines,
                              devices_per_machine=dpm, measurements=measurements, peak_flops=2e10,
                              memory_bytes_per_device=2**30, tensoropt_version="test")


def _alpha_beta(c, g, s, alpha, bw, sizes):
    return [{"collective": c, "group_size": g, "stride": s, "bytes": n, "seconds": alpha + n / bw}
            for n in sizes]


SIZES = [2**i for i in range(4, 11)]


def test_exact_at_measured_points_and_interpolated_between():
    alpha, bw = 1e-3, 1e9
    pc = ProfiledCollectives(_profile(_alpha_beta("allreduce", 2, 1, alpha, bw, SIZES)))
    for n in SIZES:
        assert pc.time_s("allreduce", n, 2, 1) == pytest.approx(alpha + n / bw, rel=1e-12)
    # 3 * 2^6 = 192 lies halfway between 128 and 256: the bandwidths' mean
    b128, b256 = 128 / (alpha + 128 / bw), 256 / (alpha + 256 / bw)
    assert pc.bandwidth("allreduce", 192, 2, 1) == pytest.approx((b128 + b256) / 2)
    assert pc.time_s("allreduce", 192, 2, 1) == pytest.approx(192 / ((b128 + b256) / 2))
    # 160 = 128 + 32: a quarter of the way
    assert pc.bandwidth("allreduce", 160, 2, 1) == pytest.approx(b128 + 0.25 * (b256 - b128))
    # latency-bound: time t = alpha + k / bw is close to the interpolation
    assert pc.time_s("allreduce", 192, 2, 1) == pytest.approx(alpha + 192 / bw, rel=1e-3)


def test_outside_the_measured_range():
    alpha, bw = 1e-3, 1e9
    pc = ProfiledCollectives(_profile(_alpha_beta("allgather", 4, 1, alpha, bw, SIZES)))
    t16 = alpha + 16 / bw
    assert pc.time_s("allgather", 4, 4, 1) == pytest.approx(t16)  # latency floor
    assert pc.time_s("allgather", 16, 4, 1) == pytest.approx(t16)
    b_last = 1024 / (alpha + 1024 / bw)
    assert pc.time_s("allgather", 2**20, 4, 1) == pytest.approx(2**20 / b_last)
    assert pc.time_s("allgather", 0, 4, 1) == 0.0
    assert pc.time_s("allgather", 100, 1, 1) == 0.0


def test_bandwidth_forced_monotone():
    meas = _alpha_beta("alltoall", 2, 2, 1e-3, 1e9, SIZES)
    meas[3]["seconds"] *= 5  # a slow outlier at 128 bytes: bandwidth would drop
    pc = ProfiledCollectives(_profile(meas))
    b64 = 64 / meas[2]["seconds"]
    assert pc.bandwidth("alltoall", 128, 2, 2) == pytest.approx(b64)
    assert pc.time_s("alltoall", 128, 2, 2) == pytest.approx(128 / b64)
    bws = [pc.bandwidth("alltoall", k, 2, 2) for k in range(16, 2048, 7)]
    assert bws == sorted(bws)


def test_several_measurements_of_one_size_keep_the_median():
    meas = [{"collective": "allreduce", "group_size": 2, "stride": 1, "bytes": 64, "seconds": t}
            for t in (1.0, 2.0, 9.0)]
    assert ProfiledCollectives(_profile(meas)).time_s("allreduce", 64, 2, 1) == pytest.approx(2.0)


def test_unknown_scheme_says_to_recalibrate():
    pc = ProfiledCollectives(_profile(_alpha_beta("allreduce", 2, 1, 1e-3, 1e9, SIZES)), source="p.json")
    with pytest.raises(ValueError, match=r"p.json has no allreduce measurement for groups of 8 .*re-run "
                                         r"tensoropt calibrate .* at least 8 ranks"):
        pc.time_s("allreduce", 100, 8, 1)
    with pytest.raises(ValueError, match="no reducescatter measurement"):
        pc.time_s("reducescatter", 100, 2, 1)
    with pytest.raises(ValueError, match="unknown collective"):
        pc.time_s("gather", 100, 2, 1)


# ---- profile files ----------------------------------------------------------------------

def test_profile_round_trip_and_local_cluster(tmp_path):
    alpha, bw, g = 1e-4, 1e9, 4  # ring allreduce: t = 2(g-1) alpha + 2(g-1)/g n / bw
    meas = [{"collective": "allreduce", "group_size": g, "stride": 1, "bytes": n,
             "seconds": 2 * (g - 1) * alpha + 2 * (g - 1) / g * n / bw} for n in SIZES]
    path = tmp_path / "local.json"
    _profile(meas).save(path)
    loaded = CalibrationProfile.load(path)
    assert loaded.measurements == meas and loaded.peak_flops == 2e10
    assert ProfiledCollectives.from_file(path).time_s("allreduce", 64, 4, 1) == pytest.approx(meas[2]["seconds"])
    local = get_cluster("local", profile=path)
    assert isinstance(local, Cluster) and local.name == "local"
    assert (local.machines, local.devices_per_machine, local.peak_flops) == (1, 4, 2e10)
    assert local.memory_bytes == 2**30
    assert local.intra.latency_s == pytest.approx(alpha)
    assert local.intra.bandwidth_bytes_per_s == pytest.approx(bw)
    assert local.inter == local.intra
    assert get_cluster("local", profile=path, devices=2).devices == 2


def test_a_job_of_another_shape_than_the_profile_is_told_to_calibrate_it(tmp_path):
    path = tmp_path / "local.json"
    _profile(_alpha_beta("allreduce", 4, 1, 1e-4, 1e9, SIZES)).save(path)   # 1 machine x 4
    assert local_cluster(1, 4, profile=path).name == "local"
    assert local_cluster(profile=path).devices == 4       # one process plans offline: any shape
    for machines, per_machine in ((2, 2), (1, 2)):
        with pytest.raises(ValueError, match=rf"measured on 1 machine\(s\) x 4 rank\(s\), but this "
                           rf"job runs {machines} x {per_machine}.*mpirun -np {machines * per_machine} "
                           "tensoropt calibrate --out"):
            local_cluster(machines, per_machine, profile=path)


def test_a_job_with_other_horovod_timing_settings_than_the_calibration_is_warned(tmp_path, monkeypatch):
    from tensoropt.cluster.calibration import timing_env_mismatch
    path = tmp_path / "local.json"
    profile = _profile(_alpha_beta("allreduce", 4, 1, 1e-4, 1e9, SIZES))
    profile.extra["horovod_env"] = {"HOROVOD_CYCLE_TIME": None, "HOROVOD_FUSION_THRESHOLD": None}
    profile.save(path)
    monkeypatch.delenv("HOROVOD_CYCLE_TIME", raising=False)
    monkeypatch.delenv("HOROVOD_FUSION_THRESHOLD", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local_cluster(1, 4, profile=path)                 # the same settings: silent
    monkeypatch.setenv("HOROVOD_CYCLE_TIME", "0.2")
    with pytest.warns(UserWarning, match=r"HOROVOD_CYCLE_TIME: calibrated with horovod's default, this job "
                      r"has '0.2'.*HOROVOD_CYCLE_TIME=0.2 mpirun -x HOROVOD_CYCLE_TIME -np N tensoropt calibrate"):
        local_cluster(1, 4, profile=path)
    profile.extra.pop("horovod_env")                       # a profile from before they were recorded
    assert timing_env_mismatch(profile) == []


def _good_profile_dict():
    return _profile(_alpha_beta("allreduce", 2, 1, 1e-3, 1e9, SIZES)).to_dict()


@pytest.mark.parametrize("mutate, pattern", [
    (lambda d: d.update(format_version=0), "format_version is 0 but this TensorOpt reads version 1"),
    (lambda d: d.pop("measurements"), r"missing field\(s\) \['measurements'\]"),
    (lambda d: d.update(world_size=0), "field 'world_size'"),
    (lambda d: d.update(hostnames=["h"]), "field 'hostnames' must list 4"),
    (lambda d: d.update(compute={}), "compute.matmul_flops_per_s"),
    (lambda d: d["measurements"][0].pop("seconds"), r"measurements\[0\] must have fields"),
    (lambda d: d["measurements"][1].update(collective="bcast"), r"measurements\[1\].collective 'bcast'"),
    (lambda d: d["measurements"][2].update(group_size=3), r"measurements\[2\] has group_size=3"),
    (lambda d: d["measurements"][2].update(seconds=-1.0), r"measurements\[2\] needs positive"),
])
def test_bad_profiles(tmp_path, mutate, pattern):
    data = _good_profile_dict()
    mutate(data)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=pattern) as info:
        CalibrationProfile.load(path)
    assert str(path) in str(info.value) and "tensoropt calibrate" in str(info.value)


def test_corrupt_profile(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_good_profile_dict())[:-20])
    with pytest.raises(ValueError, match=r"p.json: the calibration profile is not valid JSON.*corrupt.*re-run"):
        ProfiledCollectives.from_file(path)
    with pytest.raises(ValueError, match="cannot read"):
        CalibrationProfile.load(tmp_path / "missing.json")


def test_local_cluster_two_machines_fits_inter_link(tmp_path):
    # 4 ranks on 2 hosts: (2, 1) stays inside, (2, 2) spans; both ring allreduces
    meas = (_alpha_beta("allreduce", 2, 1, 2e-5, 1e9, SIZES) +
            [{"collective": "allreduce", "group_size": 2, "stride": 2, "bytes": n,
              "seconds": 2 * 1e-4 + n / 1e8} for n in SIZES])
    prof = _profile(meas, machines=2, dpm=2)
    prof.hostnames = ["a", "a", "b", "b"]
    path = tmp_path / "two.json"
    prof.save(path)
    local = CalibrationProfile.load(path).to_cluster()
    assert (local.machines, local.devices_per_machine) == (2, 2)
    assert local.intra.latency_s == pytest.approx(1e-5) and local.intra.bandwidth_bytes_per_s == pytest.approx(1e9)
    assert local.inter.latency_s == pytest.approx(1e-4) and local.inter.bandwidth_bytes_per_s == pytest.approx(1e8)
    assert isinstance(local.inter, Link)
