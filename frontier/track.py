"""``track``: the cost frontier of a CostGraph (Algorithm 2), and its result.

Usage::

    res = track(g, method="ldp", threads=2)
    for i, (mem, time) in enumerate(res.points):     # mem ascending, time descending
        nodes, edges = res.choice(i)                 # node id -> config, edge id -> alt
    res.stats.heuristic_eliminations                 # 0 means no configuration was fixed
    res.stats.time_error_bound_s                     # 0.0 means nothing was thinned

``track`` is a thin wrapper: it validates the arguments, times the phases and unrolls;
the work is done by ``_structure.reduce_graph`` (eliminations, ``_eliminate.Work``) and
``_ldp.finish`` (LDP or the final enumeration), which operate on frontier tables with
the compiled kernels of ``_kernels``.
"""

from __future__ import annotations

import dataclasses
import time as _time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from frontier._eliminate import Options, Work
from frontier._forked import ForkedRun, ForkedRunFailed, can_fork
from frontier._ldp import finish
from frontier._memo import memo_budget
from frontier._memory import kept_freed_memory
from frontier._store import Store
from frontier._structure import reduce_graph
from frontier._table import radius_max
from frontier._union import pareto_union
from frontier.graph import CostGraph
from frontier.stats import Tally, TrackStats

__all__ = ["track", "TrackResult", "check_search_options", "heuristic_rules"]

_METHODS = ("ldp", "elimination")


@dataclass(frozen=True)
class TrackResult:
    """The frontier found by ``track``.

    Attributes:
        points: ``[(memory, time), ...]``, memory ascending, time strictly descending.
        stats: a ``TrackStats``: options, elimination counts, sizes, the error bound and
            seconds per phase.
        node_configs: (len(points), num_nodes) int array, the configuration of every
            node per point; edge_alternatives: (len(points), num_edges), the alternative
            of every edge.
        radii: the error radius of every point (seconds; zeros when nothing was thinned):
            every exact point that point i stands for has at least its memory and at most
            ``radii[i]`` seconds less time.
    """

    points: list[tuple[float, float]]
    stats: TrackStats
    node_configs: np.ndarray = field(repr=False)
    edge_alternatives: np.ndarray = field(repr=False)
    radii: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    @property
    def exact(self) -> bool:
        """True when no heuristic elimination, no epsilon and no candidate cap thinned."""
        return self.stats.exact

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
                         max_candidates: Optional[int] = None, relative: bool = False) -> None:
    """Raises ValueError naming the first of ``track``'s threads, epsilon, max_candidates
    and relative that is not valid, and what would be; callers that price a graph
    before tracking it check first, so that a typo costs no pricing."""
    if not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be a positive int; got {threads!r}")
    if epsilon is not None and not (isinstance(epsilon, (int, float)) and 0 < epsilon < 1):
        raise ValueError(f"epsilon must be None or a float in (0, 1), e.g. 0.05; got "
                         f"{epsilon!r} (for the exact frontier leave it out: None, or no "
                         "--epsilon on the command line)")
    if max_candidates is not None and not (isinstance(max_candidates, (int, np.integer))
                                           and max_candidates >= 1):
        raise ValueError(f"max_candidates must be None (no cap) or a positive int, e.g. "
                         f"50_000_000; got {max_candidates!r}")
    if not isinstance(relative, bool):
        raise ValueError(f"relative must be True or False; got {relative!r}")
    if relative and epsilon is None:
        raise ValueError("relative=True bounds epsilon's error by each point's own time; give "
                         "epsilon too (e.g. epsilon=0.05, or --epsilon 0.05 --relative), or "
                         "leave relative out")


def _one_rule(heuristic: Any) -> bool:
    """Whether ``heuristic`` is shaped as one rule (a name, or ``("weighted", w)``)."""
    return heuristic in ("min_memory", "min_time") or (
        isinstance(heuristic, tuple) and len(heuristic) == 2 and heuristic[0] == "weighted")


def _check_rule(heuristic: Any) -> Any:
    if heuristic in ("min_memory", "min_time"):
        return heuristic
    if (_one_rule(heuristic) and isinstance(heuristic[1], (int, float))
            and 0.0 <= heuristic[1] <= 1.0):
        return ("weighted", float(heuristic[1]))
    raise ValueError(f"unknown heuristic {heuristic!r}; expected 'min_memory', "
                     "'min_time' or ('weighted', w) with 0 <= w <= 1 (the weight of "
                     "memory), or a list of them, e.g. ['min_memory', 'min_time']")


def heuristic_rules(heuristic: Any) -> list:
    """``track``'s ``heuristic`` as a list of rules, each checked: one rule, or a list or
    tuple of them (``("weighted", w)`` is one rule).

    Raises:
        ValueError: naming the rule that is not valid, and what would be.
    """
    if _one_rule(heuristic) or not isinstance(heuristic, (list, tuple)):
        return [_check_rule(heuristic)]
    if not heuristic:
        raise ValueError("heuristic: an empty list of rules; give at least one, e.g. "
                         "['min_memory', 'min_time']")
    return [_check_rule(h) for h in heuristic]


