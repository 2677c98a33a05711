"""Cost functions for re-scheduling steps.

A cost function is any callable ``cost_fn(step, shape, itemsize) -> seconds`` (a float
>= 0, or ``math.inf`` to forbid the step). The planner calls it once per candidate step.
Profiled models can key on ``(step.kind, step.group_size, step.group_stride)``, which
decide the links a group crosses::

    from reschedule import alpha_beta_cost, plan_conversion
    cost = alpha_beta_cost(alpha_s=10e-6, bandwidth_bytes_per_s=12.5e9)
    conv = plan_conversion(src, dst, shape, itemsize=4, cost_fn=cost)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ._steps import Step, alltoallv_recv_elements

__all__ = ["CostFn", "AlphaBetaCost", "alpha_beta_cost", "DEFAULT_COST"]

CostFn = Callable[[Step, Sequence[int], int], float]


@dataclass(frozen=True)
class AlphaBetaCost:
    """Alpha-beta model with the textbook volumes of ring collectives in a group of g ranks.

    With ``alpha = alpha_s`` and ``beta = 1 / bandwidth_bytes_per_s``:

    * slice: 0 (local).
    * allgather: ``(g-1)*alpha + (g-1)/g * n * beta``, n = bytes of the gathered block.
    * reducescatter: ``(g-1)*alpha + (g-1)/g * n * beta``, n = bytes of the block before
      the scatter.
    * allreduce: ``2(g-1)*alpha + 2(g-1)/g * n * beta``, n = bytes of the block.
    * alltoall: ``(g-1)*alpha + (g-1)/g * n * beta``, n = bytes each rank holds.
    * alltoallv over all N ranks: ``(N-1)*alpha + m * beta`` with m the largest number of
      bytes any rank must receive from other ranks (bytes of its output block it did not
      hold); 0 when no rank receives anything (the step is a local re-slicing).

    Attributes:
        alpha_s: Latency per message, seconds.
        bandwidth_bytes_per_s: Link bandwidth, bytes per second.
    """

    alpha_s: float = 10e-6
    bandwidth_bytes_per_s: float = 12.5e9

    def __post_init__(self) -> None:
        if not self.alpha_s >= 0:
            raise ValueError(f"alpha_s={self.alpha_s!r}: the latency must be >= 0 seconds.")
        if not self.bandwidth_bytes_per_s > 0:
            raise ValueError(
                f"bandwidth_bytes_per_s={self.bandwidth_bytes_per_s!r}: the bandwidth must be "
                f"> 0 bytes per second.")

    def __call__(self, step: Step, shape: Sequence[int], itemsize: int) -> float:
        alpha, beta = self.alpha_s, 1.0 / self.bandwidth_bytes_per_s
        g = step.group_size
        if step.kind == "slice":
            return 0.0
        if step.kind == "allgather":
            n = step.dst.local_bytes(shape, itemsize)
            return (g - 1) * alpha + (g - 1) / g * n * beta
        if step.kind == "reducescatter":
            n = step.src.local_bytes(shape, itemsize)
            return (g - 1) * alpha + (g - 1) / g * n * beta
        if step.kind == "allreduce":
            n = step.src.local_bytes(shape, itemsize)
            return 2 * (g - 1) * alpha + 2 * (g - 1) / g * n * beta
        if step.kind == "alltoall":
            n = step.src.local_bytes(shape, itemsize)
            return (g - 1) * alpha + (g - 1) / g * n * beta
        if step.kind == "alltoallv":
            m = max(alltoallv_recv_elements(step.src, step.dst, tuple(shape))) * itemsize
            return self.alltoallv_seconds(m, g)
        raise AssertionError(step.kind)

    def alltoallv_seconds(self, max_recv_bytes: int, num_ranks: int) -> float:
        """An alltoallv over ``num_ranks`` ranks whose busiest rank receives
        ``max_recv_bytes``: what ``__call__`` gives such a step. A cost function with this
        method lets ``conversion_times`` price every pair of layouts on two meshes at
        once (``reschedule._times``)."""
        if max_recv_bytes == 0:
            return 0.0
        return (num_ranks - 1) * self.alpha_s + max_recv_bytes * (1.0 / self.bandwidth_bytes_per_s)


def alpha_beta_cost(alpha_s: float = 10e-6,
                    bandwidth_bytes_per_s: float = 12.5e9) -> AlphaBetaCost:
    """The alpha-beta cost function (formulas in :class:`AlphaBetaCost`).

    Args:
        alpha_s: Latency per message in seconds (default 10 us).
        bandwidth_bytes_per_s: Bandwidth in bytes/s (default 12.5e9, 100 Gb/s).

    Returns:
        A callable ``cost_fn(step, shape, itemsize) -> seconds``.
    """
    return AlphaBetaCost(alpha_s=alpha_s, bandwidth_bytes_per_s=bandwidth_bytes_per_s)


DEFAULT_COST = AlphaBetaCost()
