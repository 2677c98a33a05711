"""The three calls a script adds, and ``init``: the process-level runtime.

``init`` joins the MPI job (one rank per device) and horovod, and gathers every rank's
host name, from which the cluster's shape (machines x devices per machine) follows.
``find_strategy`` returns a Plan; ``build_execution_graph`` builds this process's
TensorFlow graph for it; ``run`` executes fetches, as ``Session.run``.

Usage::

    to.init()
    plan = to.find_strategy(option="mini_time")
    to.build_execution_graph(engine="tensorflow", plan=plan)
    loss_value, _ = to.run([loss, train_op], feed_dict={x: xs, y: ys})
"""

from __future__ import annotations

import atexit
import os
import shlex
import socket
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensoropt._tf import import_tensorflow
from tensoropt.graph import Graph, Tensor, TrainStep, get_default_graph
from tensoropt.lowering import Lowered, lower_graph
from tensoropt.plan import Plan

__all__ = ["World", "init", "world", "find_strategy", "build_execution_graph", "run",
           "set_random_seed", "OPTIONS", "mpirun_command"]

OPTIONS = ("mini_time", "mini_parallelism", "profiling")


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
    import_tensorflow()
    import horovod.tensorflow as hvd  # noqa: PLC0415

    from tensoropt.process_sets import register_process_sets  # noqa: PLC0415

    _runtime.process_sets = register_process_sets(hvd, comm)
    _runtime.comm = comm.Dup()  # TensorOpt's own messages never mix with the user's
    _runtime.world = World(rank=comm.Get_rank(), size=comm.Get_size(), hostnames=hostnames)
    atexit.register(_finish)
    return _runtime.world


def _finish() -> None:
    """Every job ends with a barrier, so no rank's exit breaks another's collectives."""
    if _runtime.comm is not None:
        _runtime.comm.Barrier()


def world() -> World:
    """The world from ``init``; without ``init``, a single process on this host."""
    return _runtime.world or World(0, 1, (socket.gethostname(),))


def set_random_seed(seed: int) -> None:
    """The graph-level seed, as ``tf.compat.v1.set_random_seed``."""
    get_default_graph().seed = int(seed)


def mpirun_command(n: int) -> str:
    """The command that runs this script on ``n`` ranks."""
    script = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    return f"mpirun --allow-run-as-root --oversubscribe -np {n} {script}"


def find_strategy(option: str = "mini_time", memory_limit: float | None = None,
                  parallelism: int | None = None, parallelisms=None, cost_model: str = "analytical",
                  cluster=None, graph: Graph | None = None, epsilon: float | None = None,
                  max_candidates: int | None = None, threads: int = 1):
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

    Returns:
        A Plan (with ``plan.frontier`` and ``plan.data_parallel`` attached) for
        "mini_time" and "mini_parallelism"; for "profiling", a list of
        ``tensoropt.strategy.ProfileRow``, one per device count. Under mpirun, rank 0
        searches and every rank receives the same result.

    Raises:
        ValueError: for an unknown option or an empty graph.
        tensoropt.strategy.NoPlanFitsError: when no plan fits; the message gives the least
            memory any plan needs and the smallest device count that would fit.
    """
    if option not in OPTIONS:
        raise ValueError(f"find_strategy: unknown option {option!r}; choose one of {', '.join(OPTIONS)}")
    from tensoropt.search import SearchOptions  # noqa: PLC0415 - search code loads only when searching

    try:
        search = SearchOptions(epsilon=epsilon, max_candidates=max_candidates, threads=threads)
    except ValueError as e:
        raise ValueError(f"find_strategy: {e}") from None
    graph = graph or get_default_graph()
    if not graph.operations:
        raise ValueError("find_strategy: the recorded graph is empty; build the model first")
    w = world()
    result = None
    if w.rank == 0:
        result = _search(option, graph, memory_limit, parallelism, parallelisms, cost_model, cluster,
                         search)
    if _runtime.comm is not None and w.size > 1:
        result = _broadcast(result)
    return result


def _search(option, graph, memory_limit, parallelism, parallelisms, cost_model, cluster, search):
    from tensoropt import strategy  # noqa: PLC0415 - search code loads only when searching

    from tensoropt.cluster import get_cluster  # noqa: PLC0415

    cluster = get_cluster(cluster) if cluster is not None else local_cluster()
    if option == "profiling":
        counts = parallelisms or strategy.candidate_parallelisms(parallelism or cluster.devices)
        return strategy.profile_parallelisms(graph, cluster, counts, memory_limit, cost_model,
                                             search=search)
    if option == "mini_time":  # at the job's parallelism unless told otherwise
        parallelism = parallelism or world().size
    return strategy.choose_plan(graph, cluster, option, memory_limit, parallelism, cost_model,
                                search=search)


def _broadcast(result):
    """Rank 0's search result, on every rank (a plan travels as its JSON)."""
    comm = _runtime.comm
    if comm.Get_rank() == 0:  # rank 0 keeps its own result (with the frontier attached)
        comm.bcast(result.to_json() if isinstance(result, Plan) else result, root=0)
        return result
    received = comm.bcast(None, root=0)
    return Plan.from_json(received, source="plan broadcast from rank 0") if isinstance(received, str) else received


