"""CostGraph: the input of Frontier-Tracking, validated as it is built.

Usage::

    g = CostGraph()
    a = g.add_node("matmul_1", [(m0, t0), (m1, t1)])        # or an (K, 2) array
    b = g.add_node("relu_1", np.array([[1.0, 2.0], [2.0, 1.0]]))
    e = g.add_edge(a, b, [[[(0, 0)], [(1, .5), (0, .9)]],   # costs[k][p] = alternatives
                          [[(1, .5)], [(0, 0)]]])
    e2 = g.add_edge(a, b, np.zeros((2, 2, 3, 2)))           # or (Ka, Kb, A, 2) / (Ka, Kb, 2)
    g.save("graph.npz"); g2 = CostGraph.load("graph.npz")    # e.g. to re-run a priced model

Costs add up along a strategy (Eq. 3 of the paper): each node contributes the (memory,
time) of its configuration, each edge the alternative chosen for its endpoints'
configurations. Edges point from producer to consumer; parallel edges are allowed; the
graph must be acyclic (checked by ``topological_order``, which ``track`` calls).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CostGraph", "EdgeCosts"]


@dataclass(frozen=True)
class EdgeCosts:
    """The alternatives of one edge, flat: cell ``k*Kb + p`` owns ``off[c]:off[c+1]``."""

    src: int
    dst: int
    shape: tuple[int, int]
    mem: np.ndarray
    time: np.ndarray
    off: np.ndarray

    def alternatives(self, k: int, p: int) -> np.ndarray:
        """The (A, 2) array of (memory, time) alternatives for configurations k, p."""
        c = k * self.shape[1] + p
        s, e = self.off[c], self.off[c + 1]
        return np.stack([self.mem[s:e], self.time[s:e]], axis=1)


def _check_finite(arr: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise ValueError(f"{what} has a NaN or infinite cost at index {bad}; "
                         "every memory and time must be a finite number")


def _cat(arrays: list[np.ndarray], dtype=np.float64) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype=dtype)


class CostGraph:
    """A DAG of operators (nodes) with one cost point per configuration, and edges with
    a small set of (memory, time) alternatives per pair of configurations."""

    def __init__(self) -> None:
        self._names: list[str] = []
        self._nodes: list[np.ndarray] = []
        self._edges: list[EdgeCosts] = []
        # id(array) -> (array, mem, time, off): edges given the very same read-only cost
        # array (as repeated layers are) share one flat copy.
        self._shared: dict[int, tuple] = {}

    # ---------------------------------------------------------------- building
    def add_node(self, name: str, costs: Any) -> int:
        """Adds an operator.

        Args:
            name: a label used in error messages.
            costs: one (memory, time) per configuration: a list of pairs or a (K, 2)
                float array, K >= 1.

        Returns:
            The node id (0, 1, 2, ... in the order of addition).

        Raises:
            ValueError: empty costs, wrong shape, NaN or infinite values.
        """
        nid = len(self._nodes)
        what = f"node {nid} ({name!r})"
        try:
            arr = np.asarray(costs, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{what}: costs must be a list of (memory, time) pairs or a "
                             f"(K, 2) array of floats ({err})") from None
        if arr.size == 0:
            raise ValueError(f"{what}: the cost list is empty; give at least one "
                             "(memory, time) configuration")
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError(f"{what}: costs must have shape (K, 2), one (memory, time) "
                             f"per configuration; got shape {arr.shape}")
        _check_finite(arr, what)
        self._names.append(str(name))
        self._nodes.append(np.ascontiguousarray(arr))
        return nid

    def add_edge(self, src: int, dst: int, costs: Any) -> int:
        """Adds an edge from producer ``src`` to consumer ``dst``.

        Args:
            src, dst: node ids returned by ``add_node``.
            costs: ``costs[k][p]`` is a non-empty list of (memory, time) alternatives
                when ``src`` takes configuration k and ``dst`` takes p. Also accepted: a
                float array of shape (Ka, Kb, A, 2) (A alternatives for every pair) or
                (Ka, Kb, 2) (one each). Memory may be negative. Edges given the same
                read-only array (``flags.writeable`` False) share one copy of it.

        Returns:
            The edge id (0, 1, 2, ... in the order of addition).

        Raises:
            ValueError: unknown node, self loop, shape not (Ka, Kb, ...), an empty
                alternative list, NaN or infinite values.
        """
        src, dst, what = self._check_ends(src, dst)
        ka, kb = len(self._nodes[src]), len(self._nodes[dst])
        if isinstance(costs, np.ndarray):
            seen = self._shared.get(id(costs))
            if seen is not None and seen[0] is costs and costs.shape[:2] == (ka, kb):
                mem, time, off = seen[1:]
            else:
                mem, time, off = self._edge_from_array(costs, ka, kb, what)
                if not costs.flags.writeable:
                    self._shared[id(costs)] = (costs, mem, time, off)
        else:
            mem, time, off = self._edge_from_lists(costs, ka, kb, what)
        self._edges.append(EdgeCosts(src, dst, (ka, kb), mem, time, off))
        return len(self._edges) - 1

    def add_edge_flat(self, src: int, dst: int, mem: np.ndarray, time: np.ndarray,
                      off: np.ndarray) -> int:
        """Adds an edge given in the flat form ``EdgeCosts`` stores: the alternatives of
        pair (k, p) are ``mem[off[c]:off[c+1]]``, ``time[...]`` with ``c = k*Kb + p``.
        For large graphs with a ragged number of alternatives, where nested lists are
        slow. The arrays are used as given (not copied); edges may share them.

        Raises:
            ValueError: as ``add_edge``; or offsets that do not cover every pair with at
                least one alternative.
        """
        src, dst, what = self._check_ends(src, dst)
        ka, kb = len(self._nodes[src]), len(self._nodes[dst])
        mem = np.asarray(mem, dtype=np.float64)
        time = np.asarray(time, dtype=np.float64)
        off = np.asarray(off, dtype=np.int64)
        if (off.shape != (ka * kb + 1,) or mem.shape != time.shape or mem.ndim != 1
                or off[0] != 0 or off[-1] != len(mem) or np.any(np.diff(off) < 1)):
            raise ValueError(f"{what}: flat costs need off of length {ka * kb + 1} rising "
                             f"from 0 to len(mem) by at least 1 per pair, and mem, time of "
                             f"equal length; got off {off.shape}, mem {mem.shape}, "
                             f"time {time.shape}")
        _check_finite(mem, f"{what} memory")
        _check_finite(time, f"{what} time")
        self._edges.append(EdgeCosts(src, dst, (ka, kb), mem, time, off))
        return len(self._edges) - 1

    def _check_ends(self, src: int, dst: int) -> tuple[int, int, str]:
        """The endpoints of the next edge as ints, and its name for error messages."""
        eid = len(self._edges)
        for role, nid in (("source", src), ("destination", dst)):
            if not isinstance(nid, (int, np.integer)) or not 0 <= int(nid) < len(self._nodes):
                raise ValueError(f"edge {eid}: unknown {role} node {nid!r}; expected a node "
                                 f"id returned by add_node (0..{len(self._nodes) - 1})")
        src, dst = int(src), int(dst)
        what = (f"edge {eid} ({self._names[src]!r} -> {self._names[dst]!r})")
        if src == dst:
            raise ValueError(f"{what}: a self loop makes a cycle; the graph must be a DAG")
        return src, dst, what

    @staticmethod
    def _edge_from_array(costs: np.ndarray, ka: int, kb: int, what: str):
        arr = np.asarray(costs, dtype=np.float64)
        if arr.ndim == 3:
            arr = arr[:, :, None, :]
        if arr.ndim != 4 or arr.shape[:2] != (ka, kb) or arr.shape[3] != 2:
            raise ValueError(f"{what}: a cost array must have shape ({ka}, {kb}, A, 2) or "
                             f"({ka}, {kb}, 2) for {ka} source and {kb} destination "
                             f"configurations; got shape {arr.shape}")
        if arr.shape[2] == 0:
            raise ValueError(f"{what}: the cost array has no alternatives (A == 0); give "
                             "at least one (memory, time) per configuration pair")
        _check_finite(arr, what)
        a = arr.shape[2]
        flat = arr.reshape(-1, 2)
        off = np.arange(ka * kb + 1, dtype=np.int64) * a
        return np.ascontiguousarray(flat[:, 0]), np.ascontiguousarray(flat[:, 1]), off

    @staticmethod
    def _edge_from_lists(costs: Any, ka: int, kb: int, what: str):
        try:
            rows = list(costs)
        except TypeError:
            raise ValueError(f"{what}: costs must be a nested list costs[k][p] = "
                             "[(memory, time), ...] or a numpy array") from None
        if len(rows) != ka:
            raise ValueError(f"{what}: costs has {len(rows)} rows but the source node has "
                             f"{ka} configurations; expected costs[k][p] for k < {ka}, "
                             f"p < {kb}")
        flat: list = []
        counts = np.zeros(ka * kb, dtype=np.int64)
        for k, row in enumerate(rows):
            row = list(row)
            if len(row) != kb:
                raise ValueError(f"{what}: costs[{k}] has {len(row)} entries but the "
                                 f"destination node has {kb} configurations")
            for p, alts in enumerate(row):
                alts = np.asarray(alts, dtype=np.float64)
                if alts.ndim == 1 and alts.shape == (2,):
                    alts = alts[None, :]
                if alts.size == 0:
                    raise ValueError(f"{what}: costs[{k}][{p}] is empty; give at least one "
                                     "(memory, time) alternative")
                if alts.ndim != 2 or alts.shape[1] != 2:
                    raise ValueError(f"{what}: costs[{k}][{p}] must be a list of (memory, "
                                     f"time) pairs; got shape {alts.shape}")
                _check_finite(alts, f"{what} costs[{k}][{p}]")
                flat.append(alts)
                counts[k * kb + p] = len(alts)
        arr = np.concatenate(flat, axis=0)
        off = np.zeros(ka * kb + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
        return np.ascontiguousarray(arr[:, 0]), np.ascontiguousarray(arr[:, 1]), off

    # ---------------------------------------------------------------- files
    def save(self, path: str) -> None:
        """Writes the graph to ``path`` (a numpy ``.npz`` archive). Edges that share cost
        arrays are written once and share them again after ``load``."""
        tables: dict[int, int] = {}
        flat: list[EdgeCosts] = []
        index = np.empty(len(self._edges), dtype=np.int64)
        for i, e in enumerate(self._edges):
            index[i] = tables.setdefault(id(e.mem), len(flat))
            if index[i] == len(flat):
                flat.append(e)
        node_off = np.cumsum([0] + [len(c) for c in self._nodes])
        np.savez_compressed(
            path, names=np.array(self._names, dtype=str),
            node_costs=np.concatenate(self._nodes) if self._nodes else np.zeros((0, 2)),
            node_off=node_off,
            edge_ends=np.array([(e.src, e.dst) for e in self._edges],
                               dtype=np.int64).reshape(-1, 2),
            edge_table=index,
            table_mem=_cat([e.mem for e in flat]), table_time=_cat([e.time for e in flat]),
            table_off=_cat([e.off for e in flat], np.int64),
            table_sizes=np.array([(len(e.mem), len(e.off)) for e in flat],
                                 dtype=np.int64).reshape(-1, 2))

    @classmethod
    def load(cls, path: str) -> "CostGraph":
        """Reads a graph written by ``save``.

        Raises:
            ValueError: the file is not such a graph, or its costs are not consistent.
        """
        try:
            with np.load(path) as f:
                data = {k: f[k] for k in f.files}
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: not a cost graph written by CostGraph.save ({err})") \
                from None
        need = {"names", "node_costs", "node_off", "edge_ends", "edge_table", "table_mem",
                "table_time", "table_off", "table_sizes"}
        if not need <= set(data):
            raise ValueError(f"{path}: missing arrays {sorted(need - set(data))}; write the "
                             "file with CostGraph.save")
        g = cls()
        off = data["node_off"]
        for name, s, e in zip(data["names"], off[:-1], off[1:]):
            g.add_node(str(name), data["node_costs"][s:e])
        shared = []
        pm = po = 0
        for npts, noff in data["table_sizes"]:
            shared.append((data["table_mem"][pm:pm + npts], data["table_time"][pm:pm + npts],
                           data["table_off"][po:po + noff]))
            pm, po = pm + npts, po + noff
        for (src, dst), t in zip(data["edge_ends"], data["edge_table"]):
            try:
                g.add_edge_flat(int(src), int(dst), *shared[t])
            except ValueError as err:
                raise ValueError(f"{path}: {err}; the file is damaged") from None
        return g

    # ---------------------------------------------------------------- reading
    @property
    def num_nodes(self) -> int:
        return len(self._nodes)

    @property
    def num_edges(self) -> int:
        return len(self._edges)

    def node_name(self, nid: int) -> str:
        return self._names[nid]

    def node_costs(self, nid: int) -> np.ndarray:
        """The (K, 2) array of (memory, time) per configuration of node ``nid``."""
        return self._nodes[nid]

    def num_configs(self, nid: int) -> int:
        return len(self._nodes[nid])

    def edge(self, eid: int) -> EdgeCosts:
        return self._edges[eid]

    def topological_order(self) -> list[int]:
        """Node ids in topological order (ties: lowest id first).

        Raises:
            ValueError: the graph has a cycle; the message names nodes on it.
        """
        n = len(self._nodes)
        indeg = [0] * n
        out: list[list[int]] = [[] for _ in range(n)]
        for e in self._edges:
            out[e.src].append(e.dst)
            indeg[e.dst] += 1
        heap = [v for v in range(n) if indeg[v] == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            v = heapq.heappop(heap)
            order.append(v)
            for w in out[v]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    heapq.heappush(heap, w)
        if len(order) < n:
            left = {v for v in range(n) if indeg[v] > 0}
            # Walk back along edges inside the remainder until a node repeats.
            into = {v: [e.src for e in self._edges if e.dst == v and e.src in left]
                    for v in left}
            v = min(left)
            seen: list[int] = []
            while v not in seen:
                seen.append(v)
                v = into[v][0]
            cyc = seen[seen.index(v):][::-1]
            names = " -> ".join(f"{u} ({self._names[u]!r})" for u in cyc + [cyc[0]])
            raise ValueError(f"the graph has a cycle: {names}; edges must go from producer "
                             "to consumer in a DAG")
        return order
