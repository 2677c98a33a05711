"""Profiled optimizer updates: a trained variable's local shard through its optimizer.

The run applies each trained variable's gradient with TensorFlow's own optimizer
(``optimizer.to_tensorflow(tf).apply_gradients``, ``execution.lowering``) on the local
shard, once per step (``ResourceApplyAdam``, ``ResourceApplyMomentum``, ...). An update
is elementwise, so its time depends on the optimizer, its hyperparameters and the shard's
element count, not its shape: ``measure_update`` times the update of a flat resource
variable of that many elements with a random dense gradient, in a session configured as
``measure`` times a shard (``ComputeProfiler.time_steps``: the training session's
threads, Grappler off), minus the fixed cost of an empty step.

An embedding's gradient is sparse in the run (``IndexedSlices``); it is timed dense
here. TensorFlow's sparse Adam still scales both slots and updates every row, so that
is close; a sparse Momentum or gradient-descent update touches only the rows looked up,
so it is over-priced.

Usage::

    seconds = profiler.update_s(to.train.AdamOptimizer(1e-3), elements=1 << 20)
"""

from __future__ import annotations

import json

__all__ = ["update_key", "measure_update"]


def update_key(optimizer, elements: int, dtype: str) -> str:
    """The cache key (after the machine's) of ``optimizer``'s update of ``elements`` (a
    learning-rate schedule by its ``repr``, which names its function and arguments)."""
    return json.dumps({"kind": "update", "optimizer": type(optimizer).__name__,
                       "hyperparameters": optimizer.hyperparameters(), "elements": int(elements),
                       "dtype": dtype}, sort_keys=True, separators=(",", ":"), default=repr)


def measure_update(profiler, optimizer, elements: int, dtype: str = "float32") -> float:
    """Seconds of one update of ``elements`` elements by ``optimizer`` (no cache), timed
    with ``profiler``'s session settings, run counts and statistic.

    Raises:
        ValueError: for a dtype other than float32 or fewer than one element.
    """
    if dtype != "float32":
        raise ValueError(f"dtype={dtype!r}: the profiler times float32 updates only")
    if elements < 1:
        raise ValueError(f"elements={elements}: an update needs one element at least")
    from tensoropt._tf import import_tensorflow  # noqa: PLC0415 - measuring imports TensorFlow

    tf = import_tensorflow()
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        tf.compat.v1.set_random_seed(profiler.seed)
        param = tf.compat.v1.Variable(tf.random.uniform([elements], 0.5, 1.5), use_resource=True, name="param")
        grad = tf.compat.v1.Variable(tf.random.uniform([elements], -1e-3, 1e-3), trainable=False,
                                     use_resource=True, name="grad")
        update = optimizer.to_tensorflow(tf).apply_gradients([(grad.value(), param)])
        empty = profiler._empty_fetches(tf, 1)
        init = tf.compat.v1.global_variables_initializer()
    timing = profiler.time_steps(tf, graph, init, update, empty)
    return max(0.0, timing.step_s - timing.overhead_s)
