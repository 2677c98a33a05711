"""Allocation records of a traced TensorFlow step, and the most they hold at once.

The one way memory is read off a traced ``session.run`` (``RunOptions.FULL_TRACE``):
each node's allocation records (a buffer's allocation, and its free as a negative
record), summed in time order. The training step's profile
(``execution.step_profile``) and the profiler's per-op workspace (``costs.profiler``)
both use it, so the estimate and the measurement count the same thing.

Usage::

    options, metadata = trace_options(tf)
    sess.run(fetches, options=options, run_metadata=metadata)
    records = [r for dev in metadata.step_stats.dev_stats for node in dev.node_stats
               for r in node_allocations(node)]
    allocation_peak(records)              # bytes held at once, at the most
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["trace_options", "node_allocations", "allocation_peak"]


def trace_options(tf) -> tuple[Any, Any]:
    """``(RunOptions, RunMetadata)`` for a ``session.run`` that traces the step."""
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    return options, tf.compat.v1.RunMetadata()


def node_allocations(node) -> list[tuple[int, int]]:
    """``(microseconds, bytes)`` of every allocation record of a traced node."""
    return [(r.alloc_micros, r.alloc_bytes) for used in node.memory
            for r in used.allocation_records]


def allocation_peak(records: Iterable[tuple[int, int]]) -> int:
    """The most bytes the records hold at once, summed in time order (0 at the least)."""
    live = peak = 0
    for _, nbytes in sorted(records):
        live += nbytes
        peak = max(peak, live)
    return int(peak)
