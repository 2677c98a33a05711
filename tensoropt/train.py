"""Optimizers, as ``tf.compat.v1.train``: each records a training step with ``minimize``.

Usage::

    train_op = to.train.AdamOptimizer(1e-3).minimize(loss)
    to.run(train_op, feed_dict={...})

The optimizer's slot count (0 for SGD, 1 for Momentum and Adagrad, 2 for Adam and
RMSProp, 3 for centered RMSProp) is what the cost model charges per parameter on top of
the parameter and its gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

from tensoropt.clipping import Gradient
from tensoropt.graph import Tensor, TrainStep, Variable, get_default_graph
from tensoropt.schedules import (GlobalStep, LearningRateSchedule, cosine_decay, exponential_decay,
                                 get_global_step, get_or_create_global_step, inverse_time_decay,
                                 natural_exp_decay, piecewise_constant, polynomial_decay)
from tensoropt.validation import check_finite, check_flag, check_learning_rate

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "RMSPropOptimizer", "AdagradOptimizer", "get_or_create_global_step", "get_global_step",
           "exponential_decay", "inverse_time_decay", "natural_exp_decay", "polynomial_decay",
           "cosine_decay", "piecewise_constant"]

#: hyperparameters that are flags (True or False), not numbers
_FLAGS = ("use_nesterov", "centered")


@dataclass(frozen=True)
class Optimizer:
    """Base optimizer: its TensorFlow class name and hyperparameters."""

    learning_rate: float | LearningRateSchedule

    tf_name = ""
    slots_per_variable = 0

    def __post_init__(self) -> None:
        # checked here, not at the first step deep in TensorFlow (a YAML '1e-3' is text)
        if not isinstance(self.learning_rate, LearningRateSchedule):
            object.__setattr__(self, "learning_rate",
                               check_learning_rate(type(self).__name__, self.learning_rate))
        for name, value in self.hyperparameters().items():
            if name in _FLAGS:
                check_flag(type(self).__name__, name, value)
            elif name != "learning_rate":
                check_finite(type(self).__name__, name, value, ">= 0")

    def hyperparameters(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "name"}

    def to_tensorflow(self, tf, learning_rate=None):
        """TensorFlow's optimizer, at ``learning_rate`` (a tensor) when given. Otherwise a
        schedule's rate is computed from the TensorFlow graph's global step (created there
        if it has none), as when the profiler times one update alone."""
        hyperparameters = self.hyperparameters()
        if learning_rate is not None:
            hyperparameters["learning_rate"] = learning_rate
        elif isinstance(self.learning_rate, LearningRateSchedule):
            step = tf.compat.v1.train.get_or_create_global_step()
            hyperparameters["learning_rate"] = self.learning_rate.to_tensorflow(tf, step)
        return getattr(tf.compat.v1.train, self.tf_name)(**hyperparameters)

    def minimize(self, loss, global_step=None, var_list=None, name=None) -> TrainStep:
        """Records a training step that minimizes the scalar ``loss``.

        Raises:
            ValueError: if ``loss`` is not a scalar float tensor, if ``global_step`` is
                not the graph's global step, or if no trainable variable reaches the loss.
        """
        reachable = _variables_reaching(_check_loss("minimize", loss))
        var_list = _var_list("minimize", loss, var_list, reachable)
        return self._record("minimize", loss, var_list, global_step, name)

    def compute_gradients(self, loss, var_list=None, **unused) -> list:
        """``[(gradient, variable)]`` for ``var_list`` (default: every trainable variable),
        as ``tf.compat.v1.train.Optimizer.compute_gradients``: a gradient is a
        ``tensoropt.clipping.Gradient`` to clip or pass to ``apply_gradients`` (None for a
        variable the loss does not reach). TensorOpt builds the backward pass itself, so
        ``gate_gradients`` and the like are ignored.

        Raises:
            ValueError: as ``minimize``.
        """
        return _gradients_of("compute_gradients", "var_list", loss,
                             var_list or get_default_graph().trainable_variables)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None) -> TrainStep:
        """Records the training step that applies ``compute_gradients``' gradients, clipped
        or not (``tensoropt.clipping``); pairs whose gradient is None are left out.

        Raises:
            ValueError: for a pair that is not (gradient, its variable), gradients of
                several losses, gradients not clipped alike, a global norm that covers
                other gradients than those applied, or a bad ``global_step``.
        """
        f = "apply_gradients"
        pairs = [tuple(p) if isinstance(p, (tuple, list)) else p for p in grads_and_vars]
        for p in pairs:
            if not (isinstance(p, tuple) and len(p) == 2 and (p[0] is None or isinstance(p[0], Gradient))):
                raise ValueError(f"{f}: {p!r} is not a (gradient, variable) pair; pass the pairs "
                                 "optimizer.compute_gradients(loss) returned, clipped or not")
            if p[0] is not None and p[0].variable is not p[1]:
                raise ValueError(f"{f}: the gradient {p[0]!r} is paired with {p[1].op.name!r}; keep each "
                                 "gradient with its own variable")
        used = [g for g, _ in pairs if g is not None]
        if not used:
            raise ValueError(f"{f}: no gradient is provided for any variable")
        loss = used[0].loss
        if any(g.loss is not loss for g in used):
            raise ValueError(f"{f}: the gradients are of several losses; apply one loss's gradients per step")
        if any(g.clips != used[0].clips or g.norm is not used[0].norm for g in used):
            raise ValueError(f"{f}: the gradients are clipped differently ({used[0].clips} and others); "
                             "TensorOpt clips every gradient of a step alike")
        norm = used[0].norm
        if sum(c.kind == "global_norm" for c in used[0].clips) > 1:
            raise ValueError(f"{f}: the gradients were clipped by clip_by_global_norm twice; clip once")
        if norm is not None and {id(v) for v in norm.variables} != {id(g.variable) for g in used}:
            raise ValueError(f"{f}: clip_by_global_norm took the norm of {len(norm.variables)} gradients, but "
                             f"{len(used)} are applied; clip exactly the gradients you apply")
        return self._record(f, loss, tuple(g.variable for g in used), global_step, name,
                            clips=used[0].clips, global_norm=norm)

    def _record(self, where, loss, var_list, global_step, name, clips=(), global_norm=None) -> TrainStep:
        graph = get_default_graph()
        if global_step is not None and (not isinstance(global_step, GlobalStep)
                                        or global_step is not get_global_step(graph)):
            raise ValueError(f"{where}: global_step={global_step!r} is not this graph's global step; pass "
                             "to.train.get_or_create_global_step() (the step adds one to it)")
        step = TrainStep(name=graph.unique_name(name or self.tf_name.replace("Optimizer", "")),
                         loss=loss, var_list=var_list, optimizer=self, counts_steps=global_step is not None,
                         clips=tuple(clips), global_norm=global_norm)
        graph.train_steps.append(step)
        return step


def gradients(ys, xs, grad_ys=None, name="gradients", **unused) -> list:
    """``tf.gradients(loss, variables)``: the gradients of a scalar loss with respect to
    variables, as ``compute_gradients`` gives them (``tensoropt.clipping.Gradient`` values
    to clip and pass to ``apply_gradients``; None for a variable the loss does not reach),
    as the PTB tutorial's ``tf.clip_by_global_norm(tf.gradients(cost, tvars), 5)`` uses
    them. TensorOpt builds the backward pass when it lowers a plan, so there is no
    gradient of other tensors.

    Raises:
        ValueError: ``ys`` not one scalar float loss, an entry of ``xs`` that is not a
            variable, ``grad_ys``, or no variable the loss reaches.
    """
    f = "gradients"
    if isinstance(ys, (list, tuple)):
        if len(ys) != 1:
            raise ValueError(f"{f}: ys holds {len(ys)} tensors; TensorOpt differentiates one scalar loss")
        ys = ys[0]
    if grad_ys is not None:
        raise ValueError(f"{f}: grad_ys is not supported; differentiate a scalar loss")
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    wrong = [x for x in xs if not isinstance(x, Variable)]
    if wrong:
        raise ValueError(f"{f}: {wrong[0]!r} is not a variable; TensorOpt gives the gradients of a loss with "
                         "respect to variables only (it builds the backward pass itself when it lowers a plan)")
    return [g for g, _ in _gradients_of(f, "xs", ys, xs)]


def _gradients_of(where: str, what: str, loss, variables) -> list:
    """``[(gradient or None, variable)]`` of ``loss`` for ``variables`` (``what`` names
    the argument that gave them in errors).

    Raises:
        ValueError: as ``_check_loss`` and ``_var_list``, or no variable reaches the loss.
    """
    reachable = _variables_reaching(_check_loss(where, loss))
    variables = _var_list(where, loss, variables, reachable)
    if not any(v in reachable for v in variables):
        raise ValueError(f"{where}: no variable of {what} reaches the loss {loss.name}")
    return [(Gradient(v, loss) if v in reachable else None, v) for v in variables]


def _check_loss(where: str, loss) -> Tensor:
    if not isinstance(loss, Tensor):
        raise ValueError(f"{where}: loss must be a tensoropt Tensor, got {type(loss).__name__}")
    if tuple(loss.shape) != ():
        raise ValueError(
            f"{where}: loss {loss.name} has shape {tuple(loss.shape)}; expected a scalar "
            f"(shape ()). Reduce it first, e.g. tensoropt.reduce_mean({loss.op.name})")
    if not loss.dtype.is_floating:
        raise ValueError(f"{where}: loss {loss.name} has dtype {loss.dtype.name}; expected float32")
    return loss


def _var_list(where: str, loss, var_list, reachable: set) -> tuple:
    """``var_list`` checked (default: the trainable variables in ``reachable``, those that
    reach ``loss``)."""
    if var_list is None:
        var_list = [v for v in get_default_graph().trainable_variables if v in reachable]
    var_list = tuple(var_list)
    for v in var_list:
        if not isinstance(v, Variable):
            raise ValueError(f"{where}: var_list holds {v!r}, which is not a variable")
    if not var_list:
        raise ValueError(f"{where}: no trainable variable reaches the loss {loss.name}; "
                         "create variables with tensoropt.get_variable and use them in the model")
    return var_list


def _variables_reaching(tensor: Tensor) -> set:
    seen, stack, found = set(), [tensor.op], set()
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.kind == "variable":
            found.add(op.outputs[0])
        if op.op_def.passes_gradient:
            stack.extend(t.op for t in op.inputs)
    return found


@dataclass(frozen=True)
class GradientDescentOptimizer(Optimizer):
    tf_name = "GradientDescentOptimizer"
    slots_per_variable = 0


@dataclass(frozen=True)
class MomentumOptimizer(Optimizer):
    momentum: float = 0.9
    use_nesterov: bool = False

    tf_name = "MomentumOptimizer"
    slots_per_variable = 1


@dataclass(frozen=True)
class AdamOptimizer(Optimizer):
    learning_rate: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-08

    tf_name = "AdamOptimizer"
    slots_per_variable = 2


@dataclass(frozen=True)
class RMSPropOptimizer(Optimizer):
    """RMSProp: slots ``rms`` and ``momentum`` (TensorFlow makes both, whatever the
    momentum), and ``mg`` when centered."""

    decay: float = 0.9
    momentum: float = 0.0
    epsilon: float = 1e-10
    centered: bool = False

    tf_name = "RMSPropOptimizer"

    @property
    def slots_per_variable(self) -> int:
        return 3 if self.centered else 2


@dataclass(frozen=True)
class AdagradOptimizer(Optimizer):
    initial_accumulator_value: float = 0.1

    tf_name = "AdagradOptimizer"
    slots_per_variable = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.initial_accumulator_value > 0:
            raise ValueError(f"AdagradOptimizer: initial_accumulator_value={self.initial_accumulator_value!r}; "
                             "give a number > 0 (TensorFlow's default is 0.1)")


from tensoropt._missing import missing_name_getter as _missing_name_getter  # noqa: E402

# Saver and latest_checkpoint are set by tensoropt/__init__.py (they live in checkpoint).
__getattr__ = _missing_name_getter(__name__, "tf.train", lambda: __all__ + ["Saver", "latest_checkpoint"])
