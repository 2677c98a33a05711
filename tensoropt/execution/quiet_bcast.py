"""A broadcast from one rank whose waiting ranks sleep instead of spinning.

Open MPI's blocking collectives busy-poll: a rank waiting in ``comm.bcast`` for rank 0
to finish its search keeps a core at 100%. With one rank per core that core is one
rank 0 needs: its profiler then measures op shards slower (conv and max-pool shards
of the small CNN by 1.5x on a 2-core machine, against the same shards measured with no
rank spinning), and a search with ``threads=2`` loses a thread. ``quiet_bcast`` makes the waiting ranks join a non-blocking barrier and
sleep between tests of it, so they use almost no CPU until the root is done.

Usage::

    outcome = quiet_bcast(comm, work() if comm.Get_rank() == 0 else None, root=0)
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["quiet_bcast"]

#: the longest sleep between two tests of the barrier (the root's result waits at most
#: this long before the others see it)
MAX_POLL_S = 0.005


def quiet_bcast(comm, value: Any, root: int = 0, max_poll_s: float = MAX_POLL_S) -> Any:
    """``comm.bcast(value, root)``, but a rank other than ``root`` waits for the root to
    arrive by sleeping (from 0.1 ms, doubling up to ``max_poll_s``) between tests of a
    non-blocking barrier. Every rank must call it, as ``bcast``.

    Args:
        comm: an mpi4py communicator.
        value: the root's object (pickled); ignored on the other ranks.
        root: the rank that sends.
        max_poll_s: the longest sleep between two tests (> 0).

    Returns:
        The root's ``value`` on every rank.

    Raises:
        ValueError: for a ``root`` outside the communicator or ``max_poll_s <= 0``.
    """
    size = comm.Get_size()
    if not 0 <= root < size:
        raise ValueError(f"root={root}: give a rank of the communicator, 0 to {size - 1}")
    if not max_poll_s > 0:
        raise ValueError(f"max_poll_s={max_poll_s}: give a positive number of seconds")
    if size == 1:
        return value
    arrived = comm.Ibarrier()
    if comm.Get_rank() == root:
        arrived.Wait()
    else:
        pause = 1e-4
        while not arrived.Test():
            time.sleep(pause)
            pause = min(2 * pause, max_poll_s)
    return comm.bcast(value, root=root)