def local_cluster():
    """This job's cluster: measured by ``tensoropt calibrate`` if a profile exists, else
    this machine's shape with nominal CPU numbers (and a note saying so)."""
    from tensoropt import cluster  # noqa: PLC0415

    w = world()
    return cluster.local_cluster(machines=w.machines, devices_per_machine=w.devices_per_machine)


def build_execution_graph(engine: str = "tensorflow", plan: Plan | None = None,
                          graph: Graph | None = None) -> None:
    """Builds this process's TensorFlow graph for ``plan`` and initializes its variables.

    Raises:
        ValueError: for an engine other than "tensorflow", a plan made for another graph,
            or a plan whose parallelism differs from the number of MPI ranks (the message
            gives the mpirun command to use).
    """
    if engine != "tensorflow":
        raise ValueError(f"build_execution_graph: engine {engine!r} is not supported; use engine='tensorflow'")
    graph = graph or get_default_graph()
    plan = plan or find_strategy(graph=graph)
    size = world().size
    if plan.parallelism != size:
        raise ValueError(
            f"build_execution_graph: the plan is for {plan.parallelism} device(s) but this job has "
            f"{size} MPI rank(s); run: {mpirun_command(plan.parallelism)}")
    missing = [op.name for op in graph.operations if op.name not in plan.ops]
    if missing:
        raise ValueError(f"build_execution_graph: the plan has no configuration for {len(missing)} "
                         f"op(s) of this graph (e.g. {missing[:3]}); it was searched for another "
                         "graph: call find_strategy after building the whole model")
    tf = import_tensorflow()
    if _runtime.session is not None:
        _runtime.session.close()
    sharding = None
    if size > 1:
        import horovod.tensorflow as hvd  # noqa: PLC0415

        from tensoropt.execution import PlanSharding  # noqa: PLC0415

        sharding = PlanSharding(graph, plan, world().rank, hvd, _runtime.process_sets)
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


def run(fetches, feed_dict: dict | None = None):
    """Runs ``fetches`` (tensors, variables, training steps, or nests of them).

    Returns values in the fetches' structure: numpy arrays for tensors, None for steps.

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
    for key, value in (feed_dict or {}).items():
        if not isinstance(key, Tensor) or key not in lowered.tensors:
            raise ValueError(f"run: feed key {key!r} is not a tensor of the recorded graph")
        tf_feed[lowered.tensors[key]] = _local_feed(key, np.asarray(value), sharding)
    values = _runtime.session.run(tf_fetches, feed_dict=tf_feed)
    if sharding is None:
        return values
    return _assemble(fetches, values, sharding)


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
