"""Helpers for tests that launch their own ``mpirun``."""

import os
import shutil
import subprocess
import sys

import pytest

MPIRUN = shutil.which("mpirun")


def run_mpi(n: int, script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs ``python script args`` on ``n`` ranks; fails the test with the output on error."""
    if MPIRUN is None:
        pytest.skip("mpirun is not installed; run `make setup` (it installs Open MPI)")
    # A short horovod cycle: these tests chain hundreds of small collectives.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OMPI_MCA_rmaps_base_oversubscribe="1",
               HOROVOD_CYCLE_TIME="0.2")
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(n), sys.executable, script, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
                    f"\n--- stderr\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture
def mpirun():
    """``mpirun(n, script, *args, timeout=...)`` -> CompletedProcess (fails the test on error)."""
    return run_mpi
