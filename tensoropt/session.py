"""This process's execution graph: ``build_execution_graph`` builds it for a plan, ``run``
executes fetches on it (as ``Session.run``), ``execution_state`` says what was built.

Usage::

    to.build_execution_graph(engine="tensorflow", plan=plan)
    loss_value, _ = to.run([loss, train_op], feed_dict={x: xs, y: ys})
    values, step = to.run(train_op, feed, profile=True)      # + this rank's StepProfile

``init``, ``world`` and the plan search are in ``tensoropt.runtime``; the per-process
state they share is ``runtime._runtime``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensoropt._tf import import_tensorflow, keep_freed_memory
from tensoropt.cluster.threads import rank_threads
from tensoropt.execution import PlanSharding, guards
from tensoropt.execution.guards import check_agreement, check_cache_capacity
from tensoropt.execution.input_slices import local_feed
from tensoropt.execution.lowering import Lowered, lower_graph
from tensoropt.execution.schedule import check_plan_for_graph, collective_schedule
from tensoropt.execution.step_profile import profile_from_trace, resident_bytes, trace_options
from tensoropt.execution.step_report import StepReporter, report_caveats, report_step_from_env
from tensoropt.graph import Graph, Tensor, TrainStep, get_default_graph
from tensoropt.plan import Plan
from tensoropt.runtime import _runtime, find_strategy, mpirun_command, world
from tensoropt.clipping import GlobalNorm
from tensoropt.schedules import GlobalStep, LearningRateSchedule
from tensoropt.validation import check_mapping, check_plan_argument

__all__ = ["build_execution_graph", "run", "ExecutionState", "execution_state"]


def build_execution_graph(engine: str = "tensorflow", plan: Plan | None = None,
                          graph: Graph | None = None) -> None:
    """Builds this process's TensorFlow graph for ``plan`` and initializes its variables.

    Under mpirun, the ranks first compare a hash of their plan and of its collective
    schedule (``execution.schedule``) in one small allgather: ranks holding different
    plans would otherwise hang in their first step.

    Raises:
        ValueError: for an engine other than "tensorflow", a plan made for another graph
            (naming the op or edge that differs), or a plan whose parallelism differs from
            the number of MPI ranks (the message gives the mpirun command to use).
        tensoropt.execution.guards.PlanMismatchError: (a RuntimeError) on every rank, when
            the ranks hold different plans; it names the first op and the first
            collective that differ, and the ranks on each side.
    """
    if engine != "tensorflow":
        raise ValueError(f"build_execution_graph: engine {engine!r} is not supported; use engine='tensorflow'")
    plan = check_plan_argument("build_execution_graph", plan, Plan)
    if graph is not None and not isinstance(graph, Graph):
        raise ValueError(f"build_execution_graph: graph is a {type(graph).__name__}; give a tensoropt Graph "
                         "or leave it out")
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
    # the ranks on this host share its CPUs, as the compute profiler priced them
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=rank_threads(_runtime.local_ranks),
                                      inter_op_parallelism_threads=1)
    # Grappler's rewrites cost seconds per graph and change nothing TensorOpt relies on;
    # the plan already fixed what runs where.
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    session = tf.compat.v1.Session(graph=lowered.tf_graph, config=config)
    lowered.initialize(session)
    keep_freed_memory()   # steps reuse their buffers' pages (see tensoropt._tf)
    _runtime.lowered, _runtime.session, _runtime.plan, _runtime.graph = lowered, session, plan, graph
    _runtime.sharding = sharding
    _runtime.reporter = StepReporter(plan, _runtime.comm if size > 1 else None, world().rank,
                                     report_step_from_env(), simulated=_runtime.simulated_figures(plan),
                                     caveats=report_caveats(plan, _runtime.local_ranks, os.cpu_count()))


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
    """This rank's part of a fed value (``execution.input_slices``: the whole value sliced,
    or this rank's slice taken as is; ``to.input_slice`` follows the same rule)."""
    return local_feed(key, value, sharding, world().rank)


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
    if isinstance(fetches, GlobalStep):
        if lowered.global_step is None:
            raise ValueError("run: the global step was created after build_execution_graph; create it "
                             "(to.train.get_or_create_global_step()) before building")
        return lowered.global_step
    if isinstance(fetches, GlobalNorm):
        if fetches not in lowered.global_norms:
            raise ValueError(f"run: {fetches!r} belongs to no training step of the built graph; fetch the "
                             "norm of gradients an apply_gradients step applies")
        return lowered.global_norms[fetches]
    if isinstance(fetches, LearningRateSchedule):
        if fetches not in lowered.learning_rates:
            raise ValueError(f"run: the learning rate {fetches!r} is no optimizer's in the built graph; "
                             "fetch the schedule an optimizer was given")
        return lowered.learning_rates[fetches]
    if isinstance(fetches, Tensor):
        if fetches not in lowered.tensors:
            raise ValueError(f"run: {fetches!r} is not from the graph that was built")
        return lowered.tensors[fetches]
    if isinstance(fetches, dict):
        return {k: _map_fetches(v, lowered) for k, v in fetches.items()}
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_map_fetches(f, lowered) for f in fetches)
    raise ValueError(f"run: cannot fetch {fetches!r}; fetch tensors, variables, training steps, the "
                     "global step, a learning-rate schedule or a global norm")


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
