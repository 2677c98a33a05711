"""The three calls a script adds, and ``init``: the process-level runtime.

``init`` joins the MPI job (one rank per device) and horovod, and gathers every rank's
host name, from which the cluster's shape (machines x devices per machine) follows.
``find_strategy`` returns the chosen Plan and ``search_strategy`` the whole search result
(a ``summary.SearchSummary``: the chosen plan, the frontier, the data-parallel plan);
under mpirun rank 0 searches and every rank receives the same result.
``build_execution_graph`` builds this process's TensorFlow graph for a plan, after the
ranks have checked that they all hold the same plan; ``run`` executes fetches, as
``Session.run``, and turns a stalled collective into an error that ends the whole job.

Usage::

    to.init()
    plan = to.find_strategy(option="mini_time")
    to.build_execution_graph(engine="tensorflow", plan=plan)
    loss_value, _ = to.run([loss, train_op], feed_dict={x: xs, y: ys})

    result = to.search_strategy(option="mini_time")   # the same on every rank
    to.build_execution_graph(plan=result.frontier[0])  # e.g. the least-memory plan
"""

from __future__ import annotations

import atexit
import os
import shlex
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensoropt._tf import import_tensorflow
from tensoropt.cluster import get_cluster, presets
from tensoropt.execution import PlanSharding, guards
from tensoropt.execution.guards import StepWatch, check_agreement, check_cache_capacity, horovod_settings
from tensoropt.execution.process_sets import register_process_sets
from tensoropt.execution.schedule import check_plan_for_graph, collective_schedule
from tensoropt.execution.step_profile import profile_from_trace, resident_bytes, trace_options
from tensoropt.execution.step_report import StepReporter, report_step_from_env
from tensoropt.search import strategy
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import OPTIONS, SearchSettings
from tensoropt.search.summary import SearchSummary
from tensoropt.simulator.attach import frontier_observer, simulate_mode
from tensoropt.simulator.plan_sim import simulate_plan
from tensoropt.graph import Graph, Tensor, TrainStep, get_default_graph
from tensoropt.execution.lowering import Lowered, lower_graph
from tensoropt.plan import Plan
from tensoropt.validation import check_int, check_mapping, check_plan_argument, check_search_arguments

__all__ = ["World", "ExecutionState", "execution_state", "init", "world", "find_strategy", "search_strategy", "build_execution_graph",
           "run", "set_random_seed", "OPTIONS", "mpirun_command"]

@dataclass(frozen=True)
class World:
    """This job's processes: rank, size, and each rank's host name."""

    rank: int
    size: int
    hostnames: tuple[str, ...]

    @property
    def machines(self) -> int:
        return len(set(self.hostnames))

    @property
    def devices_per_machine(self) -> int:
        return max(self.hostnames.count(h) for h in set(self.hostnames))


class _Runtime:
    """Per-process state: the world, and the built execution graph and its session."""

    def __init__(self) -> None:
        self.world: World | None = None
        self.lowered: Lowered | None = None
        self.session: Any = None
        self.plan: Plan | None = None
        self.graph: Graph | None = None
        self.process_sets: dict = {}
        self.comm = None
        self.sharding = None
        self.watch = None
        self.reporter = None


_runtime = _Runtime()


def init() -> World:
    """Joins the MPI job and horovod; gathers the host name of every rank.

    Safe to call without mpirun (a world of one) and more than once.
    """
    if _runtime.world is not None:
        return _runtime.world
    from mpi4py import MPI  # noqa: PLC0415 - MPI starts only when asked for

    comm = MPI.COMM_WORLD
    hostnames = tuple(comm.allgather(socket.gethostname()))
    # read by hvd.init: the stall limit (TENSOROPT_COLLECTIVE_TIMEOUT_S) and the cache size
    os.environ.update(horovod_settings(os.environ))
    import_tensorflow()
    import horovod.tensorflow as hvd  # noqa: PLC0415 - horovod loads TensorFlow

    _runtime.process_sets = register_process_sets(hvd, comm)
    _runtime.comm = comm.Dup()  # TensorOpt's own messages never mix with the user's
    _runtime.watch = StepWatch(comm.Dup()) if comm.Get_size() > 1 else None
    _runtime.world = World(rank=comm.Get_rank(), size=comm.Get_size(), hostnames=hostnames)
    atexit.register(_finish)
    return _runtime.world


