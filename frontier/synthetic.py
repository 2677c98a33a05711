"""Seeded synthetic cost graphs: small random ones for tests, model-shaped ones for bench.

Usage::

    rng = np.random.default_rng(0)
    g = random_graph(rng, "series_parallel")       # small, for brute force
    g = model_graph("residual", n=400, k=256, seed=0)   # chain | residual | transformer
    g = hard_graph("shortcut", n=400, k=128, seed=0)    # chain | shortcut

Model-shaped costs: configuration k of an op of size s has a sharding degree d_k in
[0, 1]; memory falls and time rises with d_k (so every op has a trade-off), and k has a
layout class ``k % L``. An edge is free when producer and consumer layouts match;
otherwise it costs a re-sharding time that depends on the pair of classes, with up to
three alternatives (keep a saved copy: more memory, or drop it: negative memory and a
recompute time), as the tensor-reuse choices of the cost model do.

Hard graphs (``hard_graph``) have unstructured random costs instead: no layout classes,
no repeated blocks, no ties, so nothing can be shared and frontiers are as rich as
random points make them.
"""

from __future__ import annotations

import numpy as np

from frontier.graph import CostGraph

__all__ = ["random_graph", "model_graph", "hard_graph", "SMALL_SHAPES", "MODEL_SHAPES",
           "HARD_SHAPES"]

SMALL_SHAPES = ("chain", "series_parallel", "residual", "diamond", "multi", "mask", "dag")
MODEL_SHAPES = ("chain", "residual", "transformer")
HARD_SHAPES = ("chain", "shortcut")


# ------------------------------------------------------------------ small random graphs
def _costs(rng: np.random.Generator, shape: tuple, integer: bool, neg: bool) -> np.ndarray:
    if integer:
        c = rng.integers(0, 6, size=shape).astype(float)
    else:
        c = rng.random(shape) * 10
    if neg:
        c[..., 0] -= 3.0 * rng.random(shape[:-1]) if not integer else rng.integers(0, 4, shape[:-1])
    return c


def _edge_costs(rng, ka, kb, integer, neg, amax):
    """Nested lists (ragged: 1..amax alternatives per pair) or an array, at random."""
    if rng.random() < 0.5:
        a = int(rng.integers(1, amax + 1))
        arr = _costs(rng, (ka, kb, a, 2), integer, neg)
        return arr if a > 1 or rng.random() < 0.5 else arr[:, :, 0, :]
    return [[[tuple(x) for x in _costs(rng, (int(rng.integers(1, amax + 1)), 2), integer, neg)]
             for _ in range(kb)] for _ in range(ka)]


def random_graph(rng: np.random.Generator, shape: str, kmax: int = 3, amax: int = 3,
                 max_strategies: int = 4000) -> CostGraph:
    """A small random graph of the given shape (see ``SMALL_SHAPES``).

    The number of strategies (configurations x edge alternatives) is kept below
    ``max_strategies`` by shrinking K and the alternatives, so brute force stays fast.
    """
    integer = bool(rng.random() < 0.5)
    neg = bool(rng.random() < 0.5)
    edges = _shape_edges(rng, shape)
    n = 1 + max([max(e) for e in edges] + [0])
    n = max(n, int(rng.integers(1, 3)) if not edges else n)
    while True:
        ks = [int(rng.integers(1, kmax + 1)) for _ in range(n)]
        size = float(np.prod(ks)) * float(amax) ** len(edges)
        if size <= max_strategies or (kmax == 1 and amax == 1):
            break
        if amax > 1 and rng.random() < 0.5:
            amax -= 1
        else:
            kmax = max(1, kmax - 1)
    g = CostGraph()
    for v in range(n):
        g.add_node(f"n{v}", _costs(rng, (ks[v], 2), integer, False))
    for u, v in edges:
        g.add_edge(u, v, _edge_costs(rng, ks[u], ks[v], integer, neg, amax))
    return g


def _sp(rng, s, t, nodes, edges, budget):
    """Series-parallel between s and t."""
    r = rng.random()
    if budget[0] <= 0 or r < 0.3:
        edges.append((s, t))
        return
    if r < 0.65:
        m = len(nodes)
        nodes.append(m)
        budget[0] -= 1
        _sp(rng, s, m, nodes, edges, budget)
        _sp(rng, m, t, nodes, edges, budget)
    else:
        _sp(rng, s, t, nodes, edges, budget)
        _sp(rng, s, t, nodes, edges, budget)


