"""Lowering a recorded graph to one TensorFlow graph for one process.

Each op's ``OpDef.lower`` builds its computation. A ``Sharding`` (see
``tensoropt.execution``) says which shapes this process produces for each op, converts
each input to the layout the op needs, and completes each output (the op's own
all-reduces). On one device (``sharding=None``) every shard is the whole tensor.

Usage::

    lowered = lower_graph(graph, tf)
    lowered.tensors[y]        # the tf.Tensor computing recorded tensor y
    lowered.train_ops[step]   # the tf.Operation of a recorded training step
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tensoropt.graph import Graph, Operation, Tensor, TrainStep
from tensoropt.ops.registry import LoweringContext
from tensoropt.execution.clipping import clip_gradients
from tensoropt.schedules import LearningRateSchedule

__all__ = ["Lowered", "lower_graph", "whole_tensor_context"]


@dataclass
class Lowered:
    """A TensorFlow graph built from a recorded one, and the maps into it."""

    tf_graph: Any
    tensors: dict[Tensor, Any] = field(default_factory=dict)
    variables: dict[Tensor, Any] = field(default_factory=dict)
    train_ops: dict[int, Any] = field(default_factory=dict)  # id(TrainStep) -> tf op
    init_op: Any = None
    global_step: Any = None     # the int64 tf.Variable of the graph's GlobalStep, if it has one
    learning_rates: dict = field(default_factory=dict)   # LearningRateSchedule -> its tf tensor
    global_norms: dict = field(default_factory=dict)     # clipping.GlobalNorm -> its tf tensor

    def initialize(self, session) -> None:
        """Initializes every variable (parameters and optimizer slots), one
        ``session.run`` each: each run frees its temporaries (a shard's random blocks)
        before the next, where one run of ``init_op`` kept every variable's until its end
        (a rank's peak was then about twice its shards)."""
        for variable in self.tf_graph.get_collection("variables"):
            session.run(variable.initializer)


def whole_tensor_context(op: Operation, seed: int | None) -> LoweringContext:
    """The context of an op computed whole on one device."""
    return LoweringContext(output_shapes=[tuple(t.shape) for t in op.outputs],
                           dim_sizes=dict(op.space.dims), local_dim_sizes=dict(op.space.dims),
                           seed=seed)


def lower_graph(graph: Graph, tf, sharding=None, wrap_optimizer=None) -> Lowered:
    """Builds the TensorFlow graph of every recorded op and training step.

    Args:
        sharding: None for one device, or an object (``tensoropt.execution.PlanSharding``)
            with ``begin(tf)``, called inside the new graph first;
            ``lower(op, inputs)``, which builds this process's shard of ``op`` from the
            producers' local outputs; ``begin_gradients()``, called before the training
            steps (and their gradients) are built; and ``finish()``, called last.
        wrap_optimizer: optional function applied to each TensorFlow optimizer (e.g.
            ``hvd.DistributedOptimizer`` for a plain data-parallel baseline).
    """
    tf_graph = tf.Graph()
    lowered = Lowered(tf_graph)
    with tf_graph.as_default():
        if graph.seed is not None:
            tf.compat.v1.set_random_seed(graph.seed)
        if sharding is not None:
            sharding.begin(tf)
        for op in graph.operations:
            inputs = [lowered.tensors[t] for t in op.inputs]
            if sharding is None:
                outputs = op.op_def.lower(tf, op, inputs, whole_tensor_context(op, graph.seed))
            else:
                outputs = sharding.lower(op, inputs)
            assert len(outputs) == len(op.outputs), (op.name, len(outputs), len(op.outputs))
            for t, out in zip(op.outputs, outputs):
                lowered.tensors[t] = out
            if op.kind == "variable":
                lowered.variables[op.outputs[0]] = outputs[0]
        if sharding is not None:
            sharding.begin_gradients()
        if graph.global_step is not None:   # whole on every rank, as every rank counts alike
            lowered.global_step = tf.compat.v1.train.get_or_create_global_step()
        for step in graph.train_steps:
            lowered.train_ops[id(step)] = _lower_train_step(tf, step, lowered, wrap_optimizer, sharding)
        if sharding is not None:
            sharding.finish()
        lowered.init_op = tf.compat.v1.global_variables_initializer()
    return lowered


def _lower_train_step(tf, step: TrainStep, lowered: Lowered, wrap_optimizer=None, sharding=None):
    """``optimizer.minimize``, with the gradient of every variable that only embedding
    lookups read given as the rows where it is non-zero (``_nonzero_rows``)."""
    rate = step.optimizer.learning_rate
    if isinstance(rate, LearningRateSchedule):   # one tensor per schedule, fetchable by to.run
        if rate not in lowered.learning_rates:
            lowered.learning_rates[rate] = rate.to_tensorflow(tf, lowered.global_step)
        rate = lowered.learning_rates[rate]
    optimizer = step.optimizer.to_tensorflow(tf, learning_rate=rate)
    if wrap_optimizer is not None:
        optimizer = wrap_optimizer(optimizer)
    var_list = [lowered.variables[v] for v in step.var_list]
    row_sparse = {lowered.variables[v] for v in step.var_list if _only_looked_up(v)}
    grads = optimizer.compute_gradients(lowered.tensors[step.loss], var_list=var_list)
    grads = [(_nonzero_rows(tf, g) if g is not None and v in row_sparse else g, v) for g, v in grads]
    if step.clips:
        grads, norm = clip_gradients(tf, step, grads, sharding)
        if norm is not None:
            lowered.global_norms[step.global_norm] = norm
    return optimizer.apply_gradients(grads, global_step=lowered.global_step if step.counts_steps else None)


def _only_looked_up(variable) -> bool:
    consumers = variable.consumers()
    return bool(consumers) and all(op.kind == "embedding_lookup" and op.inputs[0] is variable
                                   and variable not in op.inputs[1:] for op in consumers)


def _nonzero_rows(tf, grad):
    """The gradient as the rows (along axis 0) where it is non-zero, an IndexedSlices.

    On one process TensorFlow hands an embedding table's optimizer the looked-up rows
    (IndexedSlices), and Momentum then updates those rows only. A plan's collectives
    deliver the same gradient dense (or, with the vocabulary split, with rows masked to
    zero), and a dense Momentum update moves every row. Giving every plan, and the single
    process, the non-zero rows makes them update the same rows: the looked-up ones, except
    a looked-up row whose whole gradient is exactly zero.
    """
    dense = tf.convert_to_tensor(grad)
    flat = tf.reshape(dense, [tf.shape(dense)[0], -1])
    rows = tf.reshape(tf.where(tf.reduce_any(tf.not_equal(flat, 0), axis=1)), [-1])
    return tf.IndexedSlices(tf.gather(dense, rows), rows, tf.shape(dense, out_type=tf.int64))