def _finish() -> None:
    """Every job ends with a barrier, so no rank's exit breaks another's collectives."""
    if _runtime.comm is not None:
        _runtime.comm.Barrier()
    if _runtime.watch is not None:
        _runtime.watch.close()


def world() -> World:
    """The world from ``init``; without ``init``, a single process on this host."""
    return _runtime.world or World(0, 1, (socket.gethostname(),))


def set_random_seed(seed: int) -> None:
    """The graph-level seed, as ``tf.compat.v1.set_random_seed``."""
    get_default_graph().seed = check_int("set_random_seed", "seed", seed, minimum=0)


def mpirun_command(n: int) -> str:
    """The command that runs this script on ``n`` ranks."""
    script = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    return f"mpirun --allow-run-as-root --oversubscribe -np {n} {script}"


def find_strategy(option: str = "mini_time", memory_limit: float | None = None,
                  parallelism: int | None = None, *, parallelisms=None, cost_model: str = "analytical",
                  cluster=None, graph: Graph | None = None, epsilon: float | None = None,
                  max_candidates: int | None = None, threads: int = 1, simulate=False,
                  check_peak: bool = True):
    """Chooses a plan for the recorded graph, by one of the paper's three options.

    Args:
        option: "mini_time" (fastest plan that fits, at ``parallelism``), "mini_parallelism"
            (fewest devices that fit) or "profiling" (best time per device count).
        memory_limit: bytes per device; default the device's memory / 1.1.
        parallelism: devices to plan for ("mini_time"; default this job's MPI world size),
            or the most devices to consider ("mini_parallelism", "profiling"; default the
            cluster's).
        parallelisms: device counts for "profiling"; default 1, 2, 4, ... up to the cluster.
        cost_model: "analytical" or "profiled" (after ``tensoropt calibrate``).
        cluster: a preset name, a cluster file, or a Cluster; default this job's cluster
            (``local``).
        epsilon: None (default) for the exact frontier; a float in (0, 1) for an
            epsilon-approximate one, much faster on large models: every exact plan has a
            returned plan with no more memory and at most (1 + epsilon) times its time.
        max_candidates: None (default) for no cap; a positive int (e.g. 50_000_000) bounds
            each Frontier-Tracking product's work by thinning its inputs, for models
            whose exact search would take hours (the paper Transformer on 16 devices).
            It bounds work, not error: ``plan.notes`` gives the error bound reached.
        threads: Frontier-Tracking threads on rank 0.
        simulate: False (default), "auto", "all" or "chosen": rank 0 also runs the
            simulator's check of the chosen device count's frontier (see
            ``tensoropt.simulator.attach``), attached to ``search_strategy(...)``'s result
            as ``simulator_check``; it warns, with both numbers, when the chosen plan's
            simulated peak exceeds the memory limit. Not for "profiling".
        check_peak: True (default): the chosen plan's peak over the step, as the
            simulator's liveness counts it (saved activations, transient and
            re-scheduling buffers, parameters, gradients and slots), must also fit the
            memory limit, not only the additive estimate the search optimizes; the
            fastest frontier plan for which both fit is chosen.

    Returns:
        The chosen Plan (frozen) for "mini_time" and "mini_parallelism"; for "profiling",
        a list of ``tensoropt.search.summary.ProfileRow``, one per device count. It is
        ``search_strategy(...).chosen`` (or ``.profile``): the frontier and the
        data-parallel plan are in ``search_strategy``'s result. Under mpirun, rank 0
        searches and every rank receives the same result.

    Raises:
        ValueError: for a bad argument (naming it and its value) or an empty graph.
        tensoropt.search.strategy.NoPlanFitsError: when no plan fits (on every rank); the message
            gives the least memory any plan needs on the device counts searched.
    """
    summary = search_strategy(option, memory_limit, parallelism, parallelisms=parallelisms,
                              cost_model=cost_model, cluster=cluster, graph=graph, epsilon=epsilon,
                              max_candidates=max_candidates, threads=threads, simulate=simulate,
                              check_peak=check_peak)
    return summary.profile if option == "profiling" else summary.chosen


