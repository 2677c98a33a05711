"""Sources of the graph: placeholders (fed data) and variables (parameters).

Usage::

    x = to.placeholder(to.float32, [32, 784], name="x")
    w = to.get_variable("w", [784, 10], initializer=to.zeros_initializer())
"""

from __future__ import annotations

import numbers

from typing import Sequence

from tensoropt.dtypes import as_dtype, float32
from tensoropt.graph import Variable, get_default_graph
from tensoropt.initializers import Initializer, glorot_uniform_initializer, seed_for
from tensoropt.ops.registry import LoweringContext, OpDef, Signature, register
from tensoropt.ops.space import IterationSpace

__all__ = ["placeholder", "get_variable", "Variable"]


def _check_shape(kind: str, name: str, shape) -> tuple[int, ...]:
    if shape is None:
        raise ValueError(
            f"{kind} '{name}': shape is None; TensorOpt plans need every shape known, "
            "so pass the full shape including the batch size, e.g. [256, 784]")
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValueError(f"{kind} '{name}': shape {shape!r} is not a list of ints; "
                         "expected e.g. [256, 784]") from None
    for i, d in enumerate(dims):
        if d is not None and not (isinstance(d, numbers.Integral) and not isinstance(d, bool)):
            raise ValueError(f"{kind} '{name}': shape {list(shape)!r}: dimension {i} is {d!r}, a "
                             f"{type(d).__name__}; every dimension must be an int (as in TensorFlow), "
                             "e.g. [256, 784]")
    dims = tuple(None if d is None else int(d) for d in dims)
    unknown = [i for i, d in enumerate(dims) if d is None]
    if unknown:
        example = [256 if d is None else d for d in dims]
        raise ValueError(f"{kind} '{name}': shape {list(dims)} leaves dimension {unknown[0]} unknown (None); "
                         "TensorOpt plans for fixed shapes, so give its size, e.g. "
                         f"{example} (the batch size: every step feeds a whole batch, which the plan "
                         "may split across ranks)")
    if any(d <= 0 for d in dims):
        raise ValueError(f"{kind} '{name}': shape {list(dims)} has a dimension <= 0; every dimension "
                         "must be positive")
    return dims


def _axis_space(shape: Sequence[int]) -> IterationSpace:
    dims = {f"d{i}": n for i, n in enumerate(shape)}
    return IterationSpace(dims=dims, inputs=(), outputs=(tuple(dims),))


class _SourceDef(OpDef):
    """A source: one output of ``attrs["shape"]`` and ``attrs["dtype"]``, one dim per axis."""

    def infer(self, op):
        return Signature(((op.attrs["shape"], op.attrs["dtype"]),), _axis_space(op.attrs["shape"]))


@register
class PlaceholderDef(_SourceDef):
    kind = "placeholder"

    def lower(self, tf, op, inputs, ctx: LoweringContext):
        dtype = getattr(tf, op.attrs["dtype"].name)
        return [tf.compat.v1.placeholder(dtype, ctx.output_shapes[0], name=op.name)]


@register
class VariableDef(_SourceDef):
    """A variable. Each process creates only its shard, drawn directly (never sliced out of
    the whole value), with the values one process would hold there: see
    ``tensoropt.initializers``. ``ctx.extra["shard_offsets"]`` places the shard in the
    logical tensor (zeros, the whole tensor, when absent)."""

    kind = "variable"

    def lower(self, tf, op, inputs, ctx: LoweringContext):
        init: Initializer = op.attrs["initializer"]
        shape = tuple(op.outputs[0].shape)
        local = tuple(ctx.output_shapes[0])
        offsets = tuple(ctx.extra.get("shard_offsets", (0,) * len(shape)))
        dtype = getattr(tf, op.attrs["dtype"].name)
        key = seed_for(op.name, ctx.seed, init.seed)
        with tf.name_scope(f"{op.name}/initial_value"):
            value = init.shard(tf, shape, dtype, key, offsets, local, name=op.name)
        return [tf.compat.v1.get_variable(op.name, initializer=value, trainable=op.attrs["trainable"])]


def placeholder(dtype, shape=None, name: str | None = None):
    """Records a fed input, as ``tf.compat.v1.placeholder``. Every dimension must be known."""
    graph = get_default_graph()
    dtype = as_dtype(dtype)
    shape = _check_shape("placeholder", name or "placeholder", shape)
    op = graph.create_op("placeholder", [], {"shape": shape, "dtype": dtype}, name=name or "Placeholder")
    return op.outputs[0]


