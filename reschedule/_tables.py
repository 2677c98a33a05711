"""Conversion seconds between every pair of layouts of a tensor, in numpy, kept per
(meshes, shape, itemsize, cost function) for ``conversion_time_matrix``.

Two tables serve every source and destination of one shape:

- ``MeshTable(A)``: on one mesh, the seconds from each layout to each layout of A. For the
  non-partial layouts, one all-pairs matrix ``plain`` (Bellman-Ford from the identity over
  A's steps, every source at once); for a partial source, a row over the layouts its
  pending sums can reduce to (the partial layouts join the table as sources ask for them).
- ``CrossTable(A, B)``: from each layout of A to each non-partial layout of B, as the
  module doc of ``_times`` says: the alltoallv from the best non-partial layout reached
  on A, then Bellman-Ford over B's steps.

Bellman-Ford forms each candidate as (seconds so far) + (step seconds), in path order,
so every entry is the minimum over paths of the very sums Dijkstra forms in
``conversion_time``: the two agree exactly (``tests/reschedule/test_conversion_times.py``).
The tables are kept in ``TABLES`` (cleared when it reaches ``TABLES_MAX``); for a cost
function that cannot be hashed, ``conversion_time_matrix`` passes a fresh dict instead.

Usage (inside ``reschedule``)::

    table = mesh_table(cache, (2, 4), shape, itemsize, cost)
    table.plain[i, j]                   # seconds between table.nodes[i] and [j], non-partial
    table.rows([partial_src])           # (1, len(table.nodes)) seconds from a partial layout
    cross_table(cache, (2, 4), (8,), shape, itemsize, cost).plain
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ._cost import CostFn
from ._layout import Layout
from ._planner import _neighbors_cached, enumerate_layouts
from ._recv import map_positions, max_recv_by_units
from ._steps import BROADCAST_ELEMENTS, Step, box_arrays, max_recv_matrix

__all__ = ["MeshTable", "CrossTable", "mesh_table", "cross_table", "step_seconds", "TABLES", "TABLES_MAX"]

#: ("mesh", mesh, shape, itemsize, cost) -> MeshTable; ("cross", a, b, ...) -> CrossTable;
#: ("volumes", cost) -> {(bytes, ranks): alltoallv seconds}
TABLES: dict = {}
TABLES_MAX = 65536


class _Edges:
    """Steps (from, to, seconds) over a table's nodes, grouped by destination for
    ``relax``: ``reduceat`` takes each destination's minimum in one call."""

    def __init__(self, froms, tos, seconds):
        order = np.argsort(np.asarray(tos, dtype=np.int64), kind="stable")
        self.froms = np.asarray(froms, dtype=np.int64)[order]
        tos = np.asarray(tos, dtype=np.int64)[order]
        self.seconds = np.asarray(seconds, dtype=np.float64)[order]
        self.targets, self.starts = np.unique(tos, return_index=True)

    def relax(self, d: np.ndarray) -> np.ndarray:
        """Bellman-Ford on every row of ``d`` (seconds to each node) until no entry
        changes; ``d`` is updated in place and returned."""
        if not len(self.froms):
            return d
        for _ in range(d.shape[1]):              # at most |nodes| - 1 rounds change d
            cand = np.minimum.reduceat(d[:, self.froms] + self.seconds, self.starts, axis=1)
            old = d[:, self.targets]
            new = np.minimum(old, cand)
            if np.array_equal(new, old):
                break
            d[:, self.targets] = new
        return d