def search_strategy(option: str = "mini_time", memory_limit: float | None = None,
                    parallelism: int | None = None, *, parallelisms=None, cost_model: str = "analytical",
                    cluster=None, graph: Graph | None = None, epsilon: float | None = None,
                    max_candidates: int | None = None, threads: int = 1, simulate=False,
                    check_peak: bool = True):
    """``find_strategy``'s search, whole: a ``tensoropt.search.summary.SearchSummary`` with the
    chosen plan (``.chosen``), its frontier (``.frontier``, memory ascending; plans built
    on first use), the data-parallel plan (``.data_parallel``) and, for "profiling", one
    row per device count (``.profile``). Arguments as ``find_strategy``.

    Under mpirun, rank 0 searches and broadcasts the result compactly (the frontier's
    configuration and reuse choices, and the few distinct op configurations and edge
    plans they use; ``SearchSummary.to_bytes``); every rank, rank 0 included, builds the
    summary from those bytes, so ``result.frontier[i]`` is the same plan on every rank.
    An error of the search (e.g. ``NoPlanFitsError``) is raised on every rank.

    Raises:
        as ``find_strategy``.
    """
    memory_limit, parallelism, parallelisms = check_search_arguments(
        "find_strategy", OPTIONS, option, memory_limit, parallelism, parallelisms, check_peak)
    try:
        search = SearchOptions(epsilon=epsilon, max_candidates=max_candidates, threads=threads)
        simulate = simulate_mode(simulate)
    except ValueError as e:
        raise ValueError(f"find_strategy: {e}") from None
    graph = graph or get_default_graph()
    if not graph.operations:
        raise ValueError("find_strategy: the recorded graph is empty; build the model first")
    w = world()
    outcome = None
    if w.rank == 0:
        try:
            settings = _settings(option, memory_limit, parallelism, parallelisms, cost_model, cluster, search)
            peak = _checked_peak(graph) if check_peak else None
            outcome = ("summary", strategy.search_summary(graph, settings, observe=frontier_observer(simulate),
                                                          peak=peak).to_bytes())
        except Exception as e:  # noqa: BLE001 - every rank raises what rank 0 raised
            if _runtime.comm is None or w.size == 1:
                raise
            outcome = ("error", _sendable(e))
    if _runtime.comm is not None and w.size > 1:
        outcome = _runtime.comm.bcast(outcome, root=0)
    if outcome[0] == "error":
        raise outcome[1]
    return SearchSummary.from_bytes(outcome[1])


def _checked_peak(graph):
    """``peak(plan, result, cluster)``: the simulator's liveness peak of ``plan`` on the
    representative rank, under the search's own cost model."""
    def peak(plan, result, cluster) -> float:
        return float(simulate_plan(graph, plan, cluster, result.space.model).peak_memory_bytes)

    return peak


def _sendable(error: Exception) -> Exception:
    """``error`` if it pickles (to raise it on every rank), else a RuntimeError saying it."""
    import pickle  # noqa: PLC0415

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - any failure to pickle
        return RuntimeError(f"find_strategy failed on rank 0: {type(error).__name__}: {error}")


def _settings(option, memory_limit, parallelism, parallelisms, cost_model, cluster, search):
    """The search's settings, the cluster resolved here once (``local`` by default)."""
    resolved = local_cluster() if cluster is None else get_cluster(cluster)
    if option == "mini_time":  # at the job's parallelism unless told otherwise
        parallelism = parallelism or world().size
    return SearchSettings(cluster=resolved, option=option, memory_limit_bytes=memory_limit,
                          parallelism=parallelism, parallelisms=parallelisms, cost_model=cost_model,
                          search=search)


def local_cluster():
    """This job's cluster: measured by ``tensoropt calibrate`` if a profile exists, else
    this machine's shape with nominal CPU numbers (and a note saying so)."""
    w = world()
    return presets.local_cluster(machines=w.machines, devices_per_machine=w.devices_per_machine)