def get_variable(name: str, shape=None, dtype=None, initializer: Initializer | None = None,
                 regularizer=None, trainable: bool = True, **unused) -> Variable:
    """Creates (or, under reuse, returns) a variable, as ``tf.compat.v1.get_variable``.

    The default initializer is glorot-uniform, as in TensorFlow. The initializer may also
    be a value (a numpy array, a list, ``to.constant(...)``): the variable then takes its
    shape and dtype, and ``shape`` is left out.

    Raises:
        ValueError: for a duplicate name without reuse, a reused name with another shape,
            a missing variable under ``reuse=True``, or an unsupported dtype.
    """
    graph = get_default_graph()
    full_name = graph._scope_prefix() + name
    _check_unused(full_name, unused)
    reuse = graph.current_reuse()
    if full_name in graph.variables:
        existing = graph.variables[full_name]
        if not reuse:
            raise ValueError(
                f"Variable {full_name} already exists, disallowed. Did you mean to set "
                "reuse=True or reuse=tensoropt.AUTO_REUSE in variable_scope?")
        if shape is not None and tuple(shape) != tuple(existing.shape):
            raise ValueError(f"Trying to share variable {full_name}, but specified shape "
                             f"{tuple(shape)} and found shape {tuple(existing.shape)}.")
        return existing
    if reuse is True:
        raise ValueError(f"Variable {full_name} does not exist, or was not created with "
                         "get_variable(). Did you mean to set reuse=tensoropt.AUTO_REUSE?")
    if initializer is None:
        initializer = glorot_uniform_initializer()
    elif not isinstance(initializer, Initializer) and not callable(initializer):
        # a value (numpy array, list, number, to.constant/zeros): it gives the shape
        from tensoropt.initial_values import initial_value_parts  # noqa: PLC0415 - it imports this module
        if shape is not None:
            raise ValueError(f"get_variable '{full_name}': initializer is a value, which gives the shape; "
                             f"leave shape={list(shape)} out, as TensorFlow requires")
        initializer, shape, value_dtype = initial_value_parts(f"get_variable '{full_name}'", initializer)
        dtype = value_dtype if dtype is None else dtype
    var = new_variable("get_variable", full_name, shape, float32 if dtype is None else dtype, initializer,
                       trainable)
    if regularizer is not None:
        if not callable(regularizer):
            raise ValueError(f"get_variable '{full_name}': regularizer {regularizer!r} is not callable; give "
                             "a function of the variable, e.g. to.contrib.layers.l2_regularizer(1e-4)")
        penalty = regularizer(var)
        if penalty is not None:
            from tensoropt.graph_collections import GraphKeys, add_to_collection  # noqa: PLC0415
            add_to_collection(GraphKeys.REGULARIZATION_LOSSES, penalty)
    return var


def new_variable(where: str, full_name: str, shape, dtype, initializer: Initializer, trainable: bool) -> Variable:
    """Records a new variable named ``full_name`` (scope included) in the default graph.

    Raises:
        ValueError: for a bad shape or dtype, an initializer that is not TensorOpt's, or a
            name another op took.
    """
    graph = get_default_graph()
    dtype = as_dtype(dtype)
    shape = _check_shape(where, full_name, shape)
    if not isinstance(initializer, Initializer):
        raise ValueError(f"{where} '{full_name}': initializer {initializer!r} is not a "
                         "tensoropt initializer; use e.g. tensoropt.glorot_uniform_initializer()")
    op = graph.create_op("variable", [], {"shape": shape, "dtype": dtype,
                                          "initializer": initializer, "trainable": bool(trainable)},
                         name=full_name, scoped=False)
    if op.name != full_name:  # an op (not a variable) already took the name
        raise ValueError(f"{where}: the name {full_name!r} is taken by another op; "
                         "choose another variable name or scope")
    var = op.outputs[0]
    graph.variables[full_name] = var
    return var


#: get_variable arguments of TensorFlow's that change nothing here, and those accepted only
#: at their default (any other value is refused, naming it)
_IGNORED = ("use_resource", "validate_shape", "caching_device", "collections", "synchronization",
            "aggregation")
_DEFAULT_ONLY = ("partitioner", "constraint", "custom_getter")


def _check_unused(name: str, unused: dict) -> None:
    for key, value in unused.items():
        if key in _IGNORED or (key in _DEFAULT_ONLY and value is None):
            continue
        if key in _DEFAULT_ONLY:
            raise ValueError(f"get_variable '{name}': {key}={value!r} is not supported; leave it None "
                             "(TensorOpt's plan decides how a variable is split)")
        raise ValueError(f"get_variable '{name}': unknown argument {key}={value!r}")