def _check_args(method: str, threads: int, heuristic: Any, epsilon: Optional[float],
                progress: Optional[Callable], max_candidates: Optional[int],
                relative: bool) -> list:
    if method not in _METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {_METHODS}")
    check_search_options(threads, epsilon, max_candidates, relative)
    rules = heuristic_rules(heuristic)
    if progress is not None and not callable(progress):
        raise ValueError("progress must be None or a callable progress(done, total)")
    return rules


def _time_lower_bound(graph: CostGraph) -> float:
    """T: the sum of every node's and edge's least time, which no strategy beats."""
    lower = sum(float(graph.node_costs(v)[:, 1].min()) for v in range(graph.num_nodes))
    return lower + sum(float(graph.edge(e).time.min()) for e in range(graph.num_edges))


def _relative_error(table) -> float:
    """The largest ``r / (t - r)`` over the table's points (0.0 without radii)."""
    if table.radius is None or table.npoints == 0:
        return 0.0
    return _largest_share(table.radii(), table.time)


def _largest_share(radii: np.ndarray, times: np.ndarray) -> float:
    """The largest ``r / (t - r)`` over points of radii ``radii`` and times ``times``."""
    if len(radii) == 0:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(radii > 0, radii / (times - radii), 0.0)
    return float(share.max())


def track(graph: CostGraph, method: str = "ldp", *, threads: int = 1,
          heuristic: Any = "min_memory", epsilon: Optional[float] = None,
          progress: Optional[Callable[[int, int], None]] = None,
          max_candidates: Optional[int] = None, relative: bool = False) -> TrackResult:
    """Finds the (memory, time) cost frontier of all strategies of ``graph``.

    Args:
        graph: the cost graph (a DAG; any number of sources, sinks, components).
        method: ``"ldp"`` (FT-LDP: eliminate to a linear backbone, then Algorithm 3) or
            ``"elimination"`` (FT-Elimination: eliminate to two nodes and enumerate).
        threads: worker threads for the frontier kernels (split over configurations).
        heuristic: the rule of heuristic elimination, used only when no exact
            elimination applies: ``"min_memory"``, ``"min_time"`` or ``("weighted", w)``
            (see ``Work.choose_config``). When used, ``stats.heuristic_eliminations``
            is non-zero and the points may lie above the true frontier. A list of
            rules, e.g. ``["min_memory", "min_time"]``, tracks once per rule when the
            first run fixed any configuration (once otherwise: the rule is then never
            asked) and returns the Pareto union of the runs (``_union``): one rule
            fixes one configuration per node for the whole frontier, so ``min_memory``
            alone can miss the fast plans and ``min_time`` the small ones.
            With ``threads`` >= 2 the rules are tracked at once, the first in this
            process and each other one in a forked process (``_forked``), the threads
            shared out among them: about as long as the slowest run, but the tables of
            all of them at the same time (their memos share one budget; pass threads=1
            to track them one after another). ``stats.heuristic_runs`` gives each
            run's rule, points, seconds and T; the other statistics are the first
            run's, the seconds and bounds the union's (``total_s`` its wall clock).
            ``time_lower_bound_s`` is the least of the runs' T (no strategy of any run
            beats it); with epsilon (not relative), a run whose bound passed e times that
            T is tracked again with epsilon scaled down to meet it
            (``_within_least_scale``).
        epsilon: None (default) keeps the frontier exact. A float e in (0, 1) returns an
            e-approximate frontier instead, in far less time and memory on large graphs:
            for every exact frontier point q the result holds a point p with
            ``p.mem <= q.mem`` and ``p.time <= q.time + e * T`` <= ``(1 + e) q.time``,
            where T (``stats.time_lower_bound_s``) is a time no strategy beats. Every
            point carries an error radius (``radii``); a reduction drops a point for a
            kept one with no more memory only while the keeper's radius stays within e
            times a lower bound on the time of the part of the graph the new table
            stands for (``Store.lower``: the larger of its parts' bounds summed and its
            own least ``time - radius``). Bounds of disjoint parts add up, so the final
            table's is T, and T is at least the sum of every node's and edge's least
            time. The bound reported, ``stats.time_error_bound_s``, is the largest
            radius on the result (<= e * T). Returned points are real strategies: ``choice``
            re-costs exactly. Assumes non-negative times; when T is 0 nothing is
            thinned. Thinning keeps every cell's least memory exact, but times only
            within the bound, so a heuristic elimination that ranks by time may choose
            differently than without epsilon.
        relative: with epsilon, bound each point's error by its own time instead of T:
            for every exact frontier point q the result holds a point p with
            ``p.mem <= q.mem`` and ``p.time <= (1 + e) q.time``, the usual e-approximate
            Pareto set. A kept point's radius may reach ``e / (1 + e)`` of its own
            (partial) time, so slow, low-memory plans are thinned much more than fast
            ones, and frontiers spanning a wide range of times shrink (``stats.
            relative_error_bound`` reports the share reached; the largest radius,
            ``stats.time_error_bound_s``, may then exceed e * T). Radii and times both
            add under products, so each part keeping ``r <= e / (1 + e) * t`` keeps the
            whole graph's. Needs epsilon.
        progress: optional ``progress(done, total)``, called after each node removed
            by an elimination or an LDP step, and once at the end with done == total
            (total = number of nodes).
        max_candidates: None (default) for no cap. An int C bounds the work of every
            product instead of the error: when the product of an elimination would make
            more than C candidate points, its inputs are first thinned (a point stays
            only when it is some step faster than the last kept one) with the smallest
            step that brings it under C (``Work.capped``). This gives up epsilon's
            a-priori guarantee; the radii still hold, so the bound reported in
            ``stats.time_error_bound_s`` is rigorous (with ``stats.capped_products``
            and ``stats.cap_delta_max_s``). Use it, alone or with epsilon, when a
            graph's frontiers are too rich to track in the time you have.

    Returns:
        A ``TrackResult``.

    Raises:
        ValueError: bad arguments (relative without epsilon among them), an empty graph,
            or a cycle (naming its nodes).
    """
    rules = _check_args(method, threads, heuristic, epsilon, progress, max_candidates,
                        relative)
    if graph.num_nodes == 0:
        raise ValueError("the graph has no nodes; add operators with add_node first")
    start = _time.perf_counter()
    if len(rules) > 1 and threads >= 2 and can_fork():
        runs = _rules_at_once(graph, method, threads, rules, epsilon, progress,
                              max_candidates, relative)
    else:
        runs = [_track_once(graph, method, threads, rules[0], epsilon, progress,
                            max_candidates, relative)]
        if runs[0].stats.heuristic_eliminations:
            runs += [_track_once(graph, method, threads, rule, epsilon, None, max_candidates,
                                 relative) for rule in rules[1:]]
    if len(runs) == 1:
        return runs[0]
    if epsilon is not None and not relative:
        runs = _within_least_scale(graph, method, threads, rules, epsilon, max_candidates, runs)
    return _union_of(runs, epsilon, threads, _time.perf_counter() - start)