class MeshTable:
    """Seconds between layouts of one mesh, for one shape, itemsize and cost.

    Attributes:
        nodes: the layouts, non-partial first (``_layouts`` order), then the
            partial ones sources asked for (all those with each subset of their partial axes).
        index: layout -> position in ``nodes``.
        num_plain: how many non-partial layouts lead ``nodes``.
        plain: (num_plain, num_plain) seconds between non-partial layouts (inf: none).
    """

    def __init__(self, mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int, cost: CostFn):
        self.mesh, self.shape, self.itemsize, self.cost = mesh, shape, itemsize, cost
        layouts, index = _layouts(mesh, shape)
        self.nodes = list(layouts)
        self.index = dict(index)
        self.num_plain = len(layouts)
        steps = _steps_from(layouts, index, mesh, shape, itemsize, cost)
        self.plain_edges = _Edges(*steps)
        d = np.full((self.num_plain, self.num_plain), math.inf)
        np.fill_diagonal(d, 0.0)
        self.plain = self.plain_edges.relax(d)
        self.plain.flags.writeable = False
        self._groups = {frozenset()}
        self._steps = [tuple(np.asarray(a) for a in steps)]
        self._edges: _Edges | None = self.plain_edges
        self._rows: dict = {}
        self._boxes: np.ndarray | None = None

    @functools.cached_property
    def map_positions(self) -> np.ndarray:
        """``_recv.map_positions`` of the non-partial layouts."""
        return map_positions(self.nodes[:self.num_plain])

    @functools.cached_property
    def block_elements(self) -> np.ndarray:
        """Elements of each non-partial layout's block (one per rank)."""
        return np.array([math.prod(lay.local_shape(self.shape)) for lay in self.nodes[:self.num_plain]],
                        dtype=np.int64)

    @property
    def boxes(self) -> np.ndarray:
        """``_steps.box_arrays`` of the non-partial layouts (what an alltoallv moves)."""
        if self._boxes is None:
            self._boxes = box_arrays(self.nodes[:self.num_plain], self.shape)
        return self._boxes

    def rows(self, srcs: list[Layout]) -> list[np.ndarray]:
        """Per partial source on this mesh, its seconds to each of ``nodes`` (a row may be
        shorter than ``nodes``: layouts added later are out of its reach)."""
        todo = [s for s in dict.fromkeys(srcs) if s not in self._rows]
        if todo:
            for s in todo:
                self._add_groups(s.partial)
            d = np.full((len(todo), len(self.nodes)), math.inf)
            d[np.arange(len(todo)), [self.index[s] for s in todo]] = 0.0
            self._all_edges().relax(d)
            for s, row in zip(todo, d):
                row.flags.writeable = False
                self._rows[s] = row
        return [self._rows[s] for s in srcs]

    def _add_groups(self, partial: frozenset) -> None:
        """Adds the layouts with each subset of ``partial`` as pending axes, and their steps
        (a step never adds a pending axis, so it stays among them)."""
        new = [frozenset(p) for r in range(1, len(partial) + 1)
               for p in itertools.combinations(sorted(partial), r) if frozenset(p) not in self._groups]
        if not new:
            return
        start = len(self.nodes)
        for p in new:
            self._groups.add(p)
            for lay in enumerate_layouts(self.mesh, self.shape, p):
                self.index[lay] = len(self.nodes)
                self.nodes.append(lay)
        self._steps.append(_steps_from(self.nodes[start:], self.index, self.mesh, self.shape,
                                       self.itemsize, self.cost, start))
        self._edges = None

    def _all_edges(self) -> _Edges:
        if self._edges is None:
            self._edges = _Edges(*(np.concatenate(a) for a in zip(*self._steps)))
        return self._edges


