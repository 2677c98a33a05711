"""An in-process horovod that executes: every rank of a plan as a thread of one process.

``ThreadedHorovod`` has horovod's collective calls (``allreduce``, ``allgather``,
``reducescatter``, ``alltoall`` with and without splits). Each becomes a
``tf.numpy_function`` that hands this rank's block to a shared ``Rendezvous`` and waits
for the other members of its group; the last to arrive computes every member's result
with ``reschedule.group_collective_numpy`` -- the numpy semantics the re-scheduling
tests check every conversion against -- so a plan's per-rank graphs, built by the
ordinary builder, compute what they would under mpirun, in seconds and without it.

``run_threaded`` builds one graph per rank (``PlanSharding`` + ``lower_graph``, as
``build_execution_graph`` does), initializes them, and runs steps on all ranks at once,
one thread per rank; each rank is fed its slice of the whole batch.

Usage::

    job = ThreadedJob(graph, plan)                     # one graph and session per rank
    values = job.run([loss, train_op], feed)          # [rank 0's values, rank 1's, ...]
    job.blocks(variables)                              # each rank's own block of each
    job.close()

A collective that some member never issues raises ``CollectiveTimeout`` (naming it and
the ranks that did not come) after ``timeout_s`` instead of hanging.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from reschedule import group_collective_numpy

from tensoropt._tf import import_tensorflow
from tensoropt.execution.builder import PlanSharding
from tensoropt.execution.input_slices import local_feed
from tensoropt.execution.lowering import Lowered, lower_graph
from tensoropt.execution.recording_hvd import RecordingHorovod
from tensoropt.graph import Tensor, TrainStep

__all__ = ["Rendezvous", "CollectiveTimeout", "ThreadedHorovod", "ThreadedJob"]


class CollectiveTimeout(RuntimeError):
    """A collective that not every member of its group issued in time."""


class Rendezvous:
    """Where the ranks' threads meet: one slot per (collective name, call number, group):
    the groups of one mesh axis issue a collective under one name at once."""

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self._cond = threading.Condition()
        self._slots: dict[tuple, dict] = {}

    def exchange(self, key: tuple[str, int], group: tuple[int, ...], rank: int, block: np.ndarray,
                 combine) -> np.ndarray:
        """Deposits ``block``; returns this rank's part of ``combine(blocks in group
        order)`` once every member has deposited.

        Raises:
            CollectiveTimeout: not every member came within ``timeout_s``.
        """
        with self._cond:
            slot = self._slots.setdefault((*key, group), {"in": {}, "out": None, "taken": 0})
            slot["in"][rank] = block
            if len(slot["in"]) == len(group):
                slot["out"] = dict(zip(group, combine([slot["in"][r] for r in group])))
                self._cond.notify_all()
            elif not self._cond.wait_for(lambda: slot["out"] is not None, self.timeout_s):
                missing = sorted(set(group) - set(slot["in"]))
                raise CollectiveTimeout(f"collective {key[0]!r} (call {key[1]}): rank {rank} waited "
                                        f"{self.timeout_s:g} s; rank(s) {missing} of group "
                                        f"{list(group)} never issued it")
            out = slot["out"][rank]
            slot["taken"] += 1
            if slot["taken"] == len(group):
                del self._slots[(*key, group)]
            return out


class ThreadedHorovod(RecordingHorovod):
    """Rank ``rank``'s horovod, exchanging through ``rendezvous`` (records as
    ``RecordingHorovod`` does: ``made`` lists what was built)."""

    def __init__(self, tf, size: int, rank: int, rendezvous: Rendezvous) -> None:
        super().__init__(tf, size)
        self.rank, self.rendezvous = rank, rendezvous
        self._calls: dict[str, int] = defaultdict(int)

    def _collective(self, kind: str, inputs: list, process_set, name: str, combine, shape):
        """A numpy_function of ``inputs`` (this rank's block, and for alltoallv its
        splits) that meets the group and returns this rank's result."""
        tf = self.tf
        group = tuple(process_set.ranks)
        dtype = inputs[0].dtype

        def run(*blocks):
            # Copies both ways: numpy_function's arguments are views of TF buffers, and a
            # returned array becomes a TF tensor without a copy, which TF may later
            # overwrite in place (buffer forwarding); an allreduce's combine returns one
            # array to every member, so without the copy one rank's later op could change
            # another rank's result (a race seen once in CI).
            self._calls[name] += 1
            deposit = blocks[0].copy() if len(blocks) == 1 else tuple(b.copy() for b in blocks)
            out = self.rendezvous.exchange((name, self._calls[name]), group, self.rank, deposit, combine)
            return np.array(out, dtype=blocks[0].dtype, copy=True)

        self._record(kind, name, process_set)
        out = tf.numpy_function(run, inputs, dtype, name=name)
        out.set_shape(shape)
        return out

    def allreduce(self, x, op=None, process_set=None, name=None):
        return self._collective("allreduce", [x], process_set, name,
                                lambda xs: group_collective_numpy("allreduce", xs), x.shape)

    def allgather(self, x, process_set=None, name=None):
        g = len(process_set.ranks)
        shape = [None if x.shape[0] is None else x.shape[0] * g] + list(x.shape[1:])
        return self._collective("allgather", [x], process_set, name,
                                lambda xs: group_collective_numpy("allgather", xs), shape)

    def reducescatter(self, x, op=None, process_set=None, name=None):
        g = len(process_set.ranks)
        shape = [None if x.shape[0] is None else x.shape[0] // g] + list(x.shape[1:])
        return self._collective("reducescatter", [x], process_set, name,
                                lambda xs: group_collective_numpy("reducescatter", xs), shape)

    def alltoall(self, x, splits=None, process_set=None, name=None):
        if splits is None:
            return self._collective("alltoall", [x], process_set, name,
                                    lambda xs: group_collective_numpy("alltoall", xs), x.shape), None
        # alltoallv: each member sends its flat buffer cut by its splits; the received
        # chunks are concatenated in member order.
        def exchange(deposits):
            cut = [np.split(buf, np.cumsum(sp)[:-1]) for buf, sp in deposits]
            return [np.concatenate([cut[p][q] for p in range(len(cut))]) for q in range(len(cut))]

        return self._collective("alltoallv", [x, splits], process_set, name, exchange, [None]), splits


class ThreadedJob:
    """Every rank of ``plan`` built in this process (see the module doc).

    Args:
        graph: the recorded graph.
        plan: the plan (its parallelism is the rank count).
        timeout_s: how long a collective waits for its group.
    """

    def __init__(self, graph, plan, timeout_s: float = 60.0) -> None:
        tf = import_tensorflow()
        self.graph, self.plan, self.size = graph, plan, plan.parallelism
        self.rendezvous = Rendezvous(timeout_s)
        self.hvds = [ThreadedHorovod(tf, self.size, r, self.rendezvous) for r in range(self.size)]
        self.shardings = [PlanSharding(graph, plan, r, h, h.process_sets()) for r, h in enumerate(self.hvds)]
        self.lowered: list[Lowered] = [lower_graph(graph, tf, s) for s in self.shardings]
        # Per-session inter-op threads: a rank's collective blocks one of its own threads
        # while it waits for the others, never one another rank needs.
        config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=1,
                                          use_per_session_threads=True)
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        self.sessions = [tf.compat.v1.Session(graph=lw.tf_graph, config=config) for lw in self.lowered]
        for lw, session in zip(self.lowered, self.sessions):
            lw.initialize(session)

    def _feed(self, rank: int, feed: dict) -> dict:
        lowered, sharding = self.lowered[rank], self.shardings[rank]
        return {lowered.tensors[k]: local_feed(k, np.asarray(v), sharding, rank) for k, v in (feed or {}).items()}

    def _fetch(self, rank: int, fetches):
        lowered = self.lowered[rank]
        if isinstance(fetches, TrainStep):
            return lowered.train_ops[id(fetches)]
        if isinstance(fetches, Tensor):
            return lowered.tensors[fetches]
        if isinstance(fetches, dict):
            return {k: self._fetch(rank, v) for k, v in fetches.items()}
        return type(fetches)(self._fetch(rank, f) for f in fetches)

    def run(self, fetches, feed: dict | None = None) -> list[Any]:
        """Runs ``fetches`` on every rank at once; each rank's (local) values, by rank.

        Raises:
            the first rank's error (e.g. ``CollectiveTimeout``), after every thread ended.
        """
        results: list[Any] = [None] * self.size
        errors: list[BaseException | None] = [None] * self.size

        def one(rank: int) -> None:
            try:
                results[rank] = self.sessions[rank].run(self._fetch(rank, fetches), self._feed(rank, feed))
            except BaseException as e:   # noqa: BLE001 - re-raised below, in the caller's thread
                errors[rank] = e

        threads = [threading.Thread(target=one, args=(r,), daemon=True) for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for e in errors:
            if e is not None:
                raise e
        return results

    def blocks(self, variables: Sequence) -> list[dict[str, np.ndarray]]:
        """Each rank's own block (its shard or replica) of each variable, by op name."""
        return self.run({v.op.name: v for v in variables})

    def close(self) -> None:
        for s in self.sessions:
            s.close()
