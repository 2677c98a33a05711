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
from tensoropt.plan import OpConfig, Plan
from tensoropt.stats import graph_stats

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

    hvd.init(comm=comm)
    _runtime.world = World(rank=comm.Get_rank(), size=comm.Get_size(), hostnames=hostnames)
    return _runtime.world


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
                  graph: Graph | None = None) -> Plan:
    """Chooses a plan for the recorded graph.

    This build plans for one device: it returns the single-device plan with its exact
    memory (weights, gradients, optimizer slots and saved activations). Searching plans
    for several devices comes with the cost model.

    Raises:
        ValueError: for an unknown option, or a memory limit the single-device plan exceeds.
        NotImplementedError: when asked for more than one device.
    """
    if option not in OPTIONS:
        raise ValueError(f"find_strategy: unknown option {option!r}; choose one of {', '.join(OPTIONS)}")
    graph = graph or get_default_graph()
    if not graph.operations:
        raise ValueError("find_strategy: the recorded graph is empty; build the model first")
    n = parallelism or world().size
    if n != 1:
        raise NotImplementedError(
            f"find_strategy: this TensorOpt build plans for one device only, and {n} were asked "
            "for; run the script without mpirun (or with -np 1) until the multi-device search lands")
    stats = graph_stats(graph)
    if memory_limit is not None and stats.single_device_bytes > memory_limit:
        raise ValueError(
            f"find_strategy: the single-device plan needs {stats.single_device_bytes / 2**30:.3f} GiB, "
            f"above memory_limit={memory_limit / 2**30:.3f} GiB; raise the limit to at least "
            f"{stats.single_device_bytes} bytes or shrink the model")
    return Plan(parallelism=1, option="single_device",
                ops={op.name: OpConfig() for op in graph.operations},
                memory_bytes=float(stats.single_device_bytes),
                notes="one device: memory is exact (weights, gradients, optimizer slots, saved "
                      "activations); time is not estimated without a cost model")


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
    lowered = lower_graph(graph, tf)
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=int(os.environ.get("TENSOROPT_THREADS", 0)),
                                      inter_op_parallelism_threads=1)
    session = tf.compat.v1.Session(graph=lowered.tf_graph, config=config)
    session.run(lowered.init_op)
    _runtime.lowered, _runtime.session, _runtime.plan, _runtime.graph = lowered, session, plan, graph


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
    lowered = _runtime.lowered
    tf_fetches = _map_fetches(fetches, lowered)
    tf_feed = {}
    for key, value in (feed_dict or {}).items():
        if not isinstance(key, Tensor) or key not in lowered.tensors:
            raise ValueError(f"run: feed key {key!r} is not a tensor of the recorded graph")
        value = np.asarray(value)
        if tuple(value.shape) != tuple(key.shape):
            raise ValueError(f"run: fed {key.op.name} a value of shape {tuple(value.shape)}; "
                             f"the placeholder has shape {tuple(key.shape)}")
        tf_feed[lowered.tensors[key]] = value
    return _runtime.session.run(tf_fetches, feed_dict=tf_feed)


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
