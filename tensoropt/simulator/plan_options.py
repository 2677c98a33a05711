"""How a plan becomes a task graph: the simulation options.

Usage::

    from tensoropt.simulator import SimOptions

    SimOptions()                                   # chained collectives, one rank, cycles
    SimOptions(collective_order="free", ranks="all")
    SimOptions(horovod_cycle=False)                # each collective: cycle + transfer
    SimOptions(late_release=True)                 # the bound a plan's fit is checked against

- ``collective_order``: ``"chained"`` issues every collective after the one before it in
  the plan's collective schedule, as the execution builder chains them; ``"free"`` lets
  collectives run as soon as their data is ready, with contention per link: a rank's
  intra-machine link and its share of its machine's network card each carry one
  collective at a time (the priced time of a collective already includes the contention
  among the groups of its own scheme). The difference shows what the chain costs.
- ``ranks``: ``"representative"`` simulates rank 0 alone: plans are SPMD with even
  splits, so every rank runs the same tasks for the same times. ``"all"`` simulates every
  rank, each collective waiting for every member of its group (for validation).
- ``horovod_cycle``: each collective waits for horovod's cycle, as horovod's background
  loop runs it, with a cycle of ``collective_s`` (the calibrated cycle the cost model
  carries: ``CostModel.collective_overhead_s``): a collective issued within one cycle of
  the end of the rank's last collective starts a cycle after that end, and one issued
  later, after the loop has idled, a whole cycle after it is issued
  (``engine.cycle_start``; ``mpirun -np 2 python -m tensoropt.bench horovod_cycle``
  measures chains of compute and tiny all-reduces against it: 0.82-0.91 ms a link
  beyond 0.7-8.5 ms of compute, the rule within 1-2% of the totals). The collective then
  lasts its transfer (``CostModel.transfers``). ``False``: each lasts what the additive
  estimate charges, cycle plus transfer. A cost model without a calibrated cycle (the
  analytical one) has no cycle to wait for either way.
- ``late_release``: ``False`` (the estimate) frees a buffer when its last reader ends.
  ``True`` (the bound ``find_strategy``'s ``check_peak`` checks a plan's fit against)
  holds what was seen held longer: a collective's input and result until the
  collective's value has been read and the rank's next collective has ended (horovod's
  background thread drops them after the op's callback, racing the reader, and before
  it performs the next one; on 3 ranks sharing 2 cores it kept the tiny CNN's forward
  all-reduce buffers into the backward), and a parameter
  gradient its update reads directly until the rank's backward ends (TensorFlow's
  executor may defer the update behind the backward's chain). See ``plan_tasks``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SimOptions", "FIT_CHECK", "COLLECTIVE_ORDERS", "RANK_MODES"]

COLLECTIVE_ORDERS = ("chained", "free")
RANK_MODES = ("representative", "all")


@dataclass(frozen=True)
class SimOptions:
    """Options of a plan's task graph (see the module doc).

    Raises:
        ValueError: an unknown ``collective_order`` or ``ranks``, or a ``horovod_cycle``
            or ``late_release`` that is not a bool.
    """

    collective_order: str = "chained"
    ranks: str = "representative"
    horovod_cycle: bool = True
    late_release: bool = False

    def __post_init__(self) -> None:
        if self.collective_order not in COLLECTIVE_ORDERS:
            raise ValueError(f"collective_order={self.collective_order!r}: choose "
                             f"{' or '.join(map(repr, COLLECTIVE_ORDERS))}")
        if self.ranks not in RANK_MODES:
            raise ValueError(f"ranks={self.ranks!r}: choose "
                             f"{' or '.join(map(repr, RANK_MODES))}")
        for name in ("horovod_cycle", "late_release"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r}: give True or False")

    @property
    def chained(self) -> bool:
        return self.collective_order == "chained"


#: the options of the peak a plan's fit is checked against (``find_strategy``'s
#: ``check_peak``): horovod's buffers held as long as it was seen to hold them
FIT_CHECK = SimOptions(late_release=True)
