"""How much of the machine's CPU other processes took while a job measured it.

A calibration or a benchmark measures the machine as it is at that moment. When another
job shares the cores, every figure comes out slow by about that much. The figures then look
plausible, and nothing says they are off: on this 2-core machine, one helper process on one
core made two-rank LSTM steps 1.9x slower (650 ms instead of 340 ms).

``ForeignLoad`` measures that share over a stretch of a job:
- the machine's busy CPU time (``/proc/stat``: user, nice, system, irq, softirq and steal,
  the time the hypervisor gave to other machines);
- less every rank's own CPU time on that machine (``os.times``);
- over the wall time times the machine's CPU count.

With several machines, the most loaded machine's share counts. Where ``/proc/stat`` cannot
be read (not Linux), ``share()`` returns None. The op profiler's probe
(``costs.profiler._measure.cpu_wait_share``) asks a different question: whether this
thread waits for a CPU at one instant, before a measurement. This one integrates over
the whole stretch a calibration or a benchmark measured, whatever ran when.

Usage::

    load = ForeignLoad(comm)        # every rank of the job, at the same point
    ...                             # measure
    share = load.share()            # every rank, at the same point: e.g. 0.02
    if share is not None and share > QUIET_SHARE:
        print(describe(share, "calibration"))
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable, Optional

__all__ = ["ForeignLoad", "QUIET_SHARE", "machine_busy_seconds", "describe", "host_shares"]

#: above this share of the CPUs taken by other processes, a measurement is flagged. On this
#: 2-core machine with nothing else running, the share read 3.4% over 10 s of sleep and
#: 4.5% over a calibration (kernel threads, the sandbox's agent); one busy process on one
#: of the two cores reads about 50%
QUIET_SHARE = 0.10

#: /proc/stat's cpu fields that count as busy: user nice system idle iowait irq softirq steal
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def machine_busy_seconds(stat_text: str, ticks_per_s: float) -> float:
    """The busy CPU seconds of all CPUs in ``/proc/stat``'s text (its first, ``cpu`` line).

    Raises:
        ValueError: the text has no ``cpu`` line of at least 8 numbers.
    """
    first = stat_text.split("\n", 1)[0].split()
    if len(first) < 9 or first[0] != "cpu":
        raise ValueError(f"/proc/stat: expected a first line 'cpu' and 8 or more counters; got {first[:9]}")
    fields = [int(v) for v in first[1:9]]
    return sum(fields[i] for i in _BUSY_FIELDS) / ticks_per_s


def _read_machine_busy() -> Optional[float]:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return machine_busy_seconds(f.read(), os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError):
        return None


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def host_shares(rows: list[tuple[str, float, Optional[float], float]], cpus: dict[str, int]) -> dict[str, float]:
    """Per machine, the share of its CPUs that processes other than the job's ranks took.

    ``rows``: one ``(hostname, wall_s, machine_busy_s, own_cpu_s)`` per rank, deltas over
    the stretch measured (``machine_busy_s`` None where unknown). A machine's busy time is
    its first rank's reading (its ranks read the same counters at about the same time).
    """
    busy: dict[str, float] = {}
    own: dict[str, float] = {}
    wall: dict[str, float] = {}
    for host, wall_s, machine_busy_s, own_s in rows:
        if machine_busy_s is None:
            continue
        busy.setdefault(host, machine_busy_s)
        own[host] = own.get(host, 0.0) + own_s
        wall[host] = max(wall.get(host, 0.0), wall_s)
    return {h: max(0.0, busy[h] - own[h]) / (wall[h] * cpus[h]) for h in busy if wall[h] > 0}


def describe(share: float, what: str) -> str:
    """A warning for a measurement ``what`` taken while others used ``share`` of the CPUs."""
    return (f"{what}: other processes took {share:.0%} of this machine's CPU time while it measured; "
            f"its figures are slow by up to about as much. Rerun it when nothing else runs "
            f"(see top), or on a machine of its own")


class ForeignLoad:
    """The share of CPU time other processes took between construction and ``share()``.

    Both are collective: every rank of ``comm`` (mpi4py-like: ``Barrier``, ``allgather``)
    calls them at the same point."""

    def __init__(self, comm: Any, *, read_busy: Callable[[], Optional[float]] = _read_machine_busy,
                 own_cpu: Callable[[], float] = _own_cpu_seconds,
                 hostname: Optional[str] = None, cpus: Optional[int] = None) -> None:
        self.comm = comm
        self._read_busy = read_busy
        self._own_cpu = own_cpu
        self._host = hostname or socket.gethostname()
        self._cpus = cpus or os.cpu_count() or 1
        comm.Barrier()
        self._start = (time.monotonic(), read_busy(), own_cpu())

    def share(self) -> Optional[float]:
        """The most loaded machine's share of CPU time taken by other processes (0 to 1),
        or None where the machine's counters cannot be read."""
        self.comm.Barrier()
        wall0, busy0, own0 = self._start
        busy = self._read_busy()
        row = (self._host, time.monotonic() - wall0,
               None if busy is None or busy0 is None else busy - busy0, self._own_cpu() - own0)
        gathered = list(self.comm.allgather((row, self._cpus)))
        cpus = {r[0]: n for r, n in gathered}
        shares = host_shares([r for r, _ in gathered], cpus)
        return min(1.0, max(shares.values())) if shares else None