def _shape_edges(rng: np.random.Generator, shape: str) -> list[tuple[int, int]]:
    if shape == "chain":
        n = int(rng.integers(1, 8))
        return [(i, i + 1) for i in range(n - 1)] or [(0, 0)][:0]
    if shape == "series_parallel":
        nodes, edges = [0, 1], []
        _sp(rng, 0, 1, nodes, edges, [int(rng.integers(1, 5))])
        # Relabel so that edges go from lower to higher topological position.
        return _topo_relabel(len(nodes), edges)
    if shape == "residual":
        blocks = int(rng.integers(1, 3))
        edges, x = [], 0
        nxt = 1
        for _ in range(blocks):
            inner = int(rng.integers(1, 3))
            prev = x
            for _ in range(inner):
                edges.append((prev, nxt))
                prev, nxt = nxt, nxt + 1
            edges.append((prev, nxt))
            edges.append((x, nxt))
            x, nxt = nxt, nxt + 1
        return edges
    if shape == "diamond":
        edges = [(0, 1), (0, 2), (1, 3), (2, 3)]
        for _ in range(int(rng.integers(1, 3))):
            edges.append(edges[int(rng.integers(0, len(edges)))])
        return edges
    if shape == "multi":
        # Two sources, two sinks, shared middle; possibly a disconnected extra node.
        edges = [(0, 2), (1, 2), (2, 3), (2, 4)]
        if rng.random() < 0.5:
            edges.append((1, 4))
        if rng.random() < 0.5:
            edges.append((5, 6))        # a second component
        return edges
    if shape == "mask":
        # A mask (node 0) feeding every block of a chain: needs heuristic elimination.
        blocks = int(rng.integers(2, 4))
        edges, x, nxt = [], 1, 2
        for _ in range(blocks):
            edges += [(x, nxt), (0, nxt), (nxt, nxt + 1), (x, nxt + 1)]
            x, nxt = nxt + 1, nxt + 2
        return edges
    if shape == "dag":
        n = int(rng.integers(2, 7))
        edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.45]
        return edges or [(0, 1)]
    raise ValueError(f"unknown small shape {shape!r}; expected one of {SMALL_SHAPES}")


