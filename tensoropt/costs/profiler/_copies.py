"""Profiled conversion copies: the local TensorFlow ops around a re-scheduling collective.

``execution.horovod_comm`` gathers, scatters and exchanges a dim other than the first by
moving it to the front (``tf.transpose``), running the collective on dim 0 and moving it
back; an exchange also splits what it received and concatenates the pieces, and a slice
of a dim other than the first is a copying ``tf.split``
(``simulator.step_buffers.collective_copy_ops`` lists them per step). Their speed depends
on the permutation and the shape: one calibrated bytes-per-second figure for every copy
charged the CNN's sampled plans about twice what their measured ops show (2026-11-26).
So each step's ops are timed as they are, like an op shard: every input a resource
variable of its shape, one element of every output fetched, in a session configured as
training configures one (``ComputeProfiler.time_steps``), minus an empty step's cost.

An op is ``("transpose", shape, perm)``, ``("split", shape, axis, parts)`` or
``("concat", piece_shape, parts, axis)``, with the shape of its input.

Usage::

    seconds = profiler.copies_s((("transpose", (64, 32, 8), (2, 0, 1)),), itemsize=4)
"""

from __future__ import annotations

import json

__all__ = ["copies_key", "measure_copies"]

_DTYPES = {2: "float16", 4: "float32", 8: "float64"}


def copies_key(ops, itemsize: int) -> str:
    """The cache key (after the machine's) of ``ops`` on elements of ``itemsize`` bytes."""
    return json.dumps({"kind": "copies", "ops": [list(map(_plain, op)) for op in ops],
                       "itemsize": int(itemsize)}, separators=(",", ":"))


def _plain(field):
    return list(field) if isinstance(field, tuple) else field


def measure_copies(profiler, ops, itemsize: int = 4) -> float:
    """Seconds of ``ops`` run once each (no cache), timed with ``profiler``'s session
    settings, run counts and statistic; other item sizes than 2, 4 and 8 bytes are
    timed as float32.

    Raises:
        ValueError: for an op of another kind.
    """
    from tensoropt._tf import import_tensorflow  # noqa: PLC0415 - measuring imports TensorFlow

    tf = import_tensorflow()
    dtype = tf.as_dtype(_DTYPES.get(int(itemsize), "float32"))
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        tf.compat.v1.set_random_seed(profiler.seed)
        outputs = []
        for k, op in enumerate(ops):
            kind, shape = op[0], list(op[1])
            x = tf.compat.v1.Variable(tf.cast(tf.random.uniform(shape, 0.5, 1.5), dtype), trainable=False,
                                      use_resource=True, name=f"copy_input_{k}").value()
            if kind == "transpose":
                outputs.append(tf.transpose(x, list(op[2])))
            elif kind == "split":
                outputs += tf.split(x, op[3], axis=op[2])
            elif kind == "concat":
                outputs.append(tf.concat([x] * op[2], axis=op[3]))
            else:
                raise ValueError(f"copy op {op!r}: expected a transpose, split or concat")
        target = [tf.reshape(t, [-1])[0] for t in outputs]
        empty = profiler._empty_fetches(tf, len(target))
        init = tf.compat.v1.global_variables_initializer()
    timing = profiler.time_steps(tf, graph, init, target, empty)
    return max(0.0, timing.step_s - timing.overhead_s)
