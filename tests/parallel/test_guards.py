"""A job that would hang ends in an error that names the cause, under mpirun.

- Ranks that build different plans raise on every rank in ``build_execution_graph``,
  naming the first differing op and collective, before issuing any collective.
- A rank that stops issuing collectives: after ``TENSOROPT_COLLECTIVE_TIMEOUT_S`` the job
  ends non-zero with a message naming the stalled collective and the missing rank.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.mpi

DRIVER = pathlib.Path(__file__).with_name("guard_driver.py")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _launch(n: int, mode: str, timeout: float, **env):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is not installed; run `make setup` (it installs Open MPI)")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", HOROVOD_CYCLE_TIME="0.2",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **env)
    cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe", "-np", str(n), sys.executable, str(DRIVER), mode]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return proc, time.time(), proc.stdout + proc.stderr


def test_ranks_with_different_plans_all_raise_before_any_collective(tmp_path):
    proc, _, out = _launch(4, "mismatch", timeout=400, GUARD_OUT=str(tmp_path))
    assert proc.returncode != 0, out[-3000:]
    reports = sorted(tmp_path.glob("rank*.txt"))
    assert [p.name for p in reports] == [f"rank{r}.txt" for r in range(4)], out[-3000:]
    lines = [p.read_text() for p in reports]
    for line in lines:
        assert "PlanMismatchError: build_execution_graph: the ranks hold different plans" in line, line
        assert re.search(r"op '[^']+' is configured .* on ranks 0, 2, 3; .* on rank 1", line), line
        assert re.search(r"collective #\d+ is .* on ranks 0, 2, 3; .* on rank 1", line), line
    assert "built" not in proc.stdout


def test_a_rank_that_stops_issuing_collectives_ends_the_job_soon_after_the_limit():
    limit_s = 4
    proc, ended, out = _launch(2, "stall", timeout=240, TENSOROPT_COLLECTIVE_TIMEOUT_S=str(limit_s))
    assert proc.returncode != 0, out[-3000:]
    started = re.search(r"rank 0: step 2 starts at ([\d.]+)", proc.stdout)
    assert started, out[-3000:]
    waited = ended - float(started.group(1))
    # the limit, the stall inspector's check period (a quarter of it), and the abort
    assert waited < limit_s + 30, f"the job ended {waited:.0f} s after the stall began\n{out[-3000:]}"
    assert "step 2 finished" not in proc.stdout
    message = re.search(r"tensoropt: rank 0: collective '([^']+)' of step 2 did not complete within "
                        r"4 s \(TENSOROPT_COLLECTIVE_TIMEOUT_S\): rank\(s\) 1 never started step 2", out)
    assert message, out[-3000:]
    assert message.group(1).startswith("allreduce/"), message.group(1)
    # horovod's stall inspector names the same collective and the missing rank
    assert re.search(r"Missing ranks:\s*\n\s*1!?: \[[^\]]*" + re.escape(message.group(1)), out), out[-3000:]
