"""Gradients as values a script can clip, as with ``compute_gradients`` / ``apply_gradients``.

TensorOpt builds the backward pass when it lowers a plan, so a gradient is not a recorded
tensor: ``Optimizer.compute_gradients`` returns ``Gradient`` values that name their
variable and loss, the clip functions return them with a clip attached, and
``apply_gradients`` records one training step that clips every gradient alike::

    opt = to.train.AdamOptimizer(1e-3)
    grads, variables = zip(*opt.compute_gradients(loss))
    grads, norm = to.clip_by_global_norm(grads, 5.0)
    train_op = opt.apply_gradients(zip(grads, variables), global_step=global_step)
    _, n = to.run([train_op, norm], feed)           # the norm before clipping

Under a plan a variable's gradient is split like the variable; the global norm sums each
rank's blocks (a replicated block counted once) with one all-reduce of a scalar over every
rank, after the backward's own collectives. ``clip_by_value`` is elementwise, so each rank
clips its own block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensoropt.validation import check_finite

__all__ = ["Gradient", "GlobalNorm", "Clip", "clip_by_global_norm", "gradient_clip_by_value"]


@dataclass(frozen=True)
class Clip:
    """One clip of a step's gradients: ``kind`` "value" (``low``, ``high``) or
    "global_norm" (``high`` = clip_norm)."""

    kind: str
    low: float
    high: float

    def __repr__(self) -> str:
        if self.kind == "value":
            return f"clip_by_value({self.low!r}, {self.high!r})"
        return f"clip_by_global_norm({self.high!r})"


@dataclass(frozen=True, eq=False)
class GlobalNorm:
    """The global norm a ``clip_by_global_norm`` computes (before clipping); ``to.run``
    fetches it once its step is built."""

    clip: Clip
    variables: tuple = ()   # the variables whose gradients it covers

    def __repr__(self) -> str:
        return f"<tensoropt GlobalNorm of {self.clip!r} over {len(self.variables)} gradients>"


@dataclass(frozen=True, eq=False)
class Gradient:
    """The gradient of ``loss`` with respect to ``variable``, after ``clips`` in order."""

    variable: Any
    loss: Any
    clips: tuple[Clip, ...] = ()
    norm: GlobalNorm | None = None   # the global-norm clip's norm, once clipped by one

    def __repr__(self) -> str:
        clips = "".join(f" -> {c!r}" for c in self.clips)
        return f"<tensoropt Gradient d{self.loss.name}/d{self.variable.op.name}{clips}>"

    def clipped(self, clip: Clip, norm: GlobalNorm | None = None) -> "Gradient":
        return Gradient(self.variable, self.loss, self.clips + (clip,), norm or self.norm)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every gradient of ``t_list`` by ``clip_norm / max(global_norm, clip_norm)``,
    as ``tf.clip_by_global_norm``; returns ``(clipped list, global norm)``. ``None``
    entries pass through.

    Raises:
        ValueError: for entries that are not gradients from ``compute_gradients``, a clip
            norm that is not a positive number, or ``use_norm`` (not supported).
    """
    f = "clip_by_global_norm"
    if use_norm is not None:
        raise ValueError(f"{f}: use_norm is not supported; TensorOpt computes the norm over every rank's blocks")
    items = list(t_list)
    wrong = [t for t in items if t is not None and not isinstance(t, Gradient)]
    if wrong:
        raise ValueError(f"{f}: {wrong[0]!r} is not a gradient; TensorOpt clips the gradients "
                         "optimizer.compute_gradients(loss) returns (a recorded tensor has no gradient of its own)")
    if not any(isinstance(t, Gradient) for t in items):
        raise ValueError(f"{f}: t_list holds no gradient")
    clip = Clip("global_norm", 0.0, check_finite(f, "clip_norm", clip_norm, "> 0"))
    norm = GlobalNorm(clip, tuple(t.variable for t in items if t is not None))
    return [None if t is None else t.clipped(clip, norm) for t in items], norm


def gradient_clip_by_value(t: Gradient, clip_value_min, clip_value_max) -> Gradient:
    """``t`` clipped elementwise to [min, max] (``tf.clip_by_value`` of a gradient)."""
    low = check_finite("clip_by_value", "clip_value_min", clip_value_min)
    high = check_finite("clip_by_value", "clip_value_max", clip_value_max)
    if low > high:
        raise ValueError(f"clip_by_value: clip_value_min={low!r} is above clip_value_max={high!r}")
    return t.clipped(Clip("value", low, high))
