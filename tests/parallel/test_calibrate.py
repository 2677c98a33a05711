"""Calibration under ``mpirun -np 4``: profiled predictions at sizes it did not measure.

One launch (``calibrate_check.py``) calibrates every partitioning scheme of 4 ranks and
every collective at sizes 2^i (16 B .. 1 MiB) and measures held-out sizes 3 * 2^i; here
``ProfiledCollectives`` predicts the held-out sizes from the profile alone, and the
errors are printed. The held-out sizes share the calibration's measurement rounds (MODE
``interleaved``), so that load from other jobs on a shared machine reaches both alike.
Repeats combine by their 25th percentile (``tensoropt calibrate --statistic p25``; the
median, calibrate's default, is printed too): here a small collective takes one, two or
three of horovod's ~1 ms negotiation cycles, and the median of 30 samples flips between
those modes (one run: 66/96 points within 25% by median, 91/96 by 25th percentile, from
the same samples).

What is asserted: the median |error| over all held-out points, and per collective, is
within 25%, and at least three quarters of the points are each within 25%. Not every
single point: on this 2-core machine shared with other jobs (load average 10-16 seen),
every size here is latency-bound (a few ms: horovod's negotiation cycle and scheduling) and the noise of one point is as large at
768 KiB as at 48 B, so no size range can be singled out where every point meets 25%.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensoropt.cluster.calibration import COLLECTIVES
from tensoropt.costs.collective_times import ProfiledCollectives
from tensoropt.cluster.mesh import partition_schemes

pytestmark = pytest.mark.mpi

RANKS = 4
MAX_BYTES = 2**20
REPEATS = 30
STATISTIC = "p25"
ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("calibrate_check.py")


def _skip_without_mpi():
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found: install Open MPI (apt-get install openmpi-bin libopenmpi-dev) "
                    "to run tests/parallel")
    for mod in ("mpi4py", "horovod.tensorflow"):
        try:
            __import__(mod)
        except ImportError as e:
            pytest.skip(f"{mod} is not importable ({e}); see HOROVOD.md for the build")


def _launch(out_dir: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               TF_CPP_MIN_LOG_LEVEL="2", CALIBRATE_CHECK_SAMPLES="1")
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS), "-x", "PYTHONPATH",
           "-x", "TF_CPP_MIN_LOG_LEVEL", "-x", "CALIBRATE_CHECK_SAMPLES", sys.executable, str(RUNNER),
           str(out_dir), str(MAX_BYTES), str(REPEATS), "2", "interleaved", "1", STATISTIC]
    try:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=420)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"calibration under mpirun did not finish in {e.timeout} s; is the machine overloaded?")
    if proc.returncode != 0:
        pytest.fail(f"mpirun exited with {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _errors(pc, measurements):
    rows = []
    for m in measurements:
        pred = pc.time_s(m["collective"], m["bytes"], m["group_size"], m["stride"])
        rows.append((m["collective"], m["group_size"], m["stride"], m["bytes"], m["seconds"], pred,
                     (pred - m["seconds"]) / m["seconds"]))
    return rows


def test_profiled_prediction_of_unmeasured_sizes(tmp_path, capsys):
    _skip_without_mpi()
    _launch(tmp_path)
    profile_path, fresh = tmp_path / "profile.json", json.loads((tmp_path / "fresh.json").read_text())
    pc = ProfiledCollectives.from_file(profile_path)
    schemes = partition_schemes(RANKS)
    assert schemes == [(2, 1), (2, 2), (4, 1)]
    for c in COLLECTIVES:
        assert pc.schemes(c) == schemes, f"the profile lacks schemes of {c}"
    measured = {m["bytes"] for m in pc.profile.measurements}
    assert measured == {2**i for i in range(4, 21)}
    held_out = fresh["measurements"]
    assert len(held_out) == len(schemes) * len(COLLECTIVES) * 8  # 3 * 2^i for i = 4, 6, ..., 18
    assert not {m["bytes"] for m in held_out} & measured

    ratio = fresh["allreduce_16MiB_over_16B"]
    assert ratio > 2, (f"a 16 MiB allreduce took only {ratio:.2f}x the time of a 16 B one: the collectives "
                       "were not really run (constant folding?)")

    rows = _errors(pc, held_out)
    errs = np.abs([r[-1] for r in rows])
    # the same samples combined by their median instead (information only)
    samples = json.loads((tmp_path / "samples.json").read_text())
    med = {tuple(s[:4]): float(np.median(s[4])) for s in samples}
    for m in pc.profile.measurements:
        m["seconds"] = med[(m["collective"], m["group_size"], m["stride"], m["bytes"])]
    pc_med = ProfiledCollectives(pc.profile)
    med_errs = np.abs([r[-1] for r in _errors(pc_med, [dict(m, seconds=med[(m["collective"], m["group_size"],
                                                                            m["stride"], m["bytes"])])
                                                          for m in held_out])])
    per_collective = {c: float(np.median([abs(r[-1]) for r in rows if r[0] == c])) for c in COLLECTIVES}
    lines = [f"calibrate under mpirun -np {RANKS}: {len(rows)} held-out points, statistic {STATISTIC} of "
             f"{REPEATS} repeats; startup {fresh['startup_s']} s, measuring {fresh['calibrate_s']} s "
             f"(graph building and warm-up {fresh.get('trace_and_warmup_s')} s, timed rounds {fresh.get('timed_rounds_s')} s); "
             f"16 MiB / 16 B allreduce time: {ratio:.1f}x"]
    lines += [f"  {c:13s} g={g} stride={s} {n:8d} B  measured {t * 1e3:7.3f} ms  predicted {p * 1e3:7.3f} ms  "
              f"error {e:+6.1%}" for c, g, s, n, t, p, e in rows]
    lines.append(f"  |error| median {np.median(errs):.1%}, mean {errs.mean():.1%}, max {errs.max():.1%}, "
                 f"within 25%: {(errs <= 0.25).sum()}/{len(errs)}")
    lines.append("  per collective median |error|: " + ", ".join(f"{c} {v:.1%}" for c, v in per_collective.items()))
    lines.append(f"  (median instead of 25th percentile: |error| median {np.median(med_errs):.1%}, mean {med_errs.mean():.1%}, "
                 f"within 25%: {(med_errs <= 0.25).sum()}/{len(med_errs)})")
    report = "\n".join(lines)
    (tmp_path / "report.txt").write_text(report + "\n")
    with capsys.disabled():
        print("\n" + report)
    assert np.median(errs) <= 0.25, report
    for c, v in per_collective.items():
        assert v <= 0.25, f"{c}: median |error| {v:.1%} > 25%\n{report}"
    assert (errs <= 0.25).mean() >= 0.75, report
