"""The device graph as a value: machines x devices, memory, peak FLOP/s, two kinds of links.

A :class:`Cluster` is an immutable value. Ranks are ``0..devices-1`` and the machine of a
rank is ``rank // devices_per_machine``. The intra-machine link joins devices of one
machine (each device has its own, as NVLink); the inter-machine link is one per machine
(its network card), shared by every stream that leaves or enters the machine. The presets,
the ``local`` cluster and :func:`~tensoropt.cluster.presets.get_cluster` are in
``tensoropt.cluster.presets``.

Usage::

    from tensoropt.cluster.devices import Cluster, Link

    c = Cluster("two-by-four", machines=2, devices_per_machine=4, memory_bytes=16e9,
                peak_flops=15.7e12, intra=Link(130e9, 5e-6), inter=Link(12.5e9, 10e-6))
    c.scaled(4)                                   # one machine of 4
    c.to_file("my.json"); Cluster.from_file("my.json")
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tensoropt.validation import atomic_write_text

__all__ = ["Link", "Cluster", "CLUSTER_FORMAT_VERSION"]

CLUSTER_FORMAT_VERSION = 1


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
        atomic_write_text(path, text)

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
                             "or a preset name (tensoropt.cluster.preset_names() lists them)") from e
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