def _rules_at_once(graph: CostGraph, method: str, threads: int, rules: list,
                   epsilon: Optional[float], progress: Optional[Callable],
                   max_candidates: Optional[int], relative: bool) -> list[TrackResult]:
    """Every rule's run at once (``_forked``): the first here, each other one in a forked
    child, ``threads`` and the memo's budget (``_memo.memo_budget``, a share of the memory
    available) shared out among them, so that their memos together hold what one run's
    would. The children are stopped, unread, when the first run fixed no configuration
    (a rule is then never asked: one run is the answer). A child that fails is run
    again here, after the first, with a warning: a child killed for memory may fit
    alone."""
    each = max(1, threads // len(rules))
    memo = memo_budget() // len(rules)        # one run's budget, shared out
    children = [ForkedRun(lambda rule=rule: _track_once(graph, method, each, rule, epsilon,
                                                        None, max_candidates, relative, memo),
                          label=f"the {rule!r} run") for rule in rules[1:]]
    try:
        first = _track_once(graph, method, threads - each * (len(rules) - 1), rules[0],
                            epsilon, progress, max_candidates, relative, memo)
    except BaseException:
        for child in children:
            child.stop()
        raise
    if not first.stats.heuristic_eliminations:
        for child in children:
            child.stop()
        return [first]
    runs = [first]
    for rule, child in zip(rules[1:], children):
        try:
            runs.append(child.result())
        except ForkedRunFailed as err:
            warnings.warn(f"{err}; tracking it again in this process", RuntimeWarning,
                          stacklevel=3)
            runs.append(_track_once(graph, method, threads, rule, epsilon, None,
                                    max_candidates, relative))
    return runs


def _within_least_scale(graph: CostGraph, method: str, threads: int, rules: list, epsilon: float,
                        max_candidates: Optional[int], runs: list[TrackResult]) -> list[TrackResult]:
    """The runs again where their bound exceeds epsilon times the least T of all runs.

    A run thins within epsilon times its own T, a time none of *its* strategies beats;
    another rule's run may find faster plans (the paper Transformer at 16 devices: T 1.008
    s under ``min_memory``, 0.832 s under ``min_time``), and the union's error must stay
    within epsilon times the union's T. Such a run is tracked again with epsilon scaled by
    ``least / (own * (1 + epsilon))``: its radii then stay within the new epsilon times
    its new T, which is at most its fastest plan's time, at most ``own * (1 + epsilon)``
    (scaled by ``least / own`` alone, the paper Transformer's bound came out at 5.01% of
    T for 5%). The rerun costs about as much as that run did once more."""
    least = min(r.stats.time_lower_bound_s for r in runs)
    out = []
    for rule, run in zip(rules, runs):
        own = run.stats.time_lower_bound_s
        if run.stats.time_error_bound_s > epsilon * least and own > least:
            run = _track_once(graph, method, threads, rule, epsilon * least / (own * (1 + epsilon)),
                              None, max_candidates, False)
        out.append(run)
    return out


def _union_of(runs: list[TrackResult], epsilon: Optional[float], threads: int,
              wall_s: float) -> TrackResult:
    """One result: the runs' Pareto union (``_union``), with the first run's statistics
    but the union's points and bounds, ``epsilon`` and ``threads`` as given, the phases'
    seconds added up over the runs and ``total_s`` the wall-clock seconds of them all
    (``wall_s``: less than their sum where the runs went at once)."""
    points, cfg, alt, radii = pareto_union(
        [(r.points, r.node_configs, r.edge_alternatives, r.radii) for r in runs])
    first = runs[0].stats
    summed = {k: sum(getattr(r.stats, k) for r in runs)
              for k in ("eliminate_s", "ldp_s", "unroll_s", "candidates", "blocks")}
    stats = dataclasses.replace(
        first, heuristic=tuple(r.stats.heuristic for r in runs), epsilon=epsilon,
        threads=int(threads),
        heuristic_runs=tuple((r.stats.heuristic, r.stats.num_points, r.stats.total_s,
                              r.stats.time_lower_bound_s, r.stats.epsilon) for r in runs),
        time_lower_bound_s=min(r.stats.time_lower_bound_s for r in runs),
        time_error_bound_s=float(radii.max()) if len(radii) else 0.0,
        relative_error_bound=_largest_share(radii, np.array([t for _, t in points])),
        summed_bound_s=max(r.stats.summed_bound_s for r in runs),
        num_points=len(points), total_s=wall_s,
        peak_pointer_bytes=max(r.stats.peak_pointer_bytes for r in runs), **summed)
    return TrackResult(points, stats, cfg, alt, radii)


def _track_once(graph: CostGraph, method: str, threads: int, heuristic: Any,
                epsilon: Optional[float], progress: Optional[Callable[[int, int], None]],
                max_candidates: Optional[int], relative: bool,
                memo_bytes: Optional[int] = None) -> TrackResult:
    """One run of Frontier-Tracking with one heuristic rule (arguments checked);
    ``memo_bytes``: its memo's budget (None: ``_memo.memo_budget()``)."""
    t0 = _time.perf_counter()
    order = graph.topological_order()
    lower = _time_lower_bound(graph)
    tally = Tally()
    store = Store(graph.num_nodes, graph.num_edges)
    if lower <= 0:
        epsilon_used, cap_used = None, None
    else:
        epsilon_used, cap_used = epsilon, max_candidates
    with kept_freed_memory():
        work = Work(graph, order, store, tally,
                    Options(threads=int(threads), epsilon=epsilon_used,
                            max_candidates=cap_used, time_scale_s=lower, progress=progress,
                            relative=relative, memo_bytes=memo_bytes))
        reduce_graph(work, method, heuristic)
        t1 = _time.perf_counter()
        final = finish(work, method)
        if progress is not None:
            progress(graph.num_nodes, graph.num_nodes)
        t2 = _time.perf_counter()
        table = store.table(final)
        cfg, alt = store.unroll(final, np.arange(table.npoints))
        assert np.all(cfg >= 0) and np.all(alt >= 0), "unroll did not reach every node/edge"
        t3 = _time.perf_counter()
        stats = TrackStats.from_tally(
            tally, method=method, threads=int(threads), heuristic=heuristic, epsilon=epsilon,
            relative=relative, max_candidates=max_candidates, num_nodes=graph.num_nodes,
            num_edges=graph.num_edges,
            time_lower_bound_s=max(lower, store.lower[final]),
            time_error_bound_s=radius_max(table),
            relative_error_bound=_relative_error(table),
            summed_bound_s=store.summed[final], num_points=int(table.npoints),
            stored_pointer_bytes=store.bytes, peak_pointer_bytes=store.peak_bytes,
            eliminate_s=t1 - t0, ldp_s=t2 - t1,
            unroll_s=t3 - t2, total_s=t3 - t0)
        points = [(float(m), float(t)) for m, t in zip(table.mem, table.time)]
        radii = table.radii().copy()
        del work, store, table     # freed before the memory is handed back
    return TrackResult(points, stats, cfg, alt, radii)
