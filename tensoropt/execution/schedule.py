"""The collectives a plan issues in one training step, in issue order, written once.

``collective_schedule(graph, plan)`` lists them. The execution builder issues exactly this
list (it checks every collective it builds against it and fails on a difference), the
accounting counts it, the ranks compare a hash of it before the first step, and the op's
own collectives in it come from the rule the cost model prices
(``configs.op_collectives``). It imports no TensorFlow.

The order, which every rank follows (the builder chains each collective after the one
before it):

1. forward, op by op in recording order (a topological order); per op: the edge
   conversions of its inputs in input order, except inputs the op converts itself
   (``keep_producer``), which come next in input order; then the op's own forward
   collectives (an LSTM's hidden gathers, then partial outputs);
2. backward, op by op in reverse recording order, for ops a gradient flows through; per
   op: the ``rebuild`` phase first (the conversions a ``keep_producer`` op re-runs and, for
   an LSTM, its gathers again; or the conversion rebuilding a ``keep_consumer``
   producer's output), then the op's own backward collectives (LSTM gathers' gradients,
   t descending), then input by input its partial-gradient all-reduces and the edge's
   backward conversion: first the inputs a ``keep_producer`` op converts itself (their
   gradients come out of one gradient function, which TensorFlow's ``GATE_OP`` gating
   makes every input's gradient wait for), then the others, each in input order.

Gradients flow only from consumers to producers, so every collective's data comes from
collectives before it in this order: chaining them in it cannot deadlock a rank. There is
no "update" phase: a parameter's gradient is all-reduced where it becomes partial, in
backward, and the optimizer's update is local.

Naming: ``{kind}/{op}/{what}``, e.g. ``allgather/MatMul/in0/1`` (step 1 of input 0's
conversion), ``allreduce/MatMul/in1/grad/axis0``, ``allreduce/MatMul/out0/axis1``,
``allgather/lstm/hidden/3``, ``alltoall/Relu/in0/rebuild/0``. Horovod matches tensors across
ranks by these names. A reduce-scatter step is issued as an all-reduce and a local slice.

Usage::

    calls = collective_schedule(graph, plan)
    calls[0].name, calls[0].kind, calls[0].group(rank), calls[0].nbytes, calls[0].phase
    check_plan_for_graph(graph, plan)     # ValueError naming the op/edge and field that differ
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reschedule import axis_groups
from reschedule._steps import alltoallv_recv_elements

from tensoropt.configs import (config_of, gradient_inputs, gradient_tensors, input_layout,
                               op_collectives, output_layout)

__all__ = ["CollectiveCall", "PHASES", "collective_schedule", "collective_name",
           "check_plan_for_graph", "edges_by_input", "step_calls", "own_calls"]

PHASES = ("forward", "backward", "rebuild")
_ISSUED_AS = {"slice": None}


@dataclass(frozen=True)
class CollectiveCall:
    """One collective of a step.

    Attributes:
        kind: "allreduce", "allgather", "reducescatter" (a partial output reduced
            straight into the consumer's split), "alltoall" or "alltoallv" (a mesh change:
            one ``hvd.alltoall`` with splits over all ranks).
        name: the horovod tensor name the builder gives it.
        mesh: the device mesh it runs on.
        axis: the mesh axis whose groups run it (None: all ranks, for alltoallv).
        nbytes: bytes per rank, as ``tensoropt.costs.collective_times`` counts them (allreduce: the
            buffer reduced; allgather: the gathered buffer; reducescatter: the buffer before
            the scatter; alltoall: the buffer each rank
            holds; alltoallv: the most bytes any rank receives).
        phase: "forward", "backward" or "rebuild".
    """

    kind: str
    name: str
    mesh: tuple[int, ...]
    axis: int | None
    nbytes: int
    phase: str

    @property
    def scheme(self) -> tuple[int, int]:
        """``(group size, stride)``: the partitioning scheme of its rank groups."""
        groups = axis_groups(self.mesh, self.axis)
        g = groups[0]
        return len(g), (g[1] - g[0] if len(g) > 1 else 1)

    def group(self, rank: int) -> tuple[int, ...]:
        """The ranks that run it with ``rank`` (its horovod process set)."""
        for group in axis_groups(self.mesh, self.axis):
            if rank in group:
                return tuple(group)
        raise ValueError(f"{self.name}: rank {rank} is not on mesh {list(self.mesh)}")

    def __str__(self) -> str:
        where = "all ranks" if self.axis is None else f"mesh {list(self.mesh)} axis {self.axis}"
        return f"{self.phase} {self.kind} {self.name} ({where}, {self.nbytes} B)"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-/]")


def collective_name(kind: str, where: str) -> str:
    """The horovod name of a ``kind`` collective at ``where`` (``{op}/{what}``)."""
    return f"{kind}/{_UNSAFE.sub('_', where)}"


def _step_calls(steps, where: str, tensor, phase: str) -> list[CollectiveCall]:
    shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
    out = []
    for k, s in enumerate(steps or ()):
        kind = _ISSUED_AS.get(s.kind, s.kind)
        if kind is None:
            continue
        if kind == "alltoallv":
            nbytes = max(alltoallv_recv_elements(s.src, s.dst, shape)) * itemsize
        else:
            nbytes = (s.dst if kind == "allgather" else s.src).local_bytes(shape, itemsize)
        out.append(CollectiveCall(kind, collective_name(kind, f"{where}/{k}"), s.src.mesh, s.axis,
                                  int(nbytes), phase))
    return out


def _own_calls(op, config, items, phase_of=None) -> list[CollectiveCall]:
    return [CollectiveCall(c.kind, collective_name(c.kind, f"{op.name}/{c.where}"), config.mesh,
                           c.mesh_axis, int(c.nbytes), phase_of or c.phase) for c in items]


#: The rules ``collective_schedule`` names and sizes calls by, for the simulator, which
#: lays the same calls out op by op (``tensoropt.simulator.plan_tasks``).
step_calls = _step_calls
own_calls = _own_calls


def edges_by_input(plan) -> dict:
    """(consumer op name, input index) -> the plan's EdgePlan."""
    return {(e.consumer, e.input): e for e in plan.edges}


