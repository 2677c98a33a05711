"""Lazy, quiet import of TensorFlow: recording and search never pay for it.

Importing TensorFlow through here also fixes glibc's mmap threshold at 4 MiB
(``mallopt(M_MMAP_THRESHOLD)``): buffers of 4 MiB and more are then mapped and unmapped
on their own and return to the system when TensorFlow frees them. glibc's default
threshold rises to the size of the largest buffer freed (up to 32 MiB), after which such
buffers come from heap arenas that keep their pages: initializing a large sharded model
block by block then left a rank's resident memory at several times its shards.

Once a job's variables are initialized, :func:`keep_freed_memory` turns that around: a
training step frees and allocates the same buffers every step, and mapping each large
one afresh made the kernel zero its pages again on every step. It also keeps the extra
heaps of the threads' arenas, which glibc unmaps whenever one empties whatever the trim
threshold says: a buffer that fell in such a heap faulted all its pages again on every
use.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os

__all__ = ["freed_memory_kept", "import_tensorflow", "keep_freed_memory", "quiet_environment", "MMAP_THRESHOLD_BYTES",
           "KEPT_FREE_BYTES", "ARENA_HEAP_BYTES", "MALLOC_POLICY", "QUIET_ENV"]

MMAP_THRESHOLD_BYTES = 4 << 20
#: the free bytes a heap keeps at its top once :func:`keep_freed_memory` has run
KEPT_FREE_BYTES = 1 << 30
#: how measured op times were taken, for the compute profile's cache key: a profile
#: measured while freed memory went back to the system priced every large output's
#: fresh pages into its op
MALLOC_POLICY = "freed memory kept, arena heaps too"
#: glibc's largest heap of a thread's arena on 64-bit systems (``HEAP_MAX_SIZE``): as
#: ``M_TOP_PAD``, no emptied heap is ever small enough to unmap
ARENA_HEAP_BYTES = 64 << 20
# glibc's mallopt parameter numbers, and its defaults of the three that keep_freed_memory sets
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -2, -3, -4
_KEEP = ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, KEPT_FREE_BYTES), (_M_TOP_PAD, ARENA_HEAP_BYTES))
_RETURN = ((_M_MMAP_MAX, 65536), (_M_TRIM_THRESHOLD, 128 << 10), (_M_TOP_PAD, 128 << 10))
_tuned = False
_kept = False


@functools.lru_cache(maxsize=None)
def _libc_mallopt():
    """glibc's ``mallopt``, looked up once; None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:  # not glibc: nothing to tune
        return None
    return getattr(libc, "mallopt", None)


def _mallopt(*settings: tuple[int, int]) -> None:
    mallopt = _libc_mallopt()
    if mallopt is not None:
        for parameter, value in settings:
            mallopt(parameter, value)


def _tune_malloc() -> None:
    global _tuned
    if not _tuned:
        _tuned = True
        _mallopt((_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def keep_freed_memory() -> None:
    """From now on glibc keeps freed memory for the next allocations: no buffer is mapped
    on its own (``M_MMAP_MAX`` 0), a heap gives its top back to the system only beyond
    :data:`KEPT_FREE_BYTES` free (``M_TRIM_THRESHOLD``), and a thread arena keeps its
    emptied heaps (``M_TOP_PAD`` of :data:`ARENA_HEAP_BYTES`: glibc unmaps an emptied
    heap unless it would keep that much, whatever the trim threshold). The pad reserves
    address space when a heap grows; pages no buffer touches are never resident.

    A training step allocates and frees the same buffers every step. Under the 4 MiB mmap
    threshold set at import, each buffer of 4 MiB or more was mapped afresh, and the kernel
    zeroed its pages on first touch, every step: on the small transformer's plans, 150k
    page faults and a third of the step (1.0-1.1 s against 0.70-0.75 s with memory kept,
    the resident set 0.2 GiB larger: the step's working set). A traced step kept memory by
    accident (its records grew the heaps), so steps measured after one ran faster.

    ``tensoropt.runtime`` calls this once a plan's variables are initialized (the import's
    threshold keeps initialization's temporaries from staying resident); the compute
    profiler times ops under :func:`freed_memory_kept`, so that op timings and training
    steps pay alike. Idempotent.

    Without the pad, a TensorFlow thread's buffer that did not fit its arena's first heap
    got a heap of its own, unmapped when freed and faulted in again on the next step:
    measured 2026-11-27, the small CNN's ``conv0`` (batch split in 2) timed 1.8-2.0 ms
    or 3.4-3.7 ms (868 page faults a step) by the luck of each profiling session.
    """
    global _kept
    if not _kept:
        _kept = True
        _mallopt(*_KEEP)


@contextlib.contextmanager
def freed_memory_kept():
    """:func:`keep_freed_memory` for the ``with`` block only: after it glibc returns freed
    memory again (its defaults), unless a job's steps keep it for good by then."""
    if _kept:
        yield
        return
    _mallopt(*_KEEP)
    try:
        yield
    finally:
        if not _kept:
            _mallopt(*_RETURN)


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
