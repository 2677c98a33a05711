"""Assembling fragments into one compiled graph, and splicing changed fragments in.

Internal to ``DeltaSimulator``. A *template* is one compiled fragment (one key at one
version). A *layout* is one assembled graph: the templates of every key, laid out in key
order (so task indices are key order, then the order within the fragment: the engine's
tie-break), plus the references between tasks, stored as ``(key, local index)`` so that
they survive when other keys' fragments change size:

- edges ``(owner, a_key, a_loc, b_key, b_loc)``: the fragment of key ``owner`` declared
  that task ``b`` waits for task ``a``;
- buffer frees ``(owner, buf_loc, t_key, t_loc)``: a buffer of ``owner`` is freed after
  a task.

``splice`` replaces the templates of some keys: it drops the references those keys
declared, re-resolves by name the references other keys declared into them (a name that
disappeared is an error naming it), and adds the new fragments' references. Everything
outside the changed fragments is copied with numpy; only the changed fragments' own
names are looked at one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Callable, Hashable, Optional, Sequence

import numpy as np

from tensoropt.simulator.graph import PS_PER_S, BufferTable, CompiledGraph, Fragment

__all__ = ["Template", "Layout", "Registry", "splice", "empty_layout"]

_I = np.int64
_NO_EDGES, _NO_FREES = np.zeros((0, 5), dtype=_I), np.zeros((0, 4), dtype=_I)


@dataclass(eq=False)
class Template:
    """One fragment compiled: local task arrays and references (local or by name)."""

    key: int
    version: int
    names: tuple[str, ...]
    index: dict[str, int]
    kind_id: np.ndarray
    rank: np.ndarray
    duration_ps: np.ndarray
    res_count: np.ndarray
    res_idx: np.ndarray
    cycle_wait: np.ndarray           # a cycled resource waited on (global index) or -1
    meta: tuple
    int_edges: np.ndarray            # internal edges as layout rows (see Layout.edges)
    ext_edges: list                  # (a_name | None, a_loc, b_name | None, b_loc)
    buf_names: tuple[str, ...]
    buf_why: tuple[str, ...]
    buf_bytes: np.ndarray
    buf_rank: np.ndarray
    buf_alloc: np.ndarray            # local task or -1
    int_frees: np.ndarray            # internal frees as layout rows (see Layout.frees)
    ext_frees: list                  # (buffer, task name)
    sizes: tuple = ()                # (tasks, buffers, resource uses)
    ref_keys: Optional[list] = None  # keys that ext_edges / ext_frees name (once known)
    ext_cache: Optional[dict] = None  # versions of ref_keys -> resolved (edges, frees)


class Registry:
    """Templates per (key, version), built on demand, and which key owns each task name."""

    def __init__(self, keys: Sequence[Hashable], build: Callable[[Hashable, int], Fragment],
                 resources: tuple[str, ...], res_cycle_ps: np.ndarray) -> None:
        self.keys = list(keys)
        self.build = build
        self.resources = resources
        self.res_cycle_ps = res_cycle_ps
        self._cycle_ps = {r: c for r, c in zip(resources, res_cycle_ps.tolist()) if c}
        self._res_index = {r: i for i, r in enumerate(resources)}
        self.owner: dict[str, int] = {}
        self.kind_names: list[str] = []
        self._kind_id: dict[str, int] = {}
        self._cache: dict[tuple[int, int], Template] = {}
        self._local_maps: dict[tuple[int, int, int], np.ndarray] = {}

    def template(self, k: int, v: int) -> Template:
        t = self._cache.get((k, v))
        if t is None:
            t = self._cache[(k, v)] = self._compile(k, v)
        return t

    def local_map(self, old: Template, new: Template) -> np.ndarray:
        """Per task of ``old``, its local index in ``new`` (same key), -1 if it is gone."""
        sig = (old.key, old.version, new.version)
        m = self._local_maps.get(sig)
        if m is None:
            m = self._local_maps[sig] = np.array([new.index.get(n, -1) for n in old.names],
                                                 dtype=_I)
        return m

    def external_rows(self, t: Template, templates: list, versions: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Template ``t``'s references to other keys, resolved in ``templates`` (cached
        per versions of the keys it references)."""
        k = t.key
        if not t.ext_edges and not t.ext_frees:
            return _NO_EDGES, _NO_FREES
        if t.ref_keys is None:
            names = [n for a, _, b, _ in t.ext_edges for n in (a, b) if n is not None]
            names += [n for _, n in t.ext_frees]
            for n in names:
                self.resolve(n, templates, k)            # raises, naming a missing task
            t.ref_keys = sorted({self.owner[n] for n in names})
            t.ext_cache = {}
        sig = tuple(int(versions[j]) for j in t.ref_keys)
        rows = t.ext_cache.get(sig)
        if rows is None:
            edges = []
            for an, al, bn, bl in t.ext_edges:
                ak, al = self.resolve(an, templates, k) if an is not None else (k, al)
                bk, bl = self.resolve(bn, templates, k) if bn is not None else (k, bl)
                edges.append((k, ak, al, bk, bl))
            frees = [(k, b) + self.resolve(n, templates, k) for b, n in t.ext_frees]
            rows = t.ext_cache[sig] = (np.array(edges, dtype=_I).reshape(-1, 5),
                                       np.array(frees, dtype=_I).reshape(-1, 4))
        return rows

    def _compile(self, k: int, v: int) -> Template:
        key = self.keys[k]
        frag = self.build(key, v)
        if not isinstance(frag, Fragment):
            raise ValueError(f"build({key!r}, {v}) must return a Fragment, got "
                             f"{type(frag).__name__}")
        unknown = [r for r in frag.resources if r not in self._res_index]
        if unknown:
            raise ValueError(f"the fragment of key {key!r} version {v} declares resources "
                             f"{unknown} that the simulator does not have; declared: "
                             f"{list(self.resources)}")
        if frag._cycle_ps != {r: c for r, c in self._cycle_ps.items() if r in frag._resources}:
            raise ValueError(f"the fragment of key {key!r} version {v} runs resources on "
                             f"cycles {frag.cycles}, the simulator on "
                             f"{ {r: c / PS_PER_S for r, c in self._cycle_ps.items()} }; make "
                             "fragments with new_fragment()")
        rmap = [self._res_index[r] for r in frag.resources]
        for name in frag._names:
            o = self.owner.setdefault(name, k)
            if o != k:
                raise ValueError(f"task {name!r} is defined by key {self.keys[o]!r} and by "
                                 f"key {key!r}; a task name must belong to one key")
        for kind in frag._kinds:
            if kind not in self._kind_id:
                self._kind_id[kind] = len(self.kind_names)
                self.kind_names.append(kind)
        idx = frag._index
        int_edges, ext_edges = [], []
        for a, b in frag._deps:
            if a in idx and b in idx:
                int_edges.append((k, k, idx[a], k, idx[b]))
            else:
                ext_edges.append((None if a in idx else a, idx.get(a, -1),
                                  None if b in idx else b, idx.get(b, -1)))
        int_frees, ext_frees = [], []
        for i, buf in enumerate(frag._buffers):
            for f in buf.free_after:
                if f in idx:
                    int_frees.append((k, i, k, idx[f]))
                else:
                    ext_frees.append((i, f))
        bufs = frag._buffers
        return Template(
            key=k, version=v, names=tuple(frag._names), index=dict(idx),
            kind_id=np.array([self._kind_id[x] for x in frag._kinds], dtype=_I),
            rank=np.array(frag._ranks, dtype=_I),
            duration_ps=np.array(frag._dur_ps, dtype=_I),
            res_count=np.array([len(r) for r in frag._res], dtype=_I),
            res_idx=np.array([rmap[q] for r in frag._res for q in r], dtype=_I),
            cycle_wait=np.array([rmap[q] if q >= 0 else -1 for q in frag._waits], dtype=_I),
            meta=tuple(frag._meta),
            int_edges=np.array(int_edges, dtype=_I).reshape(-1, 5), ext_edges=ext_edges,
            buf_names=tuple(b.name for b in bufs), buf_why=tuple(b.why for b in bufs),
            buf_bytes=np.array([b.size_bytes for b in bufs], dtype=_I),
            buf_rank=np.array([b.rank for b in bufs], dtype=_I),
            buf_alloc=np.array([-1 if b.alloc is None else idx[b.alloc] for b in bufs],
                               dtype=_I),
            int_frees=np.array(int_frees, dtype=_I).reshape(-1, 4), ext_frees=ext_frees,
            sizes=(len(frag._names), len(bufs), sum(len(r) for r in frag._res)))

    def resolve(self, name: str, templates: list, who: int) -> tuple[int, int]:
        """``(key, local index)`` of task ``name`` in the current templates."""
        k = self.owner.get(name)
        loc = templates[k].index.get(name) if k is not None else None
        if loc is None:
            where = (f"key {self.keys[k]!r} at version {templates[k].version} does not "
                     "define it" if k is not None else "no key defines it")
            raise ValueError(f"task {name!r}, referenced by the fragment of key "
                             f"{self.keys[who]!r} (version {templates[who].version}), is "
                             f"missing: {where}")
        return k, loc


