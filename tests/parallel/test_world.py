"""Under mpirun -np 2, horovod and mpi4py both see 2 ranks, through tensoropt.init()."""

import pathlib
import re

import pytest

pytestmark = pytest.mark.mpi


def test_horovod_and_mpi4py_see_two_ranks(mpirun):
    script = pathlib.Path(__file__).with_name("world_check.py")
    proc = mpirun(2, str(script), timeout=120)
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("rank="))
    assert len(lines) == 2, proc.stdout
    for rank, line in enumerate(lines):
        fields = dict(re.findall(r"(\w+)=(\d+)", line))
        assert fields == {"rank": str(rank), "hvd_rank": str(rank), "hvd_size": "2",
                          "mpi_rank": str(rank), "mpi_size": "2", "machines": "1"}, line


def test_a_script_without_init_joins_the_job_instead_of_training_two_copies(mpirun):
    script = pathlib.Path(__file__).with_name("no_init_driver.py")
    proc = mpirun(2, str(script), timeout=180)
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("rank="))
    assert [line.split(" losses=")[0] for line in lines] == \
        ["rank=0 size=2 parallelism=2", "rank=1 size=2 parallelism=2"], proc.stdout
    assert len({line.split(" losses=")[1] for line in lines}) == 1, "the ranks trained different models"
