"""How many collectives of each kind a plan issues per training step: a count of its
``collective_schedule``.

The execution builder counts what it builds (``CollectiveOps.counts``); a test asserts
the two agree, the way DTensor's CommDebugMode checks a sharding's communication. The
rules themselves (which conversions run, an op's own all-reduces and gathers, what a
tensor-reuse choice re-runs in backward) live in ``schedule`` and ``configs``.

Usage::

    expected_collectives(graph, plan)     # {'allgather': 4, 'allreduce': 6, ...}
"""

from __future__ import annotations

from collections import Counter

from tensoropt.execution.schedule import collective_schedule

__all__ = ["expected_collectives"]


def expected_collectives(graph, plan) -> dict[str, int]:
    """Collectives per kind in one step of ``plan`` (a reduce-scatter counts as the
    all-reduce it is issued as)."""
    return dict(Counter(call.kind for call in collective_schedule(graph, plan)))
