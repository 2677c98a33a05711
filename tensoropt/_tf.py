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

__all__ = ["import_tensorflow", "MMAP_THRESHOLD_BYTES"]

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


def import_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _tune_malloc()
    import tensorflow as tf  # noqa: PLC0415

    return tf
