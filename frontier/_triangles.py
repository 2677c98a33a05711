"""Backbone triangles: a backbone node eliminated instead of the free series node beside it.

A backbone node whose two neighbours are joined by an edge is not on a path LDP can use,
and eliminating it (exact) can be far cheaper than eliminating the free node beside it:
in InceptionV3 the conv node that starts the last batch norm's backbone has 95
configurations, the free node carrying the network's tail 9 but with ~140 points each,
and eliminating the latter spreads them over 225 x 117 cells. Such a backbone node goes
instead of the free series node that would go next when the edge it leaves has fewer
cells (K_h * K_j), or as many and it spreads clearly fewer points over them
(``spread``, ``SPREAD_RATIO``), or else its product is estimated smaller, and the rest
of its component is reduced by exact eliminations alone, so that no heuristic choice
can depend on it (``BACKBONE_TRIANGLES``). Cells first: the estimates bound the
candidates from above and can be far off (ResNet101's last batch norm: the mean, 2G
estimated, made 5.5M candidates; the conv, 15.6M estimated and made, left a 541 x 279
edge whose merge with a 9M-point one made 27.6M points).

Then the spread, not the estimate: in the PaSE Transformer a decoder layer norm leaves
a diamond whose two tips are the residual ``add`` (backbone, carrying the layer's
frontier, 134 points a configuration at 16 devices) and ``multiply_1`` (free, 55, with a
12-point edge), both between ``mean`` and ``subtract``. The estimates (5.7e8 and 2.8e9)
pick the ``add``; both products make about 2.5e7 candidates, but the ``add``'s leaves
3.5M points where the multiply's leaves 2.6M, and the diamond takes 7.0 CPU seconds
instead of 5.3: the rich frontier is better folded in at the end, over K cells, than
spread over K_h * K_j. At 32 devices the smaller tables also let ``_memo`` keep a whole
layer norm's results, and decoders 1 to 3 reuse them. The spread counts sums, not the
Pareto pruning of them, so it decides only when the tips differ by ``SPREAD_RATIO``
(2.0 there, 2.5 to 3 at 32 devices; in ResNet101's and InceptionV3's ties 1.1 to 1.2,
where either order costs the same and the estimate decides, as it did before).

Usage::

    v = waits.next_series(two, series)                   # frontier._series
    v = backbone_triangle(waits, v, index.marked(2))     # v, or a backbone node
"""

from __future__ import annotations

from typing import Iterable

from frontier._eliminate import Work
from frontier._hubs import irreducible
from frontier._series import Waits, out_cells

__all__ = ["backbone_triangle", "spread", "BACKBONE_TRIANGLES", "SPREAD_RATIO"]

#: Whether a backbone node with two neighbours that are joined by an edge (a triangle,
#: so no path through it is left for LDP there) may be eliminated like a free one: it
#: is, instead of the free series node that would go next, when it is cheaper by
#: ``_cheaper`` (cells, then a clear difference in spread, then the estimate) and its
#: component needs no heuristic elimination nor backbone (``_reducible_without``).
#: Tests turn it off to compare.
BACKBONE_TRIANGLES = True

#: On a tie in cells, the spreads (``spread``) of the two candidates decide only when
#: the larger is at least this many times the smaller; closer, the estimates do.
SPREAD_RATIO = 1.5


def spread(work: Work, v: int) -> float:
    """The points per configuration of v that ``node_elim(v)`` spreads over the cells
    it leaves: v's own frontier's, plus, for each of its two edges, the edge's points
    per configuration of the neighbour (a cell (k_h, k_j) of the result unions, over
    v's configurations, the sums of those frontiers)."""
    spread_pts = float(work.st.table(work.ntab[v]).npoints)
    for y, (wid,) in work.adj[v].items():
        spread_pts += work.st.table(work.edges[wid][2]).npoints / work.K[y]
    return spread_pts / work.K[v]


def backbone_triangle(waits: Waits, v: int, marked_two: Iterable[int]) -> int:
    """v, or a backbone node in a triangle that leaves fewer cells, or as many and
    spreads clearly fewer points over them (``spread``, ``SPREAD_RATIO``), or else whose
    product is estimated smaller (``waits.estimate``; see ``BACKBONE_TRIANGLES``)."""
    if not BACKBONE_TRIANGLES:
        return v
    work = waits.work
    adj = work.adj
    best, least = v, (out_cells(work, v), spread(work, v), waits.estimate(v))
    for m in marked_two:
        h, j = adj[m]
        cost = (out_cells(work, m), spread(work, m), waits.estimate(m))
        if j in adj[h] and _cheaper(cost, least) and _reducible_without(work, m):
            best, least = m, cost
    if best != v:
        work.tally.backbone_triangles += 1
    return best


def _cheaper(a: tuple[int, float, float], b: tuple[int, float, float]) -> bool:
    """Whether the node with (cells, spread, estimate) ``a`` goes before the one with
    ``b``: fewer cells; on a tie, a spread ``SPREAD_RATIO`` times smaller; else a
    smaller estimate."""
    if a[0] != b[0]:
        return a[0] < b[0]
    lo, hi = min(a[1], b[1]), max(a[1], b[1])
    if hi > lo and hi >= SPREAD_RATIO * lo:
        return a[1] < b[1]
    return a[2] < b[2]


def _reducible_without(work: Work, m: int, limit: int = 64) -> bool:
    """True when m is the only backbone node of its component, which has at most
    ``limit`` other nodes, and those are reduced to one node by exact eliminations alone
    (leaves folded, series nodes contracted, parallel edges merged). Then neither this
    component nor m's backbone has any further say in which nodes heuristic elimination
    may fix, with m or without it."""
    adj: dict[int, set[int]] = {}
    stack = list(work.adj[m])
    seen = set(stack)
    while stack:
        x = stack.pop()
        if x in work.marked:
            return False
        adj[x] = {y for y in work.adj[x] if y != m}
        for y in adj[x]:
            if y not in seen:
                seen.add(y)
                stack.append(y)
        if len(seen) > limit:
            return False
    # reduced to one node exactly when there was one and nothing is left irreducible: a core has
    # four nodes at least, each with three neighbours or more
    return bool(adj) and not irreducible(adj)