def _topo_relabel(n: int, edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: dict[int, list[int]] = {v: [] for v in range(n)}
    indeg = [0] * n
    for u, v in edges:
        out[u].append(v)
        indeg[v] += 1
    order, ready = [], [v for v in range(n) if indeg[v] == 0]
    while ready:
        v = ready.pop(0)
        order.append(v)
        for w in out[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    pos = {v: i for i, v in enumerate(order)}
    return [(pos[u], pos[v]) for u, v in edges]


# ------------------------------------------------------------------ model-shaped graphs
def _model_edges(shape: str, n: int) -> tuple[int, list[tuple[int, int]]]:
    """Edges of an n-node model graph (node 0 is the input; ids are topological)."""
    if shape == "chain":
        return n, [(i, i + 1) for i in range(n - 1)]
    if shape == "residual":
        # x -> conv_a -> conv_b -> add(x, conv_b) -> ...
        edges, x, v = [], 0, 1
        while v + 3 <= n:
            edges += [(x, v), (v, v + 1), (v + 1, v + 2), (x, v + 2)]
            x, v = v + 2, v + 3
        while v < n:
            edges.append((v - 1, v))
            v += 1
        return n, edges
    if shape == "transformer":
        # node 1 is an attention mask used by every block.
        # block: q,k,v <- x; attn <- q,k,v,mask; proj; add1 <- x,proj; ff1; ff2; add2 <- add1,ff2
        edges, x, v = [], 0, 2
        edges_mask = []
        while v + 9 <= n:
            q, k_, vv, attn, proj, add1, ff1, ff2, add2 = range(v, v + 9)
            edges += [(x, q), (x, k_), (x, vv), (q, attn), (k_, attn), (vv, attn),
                      (1, attn), (attn, proj), (proj, add1), (x, add1), (add1, ff1),
                      (ff1, ff2), (ff2, add2), (add1, add2)]
            edges_mask.append(attn)
            x, v = add2, v + 9
        while v < n:
            edges.append((v - 1 if v > 2 else 0, v))
            v += 1
        return n, edges
    raise ValueError(f"unknown model shape {shape!r}; expected one of {MODEL_SHAPES}")


def model_graph(shape: str, n: int, k: int, seed: int = 0, layouts: int = 4,
                alternatives: int = 3, comm_us: int = 40, reshard_us: int = 1000) -> CostGraph:
    """An n-node graph shaped like a model, K configurations per op (see module doc).

    Costs are integers (bytes, microseconds), as measured costs are, and the blocks of a
    model repeat with the same tensor sizes (every ResNet block or transformer layer of
    a stage is the same), so many strategies tie exactly.
    """
    rng = np.random.default_rng(seed)
    n, edges = _model_edges(shape, n)
    period = {"chain": 4, "residual": 3, "transformer": 9}[shape]
    # Per position in the repeated block: tensor bytes and compute microseconds.
    size = (rng.integers(1, 9, size=period) * 2 ** 20).astype(np.int64)
    flops = (size >> 20) * rng.integers(comm_us // 3, comm_us, size=period)  # us at split 1
    split = rng.choice(np.array([1, 2, 4, 8, 16]), size=k)          # shard count
    extra = rng.integers(0, 4, size=k)                              # layout-specific comm
    cls = np.arange(k) % layouts
    pos = np.array([max(v - 1, 0) % period for v in range(n)])
    g = CostGraph()
    for v in range(n):
        s, f = size[pos[v]], flops[pos[v]]
        mem = s // split
        comm = (s >> 20) * (comm_us * (split - 1) // split + 10 * extra)
        tim = f // split + comm
        g.add_node(f"op{v}", np.stack([mem, tim], axis=1).astype(np.float64))
    pair = rng.integers(reshard_us // 2, reshard_us * 2, size=(layouts, layouts))
    np.fill_diagonal(pair, 0)
    fanout = np.bincount([u for u, _ in edges], minlength=n)
    for u, v in edges:
        s = size[pos[u]]
        # Tensor-reuse alternatives exist for tensors with several consumers.
        alts = alternatives if fanout[u] > 1 else 1
        mb = s >> 20
        same = (cls[:, None] == cls[None, :]) & (split[:, None] == split[None, :])
        t0 = mb * (pair[cls[:, None], cls[None, :]] + 10 * (~same))
        t0 = np.where(same, 0, t0)
        buf = np.where(same, 0, s // split[None, :]) + 0 * split[:, None]
        arr = np.zeros((k, k, alts, 2))
        arr[:, :, 0, 0] = buf
        arr[:, :, 0, 1] = t0
        if alts > 1:       # keep the producer's copy: more memory, less time
            arr[:, :, 1, 0] = buf + np.where(same, 0, s // split[:, None])
            arr[:, :, 1, 1] = t0 - (t0 // 4)
        if alts > 2:       # drop a saved copy: negative memory, recompute time
            arr[:, :, 2, 0] = buf - np.where(same, 0, s // (2 * split[:, None]))
            arr[:, :, 2, 1] = t0 + np.where(same, 0, flops[pos[u]] // split[:, None])
        g.add_edge(u, v, arr)
    return g


# ------------------------------------------------------------------ hard random graphs
def hard_graph(shape: str, n: int, k: int, seed: int = 0,
               reuse_fraction: float = 0.05) -> CostGraph:
    """An n-node graph with unstructured random costs, K configurations per node.

    Shapes (``HARD_SHAPES``): "chain" (v -> v+1), and "shortcut": a chain plus an edge
    v -> v+4 from every fourth node, as residual blocks of three ops. A node's
    configuration costs (memory, time) uniform in [0, 1) GiB x [0, 1) ms, each on its own;
    an edge's pair (k, p) costs uniform in [0, 0.5) GiB x [0, 0.5) ms, and a share
    ``reuse_fraction`` of the pairs has a second, tensor-reuse alternative: more memory
    (up to 0.5 GiB more), less time (1/4 to 1 times as much). These are the "hard"
    graphs of issue 14: with random costs, frontiers grow large and nothing repeats.
    """
    if shape not in HARD_SHAPES:
        raise ValueError(f"unknown hard shape {shape!r}; expected one of {HARD_SHAPES}")
    if n < 1 or k < 1 or not 0 <= reuse_fraction <= 1:
        raise ValueError(f"hard_graph needs n >= 1, k >= 1 and reuse_fraction in [0, 1]; "
                         f"got n={n}, k={k}, reuse_fraction={reuse_fraction}")
    rng = np.random.default_rng(seed)
    gib, ms = float(2 ** 30), 1e-3
    edges = [(v, v + 1) for v in range(n - 1)]
    if shape == "shortcut":
        edges += [(v, v + 4) for v in range(0, n - 4, 4)]
    g = CostGraph()
    for v in range(n):
        g.add_node(f"op{v}", rng.random((k, 2)) * (gib, ms))
    pairs = k * k
    for u, v in sorted(edges):
        base = rng.random((pairs, 2)) * (gib / 2, ms / 2)
        two = rng.random(pairs) < reuse_fraction
        counts = 1 + two
        off = np.zeros(pairs + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
        mem = np.empty(off[-1])
        time = np.empty(off[-1])
        mem[off[:-1]], time[off[:-1]] = base[:, 0], base[:, 1]
        second = off[:-1][two] + 1
        mem[second] = base[two, 0] + rng.random(len(second)) * gib / 2
        time[second] = base[two, 1] * rng.uniform(0.25, 1.0, len(second))
        g.add_edge_flat(u, v, mem, time, off)
    return g
