"""Delta simulation over versioned fragments, with a window of recent states.

Usage::

    from tensoropt.simulator import DeltaSimulator

    def build(key, version):                      # one fragment per (key, version)
        f = sim.new_fragment()
        f.add_task(f"{key}/fwd", "compute", ["compute:0"], 1e-3 * (version + 1))
        if key != "op0":
            f.add_dependency(f"op{int(key[2:]) - 1}/fwd", f"{key}/fwd")
        return f

    sim = DeltaSimulator(["op0", "op1", "op2"], build, resources=["compute:0"])
    t0 = sim.simulate([0, 0, 0])           # full: the window is empty
    t1 = sim.simulate([0, 2, 0])           # delta from t0: only op1 changed
    sim.simulate_full([0, 2, 0])           # the same timeline, computed from scratch
    sim.last_seconds                       # (graph s, simulation s) of the last call

The graph of a version vector ``v`` is the union, in key order, of ``build(key,
v[key])`` for every key: its tasks are numbered key by key (so the engine's tie-break is
key order, then the order within a fragment), and the names that fragments reference
across keys are resolved in the union. A key is anything hashable (an op name, an edge);
a version is an int (a configuration index, a re-scheduling alternative), so a frontier
point's choice arrays are a version vector as they are: ``np.concatenate([node_choice,
edge_choice])``. ``build`` is called once per (key, version) and its result cached, so a
fragment must depend on nothing but its key and version: a fragment that depends on
several choices encodes them all in its version (an edge's conversion steps depend on
both endpoints' configurations and the alternative: ``(cfg_src * K_dst + cfg_dst) * A +
alt``). ``simulate`` returns the window's own timeline when the vector is already there.

Rules for fragments. Task names are unique and belong to one key. A dependency may name a
task of another key (resolved in the union), but must touch one of the fragment's own
tasks: the fragment that declares it owns it. When a key changes version, the
dependencies it declared go and the new version's come; those other keys declared into it
are resolved again by name, so a name other keys depend on must exist in every version.
The usual way: each fragment exposes stable join points (zero-duration tasks on no
resource, e.g. ``op3/out``) that other fragments depend on.

``simulate(v)`` picks, among the last ``window`` states, the one whose version vector
differs from ``v`` in the fewest keys (the most recent among equals) and simulates the
difference (see ``_delta_run``: it re-times from the first affected step, copies the
unchanged parts of the base run with a time shift, and gives exactly what a full
simulation gives). ``Timeline.stats`` says how much was simulated and how much copied.

``simulate_full(v)`` is FlexFlow's full simulation (§5.2, Algorithm 1): it assembles the
whole graph from the (cached) fragments, independently of any state, and runs the event
loop over every task. So a delta checked against it also checks the splice. Each call
sets ``last_seconds``: the wall seconds spent on the graph (assembled, or spliced from
the base) and on the simulation (event loop, or delta run), to report them apart.
"""

from __future__ import annotations

import time
from typing import Callable, Hashable, Iterable, Mapping, Optional, Sequence

import numpy as np

from tensoropt.simulator._assemble import Layout, Registry, empty_layout, splice
from tensoropt.simulator._delta_run import BaseRun, delta_run
from tensoropt.simulator.engine import Timeline, simulate as simulate_compiled
from tensoropt.simulator.graph import Fragment, TaskGraph, _check_resource_name

__all__ = ["DeltaSimulator"]


class _State:
    def __init__(self, layout: Layout, timeline: Timeline) -> None:
        self.layout, self.timeline = layout, timeline
        self._base = None

    @property
    def base(self) -> BaseRun:
        if self._base is None:
            self._base = BaseRun(self.layout, self.timeline)
        return self._base


