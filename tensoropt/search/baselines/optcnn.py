"""OptCNN's space and its dynamic program (Jia et al., ICML 2018), minimum time only.

**Space.** Layer-wise parallelism: each op is split over its batch, spatial and
parameter/channel dims (OptCNN's sample, attribute and parameter dims), i.e. over any
dims that are not reductions. No op splits a reduction dim, so no op leaves partial sums
(OptCNN has no partial-sum layouts), and every edge carries its tensor on its fastest
alternative (OptCNN has no tensor-reuse choice). The data-parallel configuration is
always kept, so the space holds data parallelism.

**Search.** OptCNN's graph eliminations on time-only tables:

- *edge elimination*: parallel edges between two ops are summed into one;
- *node elimination*: an op with exactly two neighbours is removed and its best
  configuration folded into a new edge between them;
- and, since our graphs carry parameters and inputs as ops of their own, *leaf
  elimination*: an op with one neighbour is folded into that neighbour's costs (what
  OptCNN does implicitly by keeping a layer's weights inside the layer).

OptCNN enumerates what is left when a graph reduces to two ops; graphs that do not
reduce that far (attention blocks) leave a residual, which is solved exactly by PaSE's
DP (``pase_dp.min_time_choice``); ``stats["residual_ops"]`` says how many ops it had.

Usage::

    result = optcnn_search(MinTimeTables(space))      # BaselineResult
    allowed = optcnn_configs(tables)                  # config indices per op
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from tensoropt.search.baselines._result import BaselineResult
from tensoropt.search.baselines._tables import EdgeMinTime, MinTimeTables
from tensoropt.search.baselines.pase_dp import min_time_choice

__all__ = ["optcnn_configs", "optcnn_search", "eliminate_min_time"]


def optcnn_configs(tables: MinTimeTables) -> list[np.ndarray]:
    """Per op, the indices of its configurations in OptCNN's space."""
    dp = tables.data_parallel_choice()
    allowed = []
    for i, op in enumerate(tables.ops):
        reductions = op.space.reductions
        keep = [k for k, c in enumerate(tables.space.configs[op])
                if k == dp[i] or not any(d in reductions for d in c.axis_dims if d is not None)]
        allowed.append(np.array(keep, dtype=np.int64))
    return allowed


@dataclass
class _Residual:
    """What the eliminations leave, in the form ``min_time_choice`` reads."""

    ops: list
    node_time_s: list
    edges: list = field(default_factory=list)

    @property
    def num_configs(self) -> list[int]:
        return [len(t) for t in self.node_time_s]


def _fold_pair(left: np.ndarray, node: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """min over v of left[a, v] + node[v] + right[v, b], and its argmin, in row blocks."""
    out = np.empty((left.shape[0], right.shape[1]))
    arg = np.empty(out.shape, dtype=np.int64)
    rows = max(1, 20_000_000 // max(1, node.size * right.shape[1]))
    for start in range(0, left.shape[0], rows):
        block = left[start:start + rows, :, None] + node[None, :, None] + right[None, :, :]
        arg[start:start + rows] = block.argmin(axis=1)
        out[start:start + rows] = block.min(axis=1)
    return out, arg


def eliminate_min_time(tables, allowed: list[np.ndarray]) -> tuple[np.ndarray, dict]:
    """OptCNN's DP: the least-time strategy over ``allowed`` config indices per op.

    Returns:
        (config index per op, stats: counts of each elimination, ``residual_ops``).
    """
    n = len(tables.ops)
    node = {v: tables.node_time_s[v][allowed[v]].astype(np.float64) for v in range(n)}
    edge: dict = {}        # (a, b), a < b -> (Ka, Kb) seconds
    adj: list[set] = [set() for _ in range(n)]
    stats = {"edge_eliminations": 0, "node_eliminations": 0, "leaf_eliminations": 0, "residual_ops": 0}

    def add_edge(a: int, b: int, table: np.ndarray) -> None:
        if a > b:
            a, b, table = b, a, table.T
        if (a, b) in edge:
            edge[(a, b)] = edge[(a, b)] + table
            stats["edge_eliminations"] += 1
        else:
            edge[(a, b)] = table
        adj[a].add(b)
        adj[b].add(a)

    def take(a: int, b: int) -> np.ndarray:   # the (a, b) edge oriented a -> b, removed
        table = edge.pop((min(a, b), max(a, b)))
        adj[a].discard(b)
        adj[b].discard(a)
        return table if a < b else table.T

    for e in tables.edges:
        add_edge(e.producer, e.consumer, e.time_s[np.ix_(allowed[e.producer], allowed[e.consumer])])
    back: list[tuple] = []
    alive = set(range(n))
    queue = deque(range(n))
    while queue:
        v = queue.popleft()
        if v not in alive or len(adj[v]) > 2:
            continue
        nbrs = sorted(adj[v])
        if not nbrs:
            back.append(("alone", v, int(np.argmin(node[v]))))
        elif len(nbrs) == 1:
            a = nbrs[0]
            total = take(a, v) + node[v][None, :]
            back.append(("leaf", v, a, total.argmin(axis=1)))
            node[a] = node[a] + total.min(axis=1)
            stats["leaf_eliminations"] += 1
            queue.append(a)
        else:
            a, b = nbrs
            folded, arg = _fold_pair(take(a, v), node[v], take(v, b))
            back.append(("node", v, a, b, arg))
            add_edge(a, b, folded)
            stats["node_eliminations"] += 1
            queue.extend((a, b))
        alive.discard(v)
        del node[v]
    local = np.zeros(n, dtype=np.int64)
    if alive:
        rest = sorted(alive)
        position = {v: i for i, v in enumerate(rest)}
        residual = _Residual([tables.ops[v] for v in rest], [node[v] for v in rest])
        for (a, b), table in edge.items():
            residual.edges.append(EdgeMinTime(position[a], position[b], table, table))
        choice, _ = min_time_choice(residual)
        for v, k in zip(rest, choice):
            local[v] = k
        stats["residual_ops"] = len(rest)
    for step in reversed(back):
        if step[0] == "alone":
            local[step[1]] = step[2]
        elif step[0] == "leaf":
            local[step[1]] = step[3][local[step[2]]]
        else:
            local[step[1]] = step[4][local[step[2]], local[step[3]]]
    return np.array([allowed[v][local[v]] for v in range(n)], dtype=np.int64), stats


def optcnn_search(tables: MinTimeTables) -> BaselineResult:
    """The least-time plan of OptCNN's space, by its eliminations."""
    start = time.perf_counter()
    allowed = optcnn_configs(tables)
    choice, stats = eliminate_min_time(tables, allowed)
    stats["configs"] = int(sum(len(a) for a in allowed))
    plan = tables.plan(choice, "optcnn")
    return BaselineResult("optcnn", plan, time.perf_counter() - start, stats)