class CrossTable:
    """Seconds from layouts of mesh A to the non-partial layouts of another mesh B.

    Attributes:
        plain: (A's non-partial layouts, B's non-partial layouts) seconds (inf: none).
    """

    def __init__(self, table_a: MeshTable, table_b: MeshTable, alltoallv_s: np.ndarray):
        self.table_a, self.table_b, self.alltoallv_s = table_a, table_b, alltoallv_s
        self.plain = self._through(table_a.plain)
        self.plain.flags.writeable = False
        self._rows: dict = {}

    def rows(self, srcs: list[Layout]) -> list[np.ndarray]:
        """Per partial source on A, its seconds to each non-partial layout of B."""
        todo = [s for s in dict.fromkeys(srcs) if s not in self._rows]
        if todo:
            n = self.table_a.num_plain
            d_a = np.stack([row[:n] for row in self.table_a.rows(todo)])
            for s, row in zip(todo, self._through(d_a)):
                row.flags.writeable = False
                self._rows[s] = row
        return [self._rows[s] for s in srcs]

    def _through(self, d_a: np.ndarray) -> np.ndarray:
        """Rows of seconds to A's non-partial layouts -> rows of seconds to B's: the
        alltoallv from the best one, then B's steps."""
        w = self.alltoallv_s
        d = np.empty((len(d_a), w.shape[1]))
        chunk = max(1, BROADCAST_ELEMENTS // max(1, w.size))
        for x0 in range(0, len(d_a), chunk):
            d[x0:x0 + chunk] = np.min(d_a[x0:x0 + chunk, :, None] + w[None], axis=1)
        return self.table_b.plain_edges.relax(d)


def mesh_table(cache: dict, mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
               cost: CostFn) -> MeshTable:
    """The ``MeshTable`` of ``mesh`` from ``cache``, built on first use."""
    key = ("mesh", mesh, shape, itemsize, _cost_key(cache, cost))
    table = cache.get(key)
    if table is None:
        table = _store(cache, key, MeshTable(mesh, shape, itemsize, cost))
    return table


def cross_table(cache: dict, mesh_a: tuple[int, ...], mesh_b: tuple[int, ...], shape: tuple[int, ...],
                itemsize: int, cost: CostFn) -> CrossTable:
    """The ``CrossTable`` from ``mesh_a`` to ``mesh_b`` from ``cache``, built on first use."""
    key = ("cross", mesh_a, mesh_b, shape, itemsize, _cost_key(cache, cost))
    table = cache.get(key)
    if table is None:
        table_a = mesh_table(cache, mesh_a, shape, itemsize, cost)
        table_b = mesh_table(cache, mesh_b, shape, itemsize, cost)
        volumes = cache.setdefault(("volumes", _cost_key(cache, cost)), {})
        table = _store(cache, key, CrossTable(table_a, table_b, _alltoallv_seconds(table_a, table_b, volumes)))
    return table


def _cost_key(cache: dict, cost: CostFn):
    """The cost function in ``TABLES``' keys; in a dict of one call's own (an unhashable
    cost function), its id."""
    return cost if cache is TABLES else id(cost)


def _store(cache: dict, key, table):
    if cache is TABLES and len(TABLES) >= TABLES_MAX:
        TABLES.clear()
    cache[key] = table
    return table


def step_seconds(cost: CostFn, step: Step, shape: tuple[int, ...], itemsize: int) -> float:
    """``cost(step, shape, itemsize)`` as a float, checked to be seconds >= 0 (inf forbids)."""
    w = cost(step, shape, itemsize)
    if not (w >= 0):                          # the message only when it is needed
        _checked_seconds(w, f"step {step} ({step.src} -> {step.dst})")
    return float(w)


@functools.lru_cache(maxsize=8192)
def _layouts(mesh: tuple[int, ...], shape: tuple[int, ...]) -> tuple[tuple[Layout, ...], dict]:
    """The non-partial layouts on ``mesh`` that fit ``shape``, and their positions."""
    layouts = enumerate_layouts(mesh, shape)
    return layouts, {lay: i for i, lay in enumerate(layouts)}


def _checked_seconds(w, what: str) -> float:
    if not (w >= 0):
        raise ValueError(f"cost_fn returned {w!r} for {what}; costs must be seconds >= 0 "
                         f"(math.inf forbids).")
    return float(w)


def _alltoallv_seconds(table_a: MeshTable, table_b: MeshTable, volumes: dict) -> np.ndarray:
    """Seconds of the alltoallv from every non-partial layout of ``table_a``'s mesh to every
    one of ``table_b``'s; ``volumes``: seconds per (bytes, ranks) already priced."""
    shape, itemsize, cost = table_a.shape, table_a.itemsize, table_a.cost
    layouts_a, layouts_b = table_a.nodes[:table_a.num_plain], table_b.nodes[:table_b.num_plain]
    by_volume = getattr(cost, "alltoallv_seconds", None)
    if by_volume is not None and layouts_a and layouts_b:
        # The seconds depend only on the largest receive: price each distinct volume once.
        recv = max_recv_by_units(table_a.mesh, table_a.map_positions, table_b.mesh, table_b.map_positions,
                                 table_b.block_elements, shape)
        if recv is None:                       # too many elements for the unit tables' int64
            recv = max_recv_matrix(table_a.boxes, table_b.boxes)
        recv = recv * itemsize
        found, where = np.unique(recv, return_inverse=True)
        g = math.prod(table_a.mesh)
        seconds = np.empty(len(found))
        for i, v in enumerate(found.tolist()):
            w = volumes.get((v, g))
            if w is None:
                w = volumes[(v, g)] = _checked_seconds(by_volume(v, g), f"an alltoallv {table_a.mesh} -> "
                                                       f"{table_b.mesh} receiving {v} bytes at most")
            seconds[i] = w
        out = seconds[where.reshape(recv.shape)]
    else:
        out = np.array([[step_seconds(cost, Step.make_alltoallv(x, t), shape, itemsize)
                         for t in layouts_b] for x in layouts_a], dtype=np.float64)
    out.flags.writeable = False
    return out.reshape(len(layouts_a), len(layouts_b))


def _steps_from(layouts, index: dict, mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                cost: CostFn, first: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every step out of ``layouts`` (at positions ``first``, ``first + 1``, ... of a table
    whose positions ``index`` holds) with finite seconds, as (from, to, seconds) arrays."""
    froms, tos, seconds = [], [], []
    for i, lay in enumerate(layouts, first):
        for step in _neighbors_cached(lay, shape, mesh, None):
            w = step_seconds(cost, step, shape, itemsize)
            if w != math.inf:
                froms.append(i)
                tos.append(index[step.dst])
                seconds.append(w)
    return (np.array(froms, dtype=np.int64), np.array(tos, dtype=np.int64),
            np.array(seconds, dtype=np.float64))
