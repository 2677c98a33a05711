"""The cluster stage: devices, mesh geometry, calibration data and named clusters.

Pure data: nothing here imports TensorFlow, horovod or MPI.

- ``devices``: :class:`Cluster` and :class:`Link`, immutable values with a file form;
- ``mesh``: device meshes and their rank groups (the one place mesh geometry is written);
- ``calibration``: :class:`CalibrationProfile`, what ``tensoropt calibrate`` measured;
- ``presets``: the paper's clusters, the ``local`` one, and :func:`get_cluster`.

Usage::

    from tensoropt.cluster import get_cluster, Cluster

    c = get_cluster("paper-v100x16", devices=8)
    c.devices, c.machine_of(7)
"""

from tensoropt.cluster.calibration import COLLECTIVES, PROFILE_FORMAT_VERSION, CalibrationProfile
from tensoropt.cluster.devices import CLUSTER_FORMAT_VERSION, Cluster, Link
from tensoropt.cluster.presets import (DEFAULT_PROFILE_PATH, PRESETS, get_cluster, local_cluster,
                                       physical_memory_bytes, preset_names, profile_path)

__all__ = ["CLUSTER_FORMAT_VERSION", "COLLECTIVES", "DEFAULT_PROFILE_PATH", "PRESETS",
           "PROFILE_FORMAT_VERSION", "CalibrationProfile", "Cluster", "Link", "get_cluster",
           "local_cluster", "physical_memory_bytes", "preset_names", "profile_path"]
