"""``track``: the cost frontier of a CostGraph (Algorithm 2), and its result.

Usage::

    res = track(g, method="ldp", threads=2)
    for i, (mem, time) in enumerate(res.points):     # mem ascending, time descending
        nodes, edges = res.choice(i)                 # node id -> config, edge id -> alt
    res.stats["heuristic_eliminations"]              # 0 means the frontier is exact

``track`` is a thin wrapper: it validates the arguments, times the phases and unrolls;
the work is done by ``_eliminate.Work`` (eliminations) and ``_ldp.finish`` (LDP or the
final enumeration), which operate on numpy frontier tables.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from frontier._eliminate import Work
from frontier._ldp import finish
from frontier._store import Store
from frontier.graph import CostGraph

__all__ = ["track", "TrackResult", "check_search_options"]

_METHODS = ("ldp", "elimination")


@dataclass(frozen=True)
class TrackResult:
    """The frontier found by ``track``.

    Attributes:
        points: ``[(memory, time), ...]``, memory ascending, time strictly descending.
        stats: counts of ``node_eliminations``, ``edge_eliminations``,
            ``branch_eliminations``, ``heuristic_eliminations`` (with
            ``heuristic_choices``: ``[(node, config), ...]``), ``ldp_steps``,
            ``enumerations``, ``backbone_fallbacks``; sizes (``max_cell_points``,
            ``candidates``, ``blocks_total``, ``blocks_kept``, ``num_points``); and
            ``seconds``: ``{"eliminate", "ldp", "unroll", "total"}``.
    """

    points: list[tuple[float, float]]
    stats: dict[str, Any]
    node_configs: np.ndarray = field(repr=False)   # (len(points), num_nodes)
    edge_alternatives: np.ndarray = field(repr=False)  # (len(points), num_edges)

    @property
    def exact(self) -> bool:
        """True when no heuristic elimination, no epsilon and no candidate cap thinned."""
        return (not self.stats["heuristic_eliminations"] and self.stats["epsilon"] is None
                and not self.stats["capped_products"])

    def choice(self, i: int) -> tuple[dict[int, int], dict[int, int]]:
        """The strategy of point i: (node id -> configuration, edge id -> alternative).

        Raises:
            ValueError: i is not a valid point index.
        """
        if not isinstance(i, (int, np.integer)) or not -len(self.points) <= i < len(self.points):
            raise ValueError(f"point index {i!r} out of range; the frontier has "
                             f"{len(self.points)} points")
        nodes = {v: int(c) for v, c in enumerate(self.node_configs[i])}
        edges = {e: int(a) for e, a in enumerate(self.edge_alternatives[i])}
        return nodes, edges


def check_search_options(threads: int = 1, epsilon: Optional[float] = None,
                         max_candidates: Optional[int] = None) -> None:
    """Raises ValueError naming the first of ``track``'s threads, epsilon and
    max_candidates that is not valid, and what would be; callers that price a graph
    before tracking it check first, so that a typo costs no pricing."""
    if not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive int; got {threads!r}")
    if epsilon is not None and not (isinstance(epsilon, (int, float)) and 0 < epsilon < 1):
        raise ValueError(f"epsilon must be None (exact) or a float in (0, 1); got "
                         f"{epsilon!r}")
    if max_candidates is not None and not (isinstance(max_candidates, (int, np.integer))
                                           and max_candidates >= 1):
        raise ValueError(f"max_candidates must be None (no cap) or a positive int, e.g. "
                         f"50_000_000; got {max_candidates!r}")


def _check_args(method: str, threads: int, heuristic: Any, epsilon: Optional[float],
                progress: Optional[Callable], max_candidates: Optional[int]) -> Any:
    if method not in _METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {_METHODS}")
    check_search_options(threads, epsilon, max_candidates)
    if heuristic in ("min_memory", "min_time"):
        pass
    elif (isinstance(heuristic, tuple) and len(heuristic) == 2 and heuristic[0] == "weighted"
          and isinstance(heuristic[1], (int, float)) and 0.0 <= heuristic[1] <= 1.0):
        heuristic = ("weighted", float(heuristic[1]))
    else:
        raise ValueError(f"unknown heuristic {heuristic!r}; expected 'min_memory', "
                         "'min_time' or ('weighted', w) with 0 <= w <= 1 (the weight of "
                         "memory)")
    if progress is not None and not callable(progress):
        raise ValueError("progress must be None or a callable progress(done, total)")
    return heuristic


def _time_lower_bound(graph: CostGraph) -> float:
    """T: the sum of every node's and edge's least time, which no strategy beats."""
    lower = sum(float(graph.node_costs(v)[:, 1].min()) for v in range(graph.num_nodes))
    return lower + sum(float(graph.edge(e).time.min()) for e in range(graph.num_edges))


def _time_quantum(graph: CostGraph, epsilon: Optional[float], lower: float) -> Optional[float]:
    """The time bucket width that makes the result epsilon-approximate (see ``track``)."""
    if epsilon is None or lower <= 0:
        return None
    # Every reduction consumes an edge, or a node along with an edge, except the final
    # union and product per component: at most edges + 2 * nodes in all.
    return epsilon * lower / (2 * graph.num_nodes + graph.num_edges)


def track(graph: CostGraph, method: str = "ldp", *, threads: int = 1,
          heuristic: Any = "min_memory", epsilon: Optional[float] = None,
          progress: Optional[Callable[[int, int], None]] = None,
          max_candidates: Optional[int] = None) -> TrackResult:
    """Finds the (memory, time) cost frontier of all strategies of ``graph``.

    Args:
        graph: the cost graph (a DAG; any number of sources, sinks, components).
        method: ``"ldp"`` (FT-LDP: eliminate to a linear backbone, then Algorithm 3) or
            ``"elimination"`` (FT-Elimination: eliminate to two nodes and enumerate).
        threads: worker threads for the frontier kernels (split over configurations).
        heuristic: the rule of heuristic elimination, used only when no exact
            elimination applies: ``"min_memory"``, ``"min_time"`` or ``("weighted", w)``
            (see ``Work.choose_config``). When used, ``stats["heuristic_eliminations"]``
            is non-zero and the points may lie above the true frontier.
        epsilon: None (default) keeps the frontier exact. A float e in (0, 1) returns an
            e-approximate frontier instead, in far less time and memory on large graphs:
            for every exact frontier point q the result holds a point p with
            ``p.mem <= q.mem`` and ``p.time <= q.time + e * T`` <= ``(1 + e) q.time``,
            where T (``stats["time_lower_bound"]``) is the sum of every node's and
            edge's least time, which no strategy beats. Every reduction thins its
            frontiers to one point (the least memory) per time bucket of width
            ``e * T / R`` (``stats["time_quantum"]``), R = 2 * nodes + edges bounding
            the reductions one point's derivation goes through; the bound actually
            accumulated is ``stats["time_error_bound"]`` (<= e * T). Returned points
            are real strategies: ``choice`` re-costs exactly. Assumes non-negative
            times; when T is 0 nothing is thinned. Thinning keeps every cell's least
            memory exact, but times only within the bound, so a heuristic elimination
            that ranks by time may choose differently than without epsilon.
        progress: optional ``progress(done, total)``, called after each node removed
            by an elimination or an LDP step, and once at the end with done == total
            (total = number of nodes).
        max_candidates: None (default) for no cap. An int C bounds the work of every
            product instead of the error: when the product of an elimination would make
            more than C candidate points, its inputs are first thinned by time buckets
            just wide enough to bring it under C (``Work.capped``). This gives up
            epsilon's a-priori guarantee; the bound actually reached is still rigorous
            and is reported in ``stats["time_error_bound"]`` (with
            ``stats["capped_products"]`` and ``stats["cap_quantum_max"]``). Use it when
            a graph's frontiers are too rich to track in the time you have.

    Returns:
        A ``TrackResult``.

    Raises:
        ValueError: bad arguments, an empty graph, or a cycle (naming its nodes).
    """
    heuristic = _check_args(method, threads, heuristic, epsilon, progress, max_candidates)
    if graph.num_nodes == 0:
        raise ValueError("the graph has no nodes; add operators with add_node first")
    t0 = _time.perf_counter()
    order = graph.topological_order()
    stats: dict[str, Any] = {k: 0 for k in (
        "node_eliminations", "edge_eliminations", "branch_eliminations",
        "heuristic_eliminations", "ldp_steps", "enumerations", "backbone_fallbacks",
        "max_cell_points", "candidates", "blocks_total", "blocks_kept", "capped_products")}
    lower = _time_lower_bound(graph)
    quantum = _time_quantum(graph, epsilon, lower)
    stats.update(method=method, threads=int(threads), epsilon=epsilon,
                 heuristic=heuristic, heuristic_choices=[], num_nodes=graph.num_nodes,
                 num_edges=graph.num_edges, time_lower_bound=lower, time_quantum=quantum,
                 max_candidates=max_candidates, cap_quantum_max=0.0)
    store = Store(graph.num_nodes, graph.num_edges)
    work = Work(graph, order, store, stats, threads=int(threads), quantum=quantum,
                progress=progress, max_candidates=max_candidates, time_scale=lower)
    work.reduce_graph(method, heuristic)
    t1 = _time.perf_counter()
    final = finish(work, method)
    if progress is not None:
        progress(graph.num_nodes, graph.num_nodes)
    t2 = _time.perf_counter()
    table = store.table(final)
    cfg, alt = store.unroll(final, np.arange(table.npoints))
    assert np.all(cfg >= 0) and np.all(alt >= 0), "unroll did not reach every node/edge"
    t3 = _time.perf_counter()
    stats["num_points"] = int(table.npoints)
    stats["time_error_bound"] = store.time_error[final]
    stats["seconds"] = {"eliminate": t1 - t0, "ldp": t2 - t1, "unroll": t3 - t2,
                        "total": t3 - t0}
    points = [(float(m), float(t)) for m, t in zip(table.mem, table.time)]
    return TrackResult(points, stats, cfg, alt)
