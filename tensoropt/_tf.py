"""Lazy, quiet import of TensorFlow: recording and search never pay for it.

Importing TensorFlow through here also fixes glibc's mmap threshold at 4 MiB
(``mallopt(M_MMAP_THRESHOLD)``): buffers of 4 MiB and more are then mapped and unmapped
on their own and return to the system when TensorFlow frees them. glibc's default
threshold rises to the size of the largest buffer freed (up to 32 MiB), after which such
buffers come from heap arenas that keep their pages: initializing a large sharded model
block by block then left a rank's resident memory at several times its shards.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["import_tensorflow", "quiet_environment", "MMAP_THRESHOLD_BYTES", "QUIET_ENV"]

MMAP_THRESHOLD_BYTES = 4 << 20
_M_MMAP_THRESHOLD = -3   # glibc's mallopt parameter number
_tuned = False


def _tune_malloc() -> None:
    global _tuned
    if _tuned:
        return
    _tuned = True
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "mallopt"):
            libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    except OSError:  # not glibc: nothing to tune
        pass


# Set before TensorFlow loads. TF 2.21 prints its oneDNN notice and absl's pre-init
# warnings whatever TF_CPP_MIN_LOG_LEVEL says; these keep a job's output its own.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0", "GLOG_minloglevel": "2",
             "ABSL_MIN_LOG_LEVEL": "2"}


def quiet_environment() -> None:
    """Sets :data:`QUIET_ENV` where the user has not set the variable."""
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)


def import_tensorflow():
    """TensorFlow, imported quietly (see :data:`QUIET_ENV`) with malloc tuned."""
    quiet_environment()
    _tune_malloc()
    import tensorflow as tf  # noqa: PLC0415 - TensorFlow loads only when a job runs

    try:
        from absl import logging as absl_logging  # noqa: PLC0415 - comes with TensorFlow

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass

    return tf
