"""``tensoropt calibrate``: measure this job's collectives and compute, write a profile.

Run under ``mpirun -np N``. For every partitioning scheme ``(group_size, stride)`` of the N
ranks (every mesh-axis group of every device mesh, see ``process_sets``) and each
collective in ``collectives.COLLECTIVES``, it times sizes ``2^i`` bytes from ``min_bytes``
to ``max_bytes`` (each rounded up to split evenly among the group: ``split_size``; on 3 ranks
16 bytes becomes 24) with *all* groups of the scheme running at once (so contention between
groups is measured, as in training).

A size's time is what one more collective of that size adds to a chain of them inside one
``session.run`` (``links`` calls, each waiting for the one before, as a plan's collectives
are chained in a step): the chain's time less a one-call chain's, over ``links - 1``. A
standalone call (``links=1``) also pays the ``session.run`` and, on horovod's ~1 ms cycle,
lands on one or two cycles by chance: measured 2026-11-26, a 1 MiB all-gather took
1.08 ms in one calibration and 2.03 ms in the next, while its link in a chain took
1.07-1.10 ms in two; a 16 MiB all-reduce took 22.4-22.9 ms standalone and 15.4 ms a link.
After the timed rounds, ``BUSY_ROUNDS`` more run under horovod's timeline: a size's
``busy_seconds`` is how long horovod itself worked on one such collective
(``horovod_timeline``): the least transfer the simulator charges before an op can use the
result (``costs.model.CostModel``'s ``transfer_collectives``). A chain hides that work
inside the cycle while it is shorter than one (a 2 MiB all-gather: 0.5-0.9 ms of work,
one 1.1 ms cycle a link).
One sample: barrier, then ``inner`` back-to-back runs, divided by ``inner``; the sample of a
repeat is the slowest rank's; a size's time is
the median over ``repeats`` (``--statistic p25``: the 25th percentile, steadier on a shared
machine, where small collectives take one, two or three of horovod's ~1 ms negotiation
cycles and the median flips between them). Repeats run in rounds that visit every (collective, scheme,
size) once, so slow phases of a shared machine spread over all points instead of
spoiling a few. It also times a float32 matmul on every rank at once (the ``local``
cluster's peak FLOP/s). Rank 0 writes the versioned JSON profile that
``collectives.ProfiledCollectives`` and ``cluster.get_cluster("local")`` read.

Usage::

    mpirun -np 4 python -m tensoropt.execution.calibration_job --out profiles/local.json --max-bytes 16777216
    # or, in Python under mpirun:
    from tensoropt.execution.calibration_job import calibrate
    profile = calibrate("profiles/local.json", max_bytes=2**20, repeats=10)

The collectives run in one TensorFlow graph (graph mode, one op per size so horovod's
response cache hits as in training) on static horovod process sets registered at
``hvd.init`` (HOROVOD.md); every rank issues them in the same order, and the job ends with
a barrier. Graph optimization is off: horovod's ops are not marked stateful, and constant
folding would otherwise run each collective once at optimization time and return the folded
value on every later call. With more timed collectives than ``HOROVOD_CACHE_CAPACITY``
(1024), raise it.
"""

from __future__ import annotations

import datetime
import os
import socket
import sys
import tempfile
import time
from typing import Any, Sequence

import numpy as np

from tensoropt._tf import import_tensorflow
from tensoropt._version import __version__
from tensoropt.cluster.calibration import COLLECTIVES, CalibrationProfile, horovod_timing_env
from tensoropt.cluster.mesh import partition_schemes, scheme_groups
from tensoropt.cluster.presets import DEFAULT_PROFILE_PATH, physical_memory_bytes
from tensoropt.cluster.threads import rank_threads
from tensoropt.execution.calibration_overheads import measure_overheads
from tensoropt.execution.guards import CACHE_CAPACITY
from tensoropt.execution.horovod_timeline import busy_seconds, recording_timeline
from tensoropt.execution.hosts import job_hostnames
from tensoropt.execution.machine_load import QUIET_SHARE, ForeignLoad, describe
from tensoropt.execution.mpi_env import import_mpi
from tensoropt.execution.process_sets import register_process_sets
from tensoropt.validation import CommandParser, check_writable, positive_int

