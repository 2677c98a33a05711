"""Which elimination runs when (Algorithm 2's loop), and the linear backbone of LDP.

``reduce_graph`` eliminates until every component of the working graph is a path
("ldp") or has at most two nodes ("elimination"): parallel edges first, then nodes with
two neighbours, then leaves, and heuristic elimination only when no exact one applies.
For "ldp" the first node of each component is marked and the marks are extended along
single downstream neighbours (Section 3.2); marked nodes are not eliminated, so the
backbone left for LDP is a long path.

Deferred series nodes: eliminating a node with two neighbours h, j (a "series" node)
changes no other node's degree unless h and j are already joined, by an edge or by
another chain of series nodes (then it makes parallel edges). Such an elimination is
therefore never what makes a heuristic elimination unnecessary, and when its product
is large (``DEFER_CANDIDATES``, estimated from the points per cell of its tables) it
waits: a heuristic elimination that is due anyway often turns it into a cheap leaf
fold, or cuts the tables it would multiply. Heuristic elimination ranks and scores
nodes as if the waiting chains were contracted, so it fixes the same nodes, and on an
exact run (no epsilon) the same configurations, as without waiting. It scores the
chains next to the node it fixes from their cells' least memory and time
(``chain_minima``, ``VIRTUAL_CHAINS``) without multiplying them, and after it their
nodes are leaves that fold, which is far cheaper than contracting them first: in
InceptionV3 a batch norm's add_1 (279 configurations) between its two multiplies made
23M candidates when contracted. A waiting node is eliminated when no heuristic
elimination is left; LDP folds the ones left on paths. Ready series nodes go in the
order of their estimated products (``SERIES_BY_ESTIMATE``).

Backbone triangles: a backbone node whose two neighbours are joined by an edge is not on
a path LDP can use, and eliminating it (exact) can be far cheaper than eliminating the
free node beside it: in InceptionV3 the conv node that starts the last batch norm's
backbone has 95 configurations, the free node carrying the network's tail 9 but with
~140 points each, and eliminating the latter spreads them over 225 x 117 cells. Such a
backbone node goes instead of the free series node that would go next when the edge it
leaves has fewer cells (K_h * K_j), or as many and its product is estimated smaller, and
the rest of its component is reduced by exact eliminations alone, so that no heuristic
choice can depend on it (``BACKBONE_TRIANGLES``). Cells first: the estimates bound the
candidates from above and can be far off (ResNet101's last batch norm: the mean, 2G
estimated, made 5.5M candidates; the conv, 15.6M estimated and made, left a 541 x 279
edge whose merge with a 9M-point one made 27.6M points).

Usage::

    reduce_graph(work, "ldp", "min_memory")
    for comp in components(work): ...
"""

from __future__ import annotations

from typing import Iterable, Optional

import numpy as np

from frontier._eliminate import Chain, Heuristic, Work

__all__ = ["reduce_graph", "components", "is_path", "chain_minima", "DEFER_CANDIDATES",
           "BACKBONE_TRIANGLES", "SERIES_BY_ESTIMATE", "VIRTUAL_CHAINS"]

#: A series elimination whose product is estimated to make more candidate points than
#: this waits for the heuristic eliminations that are due (see the module doc); tests
#: set it to 0 (every series node waits) or None (none does).
DEFER_CANDIDATES: Optional[float] = 1_000_000.0

#: Whether a backbone node with two neighbours that are joined by an edge (a triangle,
#: so no path through it is left for LDP there) may be eliminated like a free one: it
#: is, instead of the free series node that would go next, when its product is
#: estimated smaller and its component needs no heuristic elimination nor backbone
#: (``_reducible_without``). Tests turn it off to compare.
BACKBONE_TRIANGLES = True

#: Whether the series node eliminated next is the one whose product is estimated
#: smallest (``_series_candidates``, from the tables' points per cell) rather than the
#: one with the fewest blocks (``_node_cost``, K_h * K_v * K_j). Tests turn it off.
SERIES_BY_ESTIMATE = True