def build_execution_graph(engine: str = "tensorflow", plan: Plan | None = None,
                          graph: Graph | None = None) -> None:
    """Builds this process's TensorFlow graph for ``plan`` and initializes its variables.

    Under mpirun, the ranks first compare a hash of their plan and of its collective
    schedule (``execution.schedule``) in one small allgather: ranks holding different
    plans would otherwise hang in their first step.

    Raises:
        ValueError: for an engine other than "tensorflow", a path (use ``Plan.load``), a plan made for another graph
            (naming the op or edge that differs), or a plan whose parallelism differs from
            the number of MPI ranks (the message gives the mpirun command to use).
        tensoropt.execution.guards.PlanMismatchError: (a RuntimeError) on every rank, when
            the ranks hold different plans; it names the first op and the first
            collective that differ, and the ranks on each side.
    """
    if engine != "tensorflow":
        raise ValueError(f"build_execution_graph: engine {engine!r} is not supported; use engine='tensorflow'")
    plan = check_plan_argument("build_execution_graph", plan, Plan)
    graph = graph or get_default_graph()
    plan = plan or find_strategy(graph=graph)
    size = world().size

    problem = schedule = None
    try:
        if plan.parallelism != size:
            raise ValueError(f"the plan is for {plan.parallelism} device(s) but this job has {size} MPI "
                             f"rank(s); run: {mpirun_command(plan.parallelism)}")
        check_plan_for_graph(graph, plan)
        schedule = collective_schedule(graph, plan) if size > 1 else None
    except ValueError as e:
        problem = f"build_execution_graph: {e}"
    if size > 1:   # every rank raises alike: a rank that raised alone would leave the others waiting
        check_agreement(_runtime.comm, graph, plan, schedule, problem)
        check_cache_capacity(len(schedule))
    elif problem:
        raise ValueError(problem)
    tf = import_tensorflow()
    if _runtime.session is not None:
        _runtime.session.close()
        _runtime.session = _runtime.lowered = _runtime.sharding = None
    sharding = None
    if size > 1:
        import horovod.tensorflow as hvd  # noqa: PLC0415

        sharding = PlanSharding(graph, plan, world().rank, hvd, _runtime.process_sets, schedule)
    lowered = lower_graph(graph, tf, sharding)
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=int(os.environ.get("TENSOROPT_THREADS", 0)),
                                      inter_op_parallelism_threads=1)
    # Grappler's rewrites cost seconds per graph and change nothing TensorOpt relies on;
    # the plan already fixed what runs where.
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    session = tf.compat.v1.Session(graph=lowered.tf_graph, config=config)
    lowered.initialize(session)
    _runtime.lowered, _runtime.session, _runtime.plan, _runtime.graph = lowered, session, plan, graph
    _runtime.sharding = sharding
    _runtime.reporter = StepReporter(plan, _runtime.comm if size > 1 else None, world().rank,
                                     report_step_from_env())


def run(fetches, feed_dict: dict | None = None, profile: bool = False):
    """Runs ``fetches`` (tensors, variables, training steps, or nests of them).

    Returns values in the fetches' structure: numpy arrays for tensors, None for steps.
    With ``profile=True``, ``(values, StepProfile)``: this rank's wall time, time inside
    horovod collectives and peak memory of the step (``execution.step_profile``; the
    step is traced, so it runs somewhat slower).

    After ``TENSOROPT_REPORT_STEP`` (default 5) training steps, rank 0 prints the measured
    per-step time and peak memory per rank next to the plan's estimates
    (``execution.step_report``).

    Raises:
        RuntimeError: before ``build_execution_graph``.
        ValueError: for a fetch or feed key that is not from the recorded graph, or a fed
            value of the wrong shape.
    """
    if _runtime.session is None:
        raise RuntimeError("run: no execution graph; call tensoropt.build_execution_graph(plan=...) first")
    lowered, sharding = _runtime.lowered, _runtime.sharding
    tf_fetches = _map_fetches(fetches, lowered)
    tf_feed = {}
    for key, value in check_mapping("run", "feed_dict", feed_dict, "{placeholder: value}").items():
        if not isinstance(key, Tensor) or key not in lowered.tensors:
            raise ValueError(f"run: feed key {key!r} is not a tensor of the recorded graph")
        tf_feed[lowered.tensors[key]] = _local_feed(key, np.asarray(value), sharding)
    reporter = _runtime.reporter if _trains(fetches) else None
    trace = profile or (reporter is not None and reporter.wants_trace())
    kwargs = {}
    if trace:
        options, metadata = trace_options(import_tensorflow())
        kwargs = {"options": options, "run_metadata": metadata}
    watch = _runtime.watch if sharding is not None else None
    if watch is not None:
        watch.start_step()
    start = time.perf_counter()
    try:
        values = _runtime.session.run(tf_fetches, feed_dict=tf_feed, **kwargs)
    except Exception as e:
        if watch is not None:
            _abort_if_stalled(e, watch)
        raise
    wall = time.perf_counter() - start
    step = profile_from_trace(metadata, wall, resident_bytes(import_tensorflow(), lowered.tf_graph)) \
        if trace else None
    if reporter is not None:
        reporter.step(wall, step)
    if sharding is not None:
        values = _assemble(fetches, values, sharding)
    return (values, step) if profile else values


