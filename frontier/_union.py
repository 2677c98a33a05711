"""The Pareto union of frontiers found by runs that fixed configurations differently.

Heuristic elimination (Eq. 7) fixes one configuration per node for the whole frontier,
so one rule serves one end of it: ``"min_memory"`` keeps the low-memory plans and can
lose the fast ones (the tiny Transformer on 2 devices: fastest plan 12.4 ms under
``"min_memory"``, 2.7 ms under ``"min_time"``). ``track`` runs each rule it is given and
unions the results here::

    points, configs, alternatives, radii = pareto_union(
        [(points_a, cfg_a, alt_a, radii_a), (points_b, cfg_b, alt_b, radii_b)])

Every returned point is one of the inputs' (a real strategy). A point dropped for a kept
one with no more memory and no more time hands its radius on: the keeper's becomes
``max(r_keeper, r_dropped + t_keeper - t_dropped)``, so each exact point a dropped point
stood for is still covered within the keeper's radius.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["pareto_union"]


def pareto_union(frontiers: Sequence[tuple]) -> tuple[list[tuple[float, float]], np.ndarray,
                                                       np.ndarray, np.ndarray]:
    """The non-dominated points of ``frontiers``, memory ascending and time strictly
    descending, with their rows of configurations and alternatives and their radii.

    Each frontier is ``(points, node_configs, edge_alternatives, radii)`` as a
    ``TrackResult`` holds them; all must be over the same graph.

    Raises:
        ValueError: no frontier, or frontiers over different numbers of nodes or edges.
    """
    if not frontiers:
        raise ValueError("pareto_union needs at least one frontier")
    widths = {(np.asarray(c).shape[1], np.asarray(a).shape[1]) for _, c, a, _ in frontiers}
    if len(widths) != 1:
        raise ValueError(f"pareto_union: the frontiers are over different graphs "
                         f"((nodes, edges) per frontier: {sorted(widths)})")
    mem = np.concatenate([np.array([p[0] for p in pts], dtype=float) for pts, _, _, _ in frontiers])
    tim = np.concatenate([np.array([p[1] for p in pts], dtype=float) for pts, _, _, _ in frontiers])
    rad = np.concatenate([np.asarray(r, dtype=float) if len(r) else np.zeros(len(pts))
                          for pts, _, _, r in frontiers])
    order = np.lexsort((tim, mem))          # memory ascending, the faster first on a tie
    kept: list[int] = []
    radii: list[float] = []
    for i in order:
        if kept and tim[i] >= tim[kept[-1]]:    # dominated by the last kept point
            k = kept[-1]
            radii[-1] = max(radii[-1], rad[i] + tim[k] - tim[i])
            continue
        kept.append(int(i))
        radii.append(float(rad[i]))
    idx = np.array(kept, dtype=np.int64)
    points = [(float(mem[i]), float(tim[i])) for i in idx]
    return points, _kept_rows(frontiers, 1, idx), _kept_rows(frontiers, 2, idx), np.array(radii)


def _kept_rows(frontiers: Sequence[tuple], column: int, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` (numbered across ``frontiers`` in order) of each frontier's array
    ``column`` (1: configurations, 2: alternatives), gathered from each frontier
    without concatenating them all first (on PaSE's InceptionV3 at 16 devices, one
    rule's rows alone take 1 GB)."""
    arrays = [np.asarray(f[column]) for f in frontiers]
    starts = np.cumsum([0] + [len(a) for a in arrays])
    owner = np.searchsorted(starts, idx, side="right") - 1
    out = np.empty((len(idx), arrays[0].shape[1]), dtype=np.result_type(*arrays))
    for f, rows in enumerate(arrays):
        mine = owner == f
        out[mine] = rows[idx[mine] - starts[f]]
    return out
