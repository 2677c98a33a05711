"""Hubs fixed first: a heuristic elimination that is due anyway goes before a huge exact one.

A node that fans out to many parts of the graph (the PaSE Transformer's ``encoder_norm``
feeds every decoder layer's cross-attention) cannot be eliminated exactly: it stays in
the graph's irreducible core (``irreducible``: what is left when leaves, series nodes
and parallel edges are reduced away, whatever the order), so some heuristic elimination
(Eq. 7) must fix it or its neighbours. Before that happens, an exact series elimination
next to it can carry a rich frontier onto the hub's cells: at 64 devices decoder 0's
cross-attention ``MatMul`` holds the folded prefix of that decoder (338,755 points) and
eliminating it spreads them over ``encoder_norm``'s 394 x 2,075 cells (estimated 2.3e13
candidates, a 131M-point edge), only for the hub to be fixed right after, keeping one
of its 394 rows. PaSE orders vertices so that such a hub comes after its neighbours'
dependent sets are small; a frontier cannot afford to carry it along, so it is fixed
first.

So when the series elimination due next is estimated to make more than
``HUB_CANDIDATES`` candidate points (``_series``'s estimate, from the tables' points per
cell), and a node at one end of its chain is in the irreducible core, that node (the
first by ``reduce_graph``'s ranking, if both ends are; on the backbone or not) is fixed
instead. The series node is then a leaf, or has one neighbour fewer, and folds
cheaply. The hub is
scored as if the chains of series nodes at it were contracted and the parallel edges
they would make merged (``_chains.virtual_chains`` with ``shared_ends``), so no product
is formed to score it; where they cannot be scored so, v is eliminated as before.

Exact eliminations stay exact: a node outside the core is never fixed this way, and a
graph that needs no heuristic elimination has an empty core.

Usage::

    hub = hub_for(work, waits, v, series, rank)   # None: eliminate v as planned
    if hub is None or not fix_hub(work, hub, series, heuristic):
        work.node_elim(v)
"""

from __future__ import annotations

from typing import Callable, Optional

from frontier._chains import virtual_chains
from frontier._eliminate import Heuristic, Work
from frontier._series import Waits, walk

__all__ = ["irreducible", "hub_for", "fix_hub", "HUB_CANDIDATES"]

#: A series elimination estimated to make more candidate points than this lets a hub at
#: its chain's end be fixed first (see the module doc); None turns the rule off, tests
#: set 0 (every series elimination next to a hub). The PaSE Transformer's largest at 16
#: devices is estimated at 4.2e11 (decoder 0's cross-attention, which runs); at 64
#: devices the same one is 2.3e13 (its edge alone would take about 6 GB more than a
#: 24 GB machine had left), the next largest 3.2e11.
HUB_CANDIDATES: Optional[float] = 1e12


def irreducible(adj: dict[int, dict[int, list[int]]]) -> set[int]:
    """The nodes left when every node with at most two neighbours is removed, its two
    neighbours joined (series), and parallel edges merged, until none is left: the
    nodes no order of exact eliminations removes (every one has three or more
    neighbours there). Empty for a series-parallel graph (a tree, a fan)."""
    nb = {x: set(ys) for x, ys in adj.items()}
    queue = [x for x in nb if len(nb[x]) <= 2]
    while queue:
        x = queue.pop()
        if x not in nb or len(nb[x]) > 2:
            continue
        ys = nb.pop(x)
        for y in ys:
            nb[y].discard(x)
        if len(ys) == 2:
            a, b = ys
            nb[a].add(b)
            nb[b].add(a)
        queue.extend(ys)
    return set(nb)


def hub_for(work: Work, waits: Waits, v: int, series: set[int],
            rank: Callable[[int], tuple]) -> Optional[int]:
    """The hub to fix before the series node v (two neighbours) is eliminated, or None:
    a node of the irreducible core at an end of v's chain of series nodes, when v's
    product is estimated above ``HUB_CANDIDATES``; of two, the larger by ``rank``. A
    backbone node may be fixed too (with "ldp"): in the core, the backbone cannot stay
    a path through it unless other nodes around it are fixed instead."""
    if HUB_CANDIDATES is None or waits.estimate(v) <= HUB_CANDIDATES:
        return None
    ends = {walk(work, v, y, series)[0] for y in work.adj[v]}
    ends = {x for x in ends if x != v and work.degree(x) >= 3}
    if not ends:
        return None
    core = irreducible(work.adj)
    hubs = [x for x in ends if x in core]
    return max(hubs, key=rank) if hubs else None


def fix_hub(work: Work, hub: int, series: set[int], heuristic: Heuristic) -> bool:
    """Heuristic elimination of ``hub``, scored as if the chains of series nodes at it
    were contracted and their parallel edges merged; True when done. False, and nothing
    done, when the chains cannot be scored so (``virtual_chains`` gives None: an empty
    cell, a chain back to the hub): contracting them would run the products the rule is
    there to avoid."""
    chains = virtual_chains(work, hub, series, shared_ends=True)
    if chains is None:
        return False
    work.heuristic_elim(hub, heuristic, chains, shared_ends=True)
    work.tally.hubs_fixed += 1
    return True