@dataclass(eq=False)
class Layout:
    """One assembled graph (see the module doc)."""

    versions: np.ndarray
    templates: list
    task_start: np.ndarray
    buf_start: np.ndarray
    res_start: np.ndarray
    edges: np.ndarray                # (m, 5): owner, a_key, a_loc, b_key, b_loc
    frees: np.ndarray                # (m, 4): owner, buf_loc, t_key, t_loc
    graph: Optional[CompiledGraph]


def empty_layout(num_keys: int) -> Layout:
    z = np.zeros(num_keys + 1, dtype=_I)
    return Layout(np.full(num_keys, -1, dtype=_I), [None] * num_keys, z, z, z,
                  np.zeros((0, 5), dtype=_I), np.zeros((0, 4), dtype=_I), None)


def _remap(refs: np.ndarray, kcol: int, lcol: int, offset: np.ndarray, table: np.ndarray,
           old: Layout, reg: Registry, owner_col: int) -> None:
    """Re-resolves, in place, the references in columns ``(kcol, lcol)`` that point into a
    changed key: ``table[offset[key] + old local index]`` is the new local index (-1: the
    name is gone), for every key with ``offset[key] >= 0``."""
    rows = np.flatnonzero(offset[refs[:, kcol]] >= 0)
    if not len(rows):
        return
    loc = table[offset[refs[rows, kcol]] + refs[rows, lcol]]
    if (loc < 0).any():
        row = refs[rows[int(np.flatnonzero(loc < 0)[0])]]
        k = int(row[kcol])
        name = old.templates[k].names[row[lcol]]
        raise ValueError(f"task {name!r}, referenced by the fragment of key "
                         f"{reg.keys[row[owner_col]]!r}, is missing: key {reg.keys[k]!r} "
                         "no longer defines it at its new version")
    refs[rows, lcol] = loc


