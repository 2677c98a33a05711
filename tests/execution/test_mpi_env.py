"""MPI starts with its waiting calls yielding the rank's one core (``execution.mpi_env``):
the variable is in the environment when ``mpi4py.MPI`` is imported, by ``to.init`` and by
the calibration job, and a user's own setting is kept."""

import os
import subprocess
import sys
import textwrap

import pytest

from tensoropt.execution import mpi_env

pytest.importorskip("mpi4py")

# Records the variable at the moment mpi4py.MPI (MPI_Init) is imported, then does what the
# caller names (a fresh interpreter: MPI starts once per process).
_PROBE = textwrap.dedent("""
    import importlib.abc, os, sys
    seen = []
    class Probe(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "mpi4py.MPI" and not seen:
                seen.append(os.environ.get("OMPI_MCA_mpi_yield_when_idle"))
            return None
    sys.meta_path.insert(0, Probe())
    {body}
    print("at MPI start:", seen[0] if seen else "never")
""")


def _mpi_start_setting(body: str, **env) -> str:
    environ = {k: v for k, v in os.environ.items() if k != mpi_env.YIELD_VARIABLE}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE.format(body=body)], env=environ, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_settings_ask_for_yielding_and_keep_a_users_choice():
    assert mpi_env.mpi_settings({}) == {"OMPI_MCA_mpi_yield_when_idle": "1"}
    assert mpi_env.mpi_settings({"OMPI_MCA_mpi_yield_when_idle": "0"}) == {}


def test_init_starts_mpi_with_yielding_on():
    assert _mpi_start_setting("import tensoropt as to; to.init()") == "at MPI start: 1"
    assert _mpi_start_setting("import tensoropt as to; to.init()",
                              OMPI_MCA_mpi_yield_when_idle="0") == "at MPI start: 0"


def test_the_calibration_job_starts_mpi_with_yielding_on():
    body = "from tensoropt.execution.calibration_job import Calibrator; Calibrator()"
    assert _mpi_start_setting(body) == "at MPI start: 1"
