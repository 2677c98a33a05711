"""quiet_bcast: the waiting rank sleeps (little CPU) and still receives the root's value."""

import pathlib
import re

import pytest

from tensoropt.execution.quiet_bcast import quiet_bcast

pytestmark = pytest.mark.mpi

DRIVER = str(pathlib.Path(__file__).with_name("quiet_bcast_driver.py"))


def _waiter(proc) -> dict:
    lines = {int(m.group(1)): m for m in re.finditer(r"rank=(\d+) value=(\[.*?\]) cpu_s=([\d.]+) wall_s=([\d.]+)",
                                                      proc.stdout)}
    assert sorted(lines) == [0, 1], proc.stdout
    assert all(m.group(2) == "[1, 2, 3]" for m in lines.values()), proc.stdout
    return {"cpu_s": float(lines[1].group(3)), "wall_s": float(lines[1].group(4))}


def test_a_rank_waiting_for_the_root_sleeps_instead_of_spinning(mpirun):
    waiter = _waiter(mpirun(2, DRIVER, "--work-s", "1.5", timeout=120))
    assert waiter["wall_s"] >= 1.4, waiter          # it did wait for the root
    # a blocking bcast spins for the whole wait (about 1.5 CPU seconds on a quiet machine)
    assert waiter["cpu_s"] < 0.3, waiter


def test_a_single_process_gets_its_own_value_and_bad_arguments_say_what_to_give():
    class One:
        def Get_size(self):
            return 1

    assert quiet_bcast(One(), {"a": 1}) == {"a": 1}
    with pytest.raises(ValueError, match="root=1: give a rank of the communicator, 0 to 0"):
        quiet_bcast(One(), None, root=1)
    with pytest.raises(ValueError, match="max_poll_s=0: give a positive"):
        quiet_bcast(One(), None, max_poll_s=0)
