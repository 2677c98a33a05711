"""How a plan becomes a task graph: the simulation options.

Usage::

    from tensoropt.simulator import SimOptions

    SimOptions()                                   # chained collectives, one rank, no overheads
    SimOptions(collective_order="free", ranks="all")
    SimOptions.from_profile(CalibrationProfile.load("profiles/local.json"))

- ``collective_order``: ``"chained"`` issues every collective after the one before it in
  the plan's collective schedule, as the execution builder chains them; ``"free"`` lets
  collectives run as soon as their data is ready, with contention per link: a rank's
  intra-machine link and its share of its machine's network card each carry one
  collective at a time (the priced time of a collective already includes the contention
  among the groups of its own scheme). The difference shows what the chain costs.
- ``ranks``: ``"representative"`` simulates rank 0 alone: plans are SPMD with even
  splits, so every rank runs the same tasks for the same times. ``"all"`` simulates every
  rank, each collective waiting for every member of its group (for validation).
- ``collective_overhead_s``: added to every collective (horovod's per-collective cycle);
  ``op_overhead_s``: added to every compute task of an op that computes. Both come from
  a calibration profile's ``overheads`` object (``{"collective_s": ..., "op_s": ...}``)
  when it has one, else 0. They are measured on the machine, never fitted on the plans
  they are then used to judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["SimOptions", "COLLECTIVE_ORDERS", "RANK_MODES"]

COLLECTIVE_ORDERS = ("chained", "free")
RANK_MODES = ("representative", "all")


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value < 0:
        raise ValueError(f"SimOptions: {name} must be a finite number of seconds >= 0, "
                         f"got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SimOptions:
    """Options of a plan's task graph (see the module doc).

    Raises:
        ValueError: an unknown ``collective_order`` or ``ranks``, or a bad overhead.
    """

    collective_order: str = "chained"
    ranks: str = "representative"
    collective_overhead_s: float = 0.0
    op_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        if self.collective_order not in COLLECTIVE_ORDERS:
            raise ValueError(f"collective_order={self.collective_order!r}: choose "
                             f"{' or '.join(map(repr, COLLECTIVE_ORDERS))}")
        if self.ranks not in RANK_MODES:
            raise ValueError(f"ranks={self.ranks!r}: choose "
                             f"{' or '.join(map(repr, RANK_MODES))}")
        object.__setattr__(self, "collective_overhead_s",
                           _seconds("collective_overhead_s", self.collective_overhead_s))
        object.__setattr__(self, "op_overhead_s", _seconds("op_overhead_s", self.op_overhead_s))

    @property
    def chained(self) -> bool:
        return self.collective_order == "chained"

    @classmethod
    def from_profile(cls, profile: Any, **options: Any) -> "SimOptions":
        """Options with the overheads a calibration profile measured (0 where it has
        none); ``options`` sets the rest.

        Raises:
            ValueError: the profile's ``overheads`` is not an object of seconds.
        """
        extra = getattr(profile, "extra", None) or {}
        overheads = extra.get("overheads", {})
        if not isinstance(overheads, dict):
            raise ValueError(f"the calibration profile's 'overheads' is {overheads!r}, not an "
                             "object {\"collective_s\": ..., \"op_s\": ...}; re-run "
                             "tensoropt calibrate")
        return cls(collective_overhead_s=overheads.get("collective_s", 0.0),
                   op_overhead_s=overheads.get("op_s", 0.0), **options)
