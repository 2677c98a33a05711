"""Named clusters: the paper's presets, the ``local`` one, and :func:`get_cluster`.

Usage::

    from tensoropt.cluster import get_cluster, Cluster

    c = get_cluster("paper-v100x16")              # a preset
    c8 = get_cluster("paper-v100x16", devices=8)  # scaled: one machine of 8
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

import os
import warnings
from pathlib import Path

from tensoropt.cluster.calibration import HOROVOD_TIMING_ENV, CalibrationProfile, timing_env_mismatch
from tensoropt.cluster.devices import Cluster, Link

__all__ = ["PRESETS", "get_cluster", "local_cluster", "is_local", "LOCAL_CLUSTER_NAMES", "profile_path",
           "preset_names", "DEFAULT_PROFILE_PATH", "PROFILE_ENV", "physical_memory_bytes",
           "NOMINAL_CPU_PEAK_FLOPS", "NOMINAL_CPU_LINK"]

DEFAULT_PROFILE_PATH = os.path.join("profiles", "local.json")
PROFILE_ENV = "TENSOROPT_PROFILE"

_NVLINK = Link(130e9, 5e-6)
_EDR_RDMA = Link(12.5e9, 10e-6)
_V100 = dict(memory_bytes=float(16 * 2**30), peak_flops=15.7e12)

PRESETS: dict[str, Cluster] = {
    "paper-v100x16": Cluster("paper-v100x16", 2, 8, intra=_NVLINK, inter=_EDR_RDMA, **_V100),
    "paper-nordma": Cluster("paper-nordma", 2, 8, intra=_NVLINK, inter=_EDR_RDMA.scaled(0.5), **_V100),
    "paper-4xrdma": Cluster("paper-4xrdma", 2, 8, intra=_NVLINK, inter=_EDR_RDMA.scaled(4.0), **_V100),
    "paper-pcie": Cluster("paper-pcie", 1, 8, intra=_NVLINK.scaled(1 / 20), inter=_EDR_RDMA, **_V100),
}


#: the names ``local_cluster`` gives (before any ``@N`` of ``Cluster.scaled``)
LOCAL_CLUSTER_NAMES = ("local", "local-uncalibrated")


def is_local(cluster: Cluster) -> bool:
    """Whether ``cluster`` is this machine's (``local_cluster``): CPU ranks running this
    TensorFlow build, whose kernels' workspaces ``costs.cpu_workspaces`` knows."""
    return cluster.name.split("@")[0] in LOCAL_CLUSTER_NAMES


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

    A job of one process (planning offline) takes the profile whatever its shape; a job of
    several must have the profile's shape (machines x devices per machine).

    Raises:
        ValueError: a multi-process job's shape differs from the profile's (saying the
            calibrate command for this job).
    """
    path = profile_path(profile)
    if path.exists():
        calibration = CalibrationProfile.load(path)
        cluster = calibration.to_cluster()
        job = (machines, devices_per_machine)
        if machines * devices_per_machine > 1 and job != (cluster.machines,
                                                          cluster.devices_per_machine):
            raise ValueError(
                f"the calibration profile {path} was measured on {cluster.machines} machine(s) x "
                f"{cluster.devices_per_machine} rank(s), but this job runs {machines} x "
                f"{devices_per_machine}: its collectives were not measured. Calibrate this job's "
                f"shape (mpirun -np {machines * devices_per_machine} tensoropt calibrate --out "
                f"{path}, with the same hosts), or point {PROFILE_ENV} at a profile of it, or "
                "pass cluster= a preset or cluster file")
        _warn_timing_env(calibration, path)
        return cluster
    physical = physical_memory_bytes(default=8 * 2**30)
    return Cluster(name="local-uncalibrated", machines=machines, devices_per_machine=devices_per_machine,
                   memory_bytes=float(physical // devices_per_machine), peak_flops=NOMINAL_CPU_PEAK_FLOPS,
                   intra=NOMINAL_CPU_LINK, inter=NOMINAL_CPU_LINK)


def _warn_timing_env(profile: CalibrationProfile, path) -> None:
    """Warns when this job's horovod timing settings differ from the calibration's: its
    collectives then cost what the profile did not measure."""
    differ = timing_env_mismatch(profile)
    if differ:
        names = " ".join(f"{k}={os.environ[k]}" for k in HOROVOD_TIMING_ENV if k in os.environ)
        warnings.warn(
            f"the calibration profile {path} was measured with other horovod settings than this "
            f"job's ({'; '.join(differ)}), so the estimates price collectives this job does not "
            f"run. Run the job with the calibration's settings, or calibrate with this job's: "
            f"{names + ' ' if names else ''}mpirun -x HOROVOD_CYCLE_TIME -np N tensoropt calibrate "
            f"--out {path}", stacklevel=3)


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
        cluster = CalibrationProfile.load(path).to_cluster()
    elif os.path.exists(name_or_path):
        cluster = Cluster.from_file(name_or_path)
    else:
        raise ValueError(f"unknown cluster {str(name_or_path)!r}: not a preset ({', '.join(preset_names())}) "
                         "nor an existing .json/.yaml cluster file")
    return cluster if devices is None else cluster.scaled(devices)
