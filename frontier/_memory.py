"""Freed memory kept for reuse while a search runs (glibc's malloc settings).

A search makes and drops arrays of up to hundreds of megabytes thousands of times.
glibc's malloc serves every block over 32 MiB (and, by its dynamic threshold, many
smaller ones) with a fresh ``mmap`` and unmaps it when it is freed, so the next array
faults in pages the kernel must zero first: on InceptionV3 at 16 devices about a
fifth of the CPU time went to ``clear_page_erms``, under numpy's fancy indexing and
the compiled copies (perf). Inside ``kept_freed_memory()`` large blocks come from the
heap instead (``M_MMAP_MAX`` 0) and freed memory stays with the process
(``M_TRIM_THRESHOLD`` very high) to serve the next arrays without faults; on leaving,
``M_MMAP_MAX`` and ``M_TRIM_THRESHOLD`` go back to glibc's defaults and ``malloc_trim(0)``
hands the free memory back to the system.

``release_kept_memory()`` hands the kept memory back at once, without leaving.
It does nothing where the C library is not glibc, when the process set either setting
through the environment (``MALLOC_MMAP_MAX_``, ``MALLOC_TRIM_THRESHOLD_``), and inside
an outer ``kept_freed_memory()``. Worker threads' allocations over 64 MiB still use
``mmap`` (glibc's thread arenas fall back to it).

Usage::

    with kept_freed_memory():
        ...                                   # allocate and free large arrays
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import threading
from typing import Iterator, Optional

__all__ = ["kept_freed_memory", "release_kept_memory"]

_M_TRIM_THRESHOLD = -1       # mallopt parameters (malloc.h)
_M_MMAP_MAX = -4
_DEFAULT_TRIM_THRESHOLD = 128 * 1024
_DEFAULT_MMAP_MAX = 65536
_KEEP_TRIM_THRESHOLD = 2 ** 31 - 1     # mallopt takes an int: 2 GiB of free top

_lock = threading.Lock()
_depth = 0


def _glibc() -> Optional[ctypes.CDLL]:
    """glibc's C library with ``mallopt`` and ``malloc_trim``, or None."""
    if os.environ.get("MALLOC_MMAP_MAX_") or os.environ.get("MALLOC_TRIM_THRESHOLD_"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except (OSError, AttributeError):
        return None


_LIBC = _glibc()


@contextlib.contextmanager
def kept_freed_memory() -> Iterator[None]:
    """Large blocks from the heap, and freed memory kept for reuse, inside the block
    (see the module doc); the defaults and a ``malloc_trim`` after it."""
    global _depth
    with _lock:
        _depth += 1
        first = _depth == 1
    if first and _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_MAX, 0)
        _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEEP_TRIM_THRESHOLD)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            last = _depth == 0
        if last and _LIBC is not None:
            _LIBC.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
            _LIBC.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
            _LIBC.malloc_trim(0)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


#: ``release_kept_memory`` trims when the heap holds more free bytes than this.
RELEASE_FREE_BYTES = 512 * 2 ** 20


def _mallinfo2(libc: Optional[ctypes.CDLL]):
    """glibc's ``mallinfo2`` (2.33 and later), returning ``_MallInfo2``, or None."""
    info = getattr(libc, "mallinfo2", None) if libc is not None else None
    if info is not None:
        info.restype = _MallInfo2
    return info


_MALLINFO2 = _mallinfo2(_LIBC)   # looked up once: release_kept_memory runs after every elimination


def release_kept_memory() -> bool:
    """Hands the free memory kept inside ``kept_freed_memory()`` back to the system
    (``malloc_trim(0)``: free pages anywhere in the heap, not only at its top) when the
    heap holds more than ``RELEASE_FREE_BYTES`` free (glibc's ``mallinfo2``); True if it
    did. Freed blocks between live ones stay with the process for good otherwise: on
    PaSE's Transformer at 64 devices the process held 3 to 4 GiB more than its tables
    and memo by the decoders (16.3 GiB resident, stopped at 18 GB), and one call took
    13.7 GiB to 9.7 GiB in 0.03 s. ``Work`` calls it after every elimination. Does
    nothing outside the block or where the C library is not glibc."""
    with _lock:
        inside = _depth > 0
    if not inside or _LIBC is None:
        return False
    if _MALLINFO2 is not None and _MALLINFO2().fordblks <= RELEASE_FREE_BYTES:
        return False
    _LIBC.malloc_trim(0)
    return True
