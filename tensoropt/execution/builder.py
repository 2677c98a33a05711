"""One process's share of a plan: local shapes, layout conversions, the ops' own
collectives, and sharded variables.

``PlanSharding`` is the ``sharding`` that ``tensoropt.lowering.lower_graph`` takes. For
each op it gives the local shapes of its configuration, converts each input from the
producer's layout to the layout the op needs (the plan's re-scheduling steps, one fused
operator with an explicit gradient), all-reduces the input gradients that the op's split
leaves partial, and all-reduces outputs that are partial sums. Variables are created as
their shards, starting from the slice of the value one process would make.

Usage::

    sharding = PlanSharding(graph, plan, rank, hvd, process_sets)
    lowered = lower_graph(graph, tf, sharding)
    sharding.layout_of(tensor)      # the reschedule.Layout this rank holds it in
"""

from __future__ import annotations

from typing import Any

from reschedule import Layout, Step, mesh_coords

from tensoropt.configs import Config, input_layout, local_dim_sizes, output_layout
from tensoropt.costs import requires_grad
from tensoropt.execution.collectives import CollectiveOps
from tensoropt.ops.registry import LoweringContext

__all__ = ["PlanSharding", "config_of", "steps_from_json"]


def config_of(plan, op) -> Config:
    """The Config the plan gives ``op``."""
    try:
        c = plan.ops[op.name]
    except KeyError:
        raise ValueError(f"the plan has no configuration for op {op.name!r}; it was searched for "
                         "another graph") from None
    mesh = tuple(c.mesh) or (1,)
    axis_dims: list = [None] * len(mesh)
    for dim, axis in c.dim_axes:
        axis_dims[axis] = dim
    return Config(mesh, tuple(axis_dims))


def steps_from_json(items) -> list[Step] | None:
    if items is None:
        return None
    return [Step(s["kind"], Layout.parse(s["src"]), Layout.parse(s["dst"]), s["axis"], s["src_dim"],
                 s["dst_dim"]) for s in items]


class PlanSharding:
    """Lowers every op as this rank's shard of ``plan``."""

    def __init__(self, graph, plan, rank: int, hvd, process_sets: dict[tuple[int, ...], Any]):
        self.graph, self.plan, self.rank = graph, plan, rank
        self.hvd, self.process_sets = hvd, process_sets
        self.configs = {op: config_of(plan, op) for op in graph.operations}
        self.edges = {(e["consumer"], e["input"]): e for e in plan.edges}
        self.grad = requires_grad(graph)
        self.collectives: CollectiveOps | None = None
        self.tf = None

    def begin(self, tf) -> None:
        self.tf = tf
        self.collectives = CollectiveOps(tf, self.hvd, self.rank, self.process_sets)

    # -- layouts ---------------------------------------------------------------------------
    def layout_of(self, tensor) -> Layout:
        """The layout in which this rank holds ``tensor`` (its producer's output layout)."""
        return output_layout(tensor.op, self.configs[tensor.op], tensor.value_index)

    def _offsets(self, config: Config, space) -> dict[str, int]:
        coords = mesh_coords(config.mesh, self.rank)
        local = local_dim_sizes(space, config)
        return {d: coords[a] * local[d] for a, d in enumerate(config.axis_dims) if d is not None}

    # -- the three hooks -------------------------------------------------------------------
    def context(self, op) -> LoweringContext:
        config = self.configs[op]
        shapes = [output_layout(op, config, j).local_shape(t.shape) for j, t in enumerate(op.outputs)]
        extra: dict[str, Any] = {"dim_offsets": self._offsets(config, op.space)}
        if op.kind == "variable":
            slices = self.layout_of(op.outputs[0]).shard_slices(self.rank, op.outputs[0].shape)
            extra["shard_offsets"] = [s.start for s in slices]
        if op.kind == "lstm" and "h" in config.dim_axes():
            axis = config.dim_axes()["h"]
            extra["allgather_hidden"] = lambda h: self.collectives.allgather_partial_grad(
                h, 1, config.mesh, axis, f"{op.name}/hidden")
        return LoweringContext(output_shapes=shapes, dim_sizes=dict(op.space.dims),
                               local_dim_sizes=local_dim_sizes(op.space, config), seed=self.graph.seed,
                               extra=extra)

    def inputs(self, op, tensors: list) -> list:
        config = self.configs[op]
        out = []
        for i, (t, x) in enumerate(zip(op.inputs, tensors)):
            edge = self.edges.get((op.name, i))
            if edge is None:
                raise ValueError(f"the plan has no edge into input {i} of {op.name!r}; it was "
                                 "searched for another graph")
            want = input_layout(op, config, i)
            assert Layout.parse(edge["dst_layout"]) == want, (op.name, i, edge["dst_layout"], str(want))
            backward = steps_from_json(edge["backward_steps"]) if t in self.grad else None
            x = self.collectives.convert(x, steps_from_json(edge["forward_steps"]), backward,
                                         tuple(t.shape), f"{op.name}/in{i}")
            if t in self.grad:
                carried = set(op.space.inputs[i])
                for axis, dim in enumerate(config.axis_dims):
                    if dim is not None and dim not in carried:
                        x = self.collectives.allreduce_backward(x, config.mesh, axis, f"{op.name}/in{i}/grad")
            out.append(x)
        return out

    def outputs(self, op, tensors: list) -> list:
        config = self.configs[op]
        dim_axes = config.dim_axes()
        partial_axes = [dim_axes[d] for d in sorted(op.space.reductions) if d in dim_axes]
        out = []
        for j, y in enumerate(tensors):
            for axis in partial_axes:
                y = self.collectives.allreduce_forward(y, config.mesh, axis, f"{op.name}/out{j}")
            out.append(y)
        return out
