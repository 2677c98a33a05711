"""``tf.Variable(initial_value)`` and the random initial values 1.x scripts pass it.

TensorOpt draws a variable's initial value shard by shard (``tensoropt.initializers``), so
an initial value is recorded as an initializer, not as a tensor of the graph::

    W = to.Variable(to.truncated_normal([784, 10], stddev=0.1), name="W")
    b = to.Variable(to.constant(0.1, shape=[10]))
    c = to.Variable(np.eye(4, dtype=np.float32), trainable=False)

``truncated_normal``, ``random_normal`` and ``random_uniform`` return an ``InitialValue``
that only ``to.Variable`` takes; ``zeros``, ``ones``, ``fill`` and a scalar ``constant``
(fills nothing reads yet) and numpy arrays become constant initializers. The name defaults
to TensorFlow's ``Variable``, ``Variable_1``, ... within the current scope.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensoropt.dtypes import DType, as_dtype, float32
from tensoropt.graph import Tensor, Variable, _VariableType, get_default_graph
from tensoropt.initializers import (Initializer, constant_initializer, random_normal_initializer,
                                    random_uniform_initializer, truncated_normal_initializer)
from tensoropt.ops.source_ops import new_variable

__all__ = ["InitialValue", "truncated_normal", "random_normal", "random_uniform", "tf1_variable",
           "initial_value_parts"]


@dataclass(frozen=True)
class InitialValue:
    """A variable's initial value drawn by ``initializer`` (only ``to.Variable`` takes it)."""

    shape: tuple[int, ...]
    dtype: DType
    initializer: Initializer

    def __repr__(self) -> str:
        return f"<tensoropt InitialValue {self.initializer!r} shape={list(self.shape)}: pass it to to.Variable>"


def _value(shape, dtype, initializer) -> InitialValue:
    return InitialValue(tuple(int(d) for d in shape), as_dtype(dtype), initializer)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None) -> InitialValue:
    return _value(shape, dtype, truncated_normal_initializer(mean, stddev, seed))


def random_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None) -> InitialValue:
    return _value(shape, dtype, random_normal_initializer(mean, stddev, seed))


def random_uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None) -> InitialValue:
    return _value(shape, dtype, random_uniform_initializer(minval, 1.0 if maxval is None else maxval, seed))


def _from_fill(tensor: Tensor):
    """A ``fill`` source nothing reads yet: its value and shape; the op is dropped."""
    op = tensor.op
    graph = get_default_graph()
    if op.kind != "fill" or op.graph is not graph or any(tensor in o.inputs for o in graph.operations):
        raise ValueError(f"Variable: initial value {tensor.name} is computed by the graph ({op.kind}); "
                         "TensorOpt draws initial values shard by shard, so give a numpy array, "
                         "to.truncated_normal/random_normal/random_uniform(...), or to.zeros/ones/constant(...)")
    graph.operations.remove(op)
    return constant_initializer(op.attrs["value"]), tuple(tensor.shape), tensor.dtype


def initial_value_parts(where: str, initial_value) -> tuple[Initializer, tuple[int, ...], DType]:
    """The initializer, shape and dtype of a value a variable starts from: an
    ``InitialValue``, a fill nothing reads yet (``to.zeros``, ``to.constant``), or a numpy
    array, list or number (float arrays become float32, as the rest of TensorOpt).

    Raises:
        ValueError: the value is computed by the graph, or not numeric (named by ``where``).
    """
    if isinstance(initial_value, InitialValue):
        return initial_value.initializer, initial_value.shape, initial_value.dtype
    if isinstance(initial_value, Tensor):
        return _from_fill(initial_value)
    array = np.asarray(initial_value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{where}: initial value {initial_value!r} is not numeric")
    return (constant_initializer(array), tuple(array.shape),
            float32 if array.dtype.kind == "f" else as_dtype(array.dtype.name))


def tf1_variable(initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None, expected_shape=None,
                 import_scope=None, constraint=None, use_resource=None, **unused) -> Variable:
    """``tf.compat.v1.Variable(initial_value, trainable=True, name=None, dtype=None)``.

    Raises:
        ValueError: for an initial value that is a computed tensor or not numeric, a
            constraint, or no initial value.
    """
    if initial_value is None:
        raise ValueError("Variable: give an initial value, e.g. to.Variable(to.zeros([10]))")
    if constraint is not None:
        raise ValueError(f"Variable: constraint={constraint!r} is not supported; leave it None")
    if callable(initial_value) and not isinstance(initial_value, Tensor):
        initial_value = initial_value()
    initializer, shape, vdtype = initial_value_parts("Variable", initial_value)
    graph = get_default_graph()
    full_name = graph.unique_name(name or "Variable", reserve=False)   # new_variable's op takes it
    return new_variable("Variable", full_name, shape, dtype or vdtype, initializer, trainable)


_VariableType.factory = staticmethod(tf1_variable)