def _trains(fetches) -> bool:
    """Whether ``fetches`` runs a training step."""
    if isinstance(fetches, TrainStep):
        return True
    if isinstance(fetches, dict):
        return any(_trains(v) for v in fetches.values())
    if isinstance(fetches, (list, tuple)):
        return any(_trains(f) for f in fetches)
    return False


def _abort_if_stalled(error: BaseException, watch) -> None:
    """A step that failed because horovod shut down (a collective waited longer than
    TENSOROPT_COLLECTIVE_TIMEOUT_S, or another rank failed) ends the whole MPI job with a
    message naming the collective and the ranks that never started the step: the ranks
    still waiting, or still running, would otherwise hang."""

    if not guards.is_collective_failure(error):
        return
    message = guards.stall_message(world().rank, guards.stalled_collective(error), watch.step,
                                   watch.missing_ranks(), guards.collective_timeout_s())
    print(message, file=sys.stderr, flush=True)
    from mpi4py import MPI  # noqa: PLC0415

    MPI.COMM_WORLD.Abort(1)


def _local_feed(key: Tensor, value: np.ndarray, sharding) -> np.ndarray:
    """This rank's part of a fed value: the full batch is sliced to the rank's shard; a
    value already of the shard's shape is taken as that shard."""
    if tuple(value.shape) == tuple(key.shape):
        if sharding is None:
            return value
        return value[sharding.layout_of(key).shard_slices(world().rank, key.shape)]
    if sharding is not None and tuple(value.shape) == sharding.layout_of(key).local_shape(key.shape):
        return value
    want = f"{tuple(key.shape)}" + (f" (or this rank's slice, "
                                    f"{sharding.layout_of(key).local_shape(key.shape)})" if sharding else "")
    raise ValueError(f"run: fed {key.op.name} a value of shape {tuple(value.shape)}; the placeholder "
                     f"has shape {want}")


def _assemble(fetches, values, sharding):
    """Fetched shards gathered into full logical values (only what was fetched)."""
    if isinstance(fetches, Tensor):
        layout = sharding.layout_of(fetches)
        if all(a == -1 for a in layout.tensor_map):
            return values
        blocks = _runtime.comm.allgather(values)
        full = np.empty(tuple(fetches.shape), dtype=blocks[0].dtype)
        for rank, block in enumerate(blocks):
            full[layout.shard_slices(rank, fetches.shape)] = block
        return full
    if isinstance(fetches, dict):
        return {k: _assemble(v, values[k], sharding) for k, v in fetches.items()}
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_assemble(f, v, sharding) for f, v in zip(fetches, values))
    return values


def _map_fetches(fetches, lowered: Lowered):
    if isinstance(fetches, TrainStep):
        return lowered.train_ops[id(fetches)]
    if isinstance(fetches, Tensor):
        if fetches not in lowered.tensors:
            raise ValueError(f"run: {fetches!r} is not from the graph that was built")
        return lowered.tensors[fetches]
    if isinstance(fetches, dict):
        return {k: _map_fetches(v, lowered) for k, v in fetches.items()}
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_map_fetches(f, lowered) for f in fetches)
    raise ValueError(f"run: cannot fetch {fetches!r}; fetch tensors, variables or training steps")


@dataclass(frozen=True)
class ExecutionState:
    """What ``build_execution_graph`` built in this process (read by ``to.train.Saver``)."""

    graph: Graph
    plan: Plan
    lowered: Lowered
    session: Any
    sharding: Any          # PlanSharding, or None on one process
    rank: int
    size: int
    comm: Any              # TensorOpt's MPI communicator, or None on one process


def execution_state() -> ExecutionState | None:
    """The built execution graph of this process, or None before ``build_execution_graph``."""
    if _runtime.session is None:
        return None
    w = world()
    return ExecutionState(_runtime.graph, _runtime.plan, _runtime.lowered, _runtime.session,
                          _runtime.sharding, w.rank, w.size, _runtime.comm)
