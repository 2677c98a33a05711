"""``find_strategy(simulate=...)``: the simulator's check, run where the search ran and
attached to its result.

Usage (``tensoropt.runtime`` does this on rank 0)::

    observe = frontier_observer("auto")                 # or "all", "chosen"; None for False
    summary = strategy.search_summary(..., observe=observe)
    summary.simulator_check["plans"], summary.simulator_check["kendall_tau_time"]

Modes: ``"auto"`` checks the chosen device count's frontier with ``check_frontier``'s
default budget (64 plans: both ends, the turning point, the chosen plan, evenly spaced
ones); ``"all"`` checks every frontier plan; ``"chosen"`` simulates only the chosen plan
(and the data-parallel reference). The check (``FrontierCheck.to_dict()``, with
``chosen_index``) becomes the summary's ``simulator_check``. When the chosen plan's
simulated peak exceeds the memory limit, a ``UserWarning`` gives both numbers.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Optional, Union

from tensoropt.simulator.check import check_frontier
from tensoropt.simulator.plan_options import SimOptions

__all__ = ["SIMULATE_MODES", "simulate_mode", "frontier_observer"]

SIMULATE_MODES = ("auto", "all", "chosen")


def simulate_mode(simulate: Union[str, bool, None]) -> Optional[str]:
    """The mode ``simulate`` asks for (None: no simulation).

    Raises:
        ValueError: an unknown value, naming the ones there are.
    """
    if simulate is False or simulate is None:
        return None
    if simulate is True:
        return "auto"
    if simulate not in SIMULATE_MODES:
        raise ValueError(f"simulate={simulate!r}: choose 'auto', 'all', 'chosen' or False")
    return simulate


def frontier_observer(simulate: Union[str, bool, None],
                      options: Optional[SimOptions] = None) -> Optional[Callable]:
    """An ``observe(summary, result, cluster, limit)`` for ``strategy.choose_plan`` that
    attaches the check, or None when ``simulate`` is False."""
    mode = simulate_mode(simulate)
    if mode is None:
        return None

    def observe(summary: Any, result: Any, cluster: Any, limit: float) -> Any:
        chosen = summary.frontier.index(summary.chosen)
        kwargs: dict = {"only": [chosen]} if mode == "chosen" else \
            {"budget": len(result.plans)} if mode == "all" else {}
        check = check_frontier(result, cluster, memory_limit=limit, options=options, **kwargs)
        row = check.row(chosen)
        if row is not None and row.simulated_peak_bytes > limit:
            warnings.warn(f"the chosen plan's simulated peak memory, {row.simulated_peak_bytes / 2**30:.3f} "
                          f"GiB per device, exceeds the memory limit of {limit / 2**30:.3f} GiB (its "
                          f"estimate is {row.estimated_memory_bytes / 2**30:.3f} GiB); give find_strategy "
                          "a lower memory_limit or more devices", stacklevel=2)
        return dataclasses.replace(summary, simulator_check={**check.to_dict(), "chosen_index": chosen})

    return observe