_FIELDS = ("names", "meta", "kind_id", "rank", "duration_ps", "res_count", "res_idx", "cycle_wait",
           "buf_names", "buf_why", "buf_bytes", "buf_rank", "buf_alloc", "sizes")
_get_fields = attrgetter(*_FIELDS)


def _concat(parts: list) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=_I)


def splice(old: Layout, versions: np.ndarray, reg: Registry) -> tuple[Layout, list]:
    """The layout for ``versions``, built from ``old``; also returns the changed keys.

    With an empty ``old`` (``empty_layout``) this assembles every fragment.
    """
    changed = np.flatnonzero(old.versions != versions).tolist()
    new_t = [reg.template(k, int(versions[k])) for k in changed]
    templates = list(old.templates)
    for k, t in zip(changed, new_t):
        templates[k] = t
    full = old.graph is None
    ch = np.array(changed, dtype=_I)
    is_changed = np.zeros(len(templates), dtype=bool)
    is_changed[ch] = True

    # The changed templates' fields, one list per field (a single pass over them).
    fields = dict(zip(_FIELDS, map(list, zip(*map(_get_fields, new_t))))) if new_t else \
        {f: [] for f in _FIELDS}
    sizes = np.array(fields["sizes"], dtype=_I).reshape(-1, 3)

    def starts(old_starts: np.ndarray, col: int) -> np.ndarray:
        counts = np.diff(old_starts)
        counts[ch] = sizes[:, col]
        out = np.zeros(len(counts) + 1, dtype=_I)
        np.cumsum(counts, out=out[1:])
        return out

    task_start, buf_start, res_start = (starts(old.task_start, 0), starts(old.buf_start, 1),
                                        starts(old.res_start, 2))
    g = old.graph
    ts, bs, rs = old.task_start, old.buf_start, old.res_start

    def parts(old_arr, st: np.ndarray, attr: str) -> list:
        """The new layout's pieces in key order: old slices between changed keys."""
        if full:
            return fields[attr]
        out, prev = [], 0
        for k, piece in zip(changed, fields[attr]):
            out.append(old_arr[st[prev]:st[k]])
            out.append(piece)
            prev = k + 1
        out.append(old_arr[st[prev]:st[-1]])
        return out

    def tup(old_arr, st, attr) -> tuple:
        p = parts(old_arr, st, attr)
        if len(p) > 9:
            return tuple(chain.from_iterable(p))
        out = p[0]
        for x in p[1:]:
            out += x                        # tuple concatenation: one copy per piece
        return out

    # Per kind of row (tasks, buffers, resource uses): where each new row comes from --
    # the old array (rows of unchanged keys) or, in key order, the changed fragments.
    starts_of = {"task": (ts, task_start), "buf": (bs, buf_start), "res": (rs, res_start)}
    sources: dict = {}

    def source(rows: str) -> tuple[np.ndarray, np.ndarray]:
        got = sources.get(rows)
        if got is None:
            st, nst = starts_of[rows]
            key = np.repeat(np.arange(len(templates), dtype=_I), np.diff(nst))
            from_new = is_changed[key]
            kept = np.flatnonzero(~from_new)
            got = sources[rows] = (from_new, st[key[kept]] + kept - nst[key[kept]])
        return got

    def cat(old_arr, rows: str, attr) -> np.ndarray:
        if full:
            return _concat(fields[attr])
        from_new, old_rows = source(rows)
        out = np.empty(len(from_new), dtype=_I)
        out[from_new] = _concat(fields[attr])
        out[~from_new] = old_arr[old_rows]
        return out

    og = g if g is not None else _EMPTY
    names = tup(og.names, ts, "names")
    res_ptr = np.zeros(len(names) + 1, dtype=_I)
    np.cumsum(cat(np.diff(og.res_ptr), "task", "res_count"), out=res_ptr[1:])

    # References: drop the changed keys' own, re-resolve others' pointing into them,
    # then add the changed keys' new ones.
    edges = old.edges[~np.isin(old.edges[:, 0], ch)]
    frees = old.frees[~np.isin(old.frees[:, 0], ch)]
    if not full:
        offset = np.full(len(templates), -1, dtype=_I)
        tables, at = [], 0
        for k, t in zip(changed, new_t):
            ot = old.templates[k]
            if ot is not None:
                offset[k] = at
                tables.append(reg.local_map(ot, t))
                at += len(ot.names)
        table = _concat(tables)
        _remap(edges, 1, 2, offset, table, old, reg, 0)
        _remap(edges, 3, 4, offset, table, old, reg, 0)
        _remap(frees, 2, 3, offset, table, old, reg, 0)
    edge_parts, free_parts = [edges], [frees]
    for t in new_t:
        ext_e, ext_f = reg.external_rows(t, templates, versions)
        edge_parts += [t.int_edges, ext_e]
        free_parts += [t.int_frees, ext_f]
    edges, frees = np.concatenate(edge_parts), np.concatenate(free_parts)

    owner_of_buf = np.repeat(np.arange(len(templates), dtype=_I), np.diff(buf_start))
    alloc_loc = cat(_local_alloc(og, old), "buf", "buf_alloc")
    alloc = np.where(alloc_loc >= 0, task_start[owner_of_buf] + alloc_loc, -1)
    fptr, fidx = _csr_local(buf_start[frees[:, 0]] + frees[:, 1],
                            task_start[frees[:, 2]] + frees[:, 3], int(buf_start[-1]))
    ob = og.buffers
    buffers = BufferTable(
        names=tup(ob.names, bs, "buf_names"), size_bytes=cat(ob.size_bytes, "buf", "buf_bytes"),
        why=tup(ob.why, bs, "buf_why"), rank=cat(ob.rank, "buf", "buf_rank"), alloc=alloc,
        free_ptr=fptr, free_idx=fidx)
    cg = CompiledGraph(
        resources=reg.resources, res_cycle_ps=reg.res_cycle_ps, names=names, kind_names=tuple(reg.kind_names),
        kind_id=cat(og.kind_id, "task", "kind_id"), rank=cat(og.rank, "task", "rank"),
        duration_ps=cat(og.duration_ps, "task", "duration_ps"), res_ptr=res_ptr,
        res_idx=cat(og.res_idx, "res", "res_idx"), edge_src=task_start[edges[:, 1]] + edges[:, 2],
        edge_dst=task_start[edges[:, 3]] + edges[:, 4], meta=tup(og.meta, ts, "meta"),
        buffers=buffers, cycle_wait=cat(og.cycle_wait, "task", "cycle_wait"))
    return Layout(versions.copy(), templates, task_start, buf_start, res_start, edges, frees,
                  cg), changed


def _local_alloc(g: CompiledGraph, old: Layout) -> np.ndarray:
    """The old graph's buffer alloc tasks as indices local to their owner's fragment."""
    a = g.buffers.alloc
    if len(a) == 0:
        return a
    owner = np.repeat(np.arange(len(old.templates), dtype=_I), np.diff(old.buf_start))
    return np.where(a >= 0, a - old.task_start[owner], -1)


def _csr_local(keys: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=_I)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, values[order]


_EMPTY = CompiledGraph(
    resources=(), res_cycle_ps=np.zeros(0, _I), names=(), kind_names=(), kind_id=np.zeros(0, _I), rank=np.zeros(0, _I),
    duration_ps=np.zeros(0, _I), res_ptr=np.zeros(1, _I), res_idx=np.zeros(0, _I),
    edge_src=np.zeros(0, _I), edge_dst=np.zeros(0, _I), meta=(),
    buffers=BufferTable((), np.zeros(0, _I), (), np.zeros(0, _I), np.zeros(0, _I),
                        np.zeros(1, _I), np.zeros(0, _I)))
