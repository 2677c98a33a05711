"""One process's share of a plan: local shapes, layout conversions, the ops' own
collectives, and sharded variables.

``PlanSharding`` is the ``sharding`` that ``tensoropt.execution.lowering.lower_graph`` takes. For
each op it gives the local shapes of its configuration, converts each input from the
producer's layout to the layout the op needs (the plan's re-scheduling steps, one fused
operator with an explicit gradient), all-reduces the input gradients that the op's split
leaves partial, and all-reduces outputs that are partial sums. Which of the op's own
collectives it issues comes from ``configs.op_collectives``, the rule the cost model
prices; every collective is checked against the plan's ``collective_schedule`` as it is
built (``CollectiveOps``). Variables are created as their shards, starting from the
slice of the value one process would make.

Usage::

    sharding = PlanSharding(graph, plan, rank, hvd, process_sets)
    lowered = lower_graph(graph, tf, sharding)     # calls begin, lower, begin_gradients, finish
    sharding.layout_of(tensor)      # the reschedule.Layout this rank holds it in
"""

from __future__ import annotations

from typing import Any

from reschedule import Layout, mesh_coords

from tensoropt.configs import (Config, config_of, gradient_inputs, gradient_tensors, local_dim_sizes,
                               op_collectives, output_layout)
from tensoropt.execution.horovod_comm import CollectiveOps
from tensoropt.execution.gradients import custom_gradient
from tensoropt.execution.schedule import check_plan_for_graph, collective_schedule, edges_by_input
from tensoropt.ops.registry import LoweringContext

__all__ = ["PlanSharding", "config_of"]


