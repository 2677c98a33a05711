"""A stand-in for ``horovod.tensorflow`` that builds a rank's execution graph in one process
and records the collectives it would issue, for tests and benchmarks without ``mpirun``.

Each collective becomes a local TensorFlow op of the right shape under the collective's
name (allreduce: identity; allgather: the block repeated once per group member;
alltoall: identity; alltoall with splits: a 1-D tensor of unknown length), so the whole
graph, gradients included, builds as it would under horovod. Nothing is exchanged: the
values are not what ranks would compute. ``made`` lists every collective in the order it
was built; the order it would run in is the chain of control dependencies between them
(``issue_order``).

Usage::

    hvd = RecordingHorovod(tf, size=4)
    sharding = PlanSharding(graph, plan, rank=1, hvd=hvd, process_sets=hvd.process_sets())
    lowered = lower_graph(graph, tf, sharding)
    hvd.made                             # [(kind, name, ranks), ...] as built
    issue_order(lowered.tf_graph, hvd)   # [name, ...] following the control dependencies
"""

from __future__ import annotations

from typing import Any

from tensoropt.execution.process_sets import process_sets_for_init

__all__ = ["RecordingHorovod", "ProcessSet", "issue_order"]


class ProcessSet:
    """A group of ranks, as ``hvd.ProcessSet``."""

    def __init__(self, ranks) -> None:
        self.ranks = list(ranks)

    def __repr__(self) -> str:
        return f"ProcessSet({self.ranks})"


class RecordingHorovod:
    """``hvd.allreduce``, ``allgather`` and ``alltoall`` that build shape-correct local ops
    and record ``(kind, name, ranks)``."""

    Sum = "Sum"
    ProcessSet = ProcessSet

    def __init__(self, tf, size: int) -> None:
        self.tf = tf
        self.size = size
        self.global_process_set = ProcessSet(range(size))
        self.made: list[tuple[str, str, tuple[int, ...]]] = []

    def process_sets(self) -> dict[tuple[int, ...], Any]:
        """Group -> ProcessSet for every mesh-axis group, as ``register_process_sets`` gives."""
        return process_sets_for_init(self, self.size)[1]

    def _record(self, kind: str, name: str, process_set: ProcessSet) -> None:
        self.made.append((kind, name, tuple(process_set.ranks)))

    def allreduce(self, x, op=None, process_set=None, name=None):
        self._record("allreduce", name, process_set)
        return self.tf.identity(x, name=name)

    def allgather(self, x, process_set=None, name=None):
        self._record("allgather", name, process_set)
        return self.tf.concat([x] * len(process_set.ranks), axis=0, name=name)

    def alltoall(self, x, splits=None, process_set=None, name=None):
        tf = self.tf
        if splits is None:
            self._record("alltoall", name, process_set)
            return tf.identity(x, name=name), None
        self._record("alltoallv", name, process_set)
        return tf.compat.v1.placeholder_with_default(x, shape=[None], name=name), splits


def issue_order(tf_graph, hvd: RecordingHorovod) -> list[str]:
    """The recorded collectives in the one order their dependencies (data and control,
    through any ops between them) allow.

    Raises:
        AssertionError: the dependencies leave two collectives free to run in either
            order (they do not form one chain).
    """
    names = {name for _, name, _ in hvd.made}
    ancestors: dict = {}   # op name -> the nearest collectives it depends on

    def nearest(op) -> frozenset:
        stack = [op]
        while stack:
            top = stack[-1]
            parents = [t.op for t in top.inputs] + list(top.control_inputs)
            todo = [p for p in parents if p.name not in names and p.name not in ancestors]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            ancestors[top.name] = frozenset().union(
                *({p.name} if p.name in names else ancestors[p.name] for p in parents))
        return ancestors[op.name]

    before = {name: nearest(tf_graph.get_operation_by_name(name)) for name in names}
    order, placed = [], set()
    while len(order) < len(names):
        ready = [n for n in names if n not in placed and before[n] <= placed]
        assert len(ready) == 1, (f"after {order[-1:] or 'the start'}, {len(ready)} collectives may run next: "
                                 f"{sorted(ready)[:4]}")
        order.append(ready[0])
        placed.add(ready[0])
    return order
