"""How many TensorFlow intra-op threads one rank computes with: the one rule that
training, ``tensoropt calibrate`` and the compute profiler share.

The ranks on one physical machine share its CPUs, so each rank gets ``CPUs // ranks``
threads (at least one); ``TENSOROPT_THREADS`` (> 0) overrides this everywhere.

Why one rule: a shard profiled with every CPU on an otherwise idle machine runs faster
than the same shard in training, where every rank computes at once. On this 2-core
machine the LSTM's ops summed 258-329 ms profiled alone with 2 threads, 334-436 ms with
both ranks profiling at once, and 329-424 ms alone with one thread each (the CNN's:
10-15 ms, 15-22 ms and 14-21 ms). Profiling with the threads a rank trains with prices
what training runs.

Pure: nothing here imports TensorFlow or MPI.
"""

from __future__ import annotations

import os

from tensoropt.validation import env_whole_number

ENV = "TENSOROPT_THREADS"

__all__ = ["ENV", "available_cpus", "rank_threads", "threads_from_env"]


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def rank_threads(ranks_per_machine: int, environ=os.environ) -> int:
    """Intra-op threads for one of ``ranks_per_machine`` ranks sharing this machine:
    ``TENSOROPT_THREADS`` when set to a positive int, else ``available_cpus() //
    ranks_per_machine``, at least 1.

    Raises:
        ValueError: ``ranks_per_machine`` below 1, or ``TENSOROPT_THREADS`` not an int >= 0.
    """
    if ranks_per_machine < 1:
        raise ValueError(f"ranks_per_machine={ranks_per_machine}: give the ranks on one machine (>= 1)")
    return threads_from_env(environ) or max(1, available_cpus() // ranks_per_machine)


def threads_from_env(environ=os.environ) -> int | None:
    """``TENSOROPT_THREADS`` as a positive int, or None when it is unset, empty or 0.

    Raises:
        ValueError: ``TENSOROPT_THREADS`` not an int >= 0.
    """
    text = environ.get(ENV, "").strip()
    if text in ("", "0"):
        return None
    return env_whole_number(ENV, text, 1, "give a positive number of intra-op threads per rank, "
                                          "or leave it unset (CPUs / ranks on the machine)")
