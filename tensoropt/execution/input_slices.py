"""Which part of a fed value each rank needs, and the one rule that takes it.

Under a plan, a rank holds a placeholder in its producer's output layout: the batch may
be split across ranks, a feature dim split, or the whole value replicated. ``run`` takes
either the whole (global) value, which it slices here, or a value that is already this
rank's slice; ``input_slice`` tells a script which slice to load, so that no rank reads
the whole batch.

Usage::

    from tensoropt.execution.input_slices import input_slice, local_feed

    sl = input_slice(sharding, x, rank)          # (slice(16, 32), slice(0, 784))
    local = local_feed(x, whole_batch, sharding, rank)   # == whole_batch[sl]
"""

from __future__ import annotations

import numpy as np

__all__ = ["input_slice", "local_shape", "local_feed"]


def input_slice(sharding, tensor, rank: int) -> tuple[slice, ...]:
    """The slice of ``tensor``'s whole value that ``rank`` holds under ``sharding``'s plan.

    Args:
        sharding: the built ``PlanSharding``, or None for a one-process job (the whole value).
        tensor: a recorded tensor (a placeholder, typically).
        rank: the rank asking.
    """
    if sharding is None:
        return tuple(slice(0, n) for n in tensor.shape)
    return tuple(sharding.layout_of(tensor).shard_slices(rank, tensor.shape))


def local_shape(sharding, tensor, rank: int) -> tuple[int, ...]:
    """The shape of ``rank``'s slice of ``tensor`` (``input_slice``'s lengths)."""
    return tuple(s.stop - s.start for s in input_slice(sharding, tensor, rank))


def local_feed(tensor, value: np.ndarray, sharding, rank: int) -> np.ndarray:
    """This rank's part of a value fed to ``tensor``.

    A value of the whole shape is sliced to the rank's part (``input_slice``); a value
    already of the part's shape is taken as that part.

    Raises:
        ValueError: for any other shape, naming the placeholder, the shape given and both
            shapes accepted.
    """
    whole = tuple(tensor.shape)
    got = tuple(value.shape)
    if got == whole:
        return value if sharding is None else value[input_slice(sharding, tensor, rank)]
    local = local_shape(sharding, tensor, rank)
    if got == local:
        return value
    message = f"run: fed {tensor.op.name} a value of shape {got}; the placeholder has shape {whole}"
    if local != whole:
        message += (f" and rank {rank}'s slice of it, {_slice_text(input_slice(sharding, tensor, rank))} "
                    f"(tensoropt.input_slice), has shape {local}; feed a value of either shape")
    raise ValueError(message)


def _slice_text(slices: tuple[slice, ...]) -> str:
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in slices) + "]"
