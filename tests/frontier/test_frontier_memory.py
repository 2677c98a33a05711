"""``kept_freed_memory``: inside it a large array comes from the heap (glibc's malloc
without mmap), after it from mmap again, and nesting restores only at the outer end."""

import numpy as np
import pytest

from frontier import _memory
from frontier._memory import kept_freed_memory

pytestmark = pytest.mark.skipif(_memory._LIBC is None, reason="needs glibc's malloc")

_BIG = 48 * 2 ** 20 // 8          # float64 elements: over glibc's largest mmap threshold


def _in_heap(a: np.ndarray) -> bool:
    addr = a.__array_interface__["data"][0]
    with open("/proc/self/maps") as f:
        for line in f:
            if line.rstrip().endswith("[heap]"):
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if lo <= addr < hi:
                    return True
    return False


def test_large_arrays_come_from_the_heap_only_inside():
    assert not _in_heap(np.empty(_BIG))
    with kept_freed_memory():
        assert _in_heap(np.empty(_BIG))
    assert not _in_heap(np.empty(_BIG))


def test_nested_blocks_restore_at_the_outer_end():
    with kept_freed_memory():
        with kept_freed_memory():
            pass
        assert _in_heap(np.empty(_BIG))
    assert not _in_heap(np.empty(_BIG))


def test_track_restores_the_defaults():
    from frontier import CostGraph, track
    g = CostGraph()
    a = g.add_node("a", np.array([[1.0, 2.0], [2.0, 1.0]]))
    b = g.add_node("b", np.array([[1.0, 1.0]]))
    g.add_edge(a, b, np.zeros((2, 1, 1, 2)))
    assert len(track(g).points) == 2
    assert not _in_heap(np.empty(_BIG))


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_release_hands_back_freed_blocks_between_live_ones(monkeypatch):
    """Inside the block, arrays freed between live ones stay resident (no trim at the
    heap's top can return them); ``release_kept_memory`` hands them back."""
    n = 8 * 2 ** 20 // 8                    # 8 MiB arrays from the heap
    with kept_freed_memory():
        arrays = [np.ones(n) for _ in range(40)]
        keep = arrays[1::2]                 # every other one stays live
        del arrays
        before = _rss_bytes()
        monkeypatch.setattr(_memory, "RELEASE_FREE_BYTES", 100 * 2 ** 20)
        assert _memory.release_kept_memory()
        after = _rss_bytes()
        assert before - after > 100 * 2 ** 20, (before, after)   # about 160 MiB freed
        del keep


def test_release_outside_the_block_does_nothing(monkeypatch):
    calls = []
    monkeypatch.setattr(_memory, "_LIBC", type("L", (), {"malloc_trim": calls.append})())
    assert not _memory.release_kept_memory()
    assert calls == []
