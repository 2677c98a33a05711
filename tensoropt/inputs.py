"""Per-rank input: which part of a global batch this rank needs.

``to.run`` takes either the whole value of a placeholder (each rank keeps its slice) or
just this rank's slice. ``input_slice`` says which slice that is, so that a rank can
load only its part of the data::

    to.build_execution_graph(plan=plan)
    rows, cols = to.input_slice(images)[:2]          # e.g. (slice(32, 64), slice(0, 224))
    to.run(train_op, {images: load(batch, rows, cols), labels: load_labels(batch, rows)})

It is the rule ``to.run`` applies to a whole value, written once in
``tensoropt.execution.input_slices``: the placeholder's layout in the plan,
``Layout.shard_slices(rank, shape)``.
"""

from __future__ import annotations

from tensoropt import session
from tensoropt.execution.input_slices import input_slice as slice_of
from tensoropt.graph import Tensor

__all__ = ["input_slice"]


def input_slice(placeholder: Tensor) -> tuple[slice, ...]:
    """The slice of ``placeholder``'s whole value that this rank is fed.

    Raises:
        RuntimeError: before ``build_execution_graph``.
        ValueError: ``placeholder`` is not a placeholder of the built graph.
    """
    state = session.execution_state()
    if state is None:
        raise RuntimeError("input_slice: no execution graph; call tensoropt.build_execution_graph(plan=...) "
                           "first (the slice depends on the plan)")
    if not isinstance(placeholder, Tensor) or placeholder.op.kind != "placeholder" or \
            placeholder not in state.lowered.tensors:
        raise ValueError(f"input_slice: {placeholder!r} is not a placeholder of the built graph; pass the "
                         "tensor that to.placeholder returned")
    return slice_of(state.sharding, placeholder, state.rank)