class DeltaSimulator:
    """Full and delta simulation of the graphs of version vectors (see module doc).

    Args:
        keys: the keys, in the order their fragments are laid out.
        build: ``build(key, version) -> Fragment`` (make it with ``new_fragment()``).
        resources: every resource a fragment may use.
        cycles: the resources that run on a cycle, and its period in seconds (see
            ``graph``: a task holding one starts a cycle later).
        window: how many recent states to keep as delta bases (>= 1).
        min_span: the fewest base steps worth copying at once; shorter spans are
            simulated instead (each copy has a fixed numpy cost).
        dense_after: loop steps after which a delta's event loop turns its state into
            Python lists (O(tasks) once, then faster per step); default: a tenth of the
            tasks, at least 1000.
    """

    def __init__(self, keys: Sequence[Hashable], build: Callable[[Hashable, int], Fragment],
                 resources: Iterable[str], *, cycles: Optional[Mapping[str, float]] = None,
                 window: int = 8, min_span: int = 64,
                 dense_after: Optional[int] = None) -> None:
        keys = list(keys)
        if len(set(keys)) != len(keys):
            raise ValueError("DeltaSimulator: keys must be unique")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be an int >= 1, got {window!r}")
        if isinstance(min_span, bool) or not isinstance(min_span, int) or min_span < 1:
            raise ValueError(f"min_span must be an int >= 1, got {min_span!r}")
        if dense_after is not None and (isinstance(dense_after, bool) or
                                        not isinstance(dense_after, int) or dense_after < 0):
            raise ValueError(f"dense_after must be None or an int >= 0, got {dense_after!r}")
        self.dense_after = dense_after
        declared = TaskGraph(dict.fromkeys(_check_resource_name(r) for r in resources), cycles)
        self._cycles = declared.cycles
        self._reg = Registry(keys, build, declared.resources, declared._cycle_array())
        self.window, self.min_span = window, min_span
        self._states: list[_State] = []          # oldest first
        self.last_seconds: tuple[float, float] = (0.0, 0.0)

    @property
    def keys(self) -> tuple[Hashable, ...]:
        return tuple(self._reg.keys)

    @property
    def resources(self) -> tuple[str, ...]:
        return self._reg.resources

    def new_fragment(self) -> Fragment:
        """An empty fragment with this simulator's resources."""
        return Fragment(self._reg.resources, self._cycles)

    def _versions(self, versions: Sequence[int]) -> np.ndarray:
        v = np.asarray(versions)
        if v.shape != (len(self._reg.keys),) or (v.size and v.dtype.kind not in "iu"):
            raise ValueError(f"versions must be {len(self._reg.keys)} ints, one per key "
                             f"(in the order of keys), got shape {v.shape} "
                             f"dtype {v.dtype}")
        if (v < 0).any():
            k = int(np.flatnonzero(v < 0)[0])
            raise ValueError(f"the version of key {self._reg.keys[k]!r} is {v[k]}; "
                             "versions are ints >= 0")
        return v.astype(np.int64)

    def prepare(self, versions: Sequence[int]) -> None:
        """Builds (and caches) every fragment of ``versions`` now, so that timing a full or
        a delta simulation of it afterwards times assembly and simulation only, whichever
        runs first."""
        for k, x in enumerate(self._versions(versions).tolist()):
            self._reg.template(k, x)

    def simulate(self, versions: Sequence[int]) -> Timeline:
        """The timeline of ``versions``' graph, by delta from the nearest recent state.

        Raises:
            ValueError: bad versions, a fragment that fails to build or references a task
                that is missing, or a cycle in the graph (named).
        """
        v = self._versions(versions)
        state, dist = self._nearest(v)
        if state is None:
            return self._remember(*self._full(v))
        if dist == 0:
            self._states.remove(state)
            self._states.append(state)
            self.last_seconds = (0.0, 0.0)
            return state.timeline
        t0 = time.perf_counter()
        layout, changed = splice(state.layout, v, self._reg)
        t1 = time.perf_counter()
        if layout.graph.num_tasks == 0 or state.timeline.graph.num_tasks == 0:
            timeline = simulate_compiled(layout.graph)
        else:
            n = layout.graph.num_tasks
            dense = max(1000, n // 10) if self.dense_after is None else self.dense_after
            timeline = delta_run(state.base, layout, changed, self.min_span, dense)
        self.last_seconds = (t1 - t0, time.perf_counter() - t1)
        return self._remember(layout, timeline)

    def simulate_full(self, versions: Sequence[int], *, remember: bool = False) -> Timeline:
        """The timeline of ``versions``' graph by a full simulation (the reference): the
        graph is assembled from scratch and the event loop runs over every task. With
        ``remember``, the state joins the window."""
        layout, timeline = self._full(self._versions(versions))
        return self._remember(layout, timeline) if remember else timeline

    def task_graph(self, versions: Sequence[int]) -> TaskGraph:
        """The graph of ``versions`` as a plain ``TaskGraph`` (fragments added in key
        order, then all dependencies and buffers) -- independent of the layout code."""
        v = self._versions(versions)
        frags = [self._reg.build(k, int(x)) for k, x in zip(self._reg.keys, v)]
        g = TaskGraph(self._reg.resources, self._cycles)
        for f in frags:
            for i, name in enumerate(f._names):
                g.add_task(name, f._kinds[i], [f.resources[q] for q in f._res[i]],
                           0.0, rank=f._ranks[i], **f._meta[i])
                g._dur_ps[-1] = f._dur_ps[i]                 # exact picoseconds
        for f in frags:
            for a, b in f._deps:
                g.add_dependency(a, b)
        for f in frags:
            for b in f._buffers:
                g.add_buffer(b.name, b.size_bytes, b.why, alloc=b.alloc,
                             free_after=b.free_after, rank=b.rank)
        return g

    def _nearest(self, v: np.ndarray) -> tuple[Optional[_State], int]:
        """The state differing from ``v`` in the fewest keys (most recent among equals)."""
        if not self._states:
            return None, -1
        dist = [int((s.layout.versions != v).sum()) for s in self._states]
        i = len(dist) - 1 - int(np.argmin(dist[::-1]))
        return self._states[i], dist[i]

    def _full(self, v: np.ndarray) -> tuple[Layout, Timeline]:
        t0 = time.perf_counter()
        layout, _ = splice(empty_layout(len(self._reg.keys)), v, self._reg)
        t1 = time.perf_counter()
        timeline = simulate_compiled(layout.graph)
        self.last_seconds = (t1 - t0, time.perf_counter() - t1)
        return layout, timeline

    def _remember(self, layout: Layout, timeline: Timeline) -> Timeline:
        self._states.append(_State(layout, timeline))
        del self._states[:-self.window]
        return timeline
