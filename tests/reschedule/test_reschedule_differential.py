"""Differential tests of the re-scheduling planner on seeded random cases.

For thousands of random (src, dst, shape) cases on meshes of 2-16 ranks, tensor ranks 1-4,
with and without partial sums and mesh changes:

1. ``run_numpy`` of the plan gives exactly the destination blocks, computed independently
   from ``dst.shard_slices`` of the full tensor (int64 data, so sums are exact). For a
   partial destination, the blocks of each partial group must sum to that slice.
2. The plan's cost equals the minimum over ALL step sequences of up to
   ``max(4, len(plan))`` steps, found by an independent search written here: its own
   enumeration of layouts, its own transition table (pairs of layouts that differ in the
   role of exactly one mesh axis), its own per-rank boxes for the mesh-change step, and its
   own alpha-beta formulas; a truncated Bellman-Ford over that graph equals the minimum
   over every step sequence of that length.
3. Every step of the plan is an edge of that independent graph, with the same cost.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from reschedule import Layout, alpha_beta_cost, plan_conversion, run_numpy

N_BLOCKS = 24
CASES_PER_BLOCK = 250          # 6000 random cases in all
COST_MODELS = [(10e-6, 12.5e9), (1e-9, 1e6), (1e-3, 1e12)]  # (alpha_s, bytes/s): mixed, bw-, latency-bound
ITEMSIZE = 4
STATS: Counter = Counter()


# ---------------------------------------------------------------- random cases
def ordered_factorizations(n: int) -> list[tuple[int, ...]]:
    if n == 1:
        return [()]
    out = []
    for f in range(2, n + 1):
        if n % f == 0:
            out += [(f,) + rest for rest in ordered_factorizations(n // f)]
    return out


def random_layout(rng, mesh, shape, allow_partial: bool) -> tuple[tuple[int, ...], frozenset]:
    tmap = [-1] * len(shape)
    partial = set()
    for a in rng.permutation(len(mesh)):
        a = int(a)
        choices = ["R"] + (["P"] if allow_partial else []) + [
            d for d in range(len(shape)) if tmap[d] == -1 and shape[d] % mesh[a] == 0]
        c = choices[rng.integers(len(choices))]
        if c == "P":
            partial.add(a)
        elif c != "R":
            tmap[c] = a
    return tuple(tmap), frozenset(partial)


def random_case(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 17))
    meshes = ordered_factorizations(n)
    mesh_a = meshes[rng.integers(len(meshes))]
    mesh_b = mesh_a
    if rng.random() < 0.5 and len(meshes) > 1:
        while mesh_b == mesh_a:
            mesh_b = meshes[rng.integers(len(meshes))]
    ndim = int(rng.integers(1, 5))
    factors = sorted(set(mesh_a) | set(mesh_b))
    for _ in range(100):
        shape = []
        for _d in range(ndim):
            size = int(rng.choice([1, 1, 2, 3]))
            for f in factors:
                if rng.random() < 0.5:
                    size *= f
            shape.append(size)
        if math.prod(shape) <= 3000:
            break
    shape = tuple(shape)
    allow_partial = rng.random() < 0.5
    tmap, partial = random_layout(rng, mesh_a, shape, allow_partial)
    src = Layout(mesh_a, tmap, partial)
    tmap_b, _ = random_layout(rng, mesh_b, shape, False)
    dst_partial = frozenset()
    if mesh_b == mesh_a and partial:
        dst_partial = frozenset(a for a in partial if rng.random() < 0.4)
        tmap_b = tuple(-1 if a in dst_partial else a for a in tmap_b)
    dst = Layout(mesh_b, tmap_b, dst_partial)
    cost = COST_MODELS[seed % len(COST_MODELS)]
    return src, dst, shape, cost


# ---------------------------------------------------------------- independent reference
def roles(lay: Layout) -> tuple:
    """Per mesh axis: 'P', 'R' or the tensor dim it splits (an int)."""
    out = []
    for a in range(len(lay.mesh)):
        if a in lay.partial:
            out.append("P")
        elif a in lay.tensor_map:
            out.append(lay.tensor_map.index(a))
        else:
            out.append("R")
    return tuple(out)


def from_roles(mesh, ndim, rls) -> Layout:
    tmap = [-1] * ndim
    for a, r in enumerate(rls):
        if isinstance(r, int):
            tmap[r] = a
    return Layout(tuple(mesh), tuple(tmap), frozenset(a for a, r in enumerate(rls) if r == "P"))


def all_layouts(mesh, shape, partial_allowed) -> list[tuple]:
    """Every role vector on mesh: axis -> R, P (if allowed), or a divisible dim, dims distinct."""
    per_axis = [["R"] + (["P"] if a in partial_allowed else [])
                + [d for d in range(len(shape)) if shape[d] % mesh[a] == 0]
                for a in range(len(mesh))]
    out = []
    for rls in itertools.product(*per_axis):
        dims = [r for r in rls if isinstance(r, int)]
        if len(dims) == len(set(dims)):
            out.append(rls)
    return out


def kind_of(before, after) -> str | None:
    """The transition table: which single-axis role change is which collective."""
    t = lambda r: "S" if isinstance(r, int) else r  # noqa: E731
    return {("R", "S"): "slice", ("S", "R"): "allgather", ("S", "S"): "alltoall",
            ("P", "R"): "allreduce", ("P", "S"): "reducescatter"}.get((t(before), t(after)))


def local_elems(mesh, shape, rls) -> int:
    n = math.prod(shape)
    for a, r in enumerate(rls):
        if isinstance(r, int):
            n //= mesh[a]
    return n


def ref_step_cost(kind, g, in_bytes, out_bytes, alpha, beta) -> float:
    if kind == "slice":
        return 0.0
    if kind == "allgather":
        return (g - 1) * alpha + (g - 1) / g * out_bytes * beta
    if kind in ("reducescatter", "alltoall"):
        return (g - 1) * alpha + (g - 1) / g * in_bytes * beta
    if kind == "allreduce":
        return 2 * (g - 1) * alpha + 2 * (g - 1) / g * in_bytes * beta
    raise AssertionError(kind)


def same_mesh_edges(mesh, shape, nodes, alpha, beta) -> dict:
    """{((mesh, u), (mesh, v)): (kind, cost)} for role vectors u, v differing in one axis."""
    edges = {}
    for a in range(len(mesh)):
        buckets: dict = {}
        for rls in nodes:
            buckets.setdefault(rls[:a] + ("*",) + rls[a + 1:], []).append(rls)
        for group in buckets.values():
            for u in group:
                for v in group:
                    kind = kind_of(u[a], v[a]) if u != v else None
                    if kind is None:
                        continue
                    ib = local_elems(mesh, shape, u) * ITEMSIZE
                    ob = local_elems(mesh, shape, v) * ITEMSIZE
                    edges[(mesh, u), (mesh, v)] = (
                        kind, ref_step_cost(kind, mesh[a], ib, ob, alpha, beta))
    return edges


def boxes(mesh, shape, rls) -> np.ndarray:
    """(ranks, dims, 2) half-open intervals of the full tensor each rank holds."""
    n = math.prod(mesh)
    coords = np.array(np.unravel_index(np.arange(n), mesh)).T  # row-major, last axis fastest
    out = np.zeros((n, len(shape), 2), dtype=np.int64)
    out[:, :, 1] = shape
    for a, r in enumerate(rls):
        if isinstance(r, int):
            size = shape[r] // mesh[a]
            out[:, r, 0] = coords[:, a] * size
            out[:, r, 1] = coords[:, a] * size + size
    return out


def cross_costs(mesh_a, mesh_b, shape, nodes_a, nodes_b, alpha, beta) -> np.ndarray:
    """Cost of the alltoallv from each non-partial node on A to each node on B."""
    ba = np.stack([boxes(mesh_a, shape, r) for r in nodes_a])[:, None]   # (A,1,N,D,2)
    bb = np.stack([boxes(mesh_b, shape, r) for r in nodes_b])[None]      # (1,B,N,D,2)
    ext = np.minimum(ba[..., 1], bb[..., 1]) - np.maximum(ba[..., 0], bb[..., 0])
    overlap = np.prod(np.clip(ext, 0, None), axis=-1)                    # (A,B,N)
    need = np.prod(bb[..., 1] - bb[..., 0], axis=-1)                     # (1,B,N)
    recv = (need - overlap).max(axis=-1) * ITEMSIZE                      # (A,B)
    n = math.prod(mesh_a)
    return np.where(recv == 0, 0.0, (n - 1) * alpha + recv * beta)


class Reference:
    """The independent graph of one case, and bounded exhaustive search on it."""

    def __init__(self, src: Layout, dst: Layout, shape, alpha, beta):
        self.src, self.dst = src, dst
        self.mesh_a, self.mesh_b, self.shape = src.mesh, dst.mesh, shape
        self.nodes_a = all_layouts(self.mesh_a, shape, src.partial)
        self.edges = same_mesh_edges(self.mesh_a, shape, self.nodes_a, alpha, beta)
        self.cross = None
        if self.mesh_b != self.mesh_a:
            self.nodes_b = all_layouts(self.mesh_b, shape, ())
            self.edges.update(same_mesh_edges(self.mesh_b, shape, self.nodes_b, alpha, beta))
            self.na_np = [r for r in self.nodes_a if "P" not in r]
            self.cross = cross_costs(self.mesh_a, self.mesh_b, shape, self.na_np, self.nodes_b,
                                     alpha, beta)
        self.out: dict = {}
        for (u, v), kc in self.edges.items():
            self.out.setdefault(u, []).append((v, kc[1]))

    def edge(self, u: Layout, v: Layout) -> tuple[str, float] | None:
        if u.mesh == v.mesh:
            return self.edges.get(((u.mesh, roles(u)), (v.mesh, roles(v))))
        if u.mesh == self.mesh_a and v.mesh == self.mesh_b and roles(u) in self.na_np:
            i, j = self.na_np.index(roles(u)), self.nodes_b.index(roles(v))
            return "alltoallv", float(self.cross[i, j])
        return None

    def min_cost(self, max_steps: int) -> float:
        """Minimum over all step sequences of at most max_steps steps (truncated Bellman-Ford)."""
        a, b = self.mesh_a, self.mesh_b
        dist = {(a, roles(self.src)): 0.0}
        for _ in range(max_steps):
            new = dict(dist)
            for node, d in dist.items():
                for v, w in self.out.get(node, ()):
                    if d + w < new.get(v, math.inf):
                        new[v] = d + w
            if self.cross is not None:
                da = np.array([dist.get((a, u), math.inf) for u in self.na_np])
                best = (da[:, None] + self.cross).min(axis=0)
                for v, d in zip(self.nodes_b, best):
                    if d < new.get((b, v), math.inf):
                        new[b, v] = float(d)
            dist = new
        return dist.get((b, roles(self.dst)), math.inf)


# ---------------------------------------------------------------- shards
def make_src_shards(rng, src: Layout, full: np.ndarray) -> dict[int, np.ndarray]:
    """Blocks of the full tensor; for a partial src, random terms per group summing to it."""
    shards = {r: full[src.shard_slices(r, full.shape)].copy() for r in range(src.num_ranks)}
    if src.partial:
        for group in partial_groups(src):
            total = shards[group[0]].copy()
            for r in group[1:]:
                shards[r] = rng.integers(-50, 50, size=total.shape)
            shards[group[0]] = total - sum(shards[r] for r in group[1:])
    return shards


def partial_groups(lay: Layout) -> list[list[int]]:
    """Ranks that differ only in the partial axes' coordinates."""
    groups: dict = {}
    for r in range(lay.num_ranks):
        c = np.unravel_index(r, lay.mesh)
        key = tuple(int(x) for a, x in enumerate(c) if a not in lay.partial)
        groups.setdefault(key, []).append(r)
    return list(groups.values())


