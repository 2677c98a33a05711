"""Mesh-TensorFlow's space (Shazeer et al., 2018), searched exhaustively.

Mesh-TF lays the whole graph on one device mesh and gives every *named dimension* one
mesh axis (or none), the same in every op: a layout such as ``{batch: 0, hidden: 1}``.
Our recorded graph has no global names, so the names are recovered: two op dims are
one named dimension when a tensor carries one into the other (the producer's output
axis and the consumer's input axis), closed transitively; ``dim_classes`` computes them.

The search is **exhaustive**: every mesh of at most ``max_axes`` axes (default 2, the
batch x model meshes of Mesh-TF's own examples; 3 is allowed and much slower) and every
injective layout of named dimensions onto its axes, all priced by the cost model,
vectorized. Under a layout an op splits, along each mesh axis, its first dim of that
axis's name that the axis size divides (a dim that does not divide stays whole, where
Mesh-TF would refuse the layout); placeholders keep their data-parallel loading. The
result is the fastest layout whose plan fits the memory limit (or the fastest layout, not
fitting, when none does).

Usage::

    result = mesh_tf_search(MinTimeTables(space), memory_limit_bytes=14.5e9)
    result.stats["mesh"], result.stats["layout"], result.stats["layouts"]
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from tensoropt.search.baselines._result import BaselineResult
from tensoropt.search.baselines._tables import MinTimeTables
from tensoropt.cluster.mesh import device_meshes
from tensoropt.configs import Config

__all__ = ["dim_classes", "mesh_tf_search"]


def dim_classes(tables: MinTimeTables) -> tuple[list[dict], list[str]]:
    """The named dimensions of the graph.

    Returns:
        (per op, its dim -> class id; per class id, a readable name ``op:dim`` of its
        first member).
    """
    parent: dict = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    index = tables.index
    for i, op in enumerate(tables.ops):
        for d in op.space.dims:
            find((i, d))
    for table in tables.space.edges:
        p, c = index[table.producer], index[table.consumer]
        carried = zip(table.producer.space.outputs[table.out_index], table.consumer.space.inputs[table.in_index])
        for a, b in carried:
            if a is not None and b is not None:
                parent[find((p, a))] = find((c, b))
    ids: dict = {}
    names: list[str] = []
    per_op = []
    for i, op in enumerate(tables.ops):
        mine = {}
        for d in op.space.dims:
            root = find((i, d))
            if root not in ids:
                ids[root] = len(names)
                names.append(f"{op.name}:{d}")
            mine[d] = ids[root]
        per_op.append(mine)
    return per_op, names


def _op_table(op, configs_index: dict, classes: dict, mesh: tuple, none_class: int):
    """For one op on ``mesh``: (lookup: class id -> local slot, table: local slots per
    axis -> config index). Slot ``len(local)`` stands for every class the op lacks."""
    sizes = op.space.dims
    splittable = op.space.splittable_dims()
    local = sorted({classes[d] for d in splittable})
    lookup = np.full(none_class + 1, len(local), dtype=np.int64)
    lookup[local] = np.arange(len(local))
    replicated = configs_index.get(Config((int(np.prod(mesh)),), (None,)))
    table = np.empty((len(local) + 1,) * len(mesh), dtype=np.int64)
    for slots in itertools.product(range(len(local) + 1), repeat=len(mesh)):
        used, axis_dims = set(), []
        for size, slot in zip(mesh, slots):
            dim = None
            if slot < len(local):
                dim = next((d for d in splittable if classes[d] == local[slot] and d not in used
                            and sizes[d] % size == 0 and sizes[d] >= size), None)
            if dim is not None:
                used.add(dim)
            axis_dims.append(dim)
        config = Config(mesh, tuple(axis_dims)) if used else None
        k = configs_index.get(config) if config is not None else replicated
        table[slots] = k if k is not None else (replicated if replicated is not None else 0)
    return lookup, table


def _layouts(num_classes: int, axes: int) -> np.ndarray:
    """Every injective assignment of classes (or none, id ``num_classes``) to ``axes`` axes."""
    none = num_classes
    grids = np.meshgrid(*[np.arange(num_classes + 1)] * axes, indexing="ij")
    rows = np.stack([g.reshape(-1) for g in grids], axis=1)
    ok = np.ones(len(rows), dtype=bool)
    for a, b in itertools.combinations(range(axes), 2):
        ok &= (rows[:, a] != rows[:, b]) | (rows[:, a] == none)
    return rows[ok]


def mesh_tf_search(tables: MinTimeTables, memory_limit_bytes: float | None = None, max_axes: int = 2,
                   chunk: int = 8192) -> BaselineResult:
    """The fastest plan of Mesh-TF's space (within the memory limit when one fits)."""
    start = time.perf_counter()
    space = tables.space
    n = space.model.num_devices
    per_op, names = dim_classes(tables)
    none = len(names)
    configs_index = [{c: k for k, c in enumerate(space.configs[op])} for op in tables.ops]
    limit = np.inf if memory_limit_bytes is None else float(memory_limit_bytes)
    best = {True: (np.inf, None), False: (np.inf, None)}   # fits -> (time, (mesh, layout, choice))
    count = 0
    for mesh in device_meshes(n, max_axes) if n > 1 else ((1,),):
        op_tables = [_op_table(op, configs_index[i], per_op[i], mesh, none) for i, op in enumerate(tables.ops)]
        layouts = _layouts(none, len(mesh))
        count += len(layouts)
        for lo in range(0, len(layouts), chunk):
            rows = layouts[lo:lo + chunk]
            choices = np.empty((len(rows), len(tables.ops)), dtype=np.int64)
            for i, (lookup, table) in enumerate(op_tables):
                choices[:, i] = table[tuple(lookup[rows[:, a]] for a in range(len(mesh)))]
            memory, seconds = tables.price_many(choices)
            for fits in (True, False):
                masked = np.where(memory <= limit, seconds, np.inf) if fits else seconds
                j = int(np.argmin(masked))
                if masked[j] < best[fits][0]:
                    best[fits] = (float(masked[j]), (mesh, tuple(rows[j].tolist()), choices[j].copy()))
    fits = best[True][1] is not None
    mesh, layout, choice = best[fits][1]
    plan = tables.plan(choice, "mesh_tf")
    named = {names[c]: a for a, c in enumerate(layout) if c != none}
    return BaselineResult("mesh_tf", plan, time.perf_counter() - start,
                          {"mesh": list(mesh), "layout": named, "layouts": count, "named_dims": len(names),
                           "max_axes": max_axes, "fits_found": fits})
