"""The device graph: machines x devices, memory, peak FLOP/s, and two kinds of links.

A :class:`Cluster` is an immutable value. Ranks are ``0..devices-1`` and the machine of a
rank is ``rank // devices_per_machine``. The intra-machine link joins devices of one
machine (each device has its own, as NVLink); the inter-machine link is one per machine
(its network card), shared by every stream that leaves or enters the machine.

Usage::

    from tensoropt.cluster import get_cluster, Cluster

    c = get_cluster("paper-v100x16")              # a preset
    c8 = get_cluster("paper-v100x16", devices=8)  # scaled: one machine of 8
    c.to_file("my.json"); Cluster.from_file("my.json")
    local = get_cluster("local")                  # from profiles/local.json (tensoropt calibrate)

Preset numbers (the paper's Section 5; every number is per device unless said otherwise):

* ``peak_flops`` = 15.7e12: V100 SXM2 fp32 peak (80 SMs x 64 FP32 lanes x 2 FLOP x 1.53 GHz
  boost). The paper trains in fp32 (TensorFlow 1.x, no mixed precision mentioned).
* ``memory_bytes`` = 16 GiB (16 * 2**30), the V100's 16 GB of HBM2; the search applies the
  paper's 1/1.1 safety margin itself.
* intra link (NVLink) = 130e9 B/s, 5 us per ring step. 130 GB/s is the bus bandwidth that
  NCCL's ring allreduce reaches on an 8 x V100 NVLink machine (hardware: 6 NVLink-2 links x
  25 GB/s = 150 GB/s per direction per GPU).
* inter link (EDR InfiniBand with RDMA) = 100 Gb/s = 12.5e9 B/s per machine, 10 us per step.
  The paper says "even 4x RDMA is 10 times slower than NVLink". One 4x RDMA stream (50 GB/s)
  is 2.6x slower than 130 GB/s; when the 8 devices of a machine all cross machines at once
  (8 data-parallel rings), each stream gets 50/8 = 6.25 GB/s, 21x slower; the paper's 10x
  lies between, so we keep the hardware numbers and let contention do the rest.
* ``paper-nordma``: inter bandwidth x 0.5 (6.25e9), ``paper-4xrdma``: x 4 (50e9), as the
  paper's Figure 7(b). Latency unchanged: the paper gives bandwidths only.
* ``paper-pcie``: one machine of 8 V100, intra link at 1/20 of NVLink (6.5e9 B/s, the
  paper's measurement), same latency; its inter link (used only when scaled past 8 devices)
  is the RDMA one.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

__all__ = ["Link", "Cluster", "PRESETS", "get_cluster", "local_cluster", "profile_path", "preset_names", "DEFAULT_PROFILE_PATH",
           "CLUSTER_FORMAT_VERSION", "physical_memory_bytes"]

CLUSTER_FORMAT_VERSION = 1
DEFAULT_PROFILE_PATH = os.path.join("profiles", "local.json")
PROFILE_ENV = "TENSOROPT_PROFILE"


@dataclass(frozen=True)
class Link:
    """A link's bandwidth (bytes/s, one direction) and its latency per message (s)."""

    bandwidth_bytes_per_s: float
    latency_s: float

    def __post_init__(self) -> None:
        _check_positive("Link.bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)
        _check_nonnegative("Link.latency_s", self.latency_s)

    def scaled(self, bandwidth_factor: float) -> "Link":
        """The same link with its bandwidth multiplied by ``bandwidth_factor``."""
        return Link(self.bandwidth_bytes_per_s * bandwidth_factor, self.latency_s)


@dataclass(frozen=True)
class Cluster:
    """``machines`` x ``devices_per_machine`` identical devices and their links.

    Attributes:
        name: a label (a preset's name, or ``name@N`` once scaled).
        machines: number of machines, >= 1.
        devices_per_machine: devices (MPI ranks) per machine, >= 1.
        memory_bytes: memory of one device.
        peak_flops: peak FLOP/s of one device.
        intra: the link between two devices of one machine (one per device).
        inter: the link between machines (one per machine, shared by its devices).
    """

    name: str
    machines: int
    devices_per_machine: int
    memory_bytes: float
    peak_flops: float
    intra: Link
    inter: Link

    def __post_init__(self) -> None:
        for field in ("machines", "devices_per_machine"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Cluster.{field} must be an int >= 1, got {value!r}")
        _check_positive("Cluster.memory_bytes", self.memory_bytes)
        _check_positive("Cluster.peak_flops", self.peak_flops)
        for field in ("intra", "inter"):
            if not isinstance(getattr(self, field), Link):
                raise ValueError(f"Cluster.{field} must be a Link, got {getattr(self, field)!r}")

    @property
    def devices(self) -> int:
        """Total number of devices (ranks)."""
        return self.machines * self.devices_per_machine

    def machine_of(self, rank: int) -> int:
        """The machine that holds ``rank``."""
        if not 0 <= rank < self.devices:
            raise ValueError(f"rank {rank} is outside cluster {self.name!r} of {self.devices} devices")
        return rank // self.devices_per_machine

    def scaled(self, devices: int) -> "Cluster":
        """This cluster with ``devices`` devices.

        Keeps ``devices_per_machine`` and changes the number of machines; fewer devices than
        one machine holds gives one machine of ``devices``.

        Raises:
            ValueError: for ``devices`` < 1, or more than a machine's worth that is not a
                multiple of ``devices_per_machine``.
        """
        if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
            raise ValueError(f"Cluster.scaled: devices must be an int >= 1, got {devices!r}")
        if devices == self.devices:
            return self
        dpm = self.devices_per_machine
        if devices < dpm:
            machines, dpm = 1, devices
        elif devices % dpm == 0:
            machines = devices // dpm
        else:
            lo, hi = devices // dpm * dpm, (devices // dpm + 1) * dpm
            raise ValueError(f"Cluster.scaled: {devices} devices is not a whole number of "
                             f"{dpm}-device machines of {self.name!r}; use {lo} or {hi}, or fewer than {dpm}")
        base = self.name.split("@")[0]
        return replace(self, name=f"{base}@{devices}", machines=machines, devices_per_machine=dpm)

    # ---- files -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (with ``format_version``) that :meth:`from_dict` reads back."""
        d = asdict(self)
        return {"format_version": CLUSTER_FORMAT_VERSION, **d}

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "Cluster":
        """Builds a cluster from :meth:`to_dict`'s form, validating every field.

        Raises:
            ValueError: naming ``source`` and the bad field, saying how to fix it.
        """
        fix = "fix the field or rewrite the file with Cluster.to_file"
        if not isinstance(data, dict):
            raise ValueError(f"{source}: a cluster file holds one object (mapping), got {type(data).__name__}; {fix}")
        version = data.get("format_version", CLUSTER_FORMAT_VERSION)
        if version != CLUSTER_FORMAT_VERSION:
            raise ValueError(f"{source}: field 'format_version' is {version!r}, this TensorOpt reads "
                             f"{CLUSTER_FORMAT_VERSION}; {fix}")
        fields = {"name", "machines", "devices_per_machine", "memory_bytes", "peak_flops", "intra", "inter"}
        unknown = sorted(set(data) - fields - {"format_version"})
        if unknown:
            raise ValueError(f"{source}: unknown field(s) {unknown}; the fields are {sorted(fields)}; {fix}")
        missing = sorted(fields - set(data) - {"name"})
        if missing:
            raise ValueError(f"{source}: missing field(s) {missing}; {fix}")
        for field in ("machines", "devices_per_machine"):
            v = data[field]
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{source}: field '{field}' must be an integer >= 1, got {v!r}; {fix}")
        for field in ("memory_bytes", "peak_flops"):
            _file_positive(source, field, data[field], fix)
        links = {}
        for field in ("intra", "inter"):
            link = data[field]
            if not isinstance(link, dict) or set(link) != {"bandwidth_bytes_per_s", "latency_s"}:
                raise ValueError(f"{source}: field '{field}' must be an object with exactly "
                                 f"'bandwidth_bytes_per_s' and 'latency_s', got {link!r}; {fix}")
            _file_positive(source, f"{field}.bandwidth_bytes_per_s", link["bandwidth_bytes_per_s"], fix)
            lat = link["latency_s"]
            if not _is_number(lat) or lat < 0:
                raise ValueError(f"{source}: field '{field}.latency_s' must be a number >= 0 (seconds), "
                                 f"got {lat!r}; {fix}")
            links[field] = Link(float(link["bandwidth_bytes_per_s"]), float(lat))
        name = data.get("name", Path(source).stem)
        if not isinstance(name, str):
            raise ValueError(f"{source}: field 'name' must be a string, got {name!r}; {fix}")
        return cls(name=name, machines=data["machines"], devices_per_machine=data["devices_per_machine"],
                   memory_bytes=float(data["memory_bytes"]), peak_flops=float(data["peak_flops"]),
                   intra=links["intra"], inter=links["inter"])

    def to_file(self, path: str | os.PathLike) -> None:
        """Writes the cluster as JSON, or YAML when ``path`` ends in .yaml/.yml."""
        path = Path(path)
        if path.suffix in (".yaml", ".yml"):
            yaml = _yaml(path)
            text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        else:
            text = json.dumps(self.to_dict(), indent=2) + "\n"
        path.write_text(text)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Cluster":
        """Reads a cluster file written by :meth:`to_file` (JSON, or YAML by suffix).

        Raises:
            ValueError: for an unreadable, unparsable or invalid file, naming the file and field.
        """
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise ValueError(f"{path}: cannot read the cluster file ({e}); give an existing path "
                             f"or a preset name ({', '.join(preset_names())})") from e
        if path.suffix in (".yaml", ".yml"):
            yaml = _yaml(path)
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as e:
                raise ValueError(f"{path}: not valid YAML ({e}); fix the syntax or rewrite it with "
                                 "Cluster.to_file") from e
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON ({e}); fix the syntax or rewrite it with "
                                 "Cluster.to_file") from e
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_profile(cls, profile_path: str | os.PathLike) -> "Cluster":
        """The ``local`` cluster measured by ``tensoropt calibrate`` (see ``collectives``).

        Links are alpha-beta fits of the measured ring allreduce: the intra link from the
        largest group inside one machine, the inter link from the largest group spanning
        machines (the intra link again on a single machine). Peak FLOP/s is the measured
        matmul rate; memory is the machine's physical memory divided among its ranks.
        """
        from tensoropt.collectives import CalibrationProfile  # noqa: PLC0415 - avoids a cycle

        profile = CalibrationProfile.load(profile_path)
        intra = profile.fit_link(spanning=False)
        inter = profile.fit_link(spanning=True) if profile.machines > 1 else intra
        return cls(name="local", machines=profile.machines,
                   devices_per_machine=profile.devices_per_machine,
                   memory_bytes=float(profile.memory_bytes_per_device),
                   peak_flops=float(profile.peak_flops), intra=intra, inter=inter)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_positive(field: str, v: Any) -> None:
    if not _is_number(v) or v <= 0:
        raise ValueError(f"{field} must be a positive finite number, got {v!r}")


def _check_nonnegative(field: str, v: Any) -> None:
    if not _is_number(v) or v < 0:
        raise ValueError(f"{field} must be a finite number >= 0, got {v!r}")


def _file_positive(source: str, field: str, v: Any, fix: str) -> None:
    if not _is_number(v) or v <= 0:
        raise ValueError(f"{source}: field '{field}' must be a positive number, got {v!r}; {fix}")


def _yaml(path: Path):
    try:
        import yaml  # noqa: PLC0415
    except ImportError as e:
        raise ValueError(f"{path}: YAML cluster files need pyyaml (pip install pyyaml); "
                         "or use a .json file") from e
    return yaml


_NVLINK = Link(130e9, 5e-6)
_EDR_RDMA = Link(12.5e9, 10e-6)
_V100 = dict(memory_bytes=float(16 * 2**30), peak_flops=15.7e12)

PRESETS: dict[str, Cluster] = {
    "paper-v100x16": Cluster("paper-v100x16", 2, 8, intra=_NVLINK, inter=_EDR_RDMA, **_V100),
    "paper-nordma": Cluster("paper-nordma", 2, 8, intra=_NVLINK, inter=_EDR_RDMA.scaled(0.5), **_V100),
    "paper-4xrdma": Cluster("paper-4xrdma", 2, 8, intra=_NVLINK, inter=_EDR_RDMA.scaled(4.0), **_V100),
    "paper-pcie": Cluster("paper-pcie", 1, 8, intra=_NVLINK.scaled(1 / 20), inter=_EDR_RDMA, **_V100),
}


def preset_names() -> list[str]:
    """The preset names, plus ``local``."""
    return [*PRESETS, "local"]


# Nominal numbers for CPU ranks of this machine kind (2 cores, shared memory), measured
# once by ``tensoropt calibrate`` under mpirun -np 4: ~30 GFLOP/s of matmul per rank, and
# ring collectives at ~0.6 GB/s with ~0.42 ms per step. Used only when no profile exists.
NOMINAL_CPU_PEAK_FLOPS = 30e9
NOMINAL_CPU_LINK = Link(bandwidth_bytes_per_s=0.6e9, latency_s=0.42e-3)


def profile_path(profile: str | os.PathLike | None = None) -> Path:
    """The calibration profile to use: ``profile``, else ``$TENSOROPT_PROFILE``, else
    ``profiles/local.json``."""
    return Path(profile or os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE_PATH)


def physical_memory_bytes(default: int) -> int:
    """This machine's physical memory, or ``default`` where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return default


def local_cluster(machines: int = 1, devices_per_machine: int = 1,
                  profile: str | os.PathLike | None = None) -> Cluster:
    """This job's cluster: the calibrated ``local`` one when a profile exists, else this
    machine's shape with nominal CPU numbers, named ``local-uncalibrated`` so that plans
    say their estimates are nominal (run ``tensoropt calibrate`` to measure them).
    """
    path = profile_path(profile)
    if path.exists():
        return Cluster.from_profile(path)
    physical = physical_memory_bytes(default=8 * 2**30)
    return Cluster(name="local-uncalibrated", machines=machines, devices_per_machine=devices_per_machine,
                   memory_bytes=float(physical // devices_per_machine), peak_flops=NOMINAL_CPU_PEAK_FLOPS,
                   intra=NOMINAL_CPU_LINK, inter=NOMINAL_CPU_LINK)


def get_cluster(name_or_path: str | os.PathLike | Cluster, devices: int | None = None,
                profile: str | os.PathLike | None = None) -> Cluster:
    """A preset, ``local``, or a cluster file, optionally scaled to ``devices``.

    Args:
        name_or_path: a preset name, ``"local"``, a path to a .json/.yaml cluster file, or a
            Cluster (returned, scaled).
        devices: scale to this many devices (``--devices N``).
        profile: for ``local``: the calibration profile; default ``$TENSOROPT_PROFILE`` or
            ``profiles/local.json``.

    Raises:
        ValueError: for an unknown name (listing the presets), a bad file, or a missing
            profile (saying to run ``tensoropt calibrate``).
    """
    if isinstance(name_or_path, Cluster):
        cluster = name_or_path
    elif str(name_or_path) in PRESETS:
        cluster = PRESETS[str(name_or_path)]
    elif str(name_or_path) == "local":
        path = profile_path(profile)
        if not path.exists():
            raise ValueError(f"cluster 'local' needs a calibration profile, and {path} does not exist; "
                             f"run: mpirun -np N tensoropt calibrate --out {path}")
        cluster = Cluster.from_profile(path)
    elif os.path.exists(name_or_path):
        cluster = Cluster.from_file(name_or_path)
    else:
        raise ValueError(f"unknown cluster {str(name_or_path)!r}: not a preset ({', '.join(preset_names())}) "
                         "nor an existing .json/.yaml cluster file")
    return cluster if devices is None else cluster.scaled(devices)
