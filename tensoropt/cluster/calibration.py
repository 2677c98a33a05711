"""Calibration data: what ``tensoropt calibrate`` measured, as a versioned value (pure data).

A :class:`CalibrationProfile` holds ``(bytes, seconds)`` points per (collective,
group_size, stride), the measured matmul rate and the memory per device. It reads and
writes versioned JSON, fits alpha-beta links to the measured ring allreduce, and turns
itself into the ``local`` :class:`~tensoropt.cluster.devices.Cluster`
(:meth:`CalibrationProfile.to_cluster`). The job that measures it is
``tensoropt.execution.calibration_job``; the collective times read from it are
``tensoropt.costs.collective_times.ProfiledCollectives``.

Usage::

    from tensoropt.cluster.calibration import CalibrationProfile

    profile = CalibrationProfile.load("profiles/local.json")
    profile.fit_link(spanning=False)   # Link(bandwidth_bytes_per_s=..., latency_s=...)
    profile.to_cluster()               # Cluster named "local"
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tensoropt.cluster.devices import Cluster, Link
from tensoropt.cluster.mesh import scheme_groups
from tensoropt.validation import atomic_write_text

__all__ = ["COLLECTIVES", "PROFILE_FORMAT_VERSION", "CalibrationProfile", "OVERHEAD_FIELDS", "profile_overheads",
           "HOROVOD_TIMING_ENV", "horovod_timing_env", "timing_env_mismatch"]

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")
PROFILE_FORMAT_VERSION = 1

#: The fields of a profile's ``overheads`` object (``tensoropt calibrate`` measures them on
#: micro-benchmarks, never on the plans they are then used to judge):
#: ``collective_s``: what one more collective in a chain of tiny ones adds beyond the
#: tiny collective's own measured time (horovod's cycle and negotiation);
#: ``op_s``: what one more op in a chain of tiny ops adds to a ``session.run`` (the
#: executor's per-op launch); ``copy_bytes_per_s``: how fast a ``tf.transpose`` writes
#: (the local copies around a collective); ``transfer_compute_share``: what a transfer
#: costs the compute beside it, as a share of the transfer's time (0: they overlap freely,
#: 1: they take turns; at most 1). An older profile's ``compute_slowdown`` is ignored.
OVERHEAD_FIELDS = ("collective_s", "op_s", "copy_bytes_per_s", "transfer_compute_share")

#: Horovod settings that change what a collective costs: a profile records them
#: (``horovod_env``) and a job run with others is priced by figures it does not have.
#: The cycle sets how long a collective waits to be negotiated: on this 2-core machine
#: a chain of tiny all-reduces takes about 1.05 ms a link with horovod's default and
#: the tiny Transformer's steps 3.4 ms with ``HOROVOD_CYCLE_TIME=0.2`` against a
#: 12.4 ms estimate priced at the default.
HOROVOD_TIMING_ENV = ("HOROVOD_CYCLE_TIME", "HOROVOD_FUSION_THRESHOLD")


def horovod_timing_env(environ=None) -> dict[str, str | None]:
    """The ``HOROVOD_TIMING_ENV`` settings of ``environ`` (default this process's); None:
    unset, horovod's default."""
    environ = os.environ if environ is None else environ
    return {k: environ.get(k) for k in HOROVOD_TIMING_ENV}


def timing_env_mismatch(profile: "CalibrationProfile", environ=None) -> list[str]:
    """Each ``HOROVOD_TIMING_ENV`` setting that differs between the calibration and this
    job, as ``"NAME: calibrated with X, this job has Y"``; empty for a profile that did
    not record them (made before they were recorded)."""
    recorded = profile.extra.get("horovod_env")
    if not isinstance(recorded, dict):
        return []
    now = horovod_timing_env(environ)
    shown = lambda v: "horovod's default" if v is None else repr(v)    # noqa: E731
    return [f"{k}: calibrated with {shown(recorded.get(k))}, this job has {shown(now[k])}"
            for k in HOROVOD_TIMING_ENV if recorded.get(k) != now[k]]


@dataclass
class CalibrationProfile:
    """A versioned calibration profile (what ``tensoropt calibrate`` writes).

    Attributes:
        world_size, hostnames, machines, devices_per_machine: the job that was measured.
        measurements: dicts ``{"collective", "group_size", "stride", "bytes", "seconds"}``;
            seconds is the median over repeats of the slowest rank, all groups of the scheme
            running at once. Optional ``busy_seconds``: how long horovod itself worked on one
            such collective (rank 0's timeline; cycle and negotiation left out).
        peak_flops: measured matmul FLOP/s of one rank (``compute.matmul_flops_per_s``).
        memory_bytes_per_device: physical memory of the machine / its ranks.
        extra: other top-level fields, kept as they are (repeats, creation time, ...).
    """

    world_size: int
    hostnames: list[str]
    machines: int
    devices_per_machine: int
    measurements: list[dict[str, Any]]
    peak_flops: float
    memory_bytes_per_device: float
    tensoropt_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": PROFILE_FORMAT_VERSION, "tensoropt_version": self.tensoropt_version,
                "world_size": self.world_size, "hostnames": list(self.hostnames),
                "machines": self.machines, "devices_per_machine": self.devices_per_machine,
                "memory_bytes_per_device": self.memory_bytes_per_device,
                "compute": {"matmul_flops_per_s": self.peak_flops, **self.extra.get("compute", {})},
                **{k: v for k, v in self.extra.items() if k != "compute"},
                "measurements": self.measurements}

    def save(self, path: str | os.PathLike) -> None:
        """Writes the profile as JSON (creating the parent directory)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CalibrationProfile":
        """Reads and validates a profile.

        Raises:
            ValueError: naming the file and what is wrong, and saying to re-run calibrate.
        """
        path = Path(path)
        fix = f"re-run: mpirun -np N tensoropt calibrate --out {path}"
        try:
            data = json.loads(path.read_text())
        except OSError as e:
            raise ValueError(f"{path}: cannot read the calibration profile ({e}); {fix}") from e
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: the calibration profile is not valid JSON ({e}); it is corrupt; {fix}") from e
        return cls.from_dict(data, source=str(path), fix=fix)

    @classmethod
    def from_dict(cls, data: Any, source: str = "<profile>", fix: str = "re-run tensoropt calibrate"
                  ) -> "CalibrationProfile":
        def bad(what: str) -> ValueError:
            return ValueError(f"{source}: {what}; {fix}")

        if not isinstance(data, dict):
            raise bad(f"a calibration profile is a JSON object, got {type(data).__name__}")
        version = data.get("format_version")
        if version != PROFILE_FORMAT_VERSION:
            raise bad(f"format_version is {version!r} but this TensorOpt reads version {PROFILE_FORMAT_VERSION}")
        required = ("world_size", "hostnames", "machines", "devices_per_machine", "measurements",
                    "compute", "memory_bytes_per_device")
        missing = [k for k in required if k not in data]
        if missing:
            raise bad(f"missing field(s) {missing}")
        for k in ("world_size", "machines", "devices_per_machine"):
            if not isinstance(data[k], int) or isinstance(data[k], bool) or data[k] < 1:
                raise bad(f"field '{k}' must be an integer >= 1, got {data[k]!r}")
        n = data["world_size"]
        hosts = data["hostnames"]
        if not isinstance(hosts, list) or len(hosts) != n or not all(isinstance(h, str) for h in hosts):
            raise bad(f"field 'hostnames' must list {n} host names (one per rank), got {hosts!r}")
        compute = data["compute"]
        if not isinstance(compute, dict) or not _positive(compute.get("matmul_flops_per_s")):
            raise bad(f"field 'compute.matmul_flops_per_s' must be a positive number, got {compute!r}")
        if not _positive(data["memory_bytes_per_device"]):
            raise bad(f"field 'memory_bytes_per_device' must be a positive number, got {data['memory_bytes_per_device']!r}")
        meas = data["measurements"]
        if not isinstance(meas, list):
            raise bad("field 'measurements' must be a list")
        keys = ("collective", "group_size", "stride", "bytes", "seconds")
        for i, m in enumerate(meas):
            if not isinstance(m, dict) or set(m) < set(keys):
                raise bad(f"measurements[{i}] must have fields {list(keys)}, got {m!r}")
            if m["collective"] not in COLLECTIVES:
                raise bad(f"measurements[{i}].collective {m['collective']!r} is not one of {list(COLLECTIVES)}")
            g, s = m["group_size"], m["stride"]
            if not (isinstance(g, int) and isinstance(s, int) and g >= 2 and s >= 1 and n % (g * s) == 0):
                raise bad(f"measurements[{i}] has group_size={g!r}, stride={s!r}, which do not partition "
                          f"{n} ranks")
            if not _positive(m["bytes"]) or not _positive(m["seconds"]):
                raise bad(f"measurements[{i}] needs positive bytes and seconds, got {m['bytes']!r}, {m['seconds']!r}")
            if "busy_seconds" in m and not _positive(m["busy_seconds"]):
                raise bad(f"measurements[{i}].busy_seconds must be a positive number, got {m['busy_seconds']!r}")
        extra = {k: v for k, v in data.items() if k not in (*required, "format_version", "tensoropt_version")}
        extra["compute"] = {k: v for k, v in compute.items() if k != "matmul_flops_per_s"}
        return cls(world_size=n, hostnames=list(hosts), machines=data["machines"],
                   devices_per_machine=data["devices_per_machine"], measurements=list(meas),
                   peak_flops=float(compute["matmul_flops_per_s"]),
                   memory_bytes_per_device=float(data["memory_bytes_per_device"]),
                   tensoropt_version=str(data.get("tensoropt_version", "")), extra=extra)

    def points(self, field: str = "seconds") -> dict[tuple[str, int, int], list[tuple[float, float]]]:
        """``(collective, group_size, stride) -> [(bytes, seconds), ...]`` sorted by bytes, of
        the measurements that have ``field`` (``"seconds"`` or ``"busy_seconds"``).

        Several measurements of one size keep their median.
        """
        raw: dict[tuple[str, int, int], dict[float, list[float]]] = {}
        for m in self.measurements:
            if field not in m:
                continue
            key = (m["collective"], int(m["group_size"]), int(m["stride"]))
            raw.setdefault(key, {}).setdefault(float(m["bytes"]), []).append(float(m[field]))
        return {k: [(b, float(np.median(ts))) for b, ts in sorted(v.items())] for k, v in raw.items()}

    def has_busy_seconds(self) -> bool:
        """Whether every measurement has ``busy_seconds`` (calibrations since 2026-11-26)."""
        return bool(self.measurements) and all("busy_seconds" in m for m in self.measurements)

    def spans_machines(self, group_size: int, stride: int) -> bool:
        """Whether some group of the scheme has ranks on two machines."""
        dpm = self.devices_per_machine
        return any(len({r // dpm for r in grp}) > 1
                   for grp in scheme_groups(self.world_size, group_size, stride))

    def fit_link(self, spanning: bool) -> Link:
        """An alpha-beta link fitted to the measured ring allreduce.

        Uses the largest group (then smallest stride) whose groups stay inside one machine
        (``spanning=False``) or cross machines (``spanning=True``); least squares of
        ``t = 2(g-1) alpha + 2(g-1)/g n / B`` over its sizes.

        Raises:
            ValueError: when no allreduce scheme of that kind was measured.
        """
        cands = [k for k in self.points() if k[0] == "allreduce" and self.spans_machines(k[1], k[2]) == spanning]
        if not cands:
            kind = "crossing machines" if spanning else "inside one machine"
            raise ValueError(f"the calibration profile has no allreduce measurement in a group {kind}; "
                             "re-run tensoropt calibrate with at least 2 ranks "
                             f"{'on each of 2 machines' if spanning else 'per machine'}")
        _, g, s = max(cands, key=lambda k: (k[1], -k[2]))
        pts = np.array(self.points()[("allreduce", g, s)])
        n, t = pts[:, 0], pts[:, 1]
        steps = 2 * (g - 1)
        if len(n) >= 2:
            slope, intercept = np.polyfit(n, t, 1)
        else:
            slope, intercept = t[0] / n[0], 0.0
        if slope <= 0:  # flat (latency-bound) measurements: the largest point bounds bandwidth
            slope = t[-1] / n[-1]
        alpha = max(float(intercept), 0.0) / steps
        bandwidth = steps / g / float(slope)
        return Link(bandwidth_bytes_per_s=bandwidth, latency_s=alpha)

    def to_cluster(self) -> Cluster:
        """The ``local`` cluster this profile measured.

        Links are alpha-beta fits of the measured ring allreduce: the intra link from the
        largest group inside one machine, the inter link from the largest group spanning
        machines (the intra link again on a single machine). Peak FLOP/s is the measured
        matmul rate; memory is the machine's physical memory divided among its ranks.
        """
        intra = self.fit_link(spanning=False)
        inter = self.fit_link(spanning=True) if self.machines > 1 else intra
        return Cluster(name="local", machines=self.machines, devices_per_machine=self.devices_per_machine,
                       memory_bytes=float(self.memory_bytes_per_device), peak_flops=float(self.peak_flops),
                       intra=intra, inter=inter)


def profile_overheads(profile: CalibrationProfile) -> dict[str, float]:
    """The profile's ``overheads`` (``OVERHEAD_FIELDS``; absent in older profiles: {}).

    Raises:
        ValueError: ``overheads`` is not an object of finite numbers >= 0 (a share at most
            1), naming the field and the command that rewrites it.
    """
    raw = (profile.extra or {}).get("overheads", {})
    if not isinstance(raw, dict):
        raise ValueError(f"the calibration profile's 'overheads' is {raw!r}, not an object with "
                         f"{', '.join(OVERHEAD_FIELDS)}; re-run tensoropt calibrate")
    out = {}
    for name in OVERHEAD_FIELDS:
        if name not in raw:
            continue
        value = raw[name]
        most = 1.0 if name == "transfer_compute_share" else math.inf
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0 <= value <= most:
            bound = "in [0, 1]" if most == 1.0 else ">= 0"
            raise ValueError(f"the calibration profile's overheads.{name} is {value!r}, not a number {bound}; "
                             "re-run tensoropt calibrate")
        out[name] = float(value)
    return out


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