def check_values(dst: Layout, full: np.ndarray, out: dict[int, np.ndarray]) -> None:
    assert sorted(out) == list(range(dst.num_ranks))
    if not dst.partial:
        for r in range(dst.num_ranks):
            np.testing.assert_array_equal(out[r], full[dst.shard_slices(r, full.shape)])
        return
    for group in partial_groups(dst):
        want = full[dst.shard_slices(group[0], full.shape)]
        for r in group:
            assert out[r].shape == want.shape
        np.testing.assert_array_equal(sum(out[r] for r in group), want)


# ---------------------------------------------------------------- the test
def run_case(seed: int) -> None:
    src, dst, shape, (alpha, bw) = random_case(seed)
    cost_fn = alpha_beta_cost(alpha_s=alpha, bandwidth_bytes_per_s=bw)
    conv = plan_conversion(src, dst, shape, itemsize=ITEMSIZE, cost_fn=cost_fn)
    rng = np.random.default_rng(10_000 + seed)
    full = rng.integers(-1000, 1000, size=shape)
    out = run_numpy(conv, make_src_shards(rng, src, full))
    check_values(dst, full, out)

    ref = Reference(src, dst, shape, alpha, 1.0 / bw)
    total = 0.0
    lay = src
    for step, sc in zip(conv.steps, conv.step_costs):
        assert step.src == lay, f"seed {seed}: steps do not chain"
        edge = ref.edge(step.src, step.dst)
        assert edge is not None, f"seed {seed}: {step} ({step.src} -> {step.dst}) is no edge"
        assert edge[0] == step.kind
        assert math.isclose(sc.time_s, edge[1], rel_tol=1e-9, abs_tol=1e-18), (seed, step)
        total += edge[1]
        lay = step.dst
        STATS[step.kind] += 1
    assert lay == dst
    assert math.isclose(conv.time_s, total, rel_tol=1e-9, abs_tol=1e-18)
    depth = max(4, len(conv.steps))
    best = ref.min_cost(depth)
    assert math.isclose(conv.time_s, best, rel_tol=1e-9, abs_tol=1e-18), (
        f"seed {seed}: {src} -> {dst} shape {shape}: plan '{conv}' costs {conv.time_s}, "
        f"exhaustive search over <= {depth} steps finds {best}")
    STATS["cases"] += 1
    STATS["partial_src"] += bool(src.partial)
    STATS["partial_dst"] += bool(dst.partial)
    STATS["mesh_change"] += src.mesh != dst.mesh
    STATS[f"ranks_{src.num_ranks}"] += 1
    STATS[f"ndim_{len(shape)}"] += 1
    STATS["longer_than_4"] += len(conv.steps) > 4


@pytest.mark.parametrize("block", range(N_BLOCKS))
def test_random_plans_are_correct_and_optimal(block):
    for seed in range(block * CASES_PER_BLOCK, (block + 1) * CASES_PER_BLOCK):
        run_case(seed)


def test_random_cases_cover_the_space():
    """Runs after the blocks (file order): the cases did exercise every feature."""
    if STATS["cases"] < N_BLOCKS * CASES_PER_BLOCK:
        pytest.skip("run the whole file to check coverage")
    print(dict(STATS))
    for kind in ("slice", "allgather", "alltoall", "allreduce", "reducescatter", "alltoallv"):
        assert STATS[kind] > 20, kind
    assert STATS["partial_src"] > 300 and STATS["partial_dst"] > 50
    assert STATS["mesh_change"] > 500
    for n in range(2, 17):
        assert STATS[f"ranks_{n}"] > 0
    for d in range(1, 5):
        assert STATS[f"ndim_{d}"] > 300
