"""Profiled compute: each op's local shard run in TensorFlow on this machine's CPU.

For an op and a configuration, ``ComputeProfiler.compute_s`` builds a small graph-mode
TensorFlow graph holding only the op's local shard, times it, and caches the result.

Method (``measure``):

1. Every input is a resource variable of the *local* shape, initialized once with random
   values: floats uniform in [0.5, 1.5) (valid for log, sqrt, rsqrt, divide), int inputs
   uniform below the bound ``int_input_ranges`` gives (embedding ids below the full
   vocabulary, sparse labels below the class count; zeros otherwise). Variables, unlike
   constants, cannot be folded away by Grappler.
2. The op is lowered with ``op.op_def.lower`` and a ``LoweringContext`` of the local
   shapes. A split vocabulary gets ``extra["dim_offsets"]`` of the first shard; a split
   LSTM hidden dim gets a local stand-in for its all-gather (``tf.tile``: the
   communication itself is priced by the collectives, not here).
3. Backward is ``tf.gradients(outputs, float inputs, grad_ys=dy)`` with ``dy`` random
   variables of the output shapes, so no extra reduction is timed. Gradients flow to
   every float input, matching the FLOP counts of the op definitions.
4. The session is configured as ``tensoropt.runtime`` configures training: the given
   intra-op threads, one inter-op thread, Grappler's meta-optimizer off. One step is
   one ``session.run`` fetching a single element of every forward output and every
   gradient (a fetch forces the computation even where Grappler would prune work that
   only a ``tf.group`` needs; one element avoids timing a copy of whole tensors).
   After ``warmup`` steps, steps are timed until at least ``min_runs`` ran and
   ``min_time_s`` passed (at most ``max_runs``). The result is the median step minus
   the overhead, floored at 0. The overhead is the median of an otherwise empty
   ``session.run`` fetching as many scalars (from a tiny variable), timed in the same
   session, so tiny ops are not dominated by the fixed cost of a step. On a machine
   shared with other work, ``statistic="min"`` (the least-disturbed step, for both)
   is steadier than the median; the statistic is part of the cache key.
   The forward pass alone is timed the same way in the same session, fetching only the
   outputs (``forward_s``; the cost model's ``compute_split`` takes it as the forward's
   share, and a keep_producer re-run is priced at it). Measured shares differ far from a
   FLOP ratio (2026-11-27, one rank, small zoo models): a max-pool's forward 4% of its
   two passes, an LSTM's 9% (its backward slices every step's gradient out of whole
   tensors), a vocabulary matmul's 12%, a convolution's 19%, a softmax cross-entropy's
   79-97%.

5. One more step is traced (``FULL_TRACE``) for each pass's workspace: the peak of what
   the pass's TensorFlow nodes hold at once beyond what the pass hands on
   (``workspace_of_trace``; e.g. a CPU convolution's backprop buffers). The simulator
   holds it during the op's forward or backward task. Cached beside the time under the
   same key plus ``|forward_transient_bytes`` and ``|backward_transient_bytes``.

Shards too large to run here (more than ``max_bytes`` of inputs, outputs and their
gradients, or more than ``max_flops`` by the op's FLOP count) are measured on a stand-in
with one dim further divided ``f`` ways (``fit_shard``), and the time multiplied by
``f``; the cache keeps the scaled time under the shard's own key.

Sources (variables, placeholders, fills) compute nothing and are never run. A trained
variable's optimizer update is timed apart (``update_s``, ``_update``) and priced by
``CostModel.update_s`` as the variable's compute.

Usage::

    profiler = ComputeProfiler()                       # ~/.cache/tensoropt/compute-profile.json
    profiler.compute_s(op, config)                     # seconds, measured once per key
    ComputeProfiler(cache_path=None, threads=4)        # in memory only, 4 TF threads
    profiler.workspace_bytes(op, config)               # (forward, backward) transient bytes
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import math
import os
import platform
import statistics
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from tensoropt._tf import MALLOC_POLICY, freed_memory_kept, import_tensorflow
from tensoropt.allocation_trace import allocation_peak, node_allocations, trace_options
from tensoropt.cluster.threads import available_cpus, threads_from_env
from tensoropt.configs import Config, enumerate_configs
from tensoropt.ops.registry import LoweringContext
from tensoropt.costs.profiler._analytical import SOURCE_KINDS
from tensoropt.costs.profiler._cache import ProfileCache, default_cache_path
from tensoropt.costs.profiler._shard import LocalShard, fit_shard, local_shard
from tensoropt.costs.profiler._copies import copies_key, measure_copies
from tensoropt.costs.profiler._update import measure_update, update_key

__all__ = ["ComputeProfiler", "Measurement", "GraphProfile", "profile_graph", "machine_description",
           "workspace_of_trace"]

_DEFAULT = object()
#: Cache key suffixes of a shard's forward and backward workspace bytes.
_WORKSPACE_KEYS = ("forward_transient_bytes", "backward_transient_bytes")
#: Cache key suffix of a shard's forward seconds.
_FORWARD_KEY = "forward_s"


def _nbytes(shape, dtype: str) -> int:
    """Bytes of a dense tensor of ``shape`` and ``dtype`` (a numpy dtype name)."""
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= int(d)
    return n
_STATISTICS = {"median": statistics.median, "min": min}


def _tensorflow_version() -> str:
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-intel", "tensorflow-macos"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return import_tensorflow().__version__


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


#: whether this process already warned that it measures on a busy machine
_warned_busy = False


#: A probe that waited this share of its time for its CPU says the CPU is shared.
BUSY_WAIT_SHARE = 0.25
#: Seconds between two probes of a process that found its CPU free.
BUSY_PROBE_EVERY_S = 10.0
_last_probe = -math.inf


def cpu_wait_share(probe_s: float = 0.05, path: str = "/proc/thread-self/schedstat") -> float | None:
    """The share of a ``probe_s`` busy loop that this thread spent ready but waiting for a
    CPU (the run delay of Linux's schedstat): about 0 when it has a CPU to itself, about
    1/2 when another busy thread shares its CPU. None where ``path`` cannot be read."""
    def run_delay_ns() -> int | None:
        try:
            with open(path) as f:
                return int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            return None

    before = run_delay_ns()
    if before is None:
        return None
    start = time.perf_counter()
    while time.perf_counter() - start < probe_s:
        pass
    after, wall = run_delay_ns(), time.perf_counter() - start
    return None if after is None else max(0.0, (after - before) * 1e-9 / wall)


def warn_if_busy(cache_path) -> None:
    """Warns (once per process, ``RuntimeWarning``) when this rank's CPU is shared with
    other work now: every time measured now is inflated by it, and it stays in the cache.
    Called before each measurement; probes at most every ``BUSY_PROBE_EVERY_S``.

    It asks the scheduler (``cpu_wait_share``), not the 1-minute load: under ``mpirun``
    each rank may use one CPU while its peers' profiling fills the others, and a load
    average still counts a job that ended a minute ago, so the load warned on every
    2-rank accuracy run after a calibration (2026-11-27); so did a count of the threads
    ready to run (3 on 2 CPUs, the bench's own). Where schedstat cannot be read, the
    1-minute load against all the machine's CPUs stands in."""
    global _warned_busy, _last_probe
    if _warned_busy or time.monotonic() - _last_probe < BUSY_PROBE_EVERY_S:
        return
    _last_probe = time.monotonic()
    share = cpu_wait_share()
    if share is not None:
        busy, what = share > BUSY_WAIT_SHARE, f"this rank waited {share:.0%} of a probe for its CPU"
    elif hasattr(os, "getloadavg"):
        load, cpus = os.getloadavg()[0], os.cpu_count() or available_cpus()
        busy, what = load > cpus, f"1-minute load {load:.1f} on {cpus} CPUs"
    else:  # pragma: no cover - neither Linux nor POSIX
        return
    if busy:
        _warned_busy = True
        where = f"in {cache_path}; delete it and " if cache_path is not None else "in memory only; "
        warnings.warn(f"tensoropt profiler: measuring op times while this machine is busy ({what}): they "
                      f"will be inflated and kept {where}profile again on a quiet machine for estimates "
                      "you can trust", RuntimeWarning, stacklevel=3)


def _default_max_bytes() -> float:
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        ram = 8 * 2**30
    return float(min(ram / 8, 4 * 2**30))


@functools.lru_cache(maxsize=None)
def machine_description(threads: int | None = None) -> dict:
    """The part of every cache key that names this machine (and how it allocates memory:
    ``tensoropt._tf.MALLOC_POLICY``).

    Args:
        threads: TensorFlow's intra-op threads; None means every available CPU.
    """
    return {"tensorflow": _tensorflow_version(), "cpu": _cpu_model(),
            "threads": int(threads) if threads else available_cpus(), "malloc": MALLOC_POLICY}


@dataclass(frozen=True)
class Measurement:
    """One timing of one shard.

    Attributes:
        seconds: step minus overhead, floored at 0: the compute time.
        step_s: the median (or min) of the timed ``session.run`` steps.
        overhead_s: the same statistic of an empty ``session.run``.
        runs: how many steps were timed.
        forward_workspace_bytes, backward_workspace_bytes: what the forward (backward)
            pass held at once beyond its results in a traced step (``workspace_of_trace``).
        forward_s: the forward pass alone (its outputs fetched), less the overhead of
            an empty step fetching as many, floored at 0 and at most ``seconds``.
    """

    seconds: float
    step_s: float
    overhead_s: float
    runs: int
    forward_workspace_bytes: int = 0
    backward_workspace_bytes: int = 0
    forward_s: float = 0.0


class Timing(NamedTuple):
    """What ``ComputeProfiler.time_steps`` measured: the statistic of the timed steps
    and of the empty ones, how many steps were timed, a traced step's ``RunMetadata``
    (or None), and the forward-only step less its own overhead (or None when not asked)."""

    step_s: float
    overhead_s: float
    runs: int
    metadata: Any
    forward_s: float | None = None


def session_config(tf, threads: int | None):
    """The session a measurement runs in, configured as ``tensoropt.runtime`` configures
    the training session: intra-op threads as given (None: all CPUs), one inter-op
    thread, Grappler off."""
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads or 0,
                                      inter_op_parallelism_threads=1, device_count={"GPU": 0})
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config


class ComputeProfiler:
    """Measured forward + backward seconds of each op's local shard, cached by key.

    Args:
        cache_path: the JSON profile file; default ``default_cache_path()``
            (``~/.cache/tensoropt/compute-profile.json``); None keeps it in memory only.
        threads: TensorFlow intra-op threads; None reads ``TENSOROPT_THREADS`` (as
            ``tensoropt.runtime`` does), else TensorFlow's default, all CPUs.
        warmup: untimed steps before timing.
        min_runs: the fewest timed steps.
        max_runs: the most timed steps.
        min_time_s: keep timing (up to ``max_runs``) until this much time was spent.
        seed: graph-level random seed of the inputs.
        statistic: "median" (default) or "min" of the timed steps.
        max_bytes: the most bytes one measurement may hold (default: 1/8 of this
            machine's memory, at most 4 GiB); larger shards are measured scaled down.
        max_flops: the most FLOPs (forward + backward, by the op definition) one step may
            take; larger shards are measured scaled down.

    Attributes:
        measurements: shards run in TensorFlow by this object (cache misses).
        hits: answers served from the cache.

    Raises:
        ValueError: for a corrupt or wrong-version cache file, or bad run counts.
    """

    def __init__(self, cache_path=_DEFAULT, *, threads: int | None = None, warmup: int = 2,
                 min_runs: int = 5, max_runs: int = 50, min_time_s: float = 0.05, seed: int = 0,
                 statistic: str = "median", max_bytes: float | None = None,
                 max_flops: float = 5e10):
        if not 1 <= min_runs <= max_runs:
            raise ValueError(f"min_runs={min_runs}, max_runs={max_runs}: need 1 <= min_runs <= max_runs")
        if warmup < 0 or min_time_s < 0:
            raise ValueError(f"warmup={warmup}, min_time_s={min_time_s}: both must be >= 0")
        if threads is None:
            threads = threads_from_env()   # TENSOROPT_THREADS, read as training reads it
        if threads is not None and threads < 1:
            raise ValueError(f"threads={threads}: give a positive thread count, or None for all CPUs")
        if statistic not in _STATISTICS:
            raise ValueError(f"statistic={statistic!r}: use one of {sorted(_STATISTICS)}")
        self.statistic = statistic
        self.max_bytes = float(max_bytes) if max_bytes is not None else _default_max_bytes()
        self.max_flops = float(max_flops)
        if not (self.max_bytes > 0 and self.max_flops > 0):
            raise ValueError(f"max_bytes={max_bytes}, max_flops={max_flops}: both must be > 0")
        self.cache = ProfileCache(default_cache_path() if cache_path is _DEFAULT else cache_path)
        self.threads = threads
        self.warmup = warmup
        self.min_runs = min_runs
        self.max_runs = max_runs
        self.min_time_s = min_time_s
        self.seed = seed
        self.measurements = 0
        self.hits = 0

    # -- keys and cache ------------------------------------------------------------------
    def key(self, shard: LocalShard) -> str:
        """The cache key of ``shard`` on this machine."""
        return f"{self._machine_key()}|{shard.key()}"

    def compute_s(self, op, config: Config) -> float:
        """Forward + backward seconds of ``op``'s local shard under ``config``.

        Measured on the first request for its key, then served from the cache.

        Raises:
            ValueError: for an input dtype other than float32/int32/int64/bool.
            tensorflow.errors.OpError: if TensorFlow cannot run the shard (a bug in the
                op's lowering or in the inputs made for it).
        """
        if op.kind in SOURCE_KINDS:
            return 0.0
        key = self.key(local_shard(op, config))
        cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self._measure_missing(op, config, key)
        return self.cache.get(key)

    def forward_s(self, op, config: Config) -> float:
        """Seconds of ``op``'s local shard's forward pass alone under ``config`` (part
        of ``compute_s``; see the module doc). Cached with the time; a profile file
        written before forward passes were timed has none, and the shard is measured
        again on first request."""
        if op.kind in SOURCE_KINDS:
            return 0.0
        key = self.key(local_shard(op, config))
        cached = self.cache.get(f"{key}|{_FORWARD_KEY}")
        if cached is not None:
            return cached
        self._measure_missing(op, config, key)
        return self.cache.get(f"{key}|{_FORWARD_KEY}")

    def workspace_bytes(self, op, config: Config) -> tuple[int, int]:
        """``(forward, backward)`` transient bytes of ``op``'s local shard under
        ``config``: the most that pass's TensorFlow nodes hold at once beyond what it
        hands on (convolution backprop buffers, ...), from a traced step
        (``workspace_of_trace``). Cached with the time; a profile file written before
        these were recorded has none, and the shard is measured again on first request.
        A shard measured on a scaled-down stand-in scales them by the same factor."""
        if op.kind in SOURCE_KINDS:
            return 0, 0
        key = self.key(local_shard(op, config))
        cached = [self.cache.get(f"{key}|{name}") for name in _WORKSPACE_KEYS]
        if None not in cached:
            return int(cached[0]), int(cached[1])
        self._measure_missing(op, config, key)
        return tuple(int(self.cache.get(f"{key}|{name}")) for name in _WORKSPACE_KEYS)

    def _measure_missing(self, op, config: Config, key: str) -> None:
        """Measures ``op``'s shard under ``config`` (on a scaled-down stand-in when too
        large, ``fit_shard``) and caches what ``key`` lacks: its time, workspace bytes
        and forward time, all three for a new shard; for an older profile file's entry,
        the figures it was written without (a time already cached is kept)."""
        shard = local_shard(op, config)
        flops = op.space.flops / config.split_factor()
        stand_in, factor = fit_shard(op, shard, flops, self.max_bytes, self.max_flops)
        m = self.measure(op, stand_in)
        if self.cache.get(key) is None:
            self.cache.put(key, m.seconds * factor)
        if None in [self.cache.get(f"{key}|{name}") for name in _WORKSPACE_KEYS]:
            self._put_workspace(key, m, factor)
        if self.cache.get(f"{key}|{_FORWARD_KEY}") is None:
            self.cache.put(f"{key}|{_FORWARD_KEY}", m.forward_s * factor)

    def update_s(self, optimizer, elements: int, dtype: str = "float32") -> float:
        """Seconds of ``optimizer``'s update of a trained variable's local shard of
        ``elements`` elements (``_update``: TensorFlow's own optimizer on a dense
        gradient). Measured on the first request for its key, then served from the cache;
        an update too large for ``max_bytes`` is timed on a fraction of the elements and
        scaled, as op shards are.

        Raises:
            ValueError: for a dtype other than float32 or fewer than one element.
        """
        key = f"{self._machine_key()}|{update_key(optimizer, elements, dtype)}"
        cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        # the parameter, its gradient and two slots must fit in max_bytes, else a
        # stand-in of 1/factor of the elements is timed and its time scaled up
        factor = max(1, math.ceil(16 * elements / self.max_bytes))
        warn_if_busy(self.cache.path)
        seconds = measure_update(self, optimizer, -(-elements // factor), dtype) * factor
        self.cache.put(key, seconds)
        return seconds

    def copies_s(self, ops, itemsize: int = 4) -> float:
        """Seconds of a conversion step's local copies ``ops`` (``_copies``: transposes,
        splits and concatenations, as ``simulator.step_buffers.collective_copy_ops``
        lists them). Measured on the first request for its key, then served from the
        cache; no ops take no time."""
        if not ops:
            return 0.0
        key = f"{self._machine_key()}|{copies_key(ops, itemsize)}"
        cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        warn_if_busy(self.cache.path)
        seconds = measure_copies(self, ops, itemsize)
        self.cache.put(key, seconds)
        return seconds

    def _machine_key(self) -> str:
        return json.dumps({**machine_description(self.threads), "statistic": self.statistic},
                          sort_keys=True, separators=(",", ":"))

    def _put_workspace(self, key: str, m: Measurement, factor: int) -> tuple[int, int]:
        sizes = (int(m.forward_workspace_bytes * factor), int(m.backward_workspace_bytes * factor))
        for name, size in zip(_WORKSPACE_KEYS, sizes):
            self.cache.put(f"{key}|{name}", float(size))
        return sizes

    def save(self) -> None:
        """Writes new cache entries to the file now (they are also written every few
        seconds and at exit)."""
        self.cache.save()

    # -- measuring -----------------------------------------------------------------------
    def measure(self, op, shard: LocalShard) -> Measurement:
        """Times ``shard`` of ``op`` in TensorFlow now (no cache). See the module docstring."""
        if op.kind in SOURCE_KINDS:
            raise ValueError(f"{op.kind} '{op.name}' computes nothing; its compute time is 0")
        warn_if_busy(self.cache.path)
        tf = import_tensorflow()
        graph = tf.Graph()
        with graph.as_default(), tf.device("/cpu:0"):
            tf.compat.v1.set_random_seed(self.seed)
            target, grads_built, outputs = self._build(tf, op, shard)
            empty_target = self._empty_fetches(tf, len(target))
            forward_only = (target[:outputs], self._empty_fetches(tf, outputs, "tiny_forward"))
            init = tf.compat.v1.global_variables_initializer()
        timing = self.time_steps(tf, graph, init, target, empty_target, trace=True, forward=forward_only)
        float_bytes = [_nbytes(shape, dtype) for shape, dtype in shard.inputs if dtype == "float32"]
        forward, backward = workspace_of_trace(
            timing.metadata, sum(_nbytes(shape, dtype) for shape, dtype in shard.outputs),
            sum(float_bytes) if grads_built else 0)
        seconds = max(0.0, timing.step_s - timing.overhead_s)
        return Measurement(seconds=seconds, step_s=timing.step_s, overhead_s=timing.overhead_s,
                           runs=timing.runs, forward_workspace_bytes=forward,
                           backward_workspace_bytes=backward,
                           forward_s=min(seconds, timing.forward_s) if grads_built else seconds)

    def time_steps(self, tf, graph, init, target, empty_target, trace: bool = False,
                   forward: tuple | None = None) -> Timing:
        """Runs ``init``, then times ``target`` and ``empty_target`` (the fixed cost of a
        step's fetches) in a session of ``graph`` configured as training configures one
        (``session_config``), with freed memory kept as training steps keep it
        (``tensoropt._tf.freed_memory_kept``). Returns a ``Timing``: this profiler's
        statistic of each, the timed steps of ``target``, a traced step of it when
        ``trace`` (else None), and, when ``forward`` = (fetches, empty fetches) is given,
        those timed the same way, the one less the other, floored at 0.
        Counts one measurement."""
        metadata = None
        config = session_config(tf, self.threads)
        with freed_memory_kept(), tf.compat.v1.Session(graph=graph, config=config) as sess:
            sess.run(init)
            for _ in range(self.warmup):
                sess.run(target)
            steps = self._time(sess, target, self.min_runs, self.max_runs, self.min_time_s)
            for _ in range(3):
                sess.run(empty_target)
            empty = self._time(sess, empty_target, max(len(steps), 20), max(len(steps), 20), 0.0)
            if forward is not None:
                forward_steps = self._time(sess, forward[0], self.min_runs, self.max_runs, self.min_time_s)
                forward_empty = self._time(sess, forward[1], max(len(forward_steps), 20),
                                           max(len(forward_steps), 20), 0.0)
            if trace:
                options, metadata = trace_options(tf)
                sess.run(target, options=options, run_metadata=metadata)
        self.measurements += 1
        stat = _STATISTICS[self.statistic]
        forward_s = None if forward is None else max(0.0, stat(forward_steps) - stat(forward_empty))
        return Timing(stat(steps), stat(empty), len(steps), metadata, forward_s)

    @staticmethod
    def _time(sess, target, min_runs: int, max_runs: int, min_time_s: float) -> list[float]:
        times: list[float] = []
        while len(times) < min_runs or (sum(times) < min_time_s and len(times) < max_runs):
            start = time.perf_counter()
            sess.run(target)
            times.append(time.perf_counter() - start)
        return times

    def _build(self, tf, op, shard: LocalShard):
        """Scalar fetches whose computation is the shard's forward and backward (the
        outputs' first, then the gradients'), whether any gradient was built, and how
        many of the fetches are outputs."""
        inputs = []
        for i, ((shape, dtype), bound) in enumerate(zip(shard.inputs, shard.int_ranges)):
            if dtype == "float32":
                value = tf.random.uniform(shape, 0.5, 1.5, dtype=tf.float32)
            elif dtype in ("int32", "int64"):
                value = tf.random.uniform(shape, 0, max(int(bound or 1), 1), dtype=getattr(tf, dtype))
            elif dtype == "bool":
                value = tf.random.uniform(shape, 0.0, 1.0) < 0.5
            else:
                raise ValueError(f"{op.kind} '{op.name}': input {i} has dtype {dtype}, which the "
                                 "profiler cannot fill; profile float32/int32/int64/bool ops only")
            var = tf.compat.v1.Variable(value, trainable=False, use_resource=True, name=f"input_{i}")
            inputs.append(var.value())
        dims, local = dict(shard.dim_sizes), dict(shard.local_dim_sizes)
        extra = {"dim_offsets": {d: 0 for d in dims}}
        if op.kind == "lstm" and local["h"] != dims["h"]:
            factor = dims["h"] // local["h"]
            extra["allgather_hidden"] = lambda h: tf.tile(h, [1, factor])
        ctx = LoweringContext(output_shapes=[s for s, _ in shard.outputs], dim_sizes=dims,
                              local_dim_sizes=local, seed=None, extra=extra)
        outputs = list(op.op_def.lower(tf, op, inputs, ctx))
        got = [tuple(o.shape.as_list()) for o in outputs]
        want = [s for s, _ in shard.outputs]
        if got != want:
            raise AssertionError(f"{op.kind} '{op.name}': the lowering of the local shard produced "
                                 f"shapes {got}, expected {want}")
        ys, dys = [], []
        for j, o in enumerate(outputs):
            if o.dtype.is_floating:
                dy = tf.compat.v1.Variable(tf.random.uniform(want[j], 0.5, 1.5, dtype=o.dtype),
                                           trainable=False, use_resource=True, name=f"dy_{j}")
                ys.append(o)
                dys.append(dy.value())
        xs = [x for x, (_, dtype) in zip(inputs, shard.inputs) if dtype == "float32"]
        grads = []
        if ys and xs:
            grads = [g for g in tf.gradients(ys, xs, grad_ys=dys) if g is not None]
        # One element of each result is fetched: Grappler prunes work that only a
        # tf.group (a control edge) needs, so the values must be fetched, but copying
        # whole tensors out would be timed too.
        return [tf.reshape(t, [-1])[0] for t in outputs + grads], bool(grads), len(outputs)

    @staticmethod
    def _empty_fetches(tf, n: int, name: str = "tiny"):
        """``n`` scalar fetches of a tiny variable: the fixed cost of a step's fetches."""
        tiny = tf.compat.v1.Variable(tf.zeros([n]), trainable=False, use_resource=True, name=name)
        value = tiny.value()
        return [value[i] for i in range(n)]


def workspace_of_trace(metadata, forward_out_bytes: int, backward_out_bytes: int) -> tuple[int, int]:
    """``(forward, backward)`` workspace of a traced step of a profiled shard.

    Per pass, the allocation records of its TensorFlow nodes (backward: those
    ``tf.gradients`` names ``gradients/...``; a record of a freed buffer is negative) are
    summed in time order; the pass's workspace is their peak less what the pass hands on
    (``forward_out_bytes``: the op's outputs; ``backward_out_bytes``: its input gradients),
    which the simulator counts as activations and activation gradients. So it holds both
    one node's scratch (a CPU convolution's backprop buffers) and intermediates between
    the nodes of one op (a matmul's per-step products before their sum), floored at 0.
    """
    records: list[list[tuple[int, int]]] = [[], []]
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            phase = 1 if node.node_name.startswith("gradients") else 0
            records[phase] += node_allocations(node)
    forward, backward = (max(0, allocation_peak(r) - int(handed_on))
                         for r, handed_on in zip(records, (forward_out_bytes, backward_out_bytes)))
    return forward, backward


@dataclass(frozen=True)
class GraphProfile:
    """What profiling a whole graph did.

    Attributes:
        ops: compute ops (sources excluded).
        configs: (op, configuration) pairs priced.
        measured: pairs run in TensorFlow (distinct keys not already cached).
        cached: pairs answered by the cache.
        seconds: wall time.
    """

    ops: int
    configs: int
    measured: int
    cached: int
    seconds: float


def profile_graph(graph, num_devices: int, profiler: ComputeProfiler,
                  progress: Callable[[int, int, str], None] | None = None) -> GraphProfile:
    """Prices every configuration of every compute op of ``graph`` on ``num_devices``.

    Args:
        progress: called as ``progress(done_ops, total_ops, op_name)`` after each op.
    """
    start = time.perf_counter()
    measured0, hits0 = profiler.measurements, profiler.hits
    ops = [op for op in graph.operations if op.kind not in SOURCE_KINDS]
    pairs = 0
    for n, op in enumerate(ops, 1):
        for config in enumerate_configs(op, num_devices):
            profiler.compute_s(op, config)
            pairs += 1
        if progress is not None:
            progress(n, len(ops), op.name)
    profiler.save()
    return GraphProfile(ops=len(ops), configs=pairs, measured=profiler.measurements - measured0,
                        cached=profiler.hits - hits0, seconds=time.perf_counter() - start)
