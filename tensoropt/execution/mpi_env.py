"""The environment MPI reads when it starts in a rank, and the one import that sets it.

``mpirun`` binds each rank to one core (``os.sched_getaffinity`` gives one CPU per rank
when the ranks fill the machine), and every rank runs two busy threads there:
TensorFlow's compute thread and horovod's background thread, which negotiates every
cycle and runs the collectives inside MPI. Open MPI busy-polls while a call waits
(``mpi_yield_when_idle`` is 0 unless it counts more ranks than slots), so the background
thread spins on the rank's one core while it waits for the other rank, and the compute
thread gets what is left. On 2 ranks on 2 cores (2026-11-26, with other nice-19 jobs on
the machine; per-thread CPU from ``/proc/self/task``), the small transformer's horovod
thread took 2.2-3.2 s of CPU beside the compute thread's 2.1-2.4 s over 8 steps of
0.8-1.0 s, against the 0.27-0.30 s of compute the profile prices (the compute thread's
own CPU per step matched those: 270-290 ms); with ``OMPI_MCA_mpi_yield_when_idle=1`` the
waiting thread yields the core, took 0.3-0.9 s, and the steps took 0.37-0.49 s. In
back-to-back accuracy runs (6 frontier plans, 20 steps) the simulated time's mean error
went from 41.5% to 9.1% (transformer) and from 66.5% to 45.8% (LSTM).

``import_mpi`` sets ``OMPI_MCA_mpi_yield_when_idle=1`` (unless the variable is already
set, e.g. to 0 by a user with a core per thread) and then imports ``mpi4py.MPI``, which
initializes MPI: every place in TensorOpt that may start MPI imports it through here.
An MPI that a user's script started before (``from mpi4py import MPI`` first) keeps its
settings; set the variable in the environment (``mpirun -x OMPI_MCA_mpi_yield_when_idle=1``)
then.

Usage::

    from tensoropt.execution.mpi_env import import_mpi
    MPI = import_mpi()
"""

from __future__ import annotations

import os
from typing import Mapping

__all__ = ["YIELD_VARIABLE", "mpi_settings", "import_mpi"]

#: Open MPI's MCA parameter, as an environment variable: yield the core while a call waits.
YIELD_VARIABLE = "OMPI_MCA_mpi_yield_when_idle"


def mpi_settings(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables to set before MPI starts (those already set are kept)."""
    wanted = {YIELD_VARIABLE: "1"}
    return {k: v for k, v in wanted.items() if k not in environ}


def import_mpi():
    """``mpi4py.MPI``, imported (so MPI started) after ``mpi_settings`` are in
    ``os.environ``."""
    os.environ.update(mpi_settings(os.environ))
    from mpi4py import MPI  # noqa: PLC0415 - MPI starts only when asked for

    return MPI
