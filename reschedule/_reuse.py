"""Tensor reuse (paper Section 4.2): which copy of a re-scheduled tensor to keep for backward.

When both the producer (layout ``src``) and the consumer (layout ``dst``) of a tensor keep it
for backward, TensorOpt may keep both copies, or only one and rebuild the other by
re-scheduling during backward::

    from reschedule import Layout, reuse_options
    for opt in reuse_options(Layout.parse("[4] S0,R"), Layout.parse("[4] R,R"), (64, 32)):
        print(opt.name, opt.extra_memory_bytes, opt.extra_time_s)

Costs are RELATIVE to the baseline in which producer and consumer each count their own saved
copy (per rank, the local block's bytes):

* ``keep_both``: (0, 0).
* ``keep_producer``: drop the consumer's copy, (-consumer bytes, time of re-running the
  forward conversion ``src -> dst`` in backward).
* ``keep_consumer``: drop the producer's copy, (-producer bytes, time of the reverse
  conversion ``dst -> src``). Omitted when ``dst -> src`` is impossible (e.g. ``src`` is a
  pending sum, which no step can re-create).

When ``src == dst`` there is no conversion and the two saved copies are the same physical
tensor: a single option ``keep_producer`` = (-bytes, 0) is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ._cost import CostFn
from ._layout import Layout
from ._planner import NoConversionError, conversion_time

__all__ = ["ReuseOption", "reuse_options"]


@dataclass(frozen=True)
class ReuseOption:
    """One tensor-reuse choice, relative to keeping both saved copies.

    Attributes:
        name: ``"keep_both"``, ``"keep_producer"`` or ``"keep_consumer"``.
        extra_memory_bytes: Change in bytes saved per rank (<= 0).
        extra_time_s: Extra seconds of re-scheduling in backward (>= 0).
    """

    name: str
    extra_memory_bytes: int
    extra_time_s: float


def reuse_options(src: Layout, dst: Layout, shape: Sequence[int], itemsize: int = 4,
                  cost_fn: CostFn | None = None) -> list[ReuseOption]:
    """The paper's reuse choices for a tensor kept for backward by producer and consumer.

    Args:
        src: The producer's layout.
        dst: The consumer's layout.
        shape: Full tensor shape.
        itemsize: Bytes per element.
        cost_fn: Step cost function (see :func:`~reschedule.plan_conversion`).

    Returns:
        ``[keep_both, keep_producer, keep_consumer]`` (``keep_consumer`` omitted if the
        reverse conversion is impossible), or ``[keep_producer]`` alone when ``src == dst``.

    Raises:
        ValueError: If the layouts do not fit the shape or ``src -> dst`` is impossible.
    """
    fwd_time = conversion_time(src, dst, shape, itemsize, cost_fn)
    src_bytes = src.local_bytes(shape, itemsize)
    dst_bytes = dst.local_bytes(shape, itemsize)
    if src == dst:
        return [ReuseOption("keep_producer", -src_bytes, 0.0)]
    options = [ReuseOption("keep_both", 0, 0.0),
               ReuseOption("keep_producer", -dst_bytes, fwd_time)]
    try:
        rev_time = conversion_time(dst, src, shape, itemsize, cost_fn)
    except NoConversionError:
        return options
    options.append(ReuseOption("keep_consumer", -src_bytes, rev_time))
    return options
