"""The last phase: LDP (Algorithm 3) on paths, enumeration of two-node remainders.

After ``Work.reduce_graph`` every component is a path (method "ldp") or has at most two
nodes (method "elimination"). A component's cost frontier is a one-cell table:

* path v1 - v2 - ... - vn: ``CF(v1) = F(v1)``, then for i = 2..n
  ``CF(vi, p) = reduce(U_k CF(v(i-1), k) (x) F(e, k, p)) (x) F(vi, p)`` -- each step is
  ``Work.fold`` of the head into the next node, batched over k and p in numpy -- and
  finally the union over the last node's configurations. The path is folded from both
  ends into its middle node v(m); the last fold and the union over v(m)'s
  configurations are one merge (``Work.meet``): the union of the two sides' products.
  A fold's work grows with the points per cell of the part folded so far, and those
  grow with its length (its times spread wider while each reduction may thin only by
  its own share of epsilon), so two halves cost less than one whole: on a random
  400-node chain (``hard:chain:400:256``, epsilon 0.05, one thread) 173 s instead of
  444 s;
* two nodes u - v: every (k, p) pair is enumerated (the same kernel, once).

The whole graph's frontier is the product of the components' frontiers and of the
frontiers fixed aside by heuristic elimination.

Usage::

    tid = finish(work, method)      # table id of the one-cell frontier of the graph
"""

from __future__ import annotations

import numpy as np

from frontier._eliminate import Work
from frontier._structure import components
from frontier._table import single_point_cells
from frontier._values import union_all

__all__ = ["finish", "path_order"]


def path_order(work: Work, comp: list[int]) -> list[int]:
    """The nodes of a path component from its lower-topological end to the other."""
    if len(comp) == 1:
        return comp
    ends = [v for v in comp if work.degree(v) == 1]
    assert len(ends) == 2, "component is not a path"
    v = min(ends, key=work.topo.__getitem__)
    out, prev = [v], None
    while len(out) < len(comp):
        nxt = [y for y in work.adj[v] if y != prev]
        assert len(nxt) == 1
        prev, v = v, nxt[0]
        out.append(v)
    return out


def _union(work: Work, v: int) -> int:
    nt = work.ntab[v]
    budget = work.budget(nt)

    def compute():
        t, idx = union_all(work.st.table(nt), budget=budget, counts=work.tally, rel=work.rel)
        return t, (idx,)
    return work.remembered("union", (nt,), (budget,), compute)


def finish(work: Work, method: str) -> int:
    """Solves every component and multiplies all factors; returns the final table id."""
    factors = list(work.factors)
    for comp in components(work):
        if method == "ldp":
            order = path_order(work, comp)
            work.tally.ldp_path_lengths.append(len(order))
            m = len(order) // 2
            last, met = order[m], None
            for side in (order[:m + 1], order[m:][::-1]):      # each end to order[m]
                for a, b in zip(side, side[1:]):
                    work.tally.ldp_steps += 1
                    if b == last and side[0] != order[0] and not single_point_cells(
                            work.st.table(work.ntab[last])):
                        met = work.meet(a, b)       # the second half meets the first
                    else:
                        work.fold(a, b)
            if met is not None:
                factors.append(met)
                continue
        else:
            assert len(comp) <= 2
            if len(comp) == 2:
                a, b = comp
                work.fold(a, b)
                work.tally.enumerations += 1
            last = comp[-1]
        factors.append(_union(work, last))
    acc = factors[0]
    for f in factors[1:]:
        acc = work.product(acc, f, np.zeros(1, np.int64))
    return acc