def check_one_train_step(graph) -> None:
    """Raises ValueError when ``graph`` records more than one training step: a plan on
    several ranks issues one backward's collectives per iteration.

    The message names the steps (``minimize`` called once per optimizer, as a GAN's
    generator and discriminator do) and what runs instead."""
    steps = graph.train_steps
    if len(steps) > 1:
        names = ", ".join(f"{s.name!r} (loss {s.loss.name!r}, {len(s.var_list)} variables)" for s in steps)
        raise ValueError(f"the graph records {len(steps)} training steps: {names}. A plan on several "
                         "ranks runs one training step per iteration. Run this script on one process "
                         "(without mpirun), or minimize one loss (e.g. the sum of the losses) with one "
                         "optimizer")


def collective_schedule(graph, plan) -> list[CollectiveCall]:
    """The collectives ``plan`` issues in one training step of ``graph``, in issue order.

    Raises:
        ValueError: the plan does not fit the graph (see ``check_plan_for_graph``), or
            the graph records more than one training step (each would add its own
            backward; one step per graph is supported).
    """
    check_one_train_step(graph)
    grads = gradient_tensors(graph)
    edges = edges_by_input(plan)
    keep_consumer_copy = {}   # producer op name -> the first edge that drops its copy
    for op in graph.operations:
        for i in range(len(op.inputs)):
            e = edges[(op.name, i)]
            if e.reuse == "keep_consumer":
                keep_consumer_copy.setdefault(e.producer, e)
    forward, backward = [], {}
    for op in graph.operations:
        config = config_of(plan, op)
        grad_inputs = gradient_inputs(op, grads)
        converted_inside = [i for i in range(len(op.inputs))
                            if edges[(op.name, i)].reuse == "keep_producer" and edges[(op.name, i)].forward_steps]
        for i, t in enumerate(op.inputs):
            if i not in converted_inside:
                forward += _step_calls(edges[(op.name, i)].forward_steps, f"{op.name}/in{i}", t, "forward")
        for i in converted_inside:
            forward += _step_calls(edges[(op.name, i)].forward_steps, f"{op.name}/in{i}", op.inputs[i], "forward")
        own = op_collectives(op, config, grad_inputs)
        forward += _own_calls(op, config, [c for c in own if c.phase == "forward"])
        if not any(grad_inputs):
            continue
        calls = []
        if converted_inside:   # the op re-runs its conversions and itself in backward
            for i in converted_inside:
                calls += _step_calls(edges[(op.name, i)].forward_steps, f"{op.name}/in{i}/rebuild",
                                     op.inputs[i], "rebuild")
            own = op_collectives(op, config, grad_inputs, tag="/rebuild")
            calls += _own_calls(op, config, [c for c in own if c.inside and c.phase == "forward"], "rebuild")
        elif op.name in keep_consumer_copy:
            calls += _step_calls(keep_consumer_copy[op.name].rebuild_steps, f"{op.name}/out0/rebuild",
                                 op.outputs[0], "rebuild")
        calls += _own_calls(op, config, [c for c in own if c.inside and c.phase == "backward"])
        others = [i for i in range(len(op.inputs)) if i not in converted_inside]
        for i in converted_inside + others:
            if grad_inputs[i]:
                calls += _own_calls(op, config, [c for c in own if c.input == i])
                if edges[(op.name, i)].forward_steps:
                    calls += _step_calls(edges[(op.name, i)].backward_steps, f"{op.name}/in{i}/grad",
                                         op.inputs[i], "backward")
        backward[op] = calls
    out = forward + [c for op in reversed(graph.operations) for c in backward.get(op, ())]
    out += global_norm_calls(graph, plan)
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        seen = set()
        dup = next(n for n in names if n in seen or seen.add(n))
        raise ValueError(f"two collectives are named {dup!r}: op names of the graph collide once "
                         "characters outside [A-Za-z0-9_.-/] become '_'; rename the ops")
    return out


