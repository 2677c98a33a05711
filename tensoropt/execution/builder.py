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


def rebuilt_producers(plan) -> set[str]:
    """Ops whose saved output the plan drops (keep_consumer on an edge out of them)."""
    return {e["producer"] for e in plan.edges if e["reuse"] == "keep_consumer"}


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
        # keep_consumer: recorded tensor -> (the consumer's copy, steps rebuilding the producer's)
        self.consumer_copies: dict = {}
        self.rebuilt_producers = rebuilt_producers(plan)

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

    # -- lowering one op ---------------------------------------------------------------------
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

    def _edge(self, op, i) -> dict:
        edge = self.edges.get((op.name, i))
        if edge is None:
            raise ValueError(f"the plan has no edge into input {i} of {op.name!r}; it was searched "
                             "for another graph")
        assert Layout.parse(edge["dst_layout"]) == input_layout(op, self.configs[op], i), (op.name, i)
        return edge

    def _partial_grad_axes(self, op, i) -> list[int]:
        """Mesh axes along which input ``i``'s gradient is partial: axes that split a dim
        the input does not carry (the op's work is divided, the input is not)."""
        if op.inputs[i] not in self.grad:
            return []
        carried = set(op.space.inputs[i])
        return [a for a, d in enumerate(self.configs[op].axis_dims) if d is not None and d not in carried]

    def lower(self, op, tensors: list) -> list:
        """This rank's shard of ``op``: inputs converted to the op's layouts, the local
        computation, and the op's own all-reduces of partial outputs."""
        tf, ops = self.tf, self.collectives
        config = self.configs[op]
        ctx = self.context(op)
        prepared, rebuilt = [], []
        for i, (t, x) in enumerate(zip(op.inputs, tensors)):
            edge = self._edge(op, i)
            forward = steps_from_json(edge["forward_steps"])
            backward = steps_from_json(edge["backward_steps"]) if t in self.grad else None
            where = f"{op.name}/in{i}"
            if edge["reuse"] == "keep_producer" and forward:
                rebuilt.append(i)  # converted inside the op, rebuilt in backward
                prepared.append(x)
                continue
            x = ops.convert(x, forward, backward, tuple(t.shape), where)
            for axis in self._partial_grad_axes(op, i):
                x = ops.allreduce_backward(x, config.mesh, axis, f"{where}/grad")
            if edge["reuse"] == "keep_consumer":
                self.consumer_copies.setdefault(t, (x, steps_from_json(edge["rebuild_steps"])))
            prepared.append(x)
        if rebuilt:
            outputs = self._lower_rebuilding(op, prepared, rebuilt, ctx)
        elif op.name in self.rebuilt_producers:
            outputs = [self._rebuildable_output(op, prepared[0], ctx)]
        else:
            outputs = op.op_def.lower(tf, op, prepared, ctx)
        dim_axes = config.dim_axes()
        partial_axes = [dim_axes[d] for d in sorted(op.space.reductions) if d in dim_axes]
        out = []
        for j, y in enumerate(outputs):
            for axis in partial_axes:
                y = ops.allreduce_forward(y, config.mesh, axis, f"{op.name}/out{j}")
            out.append(y)
        return out

    def _lower_rebuilding(self, op, prepared: list, rebuilt: list[int], ctx) -> list:
        """keep_producer: inputs in ``rebuilt`` arrive in the producer's layout; the op
        converts them itself and keeps only the producer's copy. Backward, once the output
        gradient exists, re-runs the conversions (control-dependent on it, so reuse is
        active only in backward) and differentiates the op on the rebuilt copies."""
        tf, ops = self.tf, self.collectives
        shapes = {i: tuple(op.inputs[i].shape) for i in rebuilt}
        steps = {i: steps_from_json(self._edge(op, i)["forward_steps"]) for i in rebuilt}
        back = {i: steps_from_json(self._edge(op, i)["backward_steps"]) for i in rebuilt}
        floating = [op.inputs[i].dtype.is_floating and op.inputs[i] in self.grad
                    for i in range(len(prepared))]

        def local(xs, tag):
            converted = [ops.apply_steps(x, steps[i], shapes[i], f"{op.name}/in{i}{tag}")
                         if i in steps else x for i, x in enumerate(xs)]
            return converted, op.op_def.lower(tf, op, converted, ctx)

        @tf.custom_gradient
        def fused(*xs):
            _, ys = local(list(xs), "")

            def grad(*dys):
                dys = [ops._dense(d) for d in dys]
                with tf.control_dependencies(dys):
                    again = [tf.identity(x) if i in steps else x for i, x in enumerate(xs)]
                converted, ys2 = local(again, "/rebuild")
                wrt = [c for c, f in zip(converted, floating) if f]
                # stop_gradients: each input's own partial derivative. A rebuilt input
                # may depend on another input of the op (h * sigmoid(sum(h))); without it
                # the other input's gradient would also count the path through the rebuilt
                # one, which the outer backward already follows.
                grads = iter(tf.gradients(ys2, wrt, grad_ys=dys, stop_gradients=wrt) if wrt else [])
                result = []
                for i, c in enumerate(converted):
                    g = next(grads) if floating[i] else None
                    if g is not None and i in steps:
                        g = ops._dense(g)
                        for axis in self._partial_grad_axes(op, i):
                            g = ops.allreduce_raw(g, self.configs[op].mesh, axis, f"{op.name}/in{i}/grad")
                        g = ops.apply_steps(g, back[i], shapes[i], f"{op.name}/in{i}/grad")
                    result.append(g)
                return result

            return list(ys), grad

        out = fused(*prepared)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def _rebuildable_output(self, op, x, ctx):
        """keep_consumer: the op's own copy of its output is not kept for backward; its
        gradient is computed from the consumer's copy, converted back (reverse steps)."""
        tf, ops = self.tf, self.collectives
        t = op.outputs[0]
        op_def = op.op_def

        @tf.custom_gradient
        def keep_none(value):
            def grad(dy):
                dy = ops._dense(dy)
                copy, reverse = self.consumer_copies[t]
                with tf.control_dependencies([dy]):
                    source = tf.identity(copy)
                y = ops.apply_steps(source, reverse, tuple(t.shape), f"{op.name}/out0/rebuild")
                return op_def.grad_from_output(tf, op, y, dy)

            return op_def.lower(tf, op, [value], ctx)[0], grad

        return keep_none(x)
