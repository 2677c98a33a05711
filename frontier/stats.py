"""``TrackStats``: what one ``track`` call did, as a frozen value.

Usage::

    res = track(g, epsilon=0.01)
    s = res.stats
    s.exact, s.time_error_bound_s, s.time_lower_bound_s, s.total_s
    s.as_dict()          # plain types, for JSON

``Tally`` is the mutable counter set the eliminations fill while they run; ``track``
freezes it into a ``TrackStats``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Union

from frontier._values import MergeCounts

__all__ = ["TrackStats", "Tally", "SLOWEST_STEPS"]

#: How many of the slowest eliminations ``TrackStats.slowest_steps`` keeps.
SLOWEST_STEPS = 10

Heuristic = Union[str, tuple]


@dataclass
class Tally(MergeCounts):
    """Counters filled during a run (see ``TrackStats`` for their meaning)."""

    node_eliminations: int = 0
    edge_eliminations: int = 0
    branch_eliminations: int = 0
    heuristic_eliminations: int = 0
    ldp_steps: int = 0
    enumerations: int = 0
    backbone_fallbacks: int = 0
    waited_series: int = 0
    deferred_contractions: int = 0
    scored_chains: int = 0
    backbone_triangles: int = 0
    hubs_fixed: int = 0
    capped_products: int = 0
    cap_delta_max_s: float = 0.0
    memo_hits: int = 0
    max_cell_points: int = 0
    heuristic_choices: list = field(default_factory=list)
    ldp_path_lengths: list = field(default_factory=list)
    steps: list = field(default_factory=list)     # (seconds, kind, nodes, candidates, points)


@dataclass(frozen=True)
class TrackStats:
    """The options, counts, sizes, error bound and seconds of one ``track`` call.

    Attributes:
        method: "ldp" or "elimination"; threads: kernel threads; heuristic: the rule
            of heuristic elimination; epsilon, relative, max_candidates: as given to
            ``track``.
        num_nodes, num_edges: of the graph.
        node_eliminations, edge_eliminations, branch_eliminations,
            heuristic_eliminations: how many of each elimination ran (Section 3.2);
            ldp_steps: LDP steps (Algorithm 3); enumerations: two-node remainders
            enumerated ("elimination"); backbone_fallbacks: times the linear backbone
            was given up because only it was left and it was not a path.
        waited_series: nodes with two neighbours whose elimination waited at some
            time, its product being large (``_series.DEFER_CANDIDATES``; the
            module doc gives the rule); deferred_contractions: those eliminated just
            before a heuristic elimination next to them; scored_chains: chains of them
            a heuristic elimination scored as if contracted, leaving them to fold
            after it (``_chains.VIRTUAL_CHAINS``); backbone_triangles: backbone
            nodes with joined neighbours eliminated because that was estimated cheaper
            (``_triangles.BACKBONE_TRIANGLES``); hubs_fixed: heuristic eliminations of
            a hub run before a huge series elimination next to it (``_hubs``).
        heuristic_choices: ``((node, config), ...)`` fixed by heuristic elimination.
        ldp_path_lengths: nodes of each path LDP ran on.
        seconds_by_step: ``((kind, count, seconds), ...)`` per kind of elimination
            ("node", "edge", "fold", "heuristic"; LDP steps are folds), slowest first.
        slowest_steps: the ``SLOWEST_STEPS`` slowest eliminations, slowest first, each
            ``(seconds, kind, nodes, candidates, points)``: the nodes it worked on
            (eliminated node first; for "edge" the two ends), the candidate points its
            kernels examined, the points of the table it made (0 for "heuristic").
        max_cell_points: the most points any one cell of any table held.
        candidates: candidate points the kernels examined one by one.
        blocks: products of two cells the kernels merged.
        rows, row_groups, cols, col_groups: configurations the grouping of identical
            rows and columns saw, and how many distinct ones there were.
        capped_products: products whose inputs ``max_candidates`` thinned;
            cap_delta_max_s: the largest thinning step that took (seconds).
        memo_hits: reductions that took the result of an earlier one with the same
            inputs (repeated layers; ``_memo``) instead of running the kernels.
        time_lower_bound_s: T, a time no strategy beats (no strategy the search
            considered, when heuristic eliminations fixed configurations): at least the
            sum of every node's and edge's least time, and at least the least
            ``time - radius`` of the tables Frontier-Tracking built (``Store.lower``).
        time_error_bound_s: the largest error radius on the returned frontier: every
            exact frontier point has a returned point with no more memory and at most
            this many seconds more time. 0.0 when nothing was thinned.
        relative_error_bound: the largest ``r / (t - r)`` of a returned point (time t,
            radius r): every exact frontier point has a returned point with no more
            memory and at most this share more time than its own (<= epsilon with
            ``relative``). 0.0 when nothing was thinned.
        summed_bound_s: the bound the same run would report if it summed the largest
            thinning gap of every reduction instead of tracking radii (the method before
            radii); never below ``time_error_bound_s``.
        num_points: points on the returned frontier.
        stored_pointer_bytes: back pointers kept for unrolling, at the end;
            peak_pointer_bytes: the most they took at any time (``Store.collect`` frees
            those no live table needs whenever they have doubled).
        eliminate_s, ldp_s, unroll_s, total_s: seconds per phase.
        heuristic_runs: ``((rule, points, seconds, T, epsilon), ...)`` when ``track``
            was given several heuristic rules and ran each (its result the runs' Pareto
            union; ``heuristic`` is then the tuple of rules; a run's epsilon is below the
            one given where it was tracked again to meet the union's T); empty after one
            run.
    """

    method: str
    threads: int
    heuristic: Heuristic
    epsilon: Optional[float]
    relative: bool
    max_candidates: Optional[int]
    num_nodes: int
    num_edges: int
    node_eliminations: int
    edge_eliminations: int
    branch_eliminations: int
    heuristic_eliminations: int
    ldp_steps: int
    enumerations: int
    backbone_fallbacks: int
    waited_series: int
    deferred_contractions: int
    scored_chains: int
    backbone_triangles: int
    hubs_fixed: int
    heuristic_choices: tuple
    ldp_path_lengths: tuple
    seconds_by_step: tuple
    slowest_steps: tuple
    max_cell_points: int
    candidates: int
    blocks: int
    rows: int
    row_groups: int
    cols: int
    col_groups: int
    capped_products: int
    cap_delta_max_s: float
    memo_hits: int
    time_lower_bound_s: float
    time_error_bound_s: float
    relative_error_bound: float
    summed_bound_s: float
    num_points: int
    stored_pointer_bytes: int
    peak_pointer_bytes: int
    eliminate_s: float
    ldp_s: float
    unroll_s: float
    total_s: float
    heuristic_runs: tuple = ()

    @property
    def exact(self) -> bool:
        """True when no heuristic elimination, no epsilon and no candidate cap thinned."""
        return (not self.heuristic_eliminations and self.epsilon is None
                and not self.capped_products)

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain Python values (tuples become lists), for JSON."""
        out = asdict(self)
        out["heuristic_choices"] = [list(c) for c in self.heuristic_choices]
        out["ldp_path_lengths"] = list(self.ldp_path_lengths)
        out["seconds_by_step"] = [list(x) for x in self.seconds_by_step]
        out["slowest_steps"] = [[t, k, list(n), c, p] for t, k, n, c, p in self.slowest_steps]
        plain = lambda h: list(h) if isinstance(h, tuple) else h      # noqa: E731
        if isinstance(self.heuristic, tuple):
            out["heuristic"] = [plain(h) for h in self.heuristic] if self.heuristic_runs else list(self.heuristic)
        out["heuristic_runs"] = [[plain(h), *rest] for h, *rest in self.heuristic_runs]
        out["exact"] = self.exact
        return out

    @classmethod
    def from_tally(cls, tally: Tally, **fields: Any) -> "TrackStats":
        """Freezes ``tally``; ``fields`` gives the rest (options, bounds, seconds)."""
        counts = {k: v for k, v in asdict(tally).items() if k not in ("gap_s", "steps")}
        counts["heuristic_choices"] = tuple(tuple(c) for c in tally.heuristic_choices)
        counts["ldp_path_lengths"] = tuple(tally.ldp_path_lengths)
        by_kind: dict[str, list] = {}
        for step in tally.steps:
            acc = by_kind.setdefault(step[1], [0, 0.0])
            acc[0] += 1
            acc[1] += step[0]
        counts["seconds_by_step"] = tuple(sorted(((k, n, t) for k, (n, t) in by_kind.items()),
                                                 key=lambda x: -x[2]))
        counts["slowest_steps"] = tuple(sorted(tally.steps, key=lambda x: -x[0])[:SLOWEST_STEPS])
        return cls(**counts, **fields)
