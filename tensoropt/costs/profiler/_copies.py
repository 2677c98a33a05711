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

Cold inputs. In a training step a conversion moves data that other ops touched last, with
the step's other activations and parameters between (the CNN's are 30-40 MiB a rank, the
last-level cache 32 MiB for both ranks), so it reads and writes memory that is not in the
cache. Timed over one input again and again, the copies ran in cache: 1.5-2.9x faster
for 1-2 MiB transposes, up to 10x for splits along a last dim (2026-11-27, one thread),
and the simulator under-priced the CNN's sampled plans (sampled plans with 20-37
collectives ran 6-29 ms past their simulation; the gap grew with the bytes gathered and
exchanged, about 1 ms a MiB). So the step's ops are built ``replicas`` times over inputs
of their own, chained one after another, until the replicas' inputs hold twice the
last-level cache (``cold_bytes``), and the time is the step's over ``replicas``.
Re-simulating the accuracy bench's 120 plans of 2026-11-27 with cold copies took the
simulated time's mean error from 15.0% to 6.4% (CNN), 7.3% to 5.6% (transformer), 10.5%
to 7.7% (LSTM) and 9.5% to 8.8% (MLP).

An op is ``("transpose", shape, perm)``, ``("split", shape, axis, parts)`` or
``("concat", piece_shape, parts, axis)``, with the shape of its input.

Usage::

    seconds = profiler.copies_s((("transpose", (64, 32, 8), (2, 0, 1)),), itemsize=4)
"""

from __future__ import annotations

import glob
import json
import math
import os

__all__ = ["copies_key", "measure_copies", "cold_bytes", "last_level_cache_bytes"]

_DTYPES = {2: "float16", 4: "float32", 8: "float64"}

#: The most replicas of a step's ops one measurement builds (tiny copies stay in cache).
MAX_REPLICAS = 128
#: The last-level cache assumed where sysfs does not give it.
DEFAULT_CACHE_BYTES = 32 * 2**20
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def last_level_cache_bytes(sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The size of CPU 0's highest-level cache (``index*/level`` and ``index*/size`` in
    sysfs, e.g. ``32768K``), else ``DEFAULT_CACHE_BYTES``."""
    best = (0, 0)
    for index in glob.glob(os.path.join(sysfs, "index*")):
        try:
            with open(os.path.join(index, "level")) as f:
                level = int(f.read())
            with open(os.path.join(index, "size")) as f:
                text = f.read().strip()
            size = int(text[:-1]) * _UNITS[text[-1]] if text[-1] in _UNITS else int(text)
        except (OSError, ValueError, IndexError):
            continue
        best = max(best, (level, size))
    return best[1] or DEFAULT_CACHE_BYTES


def cold_bytes() -> int:
    """How many bytes of inputs a measurement's replicas hold: twice the last-level cache."""
    return 2 * last_level_cache_bytes()


def copies_key(ops, itemsize: int) -> str:
    """The cache key (after the machine's) of ``ops`` on elements of ``itemsize`` bytes."""
    return json.dumps({"kind": "copies", "ops": [list(map(_plain, op)) for op in ops],
                       "itemsize": int(itemsize), "inputs": "cold"}, separators=(",", ":"))


def _plain(field):
    return list(field) if isinstance(field, tuple) else field


def measure_copies(profiler, ops, itemsize: int = 4, replicas: int | None = None) -> float:
    """Seconds of ``ops`` run once each on cold inputs (no cache; see the module doc),
    timed with ``profiler``'s session settings, run counts and statistic; other item
    sizes than 2, 4 and 8 bytes are timed as float32. ``replicas``: how many copies of
    the ops to chain (default: enough for ``cold_bytes``, 2 to ``MAX_REPLICAS``).

    Raises:
        ValueError: for an op of another kind.
    """
    from tensoropt._tf import import_tensorflow  # noqa: PLC0415 - measuring imports TensorFlow

    for op in ops:
        if op[0] not in ("transpose", "split", "concat"):
            raise ValueError(f"copy op {op!r}: expected a transpose, split or concat")
    tf = import_tensorflow()
    dtype = tf.as_dtype(_DTYPES.get(int(itemsize), "float32"))
    if replicas is None:
        per_replica = sum(math.prod(op[1]) for op in ops) * dtype.size
        replicas = max(2, min(MAX_REPLICAS, math.ceil(cold_bytes() / max(per_replica, 1))))
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        tf.compat.v1.set_random_seed(profiler.seed)
        inputs = [[tf.compat.v1.Variable(tf.cast(tf.random.uniform(list(op[1]), 0.5, 1.5), dtype),
                                         trainable=False, use_resource=True, name=f"copy_input_{r}_{k}")
                   for k, op in enumerate(ops)] for r in range(replicas)]
        target: list = []
        before: list = []
        for replica in inputs:
            with tf.control_dependencies(before):       # one replica after another
                outputs = []
                for op, var in zip(ops, replica):
                    x = var.value()
                    if op[0] == "transpose":
                        outputs.append(tf.transpose(x, list(op[2])))
                    elif op[0] == "split":
                        outputs += tf.split(x, op[3], axis=op[2])
                    else:
                        outputs.append(tf.concat([x] * op[2], axis=op[3]))
                before = [tf.reshape(t, [-1])[0] for t in outputs]
            target += before
        empty = profiler._empty_fetches(tf, len(target))
        init = tf.compat.v1.global_variables_initializer()
    step, overhead, _, _ = profiler.time_steps(tf, graph, init, target, empty)
    return max(0.0, step - overhead) / replicas
