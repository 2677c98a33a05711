"""How the frontier kernels are compiled: numba, cached on disk, the GIL released.

Usage::

    from frontier._jit import jit, jit_inline

    @jit
    def kernel(x): ...

    @jit_inline
    def less(a, b): ...         # tiny and hot: inlined by numba into its callers

    @jit_leaf
    def at(x, i): ...           # reads or writes arrays it is given, allocates none

    @jit_leaf_inline
    def step(x, i): ...         # the same, inlined into its (jit_leaf) callers

numba's disk cache (``cache=True``) stamps a compiled function with the hash of its own
source file only, so a kernel would keep stale machine code after a helper it calls
from another file changed (numba's documented limit). The kernels are split over
``KERNEL_FILES``; the cache locators registered here stamp every function of those
files with the hash of all of them, so editing any one recompiles all. The cache lives
in ``frontier/__pycache__`` when that is writable, else in numba's user cache
(``NUMBA_CACHE_DIR`` overrides both, as usual). Functions of other packages are left
to numba's own locators.
"""

from __future__ import annotations

import hashlib
import os
from typing import Callable

from numba import njit
from numba.core import caching

__all__ = ["jit", "jit_inline", "jit_leaf", "jit_leaf_inline", "KERNEL_FILES"]

KERNEL_FILES = ("_jit.py", "_heap.py", "_blocks.py", "_kernels.py", "_scans.py")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _stamp() -> str:
    """The hash of every kernel file's source."""
    h = hashlib.sha256()
    for name in KERNEL_FILES:
        with open(os.path.join(_HERE, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


class _AllKernelFiles:
    """Locator mixin: a kernel file's functions are stamped with all kernel files."""

    def get_source_stamp(self):
        return _stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        path = os.path.abspath(py_file)
        if os.path.dirname(path) != _HERE or os.path.basename(path) not in KERNEL_FILES:
            return None
        return super().from_function(py_func, py_file)


class _UserProvided(_AllKernelFiles, caching.UserProvidedCacheLocator):
    pass


class _InTree(_AllKernelFiles, caching.InTreeCacheLocator):
    pass


class _UserWide(_AllKernelFiles, caching.UserWideCacheLocator):
    pass


_OURS = [_UserProvided, _InTree, _UserWide]
if not any(c in caching.CacheImpl._locator_classes for c in _OURS):
    caching.CacheImpl._locator_classes[:0] = _OURS


def jit(func: Callable) -> Callable:
    """``numba.njit`` with the kernels' settings: cached on disk, GIL released."""
    return njit(cache=True, nogil=True)(func)


def jit_inline(func: Callable) -> Callable:
    """``jit`` for a tiny helper called once per candidate, which numba inlines into
    its callers (its own inlining, before LLVM's).

    Measured on the kernels: a numba function that passes an array argument on to
    another function counts that array's references on entry and exit (atomic
    operations), and so does one that takes an array out of a tuple; these counts
    once took most of a merge's time. Hence the hot loops get each table as one array,
    take nothing out of tuples inside the loop, and have their helpers return what
    they need done (``_kernels._next_stream``) instead of passing arrays on.
    """
    return njit(inline="always", cache=True, nogil=True)(func)


def jit_leaf(func: Callable) -> Callable:
    """``jit`` without numba's reference counting (NRT), for a helper called once per
    candidate or block that takes arrays but allocates none, keeps none and returns none.

    Measured (perf, with the JIT code's addresses read back): a compiled function that
    takes an array counts its reference up on entry and down on exit, with locked
    (atomic) instructions, and numba's pruning leaves them in; in ``block_of``,
    ``_next_stream``, the heap's ``pop`` and the like they took a third of the whole
    search's CPU time on InceptionV3 and the PaSE Transformer. Without NRT the counts
    are gone; the arrays stay alive all the same, since the caller holds them for the
    whole call. A function that allocates or returns an array must use ``jit``.
    """
    return njit(cache=True, nogil=True, _nrt=False)(func)


def jit_leaf_inline(func: Callable) -> Callable:
    """``jit_leaf``, and inlined by numba into its callers, for a helper called once per
    candidate by a ``jit_leaf`` function (the merge loop: ``_kernels._merge_cell``).

    Measured on the kernels: a call of a compiled function passes each array as a
    struct of nine words on the stack, and numba's calls between functions compiled
    apart are not inlined by LLVM; the stream steps and the heap's queue, called so,
    took a fifth of a node elimination's CPU time. Inlined into a caller without NRT
    they count no references either; a caller with NRT would count them (see
    ``jit_inline``), so only ``jit_leaf`` functions may call these.
    """
    return njit(inline="always", cache=True, nogil=True, _nrt=False)(func)
