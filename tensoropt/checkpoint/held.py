"""What one rank holds of each checkpointed tensor, under its plan.

Every TensorFlow variable of a rank's graph is one of:

- a recorded variable (``to.get_variable``): its block in the plan's layout of it;
- an optimizer slot (``fc0/w/Adam``, ``fc0/w/Momentum``): named after its variable, with
  the variable's local shape, so it has the variable's layout and logical shape;
- anything else (``beta1_power``, ``beta2_power``): whole on every rank.

A block is written by its first holder only: the lowest rank whose region is the same
(replicas are written once).

Usage::

    held = held_tensors(graph, lowered, sharding)     # sharding None: one process
    held[0].region(rank), held[0].first_holder(rank, size)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["HeldTensor", "held_tensors"]


@dataclass(frozen=True, eq=False)
class HeldTensor:
    """One checkpointed tensor as this process holds it.

    Attributes:
        name: its TensorFlow 1.x name.
        variable: this rank's TensorFlow variable.
        shape: the logical (whole) shape.
        dtype: numpy dtype name.
        layout: the ``reschedule.Layout`` it is split by (None: whole on every rank).
    """

    name: str
    variable: Any
    shape: tuple[int, ...]
    dtype: str
    layout: Optional[Any]

    def region(self, rank: int) -> tuple[slice, ...]:
        """The part of the logical tensor ``rank`` holds."""
        if self.layout is None:
            return tuple(slice(0, n) for n in self.shape)
        return tuple(self.layout.shard_slices(rank, self.shape))

    def first_holder(self, rank: int, size: int) -> bool:
        """Whether no lower rank holds the same region (so ``rank`` writes it)."""
        mine = self.region(rank)
        return all(self.region(r) != mine for r in range(min(rank, size)))


def held_tensors(graph, lowered, sharding, variables=None) -> list[HeldTensor]:
    """Every variable of ``lowered``'s TensorFlow graph as a ``HeldTensor``.

    Args:
        graph: the recorded graph.
        lowered: its ``Lowered`` TensorFlow graph (this rank's).
        sharding: the ``PlanSharding`` it was built with, or None (one process).
        variables: recorded variables to keep (with their slots); None: all, and the
            optimizers' other variables too.
    """
    recorded = {v.op.name: v for v in graph.variables.values()}   # its TensorFlow variable has its name
    keep = None if variables is None else {v.op.name for v in variables}
    out = []
    for tf_var in lowered.tf_graph.get_collection("variables"):
        name = tf_var.op.name
        dtype = tf_var.dtype.base_dtype.name
        local = tuple(int(n) for n in tf_var.shape)
        owner = recorded.get(name)
        if owner is None:   # a slot is named after its variable: the longest such prefix
            prefixes = [p for p in recorded if name.startswith(p + "/")]
            owner = recorded[max(prefixes, key=len)] if prefixes else None
        if owner is None:
            if keep is None:
                out.append(HeldTensor(name, tf_var, local, dtype, None))
            continue
        if keep is not None and owner.op.name not in keep:
            continue
        layout = None if sharding is None else sharding.layout_of(owner)
        want = tuple(owner.shape) if layout is None else tuple(layout.local_shape(tuple(owner.shape)))
        if local != want:
            raise ValueError(f"checkpoint: variable {name!r} has local shape {list(local)}, but "
                             f"{owner.op.name!r}'s block is {list(want)}; only slots shaped like their "
                             "variable can be resharded")
        out.append(HeldTensor(name, tf_var, tuple(owner.shape), dtype, layout))
    return out
