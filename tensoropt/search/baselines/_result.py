"""What every baseline search returns.

Usage::

    result = optcnn_search(tables)
    result.plan.time_s, result.plan.memory_bytes, result.search_s, result.stats
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tensoropt.plan import Plan

__all__ = ["BaselineResult", "BaselineError"]


class BaselineError(ValueError):
    """A baseline cannot search this graph (its space does not apply, or its tables
    would not fit); the message says why and what to change."""


@dataclass(frozen=True)
class BaselineResult:
    """One baseline's answer.

    Attributes:
        method: its name (``mesh_tf``, ``optcnn``, ``tofu``, ``pase``, ``mcmc``).
        plan: its plan: an ordinary ``Plan``, priced by the cost model it searched.
        search_s: seconds of its own search, after the shared pricing of the space.
        stats: what the method reports about its search (sizes, counts).
        trace_s: for MCMC, (search seconds, best time so far) after each improvement.
    """

    method: str
    plan: Plan
    search_s: float
    stats: dict = field(default_factory=dict)
    trace_s: tuple[tuple[float, float], ...] = ()
