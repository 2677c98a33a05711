"""Graph collections and regularization losses, as TensorFlow 1.x keeps them.

Usage::

    w = to.get_variable("w", [784, 10], regularizer=to.contrib.layers.l2_regularizer(1e-4))
    to.add_to_collection("losses", cross_entropy)
    loss = to.add_n(to.get_collection("losses")) + to.losses.get_regularization_loss()
    to.trainable_variables()          # every trainable variable, in creation order

``get_collection`` of ``GraphKeys.TRAINABLE_VARIABLES`` or ``GLOBAL_VARIABLES`` reads the
graph's variables; any other key reads what ``add_to_collection`` put there (a
``regularizer`` of ``get_variable`` puts its loss under ``REGULARIZATION_LOSSES``). As in
TensorFlow, a regularization loss counts only where the script adds it to the loss.
"""

from __future__ import annotations

import re
from typing import Any

from tensoropt.graph import get_default_graph

__all__ = ["GraphKeys", "add_to_collection", "get_collection", "trainable_variables", "global_variables",
           "l2_regularizer", "get_regularization_losses", "get_regularization_loss"]


class GraphKeys:
    """TensorFlow 1.x's standard collection names."""

    GLOBAL_VARIABLES = "variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"


def add_to_collection(name: str, value: Any) -> None:
    """Appends ``value`` to the default graph's collection ``name``."""
    if name in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES):
        raise ValueError(f"add_to_collection: {name!r} is the graph's own list of variables; "
                         "create variables with to.get_variable instead")
    get_default_graph().collections.setdefault(name, []).append(value)


def get_collection(key: str, scope: str | None = None) -> list:
    """A copy of collection ``key`` (the items whose name matches ``scope`` from the start,
    when given, as TensorFlow filters them)."""
    graph = get_default_graph()
    if key == GraphKeys.GLOBAL_VARIABLES:
        items = list(graph.variables.values())
    elif key == GraphKeys.TRAINABLE_VARIABLES:
        items = list(graph.trainable_variables)
    else:
        items = list(graph.collections.get(key, ()))
    if scope is None:
        return items
    pattern = re.compile(scope)
    return [v for v in items if pattern.match(getattr(v, "name", "") or "")]


def trainable_variables(scope: str | None = None) -> list:
    return get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def global_variables(scope: str | None = None) -> list:
    return get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def l2_regularizer(scale: float, scope=None):
    """``scale * l2_loss(w)`` of a variable (``tf.contrib.layers.l2_regularizer``); a scale of
    0 gives no loss."""
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or scale < 0:
        raise ValueError(f"l2_regularizer: scale={scale!r}; give a number >= 0")

    def regularize(weights):
        from tensoropt.ops.composite_ops import l2_loss  # noqa: PLC0415 - ops import the graph
        from tensoropt.ops.math_ops import multiply  # noqa: PLC0415

        return None if scale == 0 else multiply(l2_loss(weights), float(scale))

    return regularize


def get_regularization_losses(scope: str | None = None) -> list:
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None, name: str = "total_regularization_loss"):
    """The sum of the regularization losses (a scalar 0.0 when there are none)."""
    from tensoropt.ops.math_ops import add_n  # noqa: PLC0415
    from tensoropt.ops.rnn_ops import zeros  # noqa: PLC0415

    losses = get_regularization_losses(scope)
    return add_n(losses, name=name) if losses else zeros([], name=name)
