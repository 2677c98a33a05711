"""ToFu's space and search (Wang et al., EuroSys 2019): recursive partition-n-reduce,
minimum time only.

The devices are halved log2(N) times. At each level every op picks one of its dims to
split in two (a reduction dim too: the "reduce" of partition-n-reduce is the partial
sum's all-reduce), or none (it is computed redundantly in both halves). Level 1 is the
outermost split, so it becomes the slowest-varying mesh axis, the one across machines.
An op's choices over the levels give its configuration: the dims in the order they were
first chosen, each split 2^(times chosen) ways, then one redundant axis for the levels
that split nothing (e.g. 16 devices, choices b, n, b, none -> mesh (4, 2, 2) with b on
axis 0, n on axis 1, axis 2 redundant). A choice is valid only when that configuration
is one of the op's configurations (divisible sizes, at most three mesh axes).

Each level is solved by a DP over the whole graph (PaSE's, ``pase_dp.min_time_choice``,
exact for that level) with the earlier levels fixed, pricing each op as the
configuration it has so far with the remaining levels redundant. The levels are greedy
one after the other, as ToFu's recursion is. ToFu needs a power-of-two device count.

Usage::

    result = tofu_search(MinTimeTables(space))       # BaselineResult
"""

from __future__ import annotations

import time

import numpy as np

from tensoropt.search.baselines._result import BaselineError, BaselineResult
from tensoropt.search.baselines._tables import MinTimeTables
from tensoropt.search.baselines.pase_dp import min_time_choice
from tensoropt.configs import Config

__all__ = ["tofu_config", "tofu_search"]


def tofu_config(levels: tuple, num_levels: int) -> Config:
    """The configuration of an op that chose dims ``levels`` (None: no split) at the
    first ``len(levels)`` of ``num_levels`` halvings."""
    order: list = []
    for d in levels:
        if d is not None and d not in order:
            order.append(d)
    mesh = [2 ** sum(1 for d in levels if d == dim) for dim in order]
    redundant = 2 ** (num_levels - sum(1 for d in levels if d is not None))
    if not order:
        return Config((redundant,), (None,))
    if redundant > 1:
        return Config(tuple(mesh) + (redundant,), tuple(order) + (None,))
    return Config(tuple(mesh), tuple(order))


def tofu_search(tables: MinTimeTables) -> BaselineResult:
    """The least-time plan of ToFu's space, one level at a time.

    Raises:
        BaselineError: the device count is not a power of two.
    """
    start = time.perf_counter()
    space = tables.space
    n = space.model.num_devices
    num_levels = n.bit_length() - 1
    if n < 2 or 2 ** num_levels != n:
        raise BaselineError(f"ToFu halves the devices at every level, so it needs a power-of-two "
                            f"device count >= 2; got {n}")
    ops = tables.ops
    index = [{c: k for k, c in enumerate(space.configs[op])} for op in ops]
    levels: list[tuple] = [() for _ in ops]
    per_level = []
    for level in range(1, num_levels + 1):
        options, allowed = [], []
        for i, op in enumerate(ops):
            if len(space.configs[op]) == 1:     # e.g. a placeholder: loaded data-parallel
                options.append([None])
                allowed.append(np.array([0], dtype=np.int64))
                continue
            mine, keep = [], []
            for d in [None, *op.space.splittable_dims()]:
                k = index[i].get(tofu_config(levels[i] + (d,), num_levels))
                if k is not None and k not in keep:
                    mine.append(d)
                    keep.append(k)
            options.append(mine)
            allowed.append(np.array(keep, dtype=np.int64))
        choice, stats = min_time_choice(tables, allowed)
        for i in range(len(ops)):
            if len(space.configs[ops[i]]) > 1:
                position = int(np.flatnonzero(allowed[i] == choice[i])[0])
                levels[i] = levels[i] + (options[i][position],)
        per_level.append(stats["time_s"])
    final = np.array([index[i][tofu_config(levels[i], num_levels)] if len(space.configs[op]) > 1 else 0
                      for i, op in enumerate(ops)], dtype=np.int64)
    plan = tables.plan(final, "tofu")
    return BaselineResult("tofu", plan, time.perf_counter() - start,
                          {"levels": num_levels, "time_s_per_level": per_level})
