"""Calibration under ``mpirun -np 4``: the profile it writes, and its predictions at sizes it
did not measure.

One launch (``tensoropt.bench.calibration``, the same as ``python -m tensoropt.bench
calibration``) calibrates every partitioning scheme of 4 ranks and every collective at
sizes 2^i (16 B .. 1 MiB) and measures held-out sizes 3 * 2^i in the same rounds.

What is asserted: the profile covers every scheme, collective and size and none of the
held-out sizes; the collectives really ran (a 16 MiB allreduce takes clearly longer than a
16 B one: it would not if graph optimization had constant-folded them); and the
predictions describe this machine at all (median |error| within 50%, twice the bench's
target). The accuracy figures and their 25% targets are the bench's to print: on a 2-core
machine shared with other jobs every size here is latency-bound and single points are as
noisy as horovod's negotiation cycle, so per-point bounds in a test would fail by chance.
"""

import shutil

import numpy as np
import pytest

from tensoropt.bench.calibration import held_out_report, launch
from tensoropt.cluster.calibration import COLLECTIVES
from tensoropt.cluster.mesh import partition_schemes

pytestmark = pytest.mark.mpi

RANKS = 4
SANITY_BOUND = 0.5  # median |error|; the bench's target is 25%


def _skip_without_mpi():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found: install Open MPI (apt-get install openmpi-bin libopenmpi-dev) "
                    "to run tests/parallel")
    for mod in ("mpi4py", "horovod.tensorflow"):
        try:
            __import__(mod)
        except ImportError as e:
            pytest.skip(f"{mod} is not importable ({e}); see HOROVOD.md for the build")


def test_profiled_prediction_of_unmeasured_sizes(tmp_path, capsys):
    _skip_without_mpi()
    try:
        launch(tmp_path, ranks=RANKS, max_bytes=2**20, repeats=30, statistic="p25")
    except RuntimeError as e:
        pytest.fail(str(e))
    report = held_out_report(tmp_path, "p25")
    text = report.text()
    (tmp_path / "report.txt").write_text(text + "\n")
    with capsys.disabled():
        print("\n" + text)

    schemes = partition_schemes(RANKS)
    assert schemes == [(2, 1), (2, 2), (4, 1)]
    for c in COLLECTIVES:
        assert report.profile.schemes(c) == schemes, f"the profile lacks schemes of {c}"
    measured = {m["bytes"] for m in report.profile.profile.measurements}
    assert measured == {2**i for i in range(4, 21)}
    assert len(report.held_out) == len(schemes) * len(COLLECTIVES) * 8  # 3 * 2^i for i = 4, 6, ..., 18
    assert not {m["bytes"] for m in report.held_out} & measured

    # horovod's own work on each size, from its timeline: on every measurement, and more for
    # the largest sizes than the smallest over all schemes (medians: 4 ranks share 2 cores
    # here, so one tiny call can wait for a peer that is not running; measured 2026-11-27,
    # the ratio was 2.4 for reducescatter and 8-17 for the others)
    assert all(m.get("busy_seconds", 0) > 0 for m in report.profile.profile.measurements)
    for c in COLLECTIVES:
        def busy(sizes):
            return np.median([m["busy_seconds"] for m in report.profile.profile.measurements
                              if m["collective"] == c and m["bytes"] in sizes])
        assert busy({2**19, 2**20}) > 1.5 * busy({16, 32}), f"{c}: 1 MiB worked as briefly as 16 B"

    ratio = report.allreduce_16mib_over_16b
    assert ratio > 2, (f"a 16 MiB allreduce took only {ratio:.2f}x the time of a 16 B one: the collectives "
                       "were not really run (constant folding?)")
    assert np.median(report.errors) <= SANITY_BOUND, text


def test_three_ranks_calibrate_and_the_profile_prices_any_size(tmp_path, mpirun):
    # 3 ranks: no power of two from 12 bytes splits into float32 pieces among a group of 3;
    # `tensoropt calibrate` used to stop at its first allgather ("16 bytes cannot be split")
    from tensoropt.cluster.calibration import CalibrationProfile, profile_overheads
    from tensoropt.costs.collective_times import ProfiledCollectives
    from tensoropt.execution.calibration_overheads import OVERLAP_TRIES, transfer_share

    _skip_without_mpi()
    out = tmp_path / "cal3.json"
    proc = mpirun(3, "-m", "tensoropt", "calibrate", "--out", str(out), "--max-bytes", "4096",
                  "--repeats", "2", timeout=240)
    assert "calibrate: 3 rank(s)" in proc.stdout
    profile = CalibrationProfile.load(out)
    assert profile.world_size == 3
    # what a transfer costs the compute beside it: the median share of the recorded tries
    overheads = profile_overheads(profile)
    seen = profile.extra["overheads"]["overlap"]
    shares = [transfer_share(*t) for t in zip(seen["compute_s"], seen["transfer_s"], seen["both_s"])]
    assert len(shares) == OVERLAP_TRIES and all(s > 0 for s in seen["compute_s"] + seen["transfer_s"])
    assert overheads["transfer_compute_share"] == pytest.approx(float(np.median(shares)))
    collectives = ProfiledCollectives(profile)
    for c in COLLECTIVES:
        assert collectives.schemes(c) == [(3, 1)], f"{c}: {collectives.schemes(c)}"
        sizes = sorted(m["bytes"] for m in profile.measurements if m["collective"] == c)
        unit = 4 if c == "allreduce" else 12
        assert sizes and all(b % unit == 0 for b in sizes), f"{c}: {sizes}"
        assert sizes[-1] >= 4096
        # a size between two measured ones, and one no measured size divides: priced, not
        # ordered (two repeats on 3 ranks sharing 2 cores order nearby sizes by chance;
        # a CI run beside another job priced 1000 bytes above 40 KiB)
        for nbytes in (1000, 10 * 4096):
            assert 0 < collectives.time_s(c, nbytes, 3, 1) < 1.0, f"{c}: {nbytes} bytes"
