"""The process-level runtime: ``init``, the world, and choosing a plan.

``init`` joins the MPI job (one rank per device) and horovod, and gathers every rank's
host name, from which the cluster's shape (machines x devices per machine) follows.
``find_strategy`` returns the chosen Plan and ``search_strategy`` the whole search result
(a ``summary.SearchSummary``: the chosen plan, the frontier, the data-parallel plan);
under mpirun rank 0 searches and every rank receives the same result. Building and
running the chosen plan is ``tensoropt.session`` (``build_execution_graph``, ``run``).

Usage::

    to.init()
    plan = to.find_strategy(option="mini_time")
    result = to.search_strategy(option="mini_time")   # the same on every rank
    result.frontier[0]                                 # e.g. the least-memory plan
"""

from __future__ import annotations

import atexit
import os
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Any

from tensoropt._tf import import_tensorflow
from tensoropt.cluster import get_cluster, presets
from tensoropt.execution.guards import StepWatch, horovod_settings
from tensoropt.execution.hosts import job_hostnames, machine_shape
from tensoropt.execution.mpi_env import import_mpi
from tensoropt.execution.process_sets import register_process_sets
from tensoropt.execution.quiet_bcast import quiet_bcast
from tensoropt.execution.schedule import check_one_train_step
from tensoropt.search import strategy
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import OPTIONS, SearchSettings
from tensoropt.search.summary import SearchSummary
from tensoropt.simulator.attach import frontier_observer, simulate_mode
from tensoropt.simulator.plan_options import FIT_CHECK
from tensoropt.simulator.plan_sim import simulate_plan
from tensoropt.graph import Graph, get_default_graph
from tensoropt.execution.lowering import Lowered
from tensoropt.plan import Plan
from tensoropt.validation import check_int, check_search_arguments

__all__ = ["World", "init", "world", "find_strategy", "search_strategy", "set_random_seed", "OPTIONS",
           "mpirun_command", "local_cluster"]

@dataclass(frozen=True)
class World:
    """This job's processes: rank, size, and each rank's host name."""

    rank: int
    size: int
    hostnames: tuple[str, ...]

    @property
    def machines(self) -> int:
        return machine_shape(self.hostnames)[0]

    @property
    def devices_per_machine(self) -> int:
        return machine_shape(self.hostnames)[1]


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
        self.local_ranks = 1   # ranks on this physical host (they share its CPUs)
        # (plan, {"time_s", "peak_memory_bytes"}) the last search simulated, for the
        # step report of whichever of them is built (``simulated_figures``)
        self.simulated: list = []

    def simulated_figures(self, plan) -> dict:
        """The simulator's time and peak of ``plan`` if the last search checked it, else {}."""
        return next((figures for checked, figures in self.simulated if checked == plan), {})


_runtime = _Runtime()


def init() -> World:
    """Joins the MPI job and horovod; gathers the host name of every rank.

    Safe to call without mpirun (a world of one) and more than once.
    """
    if _runtime.world is not None:
        return _runtime.world
    MPI = import_mpi()   # a rank's waiting MPI calls yield its one core (execution.mpi_env)
    comm = MPI.COMM_WORLD
    physical = comm.allgather(socket.gethostname())
    hostnames = job_hostnames(physical, os.environ)
    machine_shape(hostnames)   # a placement TensorOpt cannot plan for fails here, on every rank
    # read by hvd.init: the stall limit (TENSOROPT_COLLECTIVE_TIMEOUT_S) and the cache size
    os.environ.update(horovod_settings(os.environ))
    import_tensorflow()
    import horovod.tensorflow as hvd  # noqa: PLC0415 - horovod loads TensorFlow

    _runtime.process_sets = register_process_sets(hvd, comm)
    _runtime.comm = comm.Dup()  # TensorOpt's own messages never mix with the user's
    _runtime.watch = StepWatch(comm.Dup()) if comm.Get_size() > 1 else None
    _runtime.world = World(rank=comm.Get_rank(), size=comm.Get_size(), hostnames=hostnames)
    _runtime.local_ranks = physical.count(physical[comm.Get_rank()])
    atexit.register(_finish)
    return _runtime.world


def _finish() -> None:
    """Every job ends with a barrier, so no rank's exit breaks another's collectives."""
    if _runtime.comm is not None:
        _runtime.comm.Barrier()
    if _runtime.watch is not None:
        _runtime.watch.close()