class PlanSharding:
    """Lowers every op as this rank's shard of ``plan``.

    Raises:
        ValueError: the plan does not fit the graph (``schedule.check_plan_for_graph``).
    """

    def __init__(self, graph, plan, rank: int, hvd, process_sets: dict[tuple[int, ...], Any],
                 schedule=None):
        check_plan_for_graph(graph, plan)
        self.graph, self.plan, self.rank = graph, plan, rank
        self.hvd, self.process_sets = hvd, process_sets
        self.schedule = list(schedule) if schedule is not None else collective_schedule(graph, plan)
        self.configs = {op: config_of(plan, op) for op in graph.operations}
        self.edges = edges_by_input(plan)
        grads = gradient_tensors(graph)
        self.grad_inputs = {op: gradient_inputs(op, grads) for op in graph.operations}
        self.collectives: CollectiveOps | None = None
        self.tf = None
        # keep_consumer: recorded tensor -> (the consumer's copy, steps rebuilding the producer's)
        self.consumer_copies: dict = {}
        self.rebuilt_producers = {e.producer for e in plan.edges if e.reuse == "keep_consumer"}

    def begin(self, tf) -> None:
        self.tf = tf
        self.collectives = CollectiveOps(tf, self.hvd, self.rank, self.process_sets, self.schedule)

    def begin_gradients(self) -> None:
        """Called before the training steps' gradients are built."""
        self.collectives.begin_gradients()

    def finish(self) -> None:
        """Called once the whole graph is built: chains the backward collectives."""
        self.collectives.finish()

    # -- layouts ---------------------------------------------------------------------------
    def layout_of(self, tensor) -> Layout:
        """The layout in which this rank holds ``tensor`` (its producer's output layout)."""
        return output_layout(tensor.op, self.configs[tensor.op], tensor.value_index)

    def _offsets(self, config: Config, space) -> dict[str, int]:
        coords = mesh_coords(config.mesh, self.rank)
        local = local_dim_sizes(space, config)
        return {d: coords[a] * local[d] for a, d in enumerate(config.axis_dims) if d is not None}

    # -- lowering one op ---------------------------------------------------------------------
    def context(self, op, tag: str = "") -> LoweringContext:
        """The op's lowering context; ``tag`` names a re-run's own collectives."""
        config = self.configs[op]
        shapes = [output_layout(op, config, j).local_shape(t.shape) for j, t in enumerate(op.outputs)]
        extra: dict[str, Any] = {"dim_offsets": self._offsets(config, op.space)}
        if op.kind == "variable":
            slices = self.layout_of(op.outputs[0]).shard_slices(self.rank, op.outputs[0].shape)
            extra["shard_offsets"] = [s.start for s in slices]
        gathers = [c for c in op_collectives(op, config, self.grad_inputs[op], tag)
                   if c.kind == "allgather" and c.inside]
        if gathers:   # an LSTM with h split: one all-gather of h per step after the first
            made = iter(gathers)
            extra["allgather_hidden"] = lambda h: self._gather(op, h, next(made))
        return LoweringContext(output_shapes=shapes, dim_sizes=dict(op.space.dims),
                               local_dim_sizes=local_dim_sizes(op.space, config), seed=self.graph.seed,
                               extra=extra)

    def _gather(self, op, h, gather):
        """One of the op's own all-gathers of h (dim 1), named as the schedule names it."""
        return self.collectives.allgather_partial_grad(h, 1, self.configs[op].mesh, gather.mesh_axis,
                                                       f"{op.name}/{gather.where}")

    def _edge(self, op, i):
        return self.edges[(op.name, i)]

    def _partial_grad_axes(self, op, i) -> list[int]:
        """Mesh axes along which input ``i``'s gradient is partial (``op_collectives``)."""
        return [c.mesh_axis for c in op_collectives(op, self.configs[op], self.grad_inputs[op])
                if c.input == i]

    def lower(self, op, tensors: list) -> list:
        """This rank's shard of ``op``: inputs converted to the op's layouts, the local
        computation, and the op's own all-reduces of partial outputs."""
        tf, ops = self.tf, self.collectives
        config = self.configs[op]
        prepared, rebuilt = [], []
        for i, (t, x) in enumerate(zip(op.inputs, tensors)):
            edge = self._edge(op, i)
            if edge.reuse == "keep_producer" and edge.forward_steps:
                rebuilt.append(i)  # converted inside the op, rebuilt in backward
                prepared.append(x)
                continue
            where = f"{op.name}/in{i}"
            x = ops.convert(x, edge.forward_steps, edge.backward_steps, tuple(t.shape), where)
            x = ops.allreduce_backward(x, config.mesh, self._partial_grad_axes(op, i), f"{where}/grad")
            if edge.reuse == "keep_consumer":
                self.consumer_copies.setdefault(t, (x, edge.rebuild_steps))
            prepared.append(x)
        if rebuilt:
            outputs = self._lower_rebuilding(op, prepared, rebuilt)
        elif op.name in self.rebuilt_producers:
            outputs = [self._rebuildable_output(op, prepared[0], self.context(op))]
        else:
            outputs = op.op_def.lower(tf, op, prepared, self.context(op))
        out = list(outputs)
        for c in op_collectives(op, config, self.grad_inputs[op]):
            if c.output is not None:
                out[c.output] = ops.allreduce_forward(out[c.output], config.mesh, c.mesh_axis,
                                                      f"{op.name}/{c.where}")
        return out

    def _lower_rebuilding(self, op, prepared: list, rebuilt: list[int]) -> list:
        """keep_producer: inputs in ``rebuilt`` arrive in the producer's layout; the op
        converts them itself and keeps only the producer's copy. Backward, once the output
        gradient exists, re-runs the conversions (control-dependent on it, so reuse is
        active only in backward) and differentiates the op on the rebuilt copies."""
        tf, ops = self.tf, self.collectives
        shapes = {i: tuple(op.inputs[i].shape) for i in rebuilt}
        steps = {i: self._edge(op, i).forward_steps for i in rebuilt}
        back = {i: self._edge(op, i).backward_steps for i in rebuilt}
        differentiable = self.grad_inputs[op]

        def local(xs, tag):
            converted = [ops.apply_steps(x, steps[i], shapes[i], f"{op.name}/in{i}{tag}")
                         if i in steps else x for i, x in enumerate(xs)]
            return converted, op.op_def.lower(tf, op, converted, self.context(op, tag))

        @custom_gradient(tf)
        def fused(*xs):
            _, ys = local(list(xs), "")

            def grad(*dys):
                dys = [ops._dense(d) for d in dys]
                with tf.control_dependencies(dys):
                    again = [tf.identity(x) if i in steps else x for i, x in enumerate(xs)]
                converted, ys2 = local(again, "/rebuild")
                wrt = [c for c, f in zip(converted, differentiable) if f]
                # stop_gradients: each input's own partial derivative. A rebuilt input
                # may depend on another input of the op (h * sigmoid(sum(h))); without it
                # the other input's gradient would also count the path through the rebuilt
                # one, which the outer backward already follows.
                grads = iter(tf.gradients(ys2, wrt, grad_ys=dys, stop_gradients=wrt) if wrt else [])
                result = []
                for i, c in enumerate(converted):
                    g = next(grads) if differentiable[i] else None
                    if g is not None and i in steps:
                        where = f"{op.name}/in{i}/grad"
                        g = ops.allreduce_axes(ops._dense(g), self.configs[op].mesh,
                                               self._partial_grad_axes(op, i), where)
                        g = ops.apply_steps(g, back[i], shapes[i], where)
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

        @custom_gradient(tf)
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