__all__ = ["Calibrator", "calibrate", "main", "default_sizes", "split_size", "DEFAULT_LINKS", "BUSY_ROUNDS"]

_FLOAT_BYTES = 4
#: collectives per timed chain (module doc); 1 would time standalone calls
DEFAULT_LINKS = 4
#: Untimed rounds recorded under horovod's timeline for each size's busy seconds (its own
#: work, which a chain hides inside the cycle while its work is shorter than one).
BUSY_ROUNDS = 3
STATISTICS = {
    "median": lambda a: np.median(a, axis=0),
    "p25": lambda a: np.percentile(a, 25, axis=0),
    "min": lambda a: np.min(a, axis=0),
}


def default_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    """Powers of two from ``min_bytes`` (rounded up to one) to ``max_bytes`` inclusive."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"calibrate: need 1 <= min_bytes <= max_bytes, got {min_bytes}, {max_bytes}")
    i = int(np.ceil(np.log2(min_bytes)))
    out = []
    while 2 ** i <= max_bytes:
        out.append(2 ** i)
        i += 1
    return out


def split_size(collective: str, nbytes: int, group_size: int) -> int:
    """``nbytes`` rounded up to the nearest size whose float32 elements split evenly for
    ``collective`` in groups of ``group_size``: a multiple of 4 bytes for an allreduce, of
    4 x ``group_size`` for the others (each rank's piece is whole). Powers of two from
    4 x ``group_size`` up are kept as they are when ``group_size`` is a power of two; on 3
    or 6 ranks, 16 bytes becomes 24 for groups of 3 and 48 for groups of 6."""
    unit = _FLOAT_BYTES if collective == "allreduce" else _FLOAT_BYTES * group_size
    return -(-max(int(nbytes), 1) // unit) * unit


def _collective(hvd, collective: str, x, process_set, name: str):
    if collective == "allreduce":
        return hvd.allreduce(x, op=hvd.Sum, process_set=process_set, name=name)
    if collective == "allgather":
        return hvd.allgather(x, process_set=process_set, name=name)
    if collective == "reducescatter":
        return hvd.reducescatter(x, op=hvd.Sum, process_set=process_set, name=name)
    return hvd.alltoall(x, process_set=process_set, name=name)


#: rounds of ``repeats`` more samples a size gets while its statistic is at or below 0
NONPOSITIVE_RETRIES = 3


def _link_names(key: tuple[str, int, int, int, int]) -> list[str]:
    """The op name of each link of a ``(collective, group_size, stride, nbytes, links)``
    chain, as ``Calibrator._fn`` names them and horovod's timeline reports them."""
    collective, group_size, stride, nbytes, links = key
    prefix = f"tensoropt_calibrate/{collective}/g{group_size}s{stride}/{nbytes}B/x{links}"
    return [f"{prefix}/{k}" for k in range(links)]


class Calibrator:
    """This process's share of a calibration: horovod, process sets, timed collectives.

    Args:
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).
        process_sets: map group tuple -> ``hvd.ProcessSet`` when horovod is already
            initialized with them (``process_sets.register_process_sets``); by default this
            initializes horovod itself.
        intra_threads: TensorFlow intra-op threads (default: cores / ranks on this machine).
    """

    def __init__(self, comm: Any = None, process_sets: dict | None = None,
                 intra_threads: int | None = None) -> None:
        MPI = import_mpi()   # MPI starts only when a job is calibrated, as the runtime starts it

        self.comm = comm or MPI.COMM_WORLD
        self.MPI = MPI
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        gathered = list(self.comm.allgather(socket.gethostname()))
        # the job's machines as the runtime sees them (TENSOROPT_HOSTS may declare them);
        # the threads are shared among the ranks on this physical host
        self.hostnames = list(job_hostnames(gathered, os.environ))
        self.local_ranks = gathered.count(gathered[self.rank])
        self.tf = tf = import_tensorflow()
        if intra_threads is None:
            intra_threads = rank_threads(self.local_ranks)
        try:
            tf.config.threading.set_intra_op_parallelism_threads(intra_threads)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # TensorFlow already started: keep its settings
            pass
        # room for every timed chain's names (read at hvd.init), as the runtime makes room for a plan's
        os.environ.setdefault("HOROVOD_CACHE_CAPACITY", str(CACHE_CAPACITY))
        # hvd.start_timeline (busy seconds) needs this at hvd.init; a timeline the user
        # records to a file instead is kept, and busy seconds are then not measured
        os.environ.setdefault("HOROVOD_TIMELINE", "DYNAMIC")
        import horovod.tensorflow as hvd  # noqa: PLC0415

        self.hvd = hvd
        if process_sets is None:
            if hvd.is_initialized():
                raise ValueError("Calibrator: horovod is already initialized; pass process_sets= the map "
                                 "returned by tensoropt.execution.process_sets.register_process_sets")
            process_sets = register_process_sets(hvd, self.comm)
        self.process_sets = process_sets
        self.intra_threads = intra_threads
        self._graph: Any = None
        self._session: Any = None
        self._fns: dict[tuple[str, int, int, int], Any] = {}
        self.last_samples: dict[tuple[str, int, int, int], list[float]] = {}
        self.last_timing: dict[str, float] = {}
        self.last_busy: dict[tuple[str, int, int, int], float] = {}

    # ---- one collective ----------------------------------------------------------------

    def _my_group(self, group_size: int, stride: int) -> tuple[int, ...]:
        for grp in scheme_groups(self.size, group_size, stride):
            if self.rank in grp:
                return grp
        raise AssertionError("every rank is in one group of a scheme")

    def _fn(self, collective: str, group_size: int, stride: int, nbytes: int, links: int = 1):
        """A callable that runs a chain of ``links`` collectives of one size on this rank's
        group (each starts after the one before it ends, on the same input), and waits.

        The collectives live in one TensorFlow graph run by a session (graph mode: adding
        hundreds of them costs far less than tracing as many ``tf.function``s). Each size has
        its own op name: horovod caches a collective's negotiation by name, so after warm-up
        every call is a cache hit, as in a training step that repeats its collectives.
        """
        key = (collective, group_size, stride, nbytes, links)
        if key not in self._fns:
            tf, hvd = self.tf, self.hvd
            group = self._my_group(group_size, stride)
            if group not in self.process_sets:
                raise ValueError(f"Calibrator: no process set for group {group}; register them with "
                                 "tensoropt.execution.process_sets.register_process_sets")
            ps = self.process_sets[group]
            elems = self._elems(collective, nbytes, group_size)
            if self._graph is None:
                self._graph = tf.Graph()
            with self._graph.as_default():
                x = tf.ones([elems], tf.float32)
                y = None
                for name in _link_names(key):
                    with tf.control_dependencies([y] if y is not None else []):
                        y = _collective(hvd, collective, tf.identity(x), ps, name)
                out = tf.reduce_sum(y[:1])
            if self._session is None:
                config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=self.intra_threads,
                                                  inter_op_parallelism_threads=1)
                # No graph optimization. Horovod's ops are not marked stateful, so constant
                # folding (grappler's, and the classic optimizer's at L1) would run each
                # collective once while optimizing and then return the folded result:
                # calls would take no time. Grappler also costs much on every new fetch.
                config.graph_options.rewrite_options.disable_meta_optimizer = True
                config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
                config.graph_options.optimizer_options.do_constant_folding = False
                self._session = tf.compat.v1.Session(graph=self._graph, config=config)
            run = self._session.run
            self._fns[key] = lambda: run(out)
        return self._fns[key]

    def _timer(self, task: tuple[str, int, int, int], links: int):
        """``(call, run)``: ``call()`` runs ``task`` once; ``run(k)`` times ``k``
        back-to-back runs and returns one collective's seconds: a standalone call's
        (``links`` 1), else one more link's of a ``links``-call chain (the chain's runs
        less as many one-call runs, over ``links - 1``)."""
        one = self._fn(*task)
        chain = self._fn(*task, links=links) if links > 1 else None

        def run(k: int) -> float:
            start = time.perf_counter()
            for _ in range(k):
                one()
            middle = time.perf_counter()
            if chain is None:
                return (middle - start) / k
            for _ in range(k):
                chain()
            return ((time.perf_counter() - middle) - (middle - start)) / (k * (links - 1))
        return one, run

    @staticmethod
    def _elems(collective: str, nbytes: int, group_size: int) -> int:
        """float32 elements of this rank's input for ``nbytes`` in ``collectives``' convention."""
        elems = nbytes // _FLOAT_BYTES
        if collective == "allgather":
            elems //= group_size
        unit = group_size if collective in ("reducescatter", "alltoall") else 1
        if (elems < 1 or elems % unit or nbytes % _FLOAT_BYTES
                or (collective == "allgather" and nbytes % (group_size * _FLOAT_BYTES))):
            raise ValueError(f"calibrate: {nbytes} bytes cannot be split into float32 pieces for a "
                             f"{collective} in groups of {group_size}; use sizes that are multiples of "
                             f"{_FLOAT_BYTES * group_size} bytes")
        return elems

    def measure(self, tasks: Sequence[tuple[str, int, int, int]], repeats: int = 10, inner: int = 1,
                warmup: int = 1, statistic: str = "median", links: int = 1,
                busy_rounds: int = 0) -> dict[tuple[str, int, int, int], float]:
        """Times each ``(collective, group_size, stride, nbytes)``; collective call on all ranks.

        ``links`` > 1: a sample is one more link of a ``links``-call chain (module doc);
        1: one standalone call.

        Every rank must pass the same tasks. ``last_samples`` keeps the raw samples (the
        slowest rank's seconds per call, one per repeat) of each task. ``busy_rounds`` > 0:
        after the timed rounds, that many more untimed rounds run under horovod's timeline,
        and ``last_busy`` keeps each task's busy seconds (``_busy``).

        Returns:
            task -> ``statistic`` (median, p25 or min) over repeats of the slowest rank's
            seconds per call (the same on all ranks).
        """
        if repeats < 1 or inner < 1 or links < 1:
            raise ValueError(f"calibrate: repeats, inner and links must be >= 1, got {repeats}, {inner}, {links}")
        if statistic not in STATISTICS:
            raise ValueError(f"calibrate: statistic must be one of {list(STATISTICS)}, got {statistic!r}")
        capacity = int(os.environ.get("HOROVOD_CACHE_CAPACITY", "1024"))
        named = len(tasks) * (1 + links if links > 1 else 1)
        if named > capacity and self.rank == 0:
            print(f"calibrate: {named} timed collectives exceed horovod's response cache "
                  f"({capacity}); calls will renegotiate and time slower than in training: set "
                  f"HOROVOD_CACHE_CAPACITY={named} or measure fewer sizes", file=sys.stderr)
        started = time.perf_counter()
        logger = self.tf.get_logger()
        level = logger.level
        logger.setLevel("ERROR")  # horovod's graph-mode notices
        try:
            timers = [self._timer(t, links) for t in tasks]
            for _, run in timers:  # let horovod negotiate (and cache) each tensor once
                for _ in range(warmup):
                    run(1)
        finally:
            logger.setLevel(level)
        warmed = time.perf_counter()
        slowest = self._timed_rounds(timers, repeats, inner)
        self.last_timing = {"trace_and_warmup_s": round(warmed - started, 2),
                            "timed_rounds_s": round(time.perf_counter() - warmed, 2)}
        per_task = [slowest[:, j].tolist() for j in range(len(tasks))]
        stat = [self._statistic(statistic, v) for v in per_task]
        # a chain's link is its runs less as many one-call runs: on a busy machine the
        # difference can come out at or below 0 (noise above the collective's own time)
        for _ in range(NONPOSITIVE_RETRIES):
            bad = [j for j, m in enumerate(stat) if not m > 0]
            if not bad:
                break
            more = self._timed_rounds([timers[j] for j in bad], repeats, inner)
            for col, j in enumerate(bad):
                per_task[j] += more[:, col].tolist()
                stat[j] = self._statistic(statistic, per_task[j])
        for j, m in enumerate(stat):       # then the samples above 0 alone, if any
            positive = [v for v in per_task[j] if v > 0]
            if not m > 0 and positive:
                stat[j] = self._statistic(statistic, positive)
        bad = [tasks[j] for j, m in enumerate(stat) if not m > 0]
        if bad:
            raise RuntimeError(
                f"calibrate: {len(bad)} size(s) timed at or below 0 s after "
                f"{NONPOSITIVE_RETRIES} more rounds each, every sample too (first: {bad[0]}): "
                "the machine's noise is larger than these collectives; run calibrate again on "
                "a quieter machine, or with more --repeats")
        self.last_samples = {t: v for t, v in zip(tasks, per_task)}
        if busy_rounds:
            self.last_busy = self._busy(tasks, timers, links, busy_rounds)
        return {t: float(m) for t, m in zip(tasks, stat)}

    def _timed_rounds(self, timers, repeats: int, inner: int) -> np.ndarray:
        """``repeats`` rounds over ``timers`` (``_timer``'s pairs), each timed call after an
        untimed one of the same collective (the first call after another collective runs
        slow); ``(repeats, len(timers))`` seconds per call of the slowest rank."""
        samples = np.zeros((repeats, len(timers)))
        for r in range(repeats):
            for j, (call, run) in enumerate(timers):
                call()
                self.comm.Barrier()
                samples[r, j] = run(inner)
        return np.max(np.array(self.comm.allgather(samples)), axis=0)

    @staticmethod
    def _statistic(statistic: str, values: list[float]) -> float:
        """``statistic`` of one task's samples."""
        return float(STATISTICS[statistic](np.array(values)[:, None])[0])

    def _busy(self, tasks, timers, links: int, rounds: int) -> dict[tuple[str, int, int, int], float]:
        """Per task, the median seconds horovod was busy with one of its collectives
        (``horovod_timeline``: its own work, the cycle and negotiation left out), over
        ``rounds`` untimed rounds of the task's calls and chains, as rank 0 recorded them;
        the same on every rank. The timeline is written to a temporary file on rank 0."""
        if os.environ.get("HOROVOD_TIMELINE") != "DYNAMIC":
            if self.rank == 0:
                print(f"calibrate: HOROVOD_TIMELINE={os.environ.get('HOROVOD_TIMELINE')!r} records a "
                      "timeline of its own, so busy seconds are not measured (the simulator then "
                      "takes a transfer as what a chained collective exceeds a tiny one); unset it "
                      "to measure them", file=sys.stderr)
            return {}
        path = None
        if self.rank == 0:
            fd, path = tempfile.mkstemp(prefix="tensoropt-calibrate-", suffix=".timeline.json")
            os.close(fd)
        path = self.comm.bcast(path, root=0)
        try:
            with recording_timeline(self.hvd, path, self.rank):
                for _ in range(rounds):
                    for _, run in timers:
                        self.comm.Barrier()
                        run(1)
            self.comm.Barrier()
            out = None
            if self.rank == 0:
                seconds = busy_seconds(path)
                out = {}
                for t in tasks:
                    names = [name for n in {1, links} for name in _link_names((*t, n))]
                    found = [seconds[name] for name in names if name in seconds]
                    if found:
                        out[t] = float(np.median(found))
            return self.comm.bcast(out, root=0)
        finally:
            if self.rank == 0 and os.path.exists(path):
                os.remove(path)

    def measure_matmul(self, n: int = 512, repeats: int = 10) -> float:
        """FLOP/s of an ``n x n`` float32 matmul, every rank at once (median of the slowest rank)."""
        tf = self.tf
        a = tf.random.stateless_normal([n, n], seed=[1, 2])

        @tf.function
        def mm(x):
            return tf.reduce_sum(tf.matmul(x, x)[:1, :1])

        mm(a).numpy()
        ts = []
        for _ in range(repeats):
            self.comm.Barrier()
            start = time.perf_counter()
            mm(a).numpy()
            ts.append(time.perf_counter() - start)
        slowest = np.max(np.array(self.comm.allgather(ts)), axis=0)
        return float(2 * n ** 3 / np.median(slowest))

    def tasks(self, sizes: Sequence[int], collectives: Sequence[str] = COLLECTIVES
              ) -> list[tuple[str, int, int, int]]:
        """Every (collective, group_size, stride, nbytes) of this world's schemes, each size
        rounded up (:func:`split_size`) so that it splits evenly among the group."""
        return list(dict.fromkeys((c, g, s, split_size(c, b, g)) for g, s in partition_schemes(self.size)
                                  for c in collectives for b in sizes))

    def calibrate(self, out_path: str | os.PathLike | None = DEFAULT_PROFILE_PATH, max_bytes: int = 2**24,
                  repeats: int = 10, min_bytes: int | None = None, inner: int = 1,
                  statistic: str = "median", links: int = DEFAULT_LINKS) -> CalibrationProfile:
        """Measures every scheme and collective at sizes 2^i; rank 0 writes ``out_path``.

        Returns:
            The profile (on every rank).
        """
        started = time.time()
        load = ForeignLoad(self.comm)
        if min_bytes is None:
            min_bytes = _FLOAT_BYTES * self.size
        sizes = default_sizes(min_bytes, max_bytes)
        results = (self.measure(self.tasks(sizes), repeats=repeats, inner=inner, statistic=statistic,
                                links=links, busy_rounds=BUSY_ROUNDS) if self.size > 1 else {})
        profile = self.build_profile(results, repeats=repeats, inner=inner, statistic=statistic,
                                     started=started, links=links, busy=self.last_busy)
        profile.extra["overheads"] = measure_overheads(self, repeats=repeats)
        share = load.share()
        profile.extra["foreign_cpu_share"] = None if share is None else round(share, 4)
        if self.rank == 0 and out_path is not None:
            profile.save(out_path)
        self.comm.Barrier()
        return profile

    def build_profile(self, results: dict[tuple[str, int, int, int], float], repeats: int, inner: int = 1,
                      statistic: str = "median", started: float | None = None,
                      links: int = DEFAULT_LINKS, busy: dict | None = None) -> CalibrationProfile:
        """The profile of ``measure``'s results, with this job's shape, memory and matmul rate;
        a task in ``busy`` (``measure``'s ``last_busy``) also gets its ``busy_seconds``."""
        busy = busy or {}
        started = time.time() if started is None else started
        flops = self.measure_matmul()
        machines = len(set(self.hostnames))
        dpm = max(self.hostnames.count(h) for h in set(self.hostnames))
        phys = physical_memory_bytes(default=16 * 2**30)
        order = list(dict.fromkeys(self.hostnames))
        blockwise = all(order.index(h) == r // dpm for r, h in enumerate(self.hostnames))
        return CalibrationProfile(
            world_size=self.size, hostnames=self.hostnames, machines=machines, devices_per_machine=dpm,
            measurements=[{"collective": c, "group_size": g, "stride": s, "bytes": b, "seconds": t,
                           **({"busy_seconds": busy[c, g, s, b]} if (c, g, s, b) in busy else {})}
                          for (c, g, s, b), t in sorted(results.items())],
            peak_flops=flops, memory_bytes_per_device=float(phys // self.local_ranks),
            tensoropt_version=__version__,
            extra={"compute": {"matmul_n": 512, "note": "float32 matmul, all ranks at once"},
                   "repeats": repeats, "inner": inner, "statistic": f"{statistic} over repeats of the slowest rank",
                   "seconds": (f"one more link of a chain of {links} in one session.run" if links > 1
                               else "one standalone call"),
                   "ranks_blockwise_by_machine": blockwise,
                   "horovod_env": horovod_timing_env(),
                   "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "calibration_seconds": round(time.time() - started, 3)})

    def finish(self) -> None:
        """The final barrier every job ends with (HOROVOD.md: shutdown race); closes the session."""
        self.comm.Barrier()
        if self._session is not None:
            self._session.close()
            self._session = None


def calibrate(out_path: str | os.PathLike | None = DEFAULT_PROFILE_PATH, max_bytes: int = 2**24,
              repeats: int = 10, min_bytes: int | None = None, inner: int = 1,
              statistic: str = "median", links: int = DEFAULT_LINKS) -> CalibrationProfile:
    """Runs a whole calibration in this MPI job (see :class:`Calibrator`) and ends with a barrier."""
    cal = Calibrator()
    profile = cal.calibrate(out_path, max_bytes=max_bytes, repeats=repeats, min_bytes=min_bytes, inner=inner,
                            statistic=statistic, links=links)
    cal.finish()
    return profile


def _others(share: float | None) -> str:
    return "" if share is None else f", other processes {share:.0%} of the CPUs"


def main(argv: Sequence[str] | None = None) -> int:
    """``tensoropt calibrate --out PATH --max-bytes N --repeats R [--min-bytes N] [--inner K] [--links L] [--statistic S]``."""
    p = CommandParser(prog="tensoropt calibrate",
                                description="Measure collective bandwidth per partitioning scheme and matmul "
                                            "FLOP/s; run under mpirun -np N.")
    p.add_argument("--out", default=DEFAULT_PROFILE_PATH, help=f"profile to write (default {DEFAULT_PROFILE_PATH})")
    p.add_argument("--max-bytes", type=positive_int, default=2**24, help="largest size, bytes (default 2^24)")
    p.add_argument("--min-bytes", type=positive_int, default=None, help="smallest size, bytes (default 4 x ranks)")
    p.add_argument("--repeats", type=positive_int, default=10, help="samples per size; the median is kept (default 10)")
    p.add_argument("--inner", type=positive_int, default=1, help="back-to-back runs per sample (default 1)")
    p.add_argument("--links", type=positive_int, default=DEFAULT_LINKS,
                   help=f"collectives per timed chain; a size's time is one more link (default {DEFAULT_LINKS}; "
                        "1: standalone calls)")
    p.add_argument("--statistic", choices=sorted(STATISTICS), default="median",
                   help="how repeats combine: median (default); p25 or min resist load from other jobs")
    args = p.parse_args(argv)
    # before measuring (minutes): a directory or an unwritable place fails now, and leaves nothing
    check_writable("--out", args.out, create_parents=True)
    if args.min_bytes is not None and args.min_bytes > args.max_bytes:
        p.error(f"--min-bytes {args.min_bytes} is above --max-bytes {args.max_bytes}; give min <= max")
    profile = calibrate(args.out, max_bytes=args.max_bytes, repeats=args.repeats, min_bytes=args.min_bytes,
                        inner=args.inner, statistic=args.statistic, links=args.links)
    from mpi4py import MPI  # noqa: PLC0415

    if MPI.COMM_WORLD.Get_rank() == 0:
        n = profile.world_size
        share = profile.extra.get("foreign_cpu_share")
        print(f"calibrate: {n} rank(s) on {profile.machines} machine(s), {len(profile.measurements)} "
              f"measurements, matmul {profile.peak_flops / 1e9:.1f} GFLOP/s per rank{_others(share)}; "
              f"wrote {args.out}")
        if n == 1:
            print("calibrate: one rank measures no collective; run under mpirun -np N", file=sys.stderr)
        if share is not None and share > QUIET_SHARE:
            print(describe(share, "calibrate"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