#: environment variables in which launchers give a process its job's size: Open MPI's
#: mpirun, then MPICH's and Intel MPI's (Hydra)
LAUNCHER_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def launched_ranks(env) -> int:
    """How many ranks the launcher started this process among (1 when none says)."""
    for name in LAUNCHER_SIZE_VARIABLES:
        value = env.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def world() -> World:
    """The world from ``init``. Without ``init``: under a launcher of several ranks
    (``mpirun -np N``), ``init`` is called now, so that a script with only the three
    calls still plans and trains as one job, not as N separate copies; else a single
    process on this host."""
    if _runtime.world is None and launched_ranks(os.environ) > 1:
        return init()
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
                  check_peak: bool = True, relative: bool = False,
                  heuristics: tuple = ("min_memory", "min_time")):
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
            By default the error is also within epsilon times the fastest plan's time.
        relative: with epsilon, bound each plan's error by its own time only (the usual
            (1 + epsilon) approximation): slow, low-memory plans are thinned more, so
            frontiers spanning a wide range of times search faster (see
            ``SearchOptions.relative``).
        max_candidates: None (default) for no cap; a positive int (e.g. 50_000_000) bounds
            each Frontier-Tracking product's work by thinning its inputs, for models
            whose exact search would take hours (the paper Transformer on 16 devices).
            It bounds work, not error: ``plan.notes`` gives the error bound reached.
        threads: Frontier-Tracking threads on rank 0.
        heuristics: the rules of heuristic elimination, for models whose graph needs it
            (residual streams, attention): tracked once per rule, the frontiers' union
            returned (``SearchOptions.heuristics``). ``("min_memory",)`` searches in
            about half the time and may miss the fastest plans.
        simulate: False (default), "auto", "all" or "chosen": rank 0 also runs the
            simulator's check of the chosen device count's frontier (see
            ``tensoropt.simulator.attach``), attached to ``search_strategy(...)``'s result
            as ``simulator_check``; it warns, with both numbers, when the chosen plan's
            simulated peak exceeds the memory limit. Not for "profiling".
        check_peak: True (default): the chosen plan's peak over the step, as the
            simulator's liveness counts it (saved activations, transient and
            re-scheduling buffers, parameters, gradients and slots) as a bound
            (``simulator.FIT_CHECK``: horovod may hold a collective's buffers until its
            value has been read), must also fit the memory limit, not only the additive
            estimate the search optimizes; the fastest frontier plan for which both fit
            is chosen.

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
                              check_peak=check_peak, relative=relative, heuristics=heuristics)
    return summary.profile if option == "profiling" else summary.chosen


def search_strategy(option: str = "mini_time", memory_limit: float | None = None,
                    parallelism: int | None = None, *, parallelisms=None, cost_model: str = "analytical",
                    cluster=None, graph: Graph | None = None, epsilon: float | None = None,
                    max_candidates: int | None = None, threads: int = 1, simulate=False,
                    check_peak: bool = True, relative: bool = False,
                    heuristics: tuple = ("min_memory", "min_time")):
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
    if graph is not None and not isinstance(graph, Graph):
        raise ValueError(f"find_strategy: graph is a {type(graph).__name__}; give a tensoropt Graph "
                         "(to.get_default_graph()) or leave it out")
    try:
        search = SearchOptions(epsilon=epsilon, max_candidates=max_candidates, threads=threads,
                               relative=relative, heuristics=heuristics)
        simulate = simulate_mode(simulate)
    except ValueError as e:
        raise ValueError(f"find_strategy: {e}") from None
    graph = graph or get_default_graph()
    if not graph.operations:
        raise ValueError("find_strategy: the recorded graph is empty; build the model first")
    w = world()
    if w.size > 1:
        try:
            check_one_train_step(graph)
        except ValueError as e:
            raise ValueError(f"find_strategy: {e}") from None
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
        outcome = quiet_bcast(_runtime.comm, outcome)
    if outcome[0] == "error":
        raise outcome[1]
    summary = SearchSummary.from_bytes(outcome[1])
    _runtime.simulated = _simulated_plans(summary)
    return summary


def _simulated_plans(summary: SearchSummary) -> list:
    """``(plan, figures)`` of every plan the summary's simulator check covered (index -1:
    the data-parallel plan)."""
    check = summary.simulator_check
    if not check or summary.chosen is None:
        return []
    frontier = summary.frontier
    return [(summary.data_parallel if row["index"] == -1 else frontier[row["index"]],
             {"time_s": row["simulated_time_s"], "peak_memory_bytes": row["simulated_peak_bytes"]})
            for row in check["plans"] if -1 <= row["index"] < len(frontier)]


def _checked_peak(graph):
    """``peak(plan, result, cluster)``: the simulator's liveness peak of ``plan`` on the
    representative rank, under the search's own cost model, as a bound
    (``SimOptions(late_release=True)``: horovod may hold a collective's buffers until
    its value has been read, and the executor may defer a parameter's update to the
    backward's end)."""
    def peak(plan, result, cluster) -> float:
        return float(simulate_plan(graph, plan, cluster, result.space.model,
                                   FIT_CHECK).peak_memory_bytes)

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
