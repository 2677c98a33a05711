"""Scored chains: the waiting series nodes next to a heuristic elimination's node.

A heuristic elimination must fix the same node, and on an exact run the same
configuration, as if the waiting chains of series nodes (``_series``) had been
contracted. It scores the chains next to the node it fixes from their cells' least
memory and time (``chain_minima``, ``VIRTUAL_CHAINS``) without multiplying them, and
after it their nodes are leaves that fold, which is far cheaper than contracting them
first: in InceptionV3 a batch norm's add_1 (279 configurations) between its two
multiplies made 23M candidates when contracted. Where a chain cannot be scored that way,
``contract_next_to`` contracts the chains for real before the heuristic elimination.

Usage::

    chains = virtual_chains(work, v, series)     # None: contract them instead
    if chains is None:
        contract_next_to(work, v, series)
    work.heuristic_elim(v, heuristic, chains)
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from frontier._eliminate import Chain, Work
from frontier._series import node_cost, walk

__all__ = ["chain_minima", "virtual_chains", "contract_next_to", "VIRTUAL_CHAINS"]

#: Whether a heuristic elimination scores its node as if the waiting chains at it were
#: contracted (``chain_minima``: least memory and time per cell, no frontier
#: multiplied) instead of contracting them first; after it, the chains' nodes are
#: leaves and fold, which multiplies far less. Tests turn it off to compare.
VIRTUAL_CHAINS = True


def contract_next_to(work: Work, x: int, series: set[int]) -> None:
    """Eliminates the waiting series nodes on the chains at x, cheapest first, so that
    x's edges are those of the graph without waiting."""
    for y in list(work.adj[x]):
        if y in series:
            chain = walk(work, x, y, series)[1]
            while chain:
                v = min(chain, key=lambda c: node_cost(work, c))
                chain.remove(v)
                work.node_elim(v)
                work.tally.deferred_contractions += 1


def chain_minima(work: Work, v: int, y: int, series: set[int]) -> Optional[Chain]:
    """What ``contract_next_to`` would make of the chain of series nodes from v
    through its neighbour y, for ``Work.choose_config``: ``(x, mem, time)``, the node at
    the chain's other end and the least memory and least time of every cell (k_v, k_x)
    of the edge v-x, without multiplying any frontier.

    The least memory (time) of a cell of a node elimination's product is the least over
    the middle configuration of the sum of its parts' least memories (times), since
    rounding is monotone; the sums are formed as the kernels form the candidates'
    (the topologically earlier edge, plus the node, plus the other edge) and the chain's
    nodes go in ``contract_next_to``'s order, so on an exact run the scores are the
    same to the bit. (With epsilon a contracted cell's least time may be thinned; the
    least memory never is.)
    """
    x, passed = walk(work, v, y, series)
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


def virtual_chains(work: Work, v: int, series: set[int],
                   shared_ends: bool = False) -> Optional[dict[int, Chain]]:
    """``chain_minima`` of every chain of series nodes at v, by its first node; None
    when ``VIRTUAL_CHAINS`` is off, or two chains (or a chain and an edge) would end at
    the same node, or a chain has an empty cell (then they are contracted for real,
    ``contract_next_to``), or a chain comes back to v.

    With ``shared_ends`` chains may end where another chain or an edge of v ends:
    ``Work.choose_config(..., shared_ends=True)`` then scores the edges that end at one
    node as the one edge that merging them would make (``_hubs``)."""
    if not VIRTUAL_CHAINS:
        return None
    chains = {}
    ends = {y for y in work.adj[v] if y not in series}
    for y in work.adj[v]:
        if y in series:
            chain = chain_minima(work, v, y, series)
            if chain is None or chain[0] == v or (chain[0] in ends and not shared_ends):
                return None
            x, mem, time = chain
            ends.add(x)
            chains[y] = (x, mem, time)
    work.tally.scored_chains += len(chains)
    return chains
