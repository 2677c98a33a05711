"""How long horovod itself was busy with each collective, read from horovod's timeline.

A chained calibration (``calibration_job``, ``--links``) times what one more collective
adds to a chain: the cycle it waits for, then its work. A collective whose work ends
within one cycle costs about one cycle in a chain, however much data it moves, so the
chain hides its work. In a training step the work is not hidden when the collective's
consumer is an op, not another collective: the op waits for it. On this machine
(2026-11-26, 2 ranks, horovod's timeline of a sampled CNN plan's step and of a
calibration), a 2 MiB all-gather took 0.46-0.86 ms of work and one 1.1 ms cycle per
link in a chain; a 4 MiB one 1.8-1.9 ms of work and 2.65 ms per link.

Horovod's timeline (``hvd.start_timeline``; written by rank 0, Chrome trace JSON) has
one row per tensor name: a ``NEGOTIATE_*`` activity (waiting for every rank to ask),
then the collective's own activity (``ALLGATHER``, ``ALLREDUCE``, ``ALLTOALL``,
``REDUCESCATTER``: allocation, copies and the MPI call). :func:`busy_seconds` reads
the second: per tensor, the median over its calls.

Usage::

    with recording_timeline(hvd, path, rank):
        ...  # run collectives
    busy = busy_seconds(path)        # {"tensoropt_calibrate/allgather/.../0": 0.00086, ...}
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
from typing import Iterator

__all__ = ["busy_seconds", "parse_timeline", "recording_timeline"]


def parse_timeline(text: str, source: str = "horovod's timeline") -> dict[str, list[float]]:
    """Tensor name -> the seconds of each of its collective activities, in order.

    Horovod leaves the JSON array open while it writes (and after a stop): a missing
    closing bracket, and a comma after the last event, are accepted.

    Raises:
        ValueError: the text is not a timeline (naming ``source``).
    """
    body = text.strip()
    if body.startswith("["):
        events_text = body[1:].removesuffix("]").rstrip().rstrip(",")
        body = "[" + events_text + "]"
    try:
        events = json.loads(body)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: not a horovod timeline (JSON: {e}); record one with "
                         "hvd.start_timeline or HOROVOD_TIMELINE") from e
    if not isinstance(events, list):
        raise ValueError(f"{source}: a horovod timeline is a JSON array of events, got "
                         f"{type(events).__name__}")
    names: dict[int, str] = {}
    open_at: dict[int, list[tuple[str, float]]] = {}
    busy: dict[str, list[float]] = {}
    for ev in events:
        if not isinstance(ev, dict):
            continue
        pid, phase = ev.get("pid"), ev.get("ph")
        if phase == "M" and ev.get("name") == "process_name":
            names[pid] = ev.get("args", {}).get("name", str(pid))
        elif phase == "B":
            open_at.setdefault(pid, []).append((ev.get("name", ""), float(ev["ts"])))
        elif phase == "E" and open_at.get(pid):
            activity, began = open_at[pid].pop()
            # the outermost activity that is not negotiation: the collective's own work
            if not open_at[pid] and not activity.startswith("NEGOTIATE"):
                busy.setdefault(names.get(pid, str(pid)), []).append((float(ev["ts"]) - began) / 1e6)
    return busy


def busy_seconds(path: str | os.PathLike) -> dict[str, float]:
    """Tensor name -> the median seconds horovod was busy with one of its calls."""
    with open(path) as f:
        calls = parse_timeline(f.read(), source=str(path))
    return {name: statistics.median(ts) for name, ts in calls.items()}


@contextlib.contextmanager
def recording_timeline(hvd, path: str | os.PathLike, rank: int) -> Iterator[None]:
    """Records horovod's timeline to ``path`` while the block runs (every rank calls it;
    horovod writes it on rank 0). A stale file at ``path`` is removed first."""
    if rank == 0 and os.path.exists(path):
        os.remove(path)
    hvd.start_timeline(str(path), mark_cycles=False)
    try:
        yield
    finally:
        hvd.stop_timeline()
