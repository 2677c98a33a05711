"""The global step and learning-rate schedules, as ``tf.compat.v1.train``'s.

Usage::

    global_step = to.train.get_or_create_global_step()
    lr = to.train.exponential_decay(0.1, global_step, decay_steps=1000, decay_rate=0.96, staircase=True)
    train_op = to.train.MomentumOptimizer(lr, 0.9).minimize(loss, global_step=global_step)
    ...
    step, rate = to.run([global_step, lr])

The global step is one int64 scalar, whole on every rank (each rank adds one per training
step that names it, so every rank holds the same count); ``to.train.Saver`` saves and
restores it with the variables. A schedule is a value, not an op: it is not planned or
split, and each training step computes it from the global step with TensorFlow's own
function of the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensoropt.graph import get_default_graph
from tensoropt.validation import check_finite, check_flag

__all__ = ["GlobalStep", "LearningRateSchedule", "get_or_create_global_step", "get_global_step",
           "exponential_decay", "inverse_time_decay", "natural_exp_decay", "polynomial_decay",
           "cosine_decay", "piecewise_constant"]


@dataclass(frozen=True, eq=False)
class GlobalStep:
    """The graph's training-step counter (``tf.compat.v1.train.get_or_create_global_step``)."""

    name: str = "global_step"

    def __repr__(self) -> str:
        return f"<tensoropt GlobalStep '{self.name}' int64 ()>"


@dataclass(frozen=True)
class LearningRateSchedule:
    """A learning rate computed from the global step each training step.

    Attributes:
        function: the ``tf.compat.v1.train`` function that computes it.
        arguments: its arguments besides the global step, as (name, value) pairs.
        global_step: the graph's ``GlobalStep``.
    """

    function: str
    arguments: tuple[tuple[str, Any], ...]
    global_step: GlobalStep

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments)
        return f"{self.function}({args})"

    def to_tensorflow(self, tf, step):
        """The rate as a TensorFlow tensor of the int64 global-step variable ``step``."""
        kwargs = {k: list(v) if isinstance(v, tuple) else v for k, v in self.arguments}
        if self.function == "piecewise_constant":
            return tf.compat.v1.train.piecewise_constant(step, **kwargs)
        return getattr(tf.compat.v1.train, self.function)(global_step=step, **kwargs)


def _default_graph(graph):
    return graph or get_default_graph()


def get_or_create_global_step(graph=None) -> GlobalStep:
    """The recorded graph's global step, created on first call."""
    graph = _default_graph(graph)
    if graph.global_step is None:
        graph.global_step = GlobalStep()
    return graph.global_step


def get_global_step(graph=None) -> GlobalStep | None:
    """The recorded graph's global step, or None before ``get_or_create_global_step``."""
    return _default_graph(graph).global_step


def _check_step(function: str, global_step) -> GlobalStep:
    if not isinstance(global_step, GlobalStep):
        raise ValueError(f"{function}: global_step={global_step!r} is not the graph's global step; pass "
                         "to.train.get_or_create_global_step() (a Python int is fixed: it would never decay)")
    if get_global_step() is not global_step:
        raise ValueError(f"{function}: global_step is another graph's; call "
                         "to.train.get_or_create_global_step() after to.reset_default_graph()")
    return global_step


def _number(function: str, name: str, value, positive: bool = False) -> float:
    return check_finite(function, name, value, "> 0" if positive else ">= 0")


def _steps(function: str, name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{function}: {name}={value!r}; give a whole number of steps >= 1")
    return int(value)


def _decay(function: str, learning_rate, global_step, decay_steps, decay_rate, staircase):
    return LearningRateSchedule(function, (
        ("learning_rate", _number(function, "learning_rate", learning_rate, positive=True)),
        ("decay_steps", _steps(function, "decay_steps", decay_steps)),
        ("decay_rate", _number(function, "decay_rate", decay_rate)),
        ("staircase", check_flag(function, "staircase", staircase))), _check_step(function, global_step))


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` (the quotient floored
    with ``staircase``)."""
    return _decay("exponential_decay", learning_rate, global_step, decay_steps, decay_rate, staircase)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)``."""
    return _decay("inverse_time_decay", learning_rate, global_step, decay_steps, decay_rate, staircase)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False, name=None):
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)``."""
    return _decay("natural_exp_decay", learning_rate, global_step, decay_steps, decay_rate, staircase)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle=False, name=None):
    """From ``learning_rate`` to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ** power``."""
    f = "polynomial_decay"
    return LearningRateSchedule(f, (
        ("learning_rate", _number(f, "learning_rate", learning_rate, positive=True)),
        ("decay_steps", _steps(f, "decay_steps", decay_steps)),
        ("end_learning_rate", _number(f, "end_learning_rate", end_learning_rate)),
        ("power", _number(f, "power", power)), ("cycle", check_flag(f, "cycle", cycle))),
        _check_step(f, global_step))


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """Half a cosine from ``learning_rate`` down to ``alpha * learning_rate`` over ``decay_steps``."""
    f = "cosine_decay"
    return LearningRateSchedule(f, (
        ("learning_rate", _number(f, "learning_rate", learning_rate, positive=True)),
        ("decay_steps", _steps(f, "decay_steps", decay_steps)), ("alpha", _number(f, "alpha", alpha))),
        _check_step(f, global_step))


def piecewise_constant(x, boundaries, values, name=None):
    """``values[i]`` while the global step ``x`` is past ``boundaries[i - 1]`` and at most
    ``boundaries[i]``: one more value than boundaries, the boundaries increasing."""
    f = "piecewise_constant"
    step = _check_step(f, x)
    if not isinstance(boundaries, (list, tuple)) or not isinstance(values, (list, tuple)):
        raise ValueError(f"{f}: boundaries and values must be lists, got {boundaries!r} and {values!r}")
    bounds = tuple(_steps(f, "boundaries[]", b) if b != 0 else 0 for b in boundaries)
    if any(b >= c for b, c in zip(bounds, bounds[1:])):
        raise ValueError(f"{f}: boundaries={list(boundaries)} must increase")
    if len(values) != len(bounds) + 1:
        raise ValueError(f"{f}: {len(values)} values for {len(bounds)} boundaries; give one value more "
                         "than boundaries (the rate before the first and after each)")
    rates = tuple(_number(f, "values[]", v, positive=True) for v in values)
    return LearningRateSchedule(f, (("boundaries", bounds), ("values", rates)), step)