def global_norm_where(step) -> str:
    """Where a training step's global-norm all-reduce is, as the builder names it."""
    return f"{step.name}/global_norm"


def global_norm_calls(graph, plan) -> list[CollectiveCall]:
    """The all-reduce of a global-norm clip's sum of squares (a float32 scalar) over every
    rank, after the backward's collectives; none on one device."""
    if plan.parallelism == 1:
        return []
    return [CollectiveCall("allreduce", collective_name("allreduce", global_norm_where(step)),
                           (plan.parallelism,), None, 4, "backward")
            for step in graph.train_steps if step.global_norm is not None]


def check_plan_for_graph(graph, plan) -> None:
    """Checks that ``plan`` fits ``graph``: every op configured with a valid split, every
    input carried by one edge plan whose layouts are the ones the two ops' configurations
    imply, and a backward conversion exactly where a gradient flows.

    Raises:
        ValueError: naming the op or edge and the field that differ.
    """
    ops = {op.name for op in graph.operations}
    extra = [name for name in plan.ops if name not in ops]
    missing = [name for name in ops if name not in plan.ops]
    if missing or extra:
        raise ValueError(f"the plan does not configure {len(missing)} op(s) of this graph (e.g. {missing[:3]}) "
                         f"and configures {len(extra)} op(s) it lacks (e.g. {extra[:3]}); it was searched "
                         "for another graph: call find_strategy after building the whole model")
    seen: dict = {}
    for k, e in enumerate(plan.edges):
        if (e.consumer, e.input) in seen:
            raise ValueError(f"edge {k} ({e.name}): input {e.input} of {e.consumer!r} already has edge "
                             f"{seen[(e.consumer, e.input)]}")
        seen[(e.consumer, e.input)] = k
    grads = gradient_tensors(graph)
    configs = {}
    for op in graph.operations:
        config = configs[op] = config_of(plan, op)
        for size, d in zip(config.mesh, config.axis_dims):
            if d is None:
                continue
            if d not in op.space.splittable_dims() or op.space.dims[d] % size:
                raise ValueError(f"op {op.name!r}: field 'dim_axes': dim {d!r} (size {op.space.dims.get(d)}) "
                                 f"cannot be split {size} ways; its splittable dims are "
                                 f"{op.space.splittable_dims()}")
    edges = edges_by_input(plan)
    count = 0
    for op in graph.operations:
        grad_inputs = gradient_inputs(op, grads)
        for i, t in enumerate(op.inputs):
            e = edges.get((op.name, i))
            if e is None:
                raise ValueError(f"the plan has no edge into input {i} of {op.name!r}; it was searched "
                                 "for another graph")
            count += 1
            name = f"edge {e.name}"
            if (e.producer, e.output) != (t.op.name, t.value_index):
                raise ValueError(f"{name}: input {i} of {op.name!r} is {t.op.name}:{t.value_index} in this graph")
            want_src = output_layout(t.op, configs[t.op], t.value_index)
            want_dst = input_layout(op, configs[op], i)
            for field_name, have, want in (("src_layout", e.src_layout, want_src),
                                           ("dst_layout", e.dst_layout, want_dst)):
                if have != want:
                    raise ValueError(f"{name}: field {field_name!r} is {have}, but the ops' configurations "
                                     f"give {want}")
            if (e.backward_steps is not None) != grad_inputs[i]:
                raise ValueError(f"{name}: field 'backward_steps' is "
                                 f"{'given' if e.backward_steps is not None else 'null'}, but in this graph "
                                 f"{'a' if grad_inputs[i] else 'no'} gradient flows back over the edge")
    inputs = {(op.name, i) for op in graph.operations for i in range(len(op.inputs))}
    for k, e in enumerate(plan.edges):
        if (e.consumer, e.input) not in inputs:
            raise ValueError(f"edge {k} ({e.name}): {e.consumer!r} has no input {e.input} in this graph; the "
                             "plan was searched for another graph or edited: search it again")
    if count != len(plan.edges):
        raise ValueError(f"the plan has {len(plan.edges)} edges, this graph {count}; it was searched for "
                         "another graph")
