"""Synthetic versioned task graphs: random ones for differential tests, and one shaped
like a training step for the benchmark.

Usage::

    from tensoropt.simulator import DeltaSimulator
    from tensoropt.simulator.synthetic import random_fragments, training_step

    spec = training_step(n_ops=100, seed=0)              # or random_fragments(seed=3)
    sim = DeltaSimulator(spec.keys, spec.build, spec.resources)
    t = sim.simulate(spec.random_versions(np.random.default_rng(0)))

Both are deterministic functions of their seed: ``build(key, version)`` draws from a
generator seeded by ``(seed, key index, version)``.

``training_step``: per op ``i`` a forward compute task, 0-2 forward collectives (chained,
holding ``chain:0`` and ``nic:m0``), the backward compute in reverse order, 0-2 backward
collectives, a gradient all-reduce and an update; per edge ``i-1 -> i`` either nothing or
a re-scheduling collective forward and its reverse backward. Stable join points
(``op{i}/out``, ``op{i}/chain_f``, ``edge{i}/grad_out``, ...) connect keys. All
collectives form one chain in issue order, as the execution builder chains them. Buffers:
activations live from the forward to the consumer's backward, gradients until the update,
collectives hold transient buffers, parameters are resident.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Mapping

import numpy as np

from tensoropt.simulator.graph import Fragment

__all__ = ["Spec", "random_fragments", "training_step"]

US = 1e-6


@dataclass(frozen=True)
class Spec:
    """Keys, a fragment builder and resources, ready for ``DeltaSimulator``."""

    keys: tuple[Hashable, ...]
    num_versions: tuple[int, ...]
    build: Callable[[Hashable, int], Fragment]
    resources: tuple[str, ...]
    cycles: Mapping[str, float] = field(default_factory=dict)

    def random_versions(self, rng: np.random.Generator) -> np.ndarray:
        return np.array([rng.integers(n) for n in self.num_versions], dtype=np.int64)


def random_fragments(seed: int, n_keys: int = 6, n_versions: int = 3, n_resources: int = 3,
                     max_tasks: int = 5, max_delay_us: int = 3, cycle_us: int = 0) -> Spec:
    """Random fragments with many ties (durations of 0-3 us), tasks on 0-2 resources,
    dependencies across keys through anchors ``k{j}/in`` and ``k{j}/out`` (present in
    every version), two ranks, and buffers freed inside and across keys. Acyclic: every
    dependency goes up a level order that differs from key order. Tasks on no resource
    (delays) last 0 to ``max_delay_us`` us, so that they can still run long after the
    tasks around them. With ``cycle_us``, the second resource (``chain:1``) runs on a
    cycle of that many us."""
    resources = tuple(f"{kind}:{i}" for i, kind in zip(range(n_resources),
                                                        ["compute", "chain", "nic", "link"]))
    cycles = {resources[1]: cycle_us * US} if cycle_us and n_resources > 1 else {}
    band = np.random.default_rng([seed, 10**6]).permutation(n_keys)
    keys = tuple(f"k{j}" for j in range(n_keys))

    def build(key: Hashable, version: int) -> Fragment:
        j = keys.index(key)
        rng = np.random.default_rng([seed, j, version])
        f = Fragment(resources, cycles)
        n = int(rng.integers(0, max_tasks + 1))
        names = [f"k{j}/in"] + [f"k{j}/v{version}t{i}" for i in range(n)] + [f"k{j}/out"]
        level = {nm: band[j] * 100 + i for i, nm in enumerate(names)}
        level[f"k{j}/out"] = band[j] * 100 + 99
        for nm in names:
            res = [] if nm.endswith(("/in", "/out")) and rng.random() < .5 else \
                [resources[q] for q in rng.choice(n_resources, int(rng.integers(0, 3)),
                                                   replace=False)]
            top = 3 if res else max_delay_us
            f.add_task(nm, "compute" if rng.random() < .6 else "collective", res,
                       int(rng.integers(0, top + 1)) * US, rank=int(rng.integers(0, 2)),
                       op=key, version=version)
        for a in names:
            for b in names:
                if level[a] < level[b] and rng.random() < .35:
                    f.add_dependency(a, b)
        for o in range(n_keys):
            if o == j or rng.random() > .5:
                continue
            local = names[int(rng.integers(len(names)))]
            if band[o] < band[j]:
                f.add_dependency(f"k{o}/out", local)
            else:
                f.add_dependency(local, f"k{o}/in")
        for i, nm in enumerate(names):
            if rng.random() < .6:
                frees = [x for x in names if level[x] >= level[nm] and rng.random() < .4]
                if rng.random() < .3:
                    frees.append(f"k{int(rng.integers(n_keys))}/out")
                f.add_buffer(f"{nm}:b", int(rng.integers(1, 9)) * 1000, "activation",
                             alloc=nm, free_after=frees)
        if rng.random() < .5:
            f.add_buffer(f"k{j}:params", int(rng.integers(1, 9)) * 1000, "parameter",
                         rank=int(rng.integers(0, 2)))
        return f

    return Spec(keys, (n_versions,) * n_keys, build, resources, cycles)


def training_step(n_ops: int, seed: int = 0, n_versions: int = 4,
                  edge_alternatives: int = 2, cycle_us: float = 0.0) -> Spec:
    """A training step on one representative rank (see module doc); about 16 tasks per
    op, so ``n_ops=1250`` gives about 20,000 tasks. With ``cycle_us``, the collectives
    wait for a cycle of that many us on ``chain:0`` (horovod's)."""
    resources = ("compute:0", "chain:0", "nic:m0")
    cycles = {"chain:0": cycle_us * US} if cycle_us else {}
    keys: list[str] = []
    for i in range(n_ops):
        if i:
            keys.append(f"edge{i}")
        keys.append(f"op{i}")
    coll = ["chain:0", "nic:m0"]
    base = np.random.default_rng([seed, 10**6]).uniform(50, 500, n_ops)

    def chained(f: Fragment, names: list[str], after: str | None, data_from: str,
                rng: np.random.Generator, prefix: str, meta: dict) -> str | None:
        """Adds a chain of collectives after ``data_from`` (and after ``after`` in the
        collective chain); returns the last one (or ``after`` if there are none)."""
        prev = data_from
        for name in names:
            f.add_task(name, "collective", coll, rng.uniform(20, 300) * US,
                       bytes=int(rng.integers(1, 64)) << 20, **meta)
            f.add_dependency(prev, name)
            if after is not None:
                f.add_dependency(after, name)
            f.add_buffer(f"{name}:buf", int(rng.integers(1, 64)) << 20, "transient",
                         alloc=name, free_after=[name])
            prev = after = name
        return after

    def build_op(i: int, v: int, rng: np.random.Generator) -> Fragment:
        f = Fragment(resources, cycles)
        p, last = f"op{i}", i == n_ops - 1
        meta = dict(op=p, configuration=v)
        scale = rng.uniform(.3, 1.5)
        f.add_task(f"{p}/fwd", "compute", "compute:0", base[i] * scale * US, step="forward",
                   **meta)
        if i:
            f.add_dependency(f"edge{i}/out", f"{p}/fwd")
        nf, nb = int(rng.integers(0, 3)), int(rng.integers(0, 3))
        tail = chained(f, [f"{p}/fwd_c{j}" for j in range(nf)],
                       f"edge{i}/chain_f" if i else None, f"{p}/fwd", rng, p, meta)
        f.add_task(f"{p}/out", "join", [], 0.0, **meta)
        f.add_dependency(tail if nf else f"{p}/fwd", f"{p}/out")
        f.add_task(f"{p}/chain_f", "join", [], 0.0, **meta)
        if tail is not None:
            f.add_dependency(tail, f"{p}/chain_f")
        f.add_task(f"{p}/bwd", "compute", "compute:0", 2 * base[i] * scale * US,
                   step="backward", **meta)
        f.add_dependency(f"{p}/out" if last else f"edge{i + 1}/grad_out", f"{p}/bwd")
        f.add_dependency(f"{p}/fwd", f"{p}/bwd")
        btail = chained(f, [f"{p}/bwd_c{j}" for j in range(nb)],
                        f"{p}/chain_f" if last else f"edge{i + 1}/chain_b", f"{p}/bwd",
                        rng, p, meta)
        f.add_task(f"{p}/grad_out", "join", [], 0.0, **meta)
        f.add_dependency(btail if nb else f"{p}/bwd", f"{p}/grad_out")
        gtail = chained(f, [f"{p}/grad_ar"], btail, f"{p}/bwd", rng, p, meta)
        f.add_task(f"{p}/chain_b", "join", [], 0.0, **meta)
        f.add_dependency(gtail, f"{p}/chain_b")
        f.add_task(f"{p}/update", "compute", "compute:0", .1 * base[i] * US, step="update",
                   **meta)
        f.add_dependency(f"{p}/grad_ar", f"{p}/update")
        f.add_buffer(f"{p}:act", int(base[i] * scale) << 14, "activation", alloc=f"{p}/fwd",
                     free_after=[f"{p}/bwd" if last else f"op{i + 1}/bwd"])
        f.add_buffer(f"{p}:grad", int(base[i] / scale) << 12, "gradient", alloc=f"{p}/bwd",
                     free_after=[f"{p}/update"])
        f.add_buffer(f"{p}:params", int(base[i] / scale) << 12, "parameter")
        return f

    def build_edge(i: int, a: int, rng: np.random.Generator) -> Fragment:
        f = Fragment(resources, cycles)
        e, src, dst = f"edge{i}", f"op{i - 1}", f"op{i}"
        meta = dict(edge=e, alternative=a)
        for anchor in ("out", "chain_f", "grad_out", "chain_b"):
            f.add_task(f"{e}/{anchor}", "join", [], 0.0, **meta)
        if a:
            chained(f, [f"{e}/conv"], f"{src}/chain_f", f"{src}/out", rng, e,
                    dict(meta, step="reschedule"))
            chained(f, [f"{e}/conv_b"], f"{dst}/chain_b", f"{dst}/grad_out", rng, e,
                    dict(meta, step="reschedule"))
            for x, y in ((f"{e}/conv", "out"), (f"{e}/conv", "chain_f"),
                         (f"{e}/conv_b", "grad_out"), (f"{e}/conv_b", "chain_b")):
                f.add_dependency(x, f"{e}/{y}")
        else:
            f.add_dependency(f"{src}/out", f"{e}/out")
            f.add_dependency(f"{src}/chain_f", f"{e}/chain_f")
            f.add_dependency(f"{dst}/grad_out", f"{e}/grad_out")
            f.add_dependency(f"{dst}/chain_b", f"{e}/chain_b")
        return f

    index = {k: j for j, k in enumerate(keys)}

    def build(key: Hashable, version: int) -> Fragment:
        rng = np.random.default_rng([seed, index[key], version])
        if key.startswith("op"):
            return build_op(int(key[2:]), version, rng)
        return build_edge(int(key[4:]), version, rng)

    nv = tuple(n_versions if k.startswith("op") else edge_alternatives for k in keys)
    return Spec(tuple(keys), nv, build, resources, cycles)
