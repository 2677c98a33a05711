"""Collective communication times: an analytical provider and a profiled one.

Both answer ``time_s(collective, nbytes, group_size, stride)``: the seconds one collective
takes when *every* group of the partitioning scheme ``(group_size, stride)`` runs it at once
(as in training: one parallel configuration splits all devices into such groups), i.e. the
time of the slowest group. ``collective`` is one of :data:`COLLECTIVES`.

``nbytes`` convention (per rank):

* ``allreduce``: the buffer each rank holds and reduces (n in, n out);
* ``allgather``: the full gathered buffer (each rank contributes n / g, receives n);
* ``reducescatter``: the full buffer each rank holds before the scatter (keeps n / g);
* ``alltoall``: the buffer each rank holds (sends n / g to each peer, keeps n / g).

A group of one rank, or zero bytes, costs 0 s.

Usage::

    from tensoropt.cluster import get_cluster
    from tensoropt.costs.collective_times import AnalyticalCollectives, ProfiledCollectives

    an = AnalyticalCollectives(get_cluster("paper-v100x16"))
    an.time_s("allreduce", 2**26, group_size=16, stride=1)
    pr = ProfiledCollectives.from_file("profiles/local.json")   # tensoropt calibrate
    pr.time_s("allgather", 3 * 2**18, group_size=2, stride=2)

Profiles are versioned JSON (``tensoropt.cluster.calibration.CalibrationProfile``): ``(bytes, seconds)`` points per
(collective, group_size, stride). The profiled provider turns them into bandwidths
(bytes / seconds), forces bandwidth monotone non-decreasing in size, and for
``2^i <= k < 2^(i+1)`` interpolates linearly between the bandwidths at ``2^i`` and
``2^(i+1)`` (the paper's Section 3.2); below the smallest size it returns the smallest
size's time (a latency floor); above the largest it uses the largest size's bandwidth.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from tensoropt.cluster.calibration import COLLECTIVES, CalibrationProfile
from tensoropt.cluster.devices import Cluster
from tensoropt.cluster.mesh import group_scheme, scheme_groups

__all__ = ["CollectiveCosts", "AnalyticalCollectives", "ProfiledCollectives", "ring_steps"]


class CollectiveCosts(Protocol):
    """What the cost model asks of a collective-time provider."""

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        """Seconds for ``collective`` of ``nbytes`` in every group of scheme (group_size, stride)."""


def ring_steps(collective: str, group_size: int) -> int:
    """Steps of the ring (pairwise for alltoall) algorithm; each moves ``nbytes / g`` per rank."""
    _check_collective(collective)
    return (2 if collective == "allreduce" else 1) * (group_size - 1)


def _check_collective(collective: str) -> None:
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; choose one of {', '.join(COLLECTIVES)}")


def _check_args(collective: str, nbytes: float, group_size: int, stride: int) -> None:
    _check_collective(collective)
    if not (isinstance(nbytes, (int, float, np.integer, np.floating)) and math.isfinite(nbytes) and nbytes >= 0):
        raise ValueError(f"{collective}: nbytes must be a finite number >= 0, got {nbytes!r}")
    if int(group_size) != group_size or group_size < 1 or int(stride) != stride or stride < 1:
        raise ValueError(f"{collective}: group_size and stride must be ints >= 1, got {group_size!r}, {stride!r}")


class AnalyticalCollectives:
    """Ring alpha-beta times on a :class:`~tensoropt.cluster.Cluster`.

    A group of g ranks runs ``ring_steps`` steps of ``alpha + (n / g) / B``:
    allreduce ``2(g-1) alpha + 2(g-1)/g n / B``; allgather, reduce-scatter and alltoall
    ``(g-1) alpha + (g-1)/g n / B``.

    Links and contention: a group inside one machine uses the intra link (one per device,
    so groups do not contend): ``B = intra.bandwidth``, ``alpha = intra.latency``. A group
    whose ranks sit on several machines is bounded by its slowest hop: ``alpha =
    max(intra, inter latency)``; its ring (ranks in order) leaves each machine it touches
    once, and the machine's one network card is shared by every spanning group of the scheme
    that touches it, so ``B = min(intra.bandwidth, inter.bandwidth / streams)`` with
    ``streams`` the largest such count over the group's machines. For alltoall across
    machines every rank sends to every off-machine peer: the time is ``(g-1) alpha`` plus the
    larger of the bytes leaving the busiest machine / ``inter.bandwidth`` and the ring term
    on the intra link. The scheme's time is its slowest group's.
    """

    def __init__(self, cluster: Cluster) -> None:
        if not isinstance(cluster, Cluster):
            raise ValueError(f"AnalyticalCollectives needs a Cluster, got {cluster!r}; use tensoropt.cluster.get_cluster")
        self.cluster = cluster

    def __repr__(self) -> str:
        return f"AnalyticalCollectives({self.cluster.name!r})"

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        _check_args(collective, nbytes, group_size, stride)
        if group_size == 1 or nbytes == 0:
            return 0.0
        return max(self._group_time(collective, float(nbytes), g) for g in self._groups(int(group_size), int(stride)))

    def time_group_s(self, collective: str, nbytes: float, group: tuple[int, ...]) -> float:
        """:meth:`time_s` for the scheme of ``group`` (a sorted, evenly spaced rank tuple)."""
        return self.time_s(collective, nbytes, *group_scheme(group))

    def link_of(self, group_size: int, stride: int) -> str:
        """``"intra"`` when every group of the scheme stays inside one machine, else ``"inter"``."""
        spans = [s for _, s in self._groups(group_size, stride)]
        return "inter" if any(s for s in spans) else "intra"

    def _groups(self, group_size: int, stride: int):
        return _scheme_layout(self.cluster.devices, self.cluster.devices_per_machine, group_size, stride)

    def _group_time(self, collective: str, n: float, layout) -> float:
        (g, per_machine, streams), spanning = layout
        intra, inter = self.cluster.intra, self.cluster.inter
        steps = ring_steps(collective, g)
        chunk = n / g
        if not spanning:
            return steps * (intra.latency_s + chunk / intra.bandwidth_bytes_per_s)
        alpha = max(intra.latency_s, inter.latency_s)
        if collective == "alltoall":
            # bytes leaving the busiest machine: each spanning group's members there send
            # n/g to each of their off-machine peers
            out_bytes = max(sum(c * (g - c) for c in counts) for counts in per_machine) * chunk
            return steps * alpha + max(out_bytes / inter.bandwidth_bytes_per_s,
                                       steps * chunk / intra.bandwidth_bytes_per_s)
        bw = min(intra.bandwidth_bytes_per_s, inter.bandwidth_bytes_per_s / streams)
        return steps * (alpha + chunk / bw)


@lru_cache(maxsize=4096)
def _scheme_layout(n: int, dpm: int, group_size: int, stride: int):
    """Per group: ((g, per-machine member counts of spanning groups, ring streams), spanning)."""
    if n % (group_size * stride) != 0:
        raise ValueError(f"scheme (group_size={group_size}, stride={stride}) does not partition "
                         f"the cluster's {n} devices; group_size * stride must divide {n}")
    groups = scheme_groups(n, group_size, stride)
    machines_of = [sorted({r // dpm for r in grp}) for grp in groups]
    spanning = [len(m) > 1 for m in machines_of]
    # ring streams leaving machine M: one per spanning group touching M
    streams = {}
    # per machine: member counts of the spanning groups touching it (for alltoall)
    counts: dict[int, list[int]] = {}
    for grp, ms, sp in zip(groups, machines_of, spanning):
        if not sp:
            continue
        for m in ms:
            streams[m] = streams.get(m, 0) + 1
            counts.setdefault(m, []).append(sum(1 for r in grp if r // dpm == m))
    out = []
    for grp, ms, sp in zip(groups, machines_of, spanning):
        if sp:
            out.append(((group_size, tuple(tuple(counts[m]) for m in ms), max(streams[m] for m in ms)), True))
        else:
            out.append(((group_size, (), 0), False))
    return tuple(out)


class ProfiledCollectives:
    """Collective times interpolated from a :class:`CalibrationProfile` (see module doc)."""

    def __init__(self, profile: CalibrationProfile, source: str = "the calibration profile",
                 field: str = "seconds") -> None:
        """``field``: the measurements' ``"seconds"`` (a collective in a chain, as calibrated)
        or ``"busy_seconds"`` (horovod's own work on it: the transfer alone)."""
        self.profile = profile
        self.source = source if field == "seconds" else f"{source} ({field})"
        self._tables: dict[tuple[str, int, int], tuple[np.ndarray, np.ndarray]] = {}
        for key, pts in profile.points(field).items():
            sizes = np.array([b for b, _ in pts], dtype=float)
            bw = sizes / np.array([t for _, t in pts], dtype=float)
            self._tables[key] = (sizes, np.maximum.accumulate(bw))

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "ProfiledCollectives":
        return cls(CalibrationProfile.load(path), source=str(path))

    def __repr__(self) -> str:
        return f"ProfiledCollectives({self.source!r}, world_size={self.profile.world_size})"

    def schemes(self, collective: str) -> list[tuple[int, int]]:
        """The measured ``(group_size, stride)`` schemes of ``collective``."""
        return sorted((g, s) for c, g, s in self._tables if c == collective)

    def bandwidth(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        """The interpolated bandwidth (nbytes / seconds) for this size and scheme."""
        sizes, bw = self._table(collective, group_size, stride)
        k = float(nbytes)
        if k <= sizes[0]:
            return float(bw[0]) * k / sizes[0]  # the smallest size's time: a latency floor
        if k >= sizes[-1]:
            return float(bw[-1])
        j = int(np.searchsorted(sizes, k, side="right")) - 1
        frac = (k - sizes[j]) / (sizes[j + 1] - sizes[j])
        return float(bw[j] + frac * (bw[j + 1] - bw[j]))

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        _check_args(collective, nbytes, group_size, stride)
        if group_size == 1 or nbytes == 0:
            return 0.0
        return float(nbytes) / self.bandwidth(collective, nbytes, group_size, stride)

    def time_group_s(self, collective: str, nbytes: float, group: tuple[int, ...]) -> float:
        return self.time_s(collective, nbytes, *group_scheme(group))

    def _table(self, collective: str, group_size: int, stride: int):
        key = (collective, int(group_size), int(stride))
        if key not in self._tables:
            have = self.schemes(collective)
            raise ValueError(
                f"{self.source} has no {collective} measurement for groups of {group_size} rank(s) "
                f"with stride {stride} (it was calibrated on {self.profile.world_size} rank(s); measured "
                f"schemes for {collective}: {have or 'none'}); re-run tensoropt calibrate under mpirun "
                f"with at least {group_size * stride} ranks, as many as the job you plan for")
        return self._tables[key]
