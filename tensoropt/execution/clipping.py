"""A training step's gradient clips, lowered for this rank (``tensoropt.clipping``).

``clip_by_value`` clips each rank's block elementwise. ``clip_by_global_norm`` needs the
norm of the whole gradients: each rank sums the squares of its blocks, a block held by
``k`` ranks alike (replicated over a mesh axis) weighed ``1/k`` so that it counts once,
and one all-reduce over every rank adds the sums (the schedule's
``{step}/global_norm`` call, after the backward's collectives). The scale is TensorFlow's
``clip_by_global_norm``'s: ``clip_norm * min(1 / norm, 1 / clip_norm)``, NaN when the norm is.

Usage::

    grads, norm = clip_gradients(tf, step, grads_and_vars, sharding)
"""

from __future__ import annotations

from typing import Any

from tensoropt.execution.schedule import global_norm_where

__all__ = ["clip_gradients"]


def _values(tf, g):
    return g.values if isinstance(g, tf.IndexedSlices) else g


def _with_values(tf, g, values):
    if isinstance(g, tf.IndexedSlices):
        return tf.IndexedSlices(values, g.indices, g.dense_shape)
    return values


def _map(tf, grads_and_vars: list, f) -> list:
    """``grads_and_vars`` with ``f`` applied to each gradient's values (None left alone)."""
    return [(None if g is None else _with_values(tf, g, f(_values(tf, g))), v) for g, v in grads_and_vars]


def _replicas(sharding, variable) -> int:
    """How many ranks hold the same block of ``variable`` as this one."""
    layout = sharding.layout_of(variable)
    shape = tuple(variable.shape)
    mine = layout.shard_slices(sharding.rank, shape)
    return sum(layout.shard_slices(r, shape) == mine for r in range(sharding.plan.parallelism))


def _global_norm(tf, step, grads_and_vars, recorded, sharding):
    squares = []
    for (g, _), v in zip(grads_and_vars, recorded):
        if g is None:
            continue
        s = tf.reduce_sum(tf.square(_values(tf, g)))
        k = 1 if sharding is None else _replicas(sharding, v)
        squares.append(s / float(k) if k > 1 else s)
    total = tf.add_n(squares)
    if sharding is not None and sharding.plan.parallelism > 1:
        total = sharding.collectives.allreduce_raw(total, (sharding.plan.parallelism,), None,
                                                   global_norm_where(step))
    return tf.sqrt(total)


def clip_gradients(tf, step, grads_and_vars: list, sharding) -> tuple[list, Any]:
    """``grads_and_vars`` (this rank's blocks, in ``step.var_list``'s order) after
    ``step.clips``, and the global norm's tensor (None without a global-norm clip)."""
    norm = None
    recorded = list(step.var_list)
    for clip in step.clips:
        if clip.kind == "value":
            grads_and_vars = _map(tf, grads_and_vars, lambda x: tf.clip_by_value(x, clip.low, clip.high))
            continue
        norm = _global_norm(tf, step, grads_and_vars, recorded, sharding)
        scale = clip.high * tf.minimum(1.0 / norm, 1.0 / clip.high)
        scale = scale + (norm - norm)   # NaN when the norm is, as TensorFlow's
        grads_and_vars = _map(tf, grads_and_vars, lambda x: x * scale)
    return grads_and_vars, norm
