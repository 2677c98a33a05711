"""PaSE's dynamic program (Elango, ``papers/pase.txt`` §III, Figs. 3-4) on our
configurations and costs: the minimum time per iteration, exactly.

``generate_seq`` is GenerateSeq: it orders the ops so that each op's *dependent set*
(its neighbours, direct or through ops already sequenced, that come later) stays small,
always taking next an op whose dependent set is smallest (ties: the smaller table, then
the op's position) and merging its dependent set into those of its dependents.
``min_time_choice`` runs recurrence (4) in that order: sequencing op u makes a table over
the configurations of its dependent set D(u) holding the least cost of u and of every op
already sequenced that reaches u (its connected set), with the argmin for back
substitution. Its work is ``K^(|D|+1)`` per op, so it is fast on sparse graphs and
refuses (``BaselineError``) a table beyond ``max_table_entries``.

The other baselines call ``min_time_choice`` on restricted configuration sets (OptCNN on
what its eliminations leave, ToFu per level).

Usage::

    tables = MinTimeTables(space)
    result = pase_search(tables)                  # BaselineResult, result.plan
    choice, stats = min_time_choice(tables)       # config index per op
    order, dependent_sizes = generate_seq(neighbors, table_sizes)
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Sequence

import numpy as np

from tensoropt.search.baselines._result import BaselineError, BaselineResult
from tensoropt.search.baselines._tables import MinTimeTables

__all__ = ["generate_seq", "min_time_choice", "pase_search", "MAX_TABLE_ENTRIES"]

MAX_TABLE_ENTRIES = 40_000_000


def generate_seq(neighbors: Sequence[set], sizes: Sequence[int]) -> tuple[list[int], list[int]]:
    """GenerateSeq (PaSE Fig. 3).

    Args:
        neighbors: per vertex, the set of its neighbours (undirected, no self loops).
        sizes: per vertex, its number of configurations (breaks ties between equal
            dependent-set sizes by the table the vertex would make).

    Returns:
        (sequence, dependent-set size of each vertex as it is sequenced).
    """
    dependent = [set(n) for n in neighbors]
    done = [False] * len(dependent)

    def key(v: int) -> tuple:
        table = sizes[v] * math.prod(sizes[w] for w in dependent[v]) if len(dependent[v]) < 8 else math.inf
        return len(dependent[v]), table, v

    heap = [(*key(v), v) for v in range(len(dependent))]
    heapq.heapify(heap)
    current = {v: key(v) for v in range(len(dependent))}
    order, widths = [], []
    while heap:
        *k, v = heapq.heappop(heap)
        if done[v] or tuple(k) != current[v]:
            continue   # stale entry
        done[v] = True
        order.append(v)
        widths.append(len(dependent[v]))
        for w in dependent[v]:
            dependent[w] |= dependent[v]
            dependent[w].discard(w)
            dependent[w].discard(v)
            current[w] = key(w)
            heapq.heappush(heap, (*current[w], w))
    return order, widths


def _factors(tables: MinTimeTables, allowed: list[np.ndarray]) -> dict:
    """Initial factors: scope (sorted op indices) -> table, one per op and per adjacent pair
    (parallel edges summed)."""
    factors: dict = {}
    for i, keep in enumerate(allowed):
        factors[(i,)] = tables.node_time_s[i][keep].astype(np.float64)
    for edge in tables.edges:
        u, v = edge.producer, edge.consumer
        block = edge.time_s[np.ix_(allowed[u], allowed[v])]
        if u > v:
            u, v, block = v, u, block.T
        factors[(u, v)] = factors.get((u, v), 0.0) + block
    return factors


def min_time_choice(tables: MinTimeTables, allowed: list[np.ndarray] | None = None,
                    max_table_entries: int = MAX_TABLE_ENTRIES) -> tuple[np.ndarray, dict]:
    """The least-time strategy over ``allowed`` configurations (per op, an array of config
    indices; None: all), by PaSE's recurrence in GenerateSeq order.

    Returns:
        (config index per op, stats: ``order_width`` (largest dependent set),
        ``largest_table`` (entries), ``time_s`` (the optimum's seconds)).

    Raises:
        BaselineError: a table would exceed ``max_table_entries``.
    """
    n = len(tables.ops)
    if allowed is None:
        allowed = [np.arange(k) for k in tables.num_configs]
    allowed = [np.asarray(a, dtype=np.int64) for a in allowed]
    sizes = [len(a) for a in allowed]
    factors = _factors(tables, allowed)
    touching: list[set] = [set() for _ in range(n)]
    for scope in factors:
        for v in scope:
            touching[v].add(scope)
    neighbors = [set() for _ in range(n)]
    for scope in factors:
        if len(scope) == 2:
            neighbors[scope[0]].add(scope[1])
            neighbors[scope[1]].add(scope[0])
    order, widths = generate_seq(neighbors, sizes)
    constant, largest = 0.0, 0
    back: list[tuple[int, tuple, np.ndarray]] = []
    for u in order:
        mine = sorted(touching[u])
        union = tuple(sorted(set().union(*mine)))
        entries = math.prod(sizes[v] for v in union)
        if entries > max_table_entries:
            raise BaselineError(
                f"PaSE's DP would need a table of {entries:,} entries at op {tables.ops[u].name!r} "
                f"(dependent set of {len(union) - 1} ops); raise max_table_entries (now "
                f"{max_table_entries:,}) if memory allows, or use the frontier search")
        largest = max(largest, entries)
        total = np.zeros([sizes[v] for v in union])
        for scope in mine:
            shape = [sizes[v] if v in scope else 1 for v in union]
            total = total + factors.pop(scope).reshape(shape)
            for v in scope:
                touching[v].discard(scope)
        axis = union.index(u)
        rest = union[:axis] + union[axis + 1:]
        back.append((u, rest, np.argmin(total, axis=axis)))
        reduced = np.min(total, axis=axis)
        if not rest:
            constant += float(reduced)
            continue
        if rest in factors:
            reduced = reduced + factors[rest]
        factors[rest] = reduced
        for v in rest:
            touching[v].add(rest)
    local = np.zeros(n, dtype=np.int64)
    for u, rest, arg in reversed(back):
        local[u] = arg[tuple(local[v] for v in rest)] if rest else int(arg)
    choice = np.array([allowed[i][local[i]] for i in range(n)], dtype=np.int64)
    return choice, {"order_width": max(widths, default=0), "largest_table": largest, "time_s": constant}


def pase_search(tables: MinTimeTables, max_table_entries: int = MAX_TABLE_ENTRIES) -> BaselineResult:
    """PaSE's DP over every configuration: the least-time plan of the whole space."""
    start = time.perf_counter()
    choice, stats = min_time_choice(tables, None, max_table_entries)
    plan = tables.plan(choice, "pase")
    return BaselineResult("pase", plan, time.perf_counter() - start, stats)
