"""``Remembered`` asks a collectives provider once per distinct call and gives back its
very seconds; the cost model prices through it."""

from __future__ import annotations

import numpy as np

from tensoropt.cluster import get_cluster
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.costs.model import Remembered, StepCostFn


class Counting:
    """A provider that counts its calls and tells an int byte count from a float one."""

    name = "counting"

    def __init__(self):
        self.calls = 0

    def time_s(self, collective, nbytes, group_size, stride):
        self.calls += 1
        return (1e-6 if isinstance(nbytes, int) else 2e-6) * group_size + float(nbytes) / 1e9 + stride * 1e-7


def test_each_distinct_call_is_asked_once_with_the_providers_seconds():
    inner = Counting()
    memo = Remembered(inner)
    args = [("allreduce", 1024, 4, 1), ("allreduce", 1024.0, 4, 1), ("allgather", 1024, 4, 2),
            ("allreduce", 1024, 8, 1)]
    first = [memo.time_s(*a) for a in args]
    assert first == [Counting().time_s(*a) for a in args]
    assert first[0] != first[1]                      # 1024 and 1024.0 are asked apart
    assert inner.calls == 4
    assert [memo.time_s(*a) for a in args] == first and inner.calls == 4
    assert memo.name == "counting"                    # other attributes are the provider's
    memo.time_s("allreduce", np.array(8.0), 2, 1)    # unhashable: asked every time
    memo.time_s("allreduce", np.array(8.0), 2, 1)
    assert inner.calls == 6


def test_the_analytical_providers_times_are_unchanged():
    provider = AnalyticalCollectives(get_cluster("paper-v100x16"))
    memo = Remembered(provider)
    for kind in ("allreduce", "allgather", "reducescatter", "alltoall"):
        for g, stride in ((2, 1), (4, 4), (16, 1)):
            for nbytes in (0, 4, 1 << 20, 3.5e7):
                assert memo.time_s(kind, nbytes, g, stride) == provider.time_s(kind, nbytes, g, stride)
                assert memo.time_s(kind, nbytes, g, stride) == provider.time_s(kind, nbytes, g, stride)


def test_step_cost_functions_stay_equal_by_provider():
    provider = Counting()
    a, b = StepCostFn(provider), StepCostFn(provider)
    assert a == b and hash(a) == hash(b) and a.remembered is not b.remembered
    assert StepCostFn(Counting()) != a
