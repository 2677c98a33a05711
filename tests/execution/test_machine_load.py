"""``execution.machine_load``: the share of CPU time other processes took during a measurement."""

import os
import subprocess
import sys
import time

import pytest

from tensoropt.execution.machine_load import (QUIET_SHARE, ForeignLoad, describe, host_shares,
                                              machine_busy_seconds)


class _OneRank:
    def Barrier(self):
        pass

    def allgather(self, value):
        return [value]


def test_busy_seconds_count_user_nice_system_irq_softirq_and_steal_but_not_idle_or_iowait():
    #        user nice system idle iowait irq softirq steal guest
    text = "cpu  100 20 30 5000 70 4 6 10 999\ncpu0 1 2 3 4 5 6 7 8 9\n"
    assert machine_busy_seconds(text, 100) == pytest.approx((100 + 20 + 30 + 4 + 6 + 10) / 100)


def test_a_stat_text_without_its_cpu_line_is_refused_by_name():
    with pytest.raises(ValueError, match="/proc/stat: expected a first line 'cpu'"):
        machine_busy_seconds("intr 1 2 3\n", 100)


def test_each_machine_subtracts_its_own_ranks_and_the_most_loaded_counts():
    rows = [("a", 10.0, 15.0, 7.0), ("a", 10.0, 15.1, 6.0),    # a: 2 CPUs, 15 s busy, 13 s the job's
            ("b", 10.0, 12.0, 2.0)]                             # b: 2 CPUs, 10 s others'
    shares = host_shares(rows, {"a": 2, "b": 2})
    assert shares == pytest.approx({"a": 0.1, "b": 0.5})
    assert host_shares([("a", 10.0, None, 1.0)], {"a": 2}) == {}     # counters unreadable
    assert host_shares([("a", 10.0, 1.0, 3.0)], {"a": 2}) == {"a": 0.0}   # rounding: never below 0


def test_foreign_load_reads_its_counters_at_both_ends():
    busy = iter([100.0, 112.0])
    own = iter([5.0, 7.0])
    clock = ForeignLoad(_OneRank(), read_busy=lambda: next(busy), own_cpu=lambda: next(own),
                        hostname="h", cpus=4)
    clock._start = (time.monotonic() - 10.0, *clock._start[1:])      # 10 s ago
    assert clock.share() == pytest.approx(10.0 / 40.0, rel=0.01)      # 12 s busy, 2 s ours
    assert ForeignLoad(_OneRank(), read_busy=lambda: None).share() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_busy_process_beside_the_measurement_is_seen():
    load = ForeignLoad(_OneRank())
    subprocess.run([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.0: pass"],
                   check=True)
    share = load.share()
    assert share is not None and share >= 0.6 / (os.cpu_count() or 1)


def test_the_warning_says_how_much_and_what_to_do():
    text = describe(0.234, "calibrate")
    assert text.startswith("calibrate: other processes took 23% of this machine's CPU time")
    assert "Rerun it when nothing else runs" in text and QUIET_SHARE < 0.234