#: Whether a heuristic elimination scores its node as if the waiting chains at it were
#: contracted (``chain_minima``: least memory and time per cell, no frontier
#: multiplied) instead of contracting them first; after it, the chains' nodes are
#: leaves and fold, which multiplies far less. Tests turn it off to compare.
VIRTUAL_CHAINS = True


def components(work: Work) -> list[list[int]]:
    """Connected components of the current graph, each sorted by topological index."""
    seen: set[int] = set()
    comps = []
    for s in sorted(work.adj, key=work.topo.__getitem__):
        if s in seen:
            continue
        comp, stack = [], [s]
        seen.add(s)
        while stack:
            x = stack.pop()
            comp.append(x)
            for y in work.adj[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        comps.append(sorted(comp, key=work.topo.__getitem__))
    return comps


def is_path(work: Work, comp: list[int]) -> bool:
    nedges = sum(work.degree(v) for v in comp) // 2
    return all(work.degree(v) <= 2 for v in comp) and nedges == len(comp) - 1


def _extend_marks(work: Work) -> None:
    """Marks the linear backbone: a tail's single downstream neighbour is marked."""
    if not work.marking:
        return
    for i, tail in enumerate(work.tails):
        while tail in work.adj:
            down = [y for y in work.adj[tail] if work.topo[y] > work.topo[tail]]
            if len(down) != 1 or down[0] in work.marked:
                break
            tail = down[0]
            work.marked.add(tail)
        work.tails[i] = tail


def _start_backbones(work: Work, waiting: Iterable[int] = ()) -> bool:
    """Marks the first node of every component that has no marked node (the first that
    is not a waiting series node, which the graph without waiting would not have)."""
    new = False
    for comp in components(work):
        if not any(v in work.marked for v in comp):
            first = next((v for v in comp if v not in waiting), comp[0])
            work.marked.add(first)
            work.tails.append(first)
            new = True
    return new


def _is_source(work: Work, v: int, nbrs: Iterable[int]) -> bool:
    """No neighbour before v: all its edges are out-going, as in Eq. (7)."""
    return all(work.topo[y] > work.topo[v] for y in nbrs)


def _span(work: Work, v: int, nbrs: Iterable[int]) -> int:
    """How far in topological order v's edges reach (a mask used by every layer
    reaches from the first layer to the last)."""
    pos = [work.topo[y] for y in nbrs] + [work.topo[v]]
    return max(pos) - min(pos)


def _walk(work: Work, prev: int, cur: int, series: set[int]) -> tuple[int, list[int]]:
    """Follows the edge prev -> cur on through series nodes; returns the first node that
    is not one (prev's neighbour once the chain is contracted) and the series nodes
    passed. On a cycle of series nodes it stops where it started."""
    start, passed = prev, []
    while cur in series and cur != start:
        passed.append(cur)
        prev, cur = cur, next(y for y in work.adj[cur] if y != prev)
    return cur, passed


def _closes(work: Work, v: int, series: set[int]) -> tuple[bool, set[int]]:
    """True when contracting v's chain of series nodes would make parallel edges (or a
    loop): its two ends are the same node, or are joined by an edge or another chain.
    Also returns the nodes the answer depends on (their edges and series status)."""
    h, j = work.adj[v]
    a, left = _walk(work, v, h, series)
    b, right = _walk(work, v, j, series)
    chain = {v, *left, *right}
    deps = chain | {a, b}
    if a == b or a == v or b == v:
        return True, deps
    for y in work.adj[a]:
        if y in chain:
            continue
        end, passed = _walk(work, a, y, series)
        deps.add(end)
        deps.update(passed)
        if end == b:
            return True, deps
    return False, deps


def _series_candidates(work: Work, v: int) -> float:
    """Estimated candidate points of ``node_elim(v)``: per configuration k of v, the
    points of h-v at k (all of h's configurations), times v's own points at k, times
    the points of v-j at k."""
    sums = []
    for y in work.adj[v]:
        (wid,) = work.adj[v][y]
        u, w, tid = work.edges[wid]
        c = work.st.table(tid).counts().reshape(work.K[u], work.K[w])
        sums.append(c.sum(axis=1) if u == v else c.sum(axis=0))
    own = work.st.table(work.ntab[v]).counts()
    return float(np.dot(sums[0] * own, sums[1].astype(float)))


class _Waits:
    """Which series nodes wait (see the module doc), each answer remembered until a
    node it depends on is touched (``Work.touched``) or the backbone marks change."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.verdict: dict[int, bool] = {}
        self.users: dict[int, set[int]] = {}      # node -> verdicts that depend on it
        self.marks: set[int] = set()
        self.waited: set[int] = set()
        self.estimates: dict[int, float] = {}     # _series_candidates, until v is touched

    def forget(self, touched: set[int]) -> None:
        if self.work.marked != self.marks:
            self.verdict.clear()
            self.users.clear()
            self.marks = set(self.work.marked)
        for x in touched:
            self.estimates.pop(x, None)
            for v in self.users.pop(x, ()):
                self.verdict.pop(v, None)

    def estimate(self, v: int) -> float:
        """``_series_candidates(v)``; it depends on v's own tables only, and changing
        them touches v."""
        if v not in self.estimates:
            self.estimates[v] = _series_candidates(self.work, v)
        return self.estimates[v]

    def waits(self, v: int, series: set[int]) -> bool:
        if DEFER_CANDIDATES is None:
            return False
        if v not in self.verdict:
            if self.estimate(v) <= DEFER_CANDIDATES:
                wait, deps = False, {v}
            else:
                closes, deps = _closes(self.work, v, series)
                wait = not closes
            self.verdict[v] = wait
            if wait and v not in self.waited:
                self.waited.add(v)
                self.work.tally.waited_series += 1
            for d in deps:
                self.users.setdefault(d, set()).add(v)
        return self.verdict[v]

    def next_series(self, two: list[int], series: set[int]) -> Optional[int]:
        """The series node to eliminate now, of those that do not wait: the smallest
        estimated product, then the fewest cells left (``SERIES_BY_ESTIMATE``; else the
        fewest blocks, ``_node_cost``); None when all wait."""
        ready = [v for v in two if not self.waits(v, series)]
        if not ready:
            return None
        if SERIES_BY_ESTIMATE:
            return min(ready, key=lambda x: (self.estimate(x), _out_cells(self.work, x),
                                             self.work.topo[x]))
        return min(ready, key=lambda x: _node_cost(self.work, x))

    def backbone_triangle(self, v: int, marked_two: Iterable[int]) -> int:
        """v, or a backbone node in a triangle that leaves fewer cells, or as many and
        whose product is estimated smaller (see ``BACKBONE_TRIANGLES``)."""
        if not BACKBONE_TRIANGLES:
            return v
        adj = self.work.adj
        best, least = v, (_out_cells(self.work, v), self.estimate(v))
        for m in marked_two:
            h, j = adj[m]
            cost = (_out_cells(self.work, m), self.estimate(m))
            if j in adj[h] and cost < least and _reducible_without(self.work, m):
                best, least = m, cost
        if best != v:
            self.work.tally.backbone_triangles += 1
        return best


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
    queue = [x for x in adj if len(adj[x]) <= 2]
    while queue and len(adj) > 1:
        x = queue.pop()
        if x not in adj or len(adj[x]) > 2:
            continue
        nb = adj.pop(x)
        for y in nb:
            adj[y].discard(x)
        if len(nb) == 2:
            a, b = nb
            adj[a].add(b)
            adj[b].add(a)
        queue.extend(nb)
    return len(adj) == 1


def _contract_next_to(work: Work, x: int, series: set[int]) -> None:
    """Eliminates the waiting series nodes on the chains at x, cheapest first, so that
    x's edges are those of the graph without waiting."""
    for y in list(work.adj[x]):
        if y in series:
            chain = _walk(work, x, y, series)[1]
            while chain:
                v = min(chain, key=lambda c: _node_cost(work, c))
                chain.remove(v)
                work.node_elim(v)
                work.tally.deferred_contractions += 1


def chain_minima(work: Work, v: int, y: int, series: set[int]) -> Optional[Chain]:
    """What ``_contract_next_to`` would make of the chain of series nodes from v
    through its neighbour y, for ``Work.choose_config``: ``(x, mem, time)``, the node at
    the chain's other end and the least memory and least time of every cell (k_v, k_x)
    of the edge v-x, without multiplying any frontier.

    The least memory (time) of a cell of a node elimination's product is the least over
    the middle configuration of the sum of its parts' least memories (times), since
    rounding is monotone; the sums are formed as the kernels form the candidates'
    (the topologically earlier edge, plus the node, plus the other edge) and the chain's
    nodes go in ``_contract_next_to``'s order, so on an exact run the scores are the
    same to the bit. (With epsilon a contracted cell's least time may be thinned; the
    least memory never is.)
    """
    x, passed = _walk(work, v, y, series)
    seq = [v, *passed, x]
    mats = []
    for a, b in zip(seq[:-1], seq[1:]):
        (wid,) = work.adj[a][b]
        u, _, tid = work.edges[wid]
        t = work.st.table(tid)
        if t.ncells and t.counts().min() == 0:
            return None
        mem = t.mem[t.off[:-1]].reshape(work.K[u], -1)
        time = t.time[t.off[1:] - 1].reshape(work.K[u], -1)
        mats.append((mem, time) if u == a else (mem.T, time.T))
    K, topo = work.K, work.topo
    while len(seq) > 2:
        i = min(range(1, len(seq) - 1),
                key=lambda i: (K[seq[i - 1]] * K[seq[i]] * K[seq[i + 1]], topo[seq[i]]))
        s = seq[i]
        nt = work.st.table(work.ntab[s])
        node = (nt.mem[nt.off[:-1]], nt.time[nt.off[1:] - 1])
        left, right = mats[i - 1], mats[i]
        early_left = topo[seq[i - 1]] < topo[seq[i + 1]]
        out = []
        for r in range(2):
            a, b, n = left[r], right[r], node[r]
            acc = np.full((a.shape[0], b.shape[1]), np.inf)
            for k in range(len(n)):
                if early_left:
                    cand = (a[:, k, None] + n[k]) + b[None, k, :]
                else:
                    cand = (b[None, k, :] + n[k]) + a[:, k, None]
                np.minimum(acc, cand, out=acc)
            out.append(acc)
        seq.pop(i)
        mats[i - 1:i + 1] = [(out[0], out[1])]
    return x, mats[0][0], mats[0][1]


def _virtual_chains(work: Work, v: int, series: set[int]) -> Optional[dict[int, Chain]]:
    """``chain_minima`` of every chain of series nodes at v, by its first node; None
    when two chains (or a chain and an edge) would end at the same node, or a chain has
    an empty cell (then they are contracted for real, as ``VIRTUAL_CHAINS = False``
    does)."""
    chains = {}
    ends = {y for y in work.adj[v] if y not in series}
    for y in work.adj[v]:
        if y in series:
            chain = chain_minima(work, v, y, series)
            if chain is None or chain[0] in ends or chain[0] == v:
                return None
            x, mem, time = chain
            ends.add(x)
            chains[y] = (x, mem, time)
    work.tally.scored_chains += len(chains)
    return chains


def _out_cells(work: Work, v: int) -> int:
    """The cells of the edge ``node_elim(v)`` makes: K_h * K_j."""
    h, j = work.adj[v]
    return work.K[h] * work.K[j]


def _node_cost(work: Work, v: int) -> tuple:
    """How much work eliminating v (two neighbours) takes, roughly: the blocks of its
    product, K_h * K_v * K_j; ties by topological index. (Which series nodes wait is
    decided by ``_series_candidates``, from the tables' points per cell.)"""
    h, j = work.adj[v]
    cells = work.K[h] * work.K[v] * work.K[j]
    return cells, work.topo[v]


class _Index:
    """The nodes by degree (1, 2, 3 or more) and the nodes with parallel edges, kept
    up to date from ``Work.touched`` instead of rescanning the graph per elimination."""

    def __init__(self, work: Work) -> None:
        self.work = work
        self.by_degree: tuple[set[int], set[int], set[int]] = (set(), set(), set())
        self.parallel: dict[int, set[int]] = {}

    def refresh(self) -> set[int]:
        """Takes in the nodes touched since the last call; returns them."""
        work = self.work
        touched, work.touched = work.touched, set()
        for x in touched:
            for s in self.by_degree:
                s.discard(x)
            self.parallel.pop(x, None)
            nb = work.adj.get(x)
            if not nb:
                continue
            self.by_degree[min(len(nb), 3) - 1].add(x)
            multi = {y for y, wids in nb.items() if len(wids) > 1}
            if multi:
                self.parallel[x] = multi
        return touched

    def parallel_pair(self) -> Optional[tuple[int, int]]:
        if not self.parallel:
            return None
        u = min(self.parallel, key=self.work.topo.__getitem__)
        return u, min(self.parallel[u], key=self.work.topo.__getitem__)

    def marked(self, degree: int) -> list[int]:
        """Backbone nodes of that degree, in topological order."""
        marked = self.work.marked
        return sorted((v for v in self.by_degree[degree - 1] if v in marked),
                      key=self.work.topo.__getitem__)

    def free(self, degree: int, ldp: bool) -> list[int]:
        """Nodes of that degree (3: or more) not on the backbone, in topological order."""
        marked = self.work.marked if ldp else ()
        return sorted((v for v in self.by_degree[degree - 1] if v not in marked),
                      key=self.work.topo.__getitem__)


def reduce_graph(work: Work, method: str, heuristic: Heuristic) -> None:
    """Eliminates until every component is a path ("ldp") or has at most two nodes
    ("elimination"). Exact eliminations go first, but for series nodes that wait (see
    the module doc). Heuristic elimination only when no other applies, of a node off
    the backbone with three or more neighbours, preferring (in order) a source (all
    edges out-going, as Eq. 7 is stated; a mask is one), the widest reach in
    topological order, the most neighbours; neighbours are counted as if the waiting
    chains were contracted."""
    ldp = method == "ldp"
    index = _Index(work)
    waits = _Waits(work)
    if ldp:
        _start_backbones(work)
    while True:
        if ldp:
            _extend_marks(work)
        waits.forget(index.refresh())
        pair = index.parallel_pair()
        if pair is not None:
            work.edge_elim(*pair)
            continue
        two = index.free(2, ldp)
        series = set(two)
        v = waits.next_series(two, series) if two else None
        if v is not None:
            if ldp:
                v = waits.backbone_triangle(v, index.marked(2))
            work.node_elim(v)
            continue
        v = next((v for v in index.free(1, ldp)
                  if ldp or work.degree(next(iter(work.adj[v]))) >= 2), None)
        if v is not None:
            work.fold(v, next(iter(work.adj[v])))
            work.tally.branch_eliminations += 1
            continue
        comps = components(work)
        if ldp:
            if all(is_path(work, c) for c in comps):
                return
            if work.marking and _start_backbones(work, series):
                continue
        elif all(len(c) <= 2 for c in comps):
            return
        cand = index.free(3, ldp)
        if not cand and two:        # only waiting series nodes can go
            work.node_elim(min(two, key=lambda v: _node_cost(work, v)))
            continue
        if not cand:
            # Only backbone nodes are left and they do not form a path: give up the
            # backbone and let exact eliminations work on all nodes.
            assert ldp and work.marking
            work.marking = False
            work.marked.clear()
            work.tails.clear()
            work.tally.backbone_fallbacks += 1
            continue
        ends = {x: [_walk(work, x, y, series)[0] for y in work.adj[x]] for x in cand}
        v = max(cand, key=lambda x: (_is_source(work, x, ends[x]), _span(work, x, ends[x]),
                                     work.degree(x), -work.topo[x]))
        chains = _virtual_chains(work, v, series) if VIRTUAL_CHAINS else None
        if chains is None:
            _contract_next_to(work, v, series)
        work.heuristic_elim(v, heuristic, chains)
