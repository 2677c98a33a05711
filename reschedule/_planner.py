"""The cheapest sequence of collectives between two layouts (paper Section 4.2).

Re-scheduling is a shortest path: the nodes are layouts of the tensor, an edge is one
:class:`~reschedule.Step` (table of allowed transitions in ``_steps.py``), and its weight
is ``cost_fn(step, shape, itemsize)`` seconds. Dijkstra finds the minimum-cost sequence,
returned fused into one :class:`Conversion`::

    from reschedule import Layout, plan_conversion
    conv = plan_conversion(Layout.parse("[2,4] S0,R,S1"), Layout.parse("[8] R,S0,R"),
                           (8, 16, 4), itemsize=4)
    str(conv), conv.time_s          # the steps, 'a -> b', and their total cost in seconds
    grad = conv.backward()          # the gradient's conversion, dst -> src

Graph: when ``src`` and ``dst`` share a mesh, the nodes are the layouts on that mesh that
fit the shape. When the meshes differ, the nodes are the layouts on both meshes and the
mesh change is one ``alltoallv`` edge from each non-partial layout on ``src``'s mesh to each
non-partial layout on ``dst``'s mesh (the mesh changes once, in that direction). Ties in
cost go to the path with fewer steps. No step creates a pending sum, so a ``dst`` with a
partial axis that ``src`` lacks (or a partial ``dst`` on another mesh) is unreachable and
raises :class:`NoConversionError`.

Gradients (``Conversion.backward``): the gradient of a tensor in layout ``L`` has layout
``L.grad()`` (partial axes become replicated: the derivative of a sum with respect to each
term is the identity, broadcast), and replicas of a gradient hold identical values. The
backward of ``src -> dst`` is then the cheapest conversion ``dst.grad() -> src.grad()``:
allgather S->R goes back as a free slice, slice R->S as an allgather, allreduce P->R as
nothing, alltoall as the reverse alltoall, reducescatter P->S as an allgather. A gradient
that arrives as a pending sum (e.g. each replica of a redundantly computed consumer holds a
different contribution) is passed as ``backward(grad_layout=...)`` with those axes partial;
it is then reduced on the way back (allreduce/reducescatter), as the planner does for any
partial source.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ._cost import DEFAULT_COST, CostFn
from ._layout import Layout
from ._steps import Step

__all__ = ["Conversion", "StepCost", "NoConversionError", "plan_conversion", "conversion_time",
           "enumerate_layouts"]


class NoConversionError(ValueError):
    """No sequence of allowed steps turns ``src`` into ``dst``.

    Attributes:
        src: The source layout.
        dst: The destination layout.
    """

    def __init__(self, src: Layout, dst: Layout, shape: Sequence[int], why: str) -> None:
        super().__init__(f"no re-scheduling path from {src} to {dst} for shape {tuple(shape)}: "
                         f"{why}")
        self.src = src
        self.dst = dst


@dataclass(frozen=True)
class StepCost:
    """Cost of one step of a conversion, per rank.

    Attributes:
        step: The step.
        time_s: Seconds, from the conversion's cost function.
        bytes_in_per_rank: Bytes each rank holds before the step.
        bytes_out_per_rank: Bytes each rank holds after the step.
        bytes_recv_per_rank: Bytes a rank receives (ring volume; max over ranks for
            alltoallv).
    """

    step: Step
    time_s: float
    bytes_in_per_rank: int
    bytes_out_per_rank: int
    bytes_recv_per_rank: float


@dataclass(frozen=True)
class Conversion:
    """A minimum-cost sequence of steps from ``src`` to ``dst``, run as one fused operator.

    Attributes:
        src: Source layout.
        dst: Destination layout.
        shape: Full tensor shape.
        itemsize: Bytes per element.
        steps: The steps in order; empty when ``src == dst``.
        step_costs: One :class:`StepCost` per step.
        time_s: Total cost in seconds (sum of the step costs).
        cost_fn: The cost function used (reused by :meth:`backward`).
    """

    src: Layout
    dst: Layout
    shape: tuple[int, ...]
    itemsize: int
    steps: tuple[Step, ...]
    step_costs: tuple[StepCost, ...]
    time_s: float
    cost_fn: CostFn = field(default=DEFAULT_COST, repr=False, compare=False)

    def __str__(self) -> str:
        return " -> ".join(str(s) for s in self.steps) if self.steps else "identity"

    @property
    def layouts(self) -> tuple[Layout, ...]:
        """``src``, every intermediate layout, and ``dst``."""
        return (self.src,) + tuple(s.dst for s in self.steps)

    @property
    def peak_bytes_per_rank(self) -> int:
        """Largest per-rank block held by any layout along the way."""
        return max(lay.local_bytes(self.shape, self.itemsize) for lay in self.layouts)

    def backward(self, grad_layout: Layout | None = None) -> "Conversion":
        """The conversion of the gradient, which flows from ``dst`` back to ``src``.

        Args:
            grad_layout: Layout in which the gradient arrives; default ``dst.grad()``
                (replicated where ``dst`` is partial, replicas identical). Give one with
                partial axes for a gradient that arrives as a pending sum.

        Returns:
            The cheapest conversion ``grad_layout -> src.grad()`` under the same cost
            function.

        Raises:
            ValueError: If ``grad_layout`` does not match the tensor (mesh size, rank).
        """
        start = self.dst.grad() if grad_layout is None else grad_layout
        return plan_conversion(start, self.src.grad(), self.shape, self.itemsize, self.cost_fn)


def plan_conversion(src: Layout, dst: Layout, shape: Sequence[int], itemsize: int = 4,
                    cost_fn: CostFn | None = None) -> Conversion:
    """The cheapest sequence of one-collective steps turning layout ``src`` into ``dst``.

    Args:
        src: Layout the tensor has.
        dst: Layout the tensor must get (same number of ranks; the mesh may differ).
        shape: Full tensor shape; split dims must be divisible in both layouts.
        itemsize: Bytes per element.
        cost_fn: ``cost_fn(step, shape, itemsize) -> seconds``; default
            :func:`~reschedule.alpha_beta_cost` with its default constants.

    Returns:
        The minimum-cost :class:`Conversion` (fewest steps among equal costs).

    Raises:
        ValueError: If the layouts do not fit the shape or each other.
        NoConversionError: (a ValueError) if no sequence of steps reaches ``dst``.
    """
    shape_t, cost = _checked(src, dst, shape, itemsize, cost_fn, "plan_conversion")
    try:
        hash(cost)
    except TypeError:  # an unhashable cost function: plan afresh every time
        return _plan(src, dst, shape_t, int(itemsize), cost)
    # Cost functions are pure (same step, shape and itemsize -> same seconds), so plans
    # are cached per (layouts, shape, itemsize, cost function).
    return _plan_cached(src, dst, shape_t, int(itemsize), cost)


def conversion_time(src: Layout, dst: Layout, shape: Sequence[int], itemsize: int = 4,
                    cost_fn: CostFn | None = None) -> float:
    """Seconds of the cheapest conversion ``src -> dst``: ``plan_conversion(...).time_s``
    without building the Conversion (what a cost table needs for many layout pairs).

    Raises:
        ValueError, NoConversionError: as :func:`plan_conversion`.
    """
    shape_t, cost = _checked(src, dst, shape, itemsize, cost_fn, "conversion_time")
    _reachable(src, dst, shape_t)
    best, _ = _tree(src, dst.mesh, shape_t, int(itemsize), cost)
    if dst not in best:
        raise NoConversionError(src, dst, shape_t,
                                "no sequence of allowed steps with finite cost reaches it.")
    return best[dst][0]


def _checked(src, dst, shape, itemsize, cost_fn, who: str):
    if not isinstance(src, Layout) or not isinstance(dst, Layout):
        raise ValueError(f"{who} needs two Layout values, got {src!r} and {dst!r}; "
                         f"build them with Layout(...) or Layout.parse('[4] S0,R').")
    shape_t = _checked_shape(src, tuple(shape))
    _checked_shape(dst, shape_t)
    if src.num_ranks != dst.num_ranks:
        raise ValueError(
            f"cannot convert {src} to {dst} for shape {shape_t}: the ranks don't match, the "
            f"source mesh {list(src.mesh)} has {src.num_ranks} ranks and the destination mesh "
            f"{list(dst.mesh)} has {dst.num_ranks}. Use meshes over the same number of ranks.")
    if not isinstance(itemsize, numbers.Integral) or itemsize < 1:
        raise ValueError(f"itemsize={itemsize!r}: give the bytes per element as an int >= 1.")
    return shape_t, (DEFAULT_COST if cost_fn is None else cost_fn)


@functools.lru_cache(maxsize=65536)
def _checked_shape(layout: Layout, shape: tuple) -> tuple[int, ...]:
    """``layout.check_shape(shape)``, once per (layout, shape): cost tables ask again and
    again (a shape that fails raises each time, as nothing is cached for it)."""
    return layout.check_shape(shape)


@functools.lru_cache(maxsize=65536)
def _plan_cached(src: Layout, dst: Layout, shape: tuple[int, ...], itemsize: int,
                 cost: CostFn) -> Conversion:
    return _plan(src, dst, shape, itemsize, cost)


def _reachable(src: Layout, dst: Layout, shape: tuple[int, ...]) -> None:
    """Raises NoConversionError for destinations no step sequence can reach."""
    if not dst.partial <= src.partial:
        raise NoConversionError(
            src, dst, shape,
            f"the destination is partial over mesh axes {sorted(dst.partial - src.partial)} "
            f"but the source is not, and no step creates a pending sum.")
    if dst.partial and src.mesh != dst.mesh:
        raise NoConversionError(
            src, dst, shape,
            "a mesh change (alltoallv) cannot carry a pending sum, so the destination on "
            "another mesh must not be partial.")


def _plan(src: Layout, dst: Layout, shape: tuple[int, ...], itemsize: int,
          cost_fn: CostFn) -> Conversion:
    _reachable(src, dst, shape)
    best, prev = _tree(src, dst.mesh, shape, itemsize, cost_fn)
    if dst not in best:
        raise NoConversionError(src, dst, shape,
                                "no sequence of allowed steps with finite cost reaches it.")
    steps: list[tuple[Step, float]] = []
    lay = dst
    while lay != src:
        lay, step, w = prev[lay]
        steps.append((step, w))
    steps.reverse()
    step_costs = tuple(
        StepCost(step=s, time_s=w, bytes_in_per_rank=s.bytes_in(shape, itemsize),
                 bytes_out_per_rank=s.bytes_out(shape, itemsize),
                 bytes_recv_per_rank=s.bytes_recv(shape, itemsize)) for s, w in steps)
    return Conversion(src=src, dst=dst, shape=shape, itemsize=itemsize,
                      steps=tuple(s for s, _ in steps), step_costs=step_costs,
                      time_s=best[dst][0], cost_fn=cost_fn)


def _tree(src: Layout, dst_mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
          cost_fn: CostFn) -> tuple[dict, dict]:
    """Shortest paths from ``src`` to every layout it reaches (on its mesh, and on
    ``dst_mesh`` after one alltoallv): ``(best, prev)`` with best[layout] = (seconds, steps)
    and prev[layout] = (previous layout, step, seconds).

    One run serves every destination on ``dst_mesh``: Dijkstra settles nodes in a fixed
    order and never changes a settled node's predecessor, so each path is the one a run
    stopped at that destination would return. Cached per arguments when ``cost_fn`` is
    hashable (cost functions are pure).
    """
    try:
        return _tree_cached(src, dst_mesh, shape, itemsize, cost_fn)
    except TypeError:  # unhashable cost function
        return _tree_uncached(src, dst_mesh, shape, itemsize, cost_fn)


def _tree_uncached(src: Layout, dst_mesh: tuple[int, ...], shape: tuple[int, ...], itemsize: int,
                   cost_fn: CostFn) -> tuple[dict, dict]:
    cross = src.mesh != dst_mesh
    try:
        hash(cost_fn)
        weights = _weights_cache.setdefault((shape, itemsize, cost_fn), {})
    except TypeError:
        weights = {}
    # Dijkstra on (seconds, steps): lexicographic, so ties go to fewer steps.
    best: dict[Layout, tuple[float, int]] = {src: (0.0, 0)}
    prev: dict[Layout, tuple[Layout, Step, float]] = {}
    done: set[Layout] = set()
    tie = itertools.count()
    heap = [(0.0, 0, next(tie), src)]
    while heap:
        d, n, _, lay = heapq.heappop(heap)
        if lay in done:
            continue
        done.add(lay)
        for step in _neighbors_cached(lay, shape, src.mesh, dst_mesh if cross else None):
            if step.dst in done:
                continue
            w = weights.get(step)
            if w is None:
                w = weights[step] = cost_fn(step, shape, itemsize)
            if not (w >= 0):
                raise ValueError(f"cost_fn returned {w!r} for step {step} ({step.src} -> "
                                 f"{step.dst}); costs must be seconds >= 0 (math.inf forbids).")
            if w == math.inf:
                continue
            cand = (d + w, n + 1)
            if cand < best.get(step.dst, (math.inf, 0)):
                best[step.dst] = cand
                prev[step.dst] = (lay, step, float(w))
                heapq.heappush(heap, (cand[0], cand[1], next(tie), step.dst))
    return {lay: best[lay] for lay in done}, prev


_tree_cached = functools.lru_cache(maxsize=16384)(_tree_uncached)
# (shape, itemsize, cost_fn) -> {step: seconds}: steps recur across trees of one shape
_weights_cache: dict = {}


def _neighbors_cached(lay: Layout, shape: tuple[int, ...], src_mesh: tuple[int, ...],
                      dst_mesh: tuple[int, ...] | None) -> tuple[Step, ...]:
    """``_neighbors`` as a tuple, cached. Steps on one mesh depend on the shape only through
    which dims each mesh axis divides, so they are kept per (layout, that pattern) and
    shared by every shape with it."""
    if dst_mesh is None:
        return _in_mesh_neighbors(lay, tuple(n % m == 0 for m in lay.mesh for n in shape))
    return _cross_neighbors(lay, shape, src_mesh, dst_mesh)


@functools.lru_cache(maxsize=65536)
def _in_mesh_neighbors(lay: Layout, divides: tuple[bool, ...]) -> tuple[Step, ...]:
    # divides[a * ndim + d]: whether mesh axis a divides tensor dim d
    ndim = len(lay.tensor_map)
    return tuple(_in_mesh_steps(lay, lambda d, axis: divides[axis * ndim + d]))


@functools.lru_cache(maxsize=65536)
def _cross_neighbors(lay: Layout, shape: tuple[int, ...], src_mesh: tuple[int, ...],
                     dst_mesh: tuple[int, ...]) -> tuple[Step, ...]:
    return tuple(_neighbors(lay, shape, src_mesh, True, enumerate_layouts(dst_mesh, shape, frozenset())))


def _neighbors(lay: Layout, shape: tuple[int, ...], src_mesh: tuple[int, ...], cross: bool,
               targets: Sequence[Layout]) -> Iterator[Step]:
    """Every single step out of ``lay`` (transition table in ``_steps.py``)."""
    yield from _in_mesh_steps(lay, lambda d, axis: shape[d] % lay.mesh[axis] == 0)
    if cross and lay.mesh == src_mesh and not lay.partial:
        for t in targets:
            yield Step.make_alltoallv(lay, t)


def _in_mesh_steps(lay: Layout, divides) -> Iterator[Step]:
    """Every step out of ``lay`` on its own mesh; ``divides(d, axis)``: whether mesh axis
    ``axis`` divides tensor dim ``d``."""
    free = [d for d, a in enumerate(lay.tensor_map) if a == -1]
    for axis, size in enumerate(lay.mesh):
        fits = [d for d in free if divides(d, axis)]
        if axis in lay.partial:
            yield Step.make_allreduce(lay, axis)
            for d in fits:
                yield Step.make_reducescatter(lay, axis, d)
        elif axis in lay.tensor_map:
            yield Step.make_allgather(lay, axis)
            for d in fits:
                yield Step.make_alltoall(lay, axis, d)
        else:
            for d in fits:
                yield Step.make_slice(lay, axis, d)


@functools.lru_cache(maxsize=8192)
def enumerate_layouts(mesh: tuple[int, ...], shape: tuple[int, ...],
                      partial: frozenset[int] = frozenset()) -> tuple[Layout, ...]:
    """Every layout on ``mesh`` with the given partial axes whose splits fit ``shape``."""
    axes = [a for a in range(len(mesh)) if a not in partial]
    out = []
    for tmap in itertools.product(*[[-1] + [a for a in axes if n % mesh[a] == 0]
                                    for n in shape]):
        used = [a for a in tmap if a >= 0]
        if len(used) == len(set(used)):
            out.append(Layout(tuple(mesh), tuple(tmap), partial))
    return tuple(out)
