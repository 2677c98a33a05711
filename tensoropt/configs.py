"""Parallelization configurations of one op: a device mesh and which mesh axis splits
which of the op's iteration dims.

A configuration assigns each mesh axis to at most one splittable iteration dim (an
injective map), or to none. An unassigned axis computes the op redundantly along it; an
axis on a reduction dim leaves partial sums that the op itself all-reduces. From a
configuration follow the layouts of the op's inputs and outputs: a tensor axis that
carries a split dim is split over that mesh axis, every other mesh axis replicates it.

Usage::

    configs = enumerate_configs(op, num_devices=8)
    c = configs[3]
    str(c)                         # '[2,4] m:0,n:1'
    input_layout(op, c, 0)         # reschedule.Layout of input 0 under c
    output_layout(op, c, 0)        # the output's layout (after the op's own all-reduce)

Placeholders are loaded data-parallel (the paper's data loading): their only
configuration splits the batch dim over all devices, or replicates when it does not
divide.

This module also holds the rules that the cost model, the collective schedule and the
execution builder share, written once: which tensors get gradients
(``gradient_tensors``), an op's own collectives under a configuration
(``op_collectives``: partial outputs, partial input gradients, an LSTM's hidden-state
gathers), and the bytes an op keeps for backward (``saved_bytes``)::

    grads = gradient_tensors(graph)
    op_collectives(op, c, gradient_inputs(op, grads))    # (OpCollective, ...) in issue order
    saved_bytes(op, c)                                    # per device; saved_bytes(op) whole
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from reschedule import Layout

from tensoropt.cluster.mesh import device_meshes
from tensoropt.plan import OpConfig

__all__ = ["Config", "enumerate_configs", "input_layout", "output_layout",
           "tensor_layout", "local_dim_sizes", "config_of", "op_config", "gradient_tensors",
           "gradient_inputs", "OpCollective", "op_collectives", "saved_bytes", "reruns_forward",
           "partial_out_ok"]


@dataclass(frozen=True)
class Config:
    """One configuration of one op.

    Attributes:
        mesh: device mesh, e.g. ``(2, 4)``.
        axis_dims: per mesh axis, the iteration dim it splits, or None (redundant).
        partial_out: the output stays partial along the axes that split reduction dims
            (the op does not all-reduce it; its out-edges reduce it, e.g. a reduce-scatter
            straight into the consumer's split). Offered by ``enumerate_configs`` only
            where ``partial_out_ok``.
    """

    mesh: tuple[int, ...]
    axis_dims: tuple[str | None, ...]
    partial_out: bool = False

    def dim_axes(self) -> dict[str, int]:
        """Iteration dim -> the mesh axis splitting it."""
        return {d: a for a, d in enumerate(self.axis_dims) if d is not None}

    def split_factor(self) -> int:
        """How many ways the op's work is divided (redundant axes do not divide it)."""
        f = 1
        for size, d in zip(self.mesh, self.axis_dims):
            if d is not None:
                f *= size
        return f

    def __str__(self) -> str:
        mesh = "[" + ",".join(map(str, self.mesh)) + "]"
        split = ",".join(f"{d}:{a}" for a, d in enumerate(self.axis_dims) if d is not None)
        return f"{mesh} {split or 'replicated'}" + (" partial-out" if self.partial_out else "")

    def partial_axes(self, space) -> frozenset:
        """The mesh axes along which the outputs stay partial (``partial_out``)."""
        if not self.partial_out:
            return frozenset()
        return frozenset(a for a, d in enumerate(self.axis_dims) if d is not None and d in space.reductions)


def local_dim_sizes(space, config: Config) -> dict[str, int]:
    """The op's dim sizes on one device under ``config``."""
    sizes = dict(space.dims)
    for size, d in zip(config.mesh, config.axis_dims):
        if d is not None:
            sizes[d] //= size
    return sizes


def _assignments(mesh: tuple[int, ...], dims: dict[str, int], splittable: Iterable[str]):
    choices = []
    for size in mesh:
        choices.append([None] + [d for d in splittable if dims[d] % size == 0 and dims[d] >= size])
    for combo in itertools.product(*choices):
        used = [d for d in combo if d is not None]
        if len(used) == len(set(used)):
            yield combo


def enumerate_configs(op, num_devices: int, max_axes: int = 3) -> list[Config]:
    """Every valid configuration of ``op`` on ``num_devices`` devices, in a stable order.

    Fully redundant configurations (no axis splits anything) are the same on every mesh,
    so only one is kept.
    """
    space = op.space
    if op.kind == "placeholder":
        batch = space.dims.get("d0", 1)
        if num_devices > 1 and batch % num_devices == 0:
            return [Config((num_devices,), ("d0",))]
        return [Config((num_devices,), (None,))]
    if num_devices == 1:
        return [Config((1,), (None,))]
    splittable = space.splittable_dims()
    may_partial = bool(space.reductions) and partial_out_ok(op)
    configs: list[Config] = []
    seen_replicated = False
    for mesh in device_meshes(num_devices, max_axes):
        for combo in _assignments(mesh, space.dims, splittable):
            if all(d is None for d in combo):
                if seen_replicated:
                    continue
                seen_replicated = True
                combo = (None,)
                mesh = (num_devices,)
            configs.append(Config(mesh, tuple(combo)))
            if may_partial and any(d in space.reductions for d in combo if d is not None):
                configs.append(Config(mesh, tuple(combo), partial_out=True))
    return configs


def partial_out_ok(op) -> bool:
    """Whether ``op`` may leave its output partial (``Config.partial_out``): one floating
    output that other ops consume, that is no training loss, and that the op's own
    backward does not keep (the reduction then happens on the out-edges)."""
    if len(op.outputs) != 1 or op.space.saved_outputs or op.space.saved_internal:
        return False
    out = op.outputs[0]
    graph = getattr(op, "graph", None)
    if not out.dtype.is_floating or graph is None:
        return False
    if any(step.loss is out for step in graph.train_steps):
        return False
    return any(out in c.inputs for c in graph.operations)


@lru_cache(maxsize=65536)
def tensor_layout(carried: tuple[str | None, ...], config: Config) -> Layout:
    """The layout of a tensor whose axes carry ``carried`` dims, under ``config`` (one
    value per pair, kept: pricing asks for the same layouts again and again)."""
    dim_axes = config.dim_axes()
    tensor_map = tuple(dim_axes.get(d, -1) if d is not None else -1 for d in carried)
    return Layout(mesh=config.mesh, tensor_map=tensor_map)


def input_layout(op, config: Config, index: int) -> Layout:
    """The layout ``op`` needs its input ``index`` in, under ``config``."""
    return tensor_layout(op.space.inputs[index], config)


def output_layout(op, config: Config, index: int) -> Layout:
    """The layout of ``op``'s output ``index`` under ``config``.

    Axes that split a reduction dim are all-reduced inside the op, so the output is
    replicated (not partial) along them -- unless ``config.partial_out``: then it is
    partial along them.
    """
    layout = tensor_layout(op.space.outputs[index], config)
    partial = config.partial_axes(op.space)
    return Layout(layout.mesh, layout.tensor_map, partial) if partial else layout


def op_config(config: Config):
    """The Plan form (``tensoropt.plan.OpConfig``) of a configuration."""
    return OpConfig(config.mesh, tuple((d, a) for a, d in enumerate(config.axis_dims) if d is not None),
                    config.partial_out)


def config_of(plan, op) -> Config:
    """The Config ``plan`` gives ``op``.

    Raises:
        ValueError: the plan has no configuration for the op.
    """
    try:
        c = plan.ops[op.name]
    except KeyError:
        raise ValueError(f"the plan has no configuration for op {op.name!r}; it was searched for "
                         "another graph") from None
    mesh = tuple(c.mesh) or (1,)
    axis_dims: list = [None] * len(mesh)
    for dim, axis in c.dim_axes:
        axis_dims[axis] = dim
    return Config(mesh, tuple(axis_dims), c.partial_out)


# -- the rules shared by costs, the collective schedule and execution ----------------------
def gradient_tensors(graph) -> frozenset:
    """The tensors whose gradient a training step computes: floating tensors on a path
    from a variable it trains to its loss (what ``tf.gradients(loss, var_list)`` reaches)."""
    out: set = set()
    for step in graph.train_steps:
        reached = {v for v in step.var_list if v.dtype.is_floating}
        for op in graph.operations:
            if any(t in reached for t in op.inputs):
                reached.update(t for t in op.outputs if t.dtype.is_floating)
        needed = {step.loss}
        for op in reversed(graph.operations):
            if any(t in needed for t in op.outputs):
                needed.update(op.inputs)
        out |= reached & needed
    return frozenset(out)


def gradient_inputs(op, grads) -> tuple[bool, ...]:
    """Per input of ``op``, whether a gradient flows back into it through ``op``: the input
    and one of the op's outputs are in ``grads`` (``gradient_tensors``)."""
    differentiated = any(t in grads for t in op.outputs)
    return tuple(differentiated and t in grads for t in op.inputs)


@dataclass(frozen=True)
class OpCollective:
    """One collective an op issues itself under a configuration.

    Attributes:
        kind: "allreduce" or "allgather".
        where: what it is, relative to the op: ``out{j}/axis{a}`` (a partial output),
            ``in{i}/grad/axis{a}`` (a partial input gradient), ``hidden/{t}`` (an LSTM's
            gather of h before step t) and ``hidden/{t}/grad`` (its gradient's all-reduce);
            with a ``tag`` the hidden ones read ``hidden/{t}{tag}``.
        phase: "forward" or "backward".
        mesh_axis: the mesh axis whose groups run it.
        nbytes: bytes per rank, as ``tensoropt.costs.collective_times`` counts them (allreduce: the
            buffer reduced; allgather: the gathered buffer).
        input: the input a partial input gradient belongs to, else None.
        output: the output a partial output belongs to, else None.
    """

    kind: str
    where: str
    phase: str
    mesh_axis: int
    nbytes: int
    input: int | None = None
    output: int | None = None

    @property
    def inside(self) -> bool:
        """Issued inside the op's own computation (an LSTM's gathers and their gradients),
        so re-running the op re-issues it; partial outputs and input gradients are not."""
        return self.input is None and self.output is None


def op_collectives(op, config: Config, grad_inputs: Sequence[bool], tag: str = "") -> tuple[OpCollective, ...]:
    """An op's own collectives under ``config``, in the order the op issues them.

    - forward: an LSTM whose hidden dim is split gathers h before every step after the
      first (t = 1 .. T-1); then every output is all-reduced along every mesh axis that
      splits a reduction dim (reductions in name order);
    - backward, when a gradient flows (``grad_inputs``, from ``gradient_inputs``): the
      LSTM's gathers' gradients are all-reduced (t = T-1 .. 1); then, input by input, the
      gradient is all-reduced along every mesh axis that splits a dim the input does not
      carry (its gradient is partial there), in axis order.
    """
    space, out = op.space, []
    dim_axes = config.dim_axes()
    hidden = op.kind == "lstm" and "h" in dim_axes
    if hidden:
        axis = dim_axes["h"]
        gathered = local_dim_sizes(space, config)["b"] * space.dims["h"] * op.outputs[0].dtype.itemsize
        steps = range(1, space.dims["t"])
        out += [OpCollective("allgather", f"hidden/{t}{tag}", "forward", axis, gathered) for t in steps]
    for j, t in enumerate(op.outputs):
        if config.partial_out:   # the out-edges reduce it
            break
        nbytes = output_layout(op, config, j).local_bytes(t.shape, t.dtype.itemsize)
        out += [OpCollective("allreduce", f"out{j}/axis{dim_axes[d]}", "forward", dim_axes[d], nbytes,
                             output=j) for d in sorted(space.reductions) if d in dim_axes]
    if hidden and any(grad_inputs):
        out += [OpCollective("allreduce", f"hidden/{t}{tag}/grad", "backward", axis, gathered)
                for t in reversed(steps)]
    for i, t in enumerate(op.inputs):
        if not grad_inputs[i]:
            continue
        carried = set(space.inputs[i])
        nbytes = input_layout(op, config, i).local_bytes(t.shape, t.dtype.itemsize)
        out += [OpCollective("allreduce", f"in{i}/grad/axis{a}", "backward", a, nbytes, i)
                for a, d in enumerate(config.axis_dims) if d is not None and d not in carried]
    return tuple(out)


def saved_bytes(op, config: Config | None = None, count_parameters: bool = True) -> int:
    """Bytes ``op``'s backward keeps, per device under ``config`` (None: the whole tensors,
    on one device): its saved inputs and outputs, and its saved internal tensors (e.g. an
    LSTM's gates) in the item size of its first output.

    Args:
        count_parameters: whether saved inputs that are variables count; a whole-graph
            total leaves them out, since the parameter itself is what is kept.
    """
    space = op.space
    local = local_dim_sizes(space, config) if config is not None else space.dims

    def held(t, layout) -> int:
        return t.nbytes if config is None else layout.local_bytes(t.shape, t.dtype.itemsize)

    total = sum(held(op.inputs[i], config and input_layout(op, config, i)) for i in space.saved_inputs
                if count_parameters or op.inputs[i].op.kind != "variable")
    total += sum(held(op.outputs[i], config and output_layout(op, config, i)) for i in space.saved_outputs)
    itemsize = op.outputs[0].dtype.itemsize if op.outputs else 4
    total += sum(math.prod(local[d] for d in dims) * itemsize for dims in space.saved_internal)
    return int(total)


def reruns_forward(op) -> bool:
    """Whether ``op``'s gradient reads its own forward results (saved outputs or internal
    tensors, or ``OpDef.backward_reads_outputs``), so that differentiating it on rebuilt
    inputs (keep_producer) runs its forward again."""
    space = op.space
    return bool(space.saved_outputs or space.saved_internal
                or getattr(op.op_def, "backward_reads_outputs", False))
