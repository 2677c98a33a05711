"""TensorOpt: auto-parallel training with memory/time trade-offs, behind TensorFlow's API.

A TensorFlow 1.x-style script becomes a TensorOpt script by changing its import and
adding three calls::

    import tensoropt as to

    to.init()
    x = to.placeholder(to.float32, [256, 784], name="x")
    y = to.placeholder(to.int32, [256], name="y")
    w = to.get_variable("w", [784, 10])
    logits = to.matmul(x, w)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = to.train.AdamOptimizer(1e-3).minimize(loss)

    plan = to.find_strategy(option="mini_time")
    to.build_execution_graph(engine="tensorflow", plan=plan)
    to.run(train_op, feed_dict={x: xs, y: ys})

``to.search_strategy`` gives the whole search result (the frontier and the data-parallel
plan beside the chosen plan), the same on every rank.
"""

from tensoropt import contrib, layers, losses, nn, ops, train
from tensoropt._version import __version__
from tensoropt.dtypes import DType, as_dtype, bool_ as bool, float32, int32, int64  # noqa: A004 - tf.bool
from tensoropt.graph import (AUTO_REUSE, Graph, Operation, Tensor, TensorShape, Variable,
                             VariableScope, get_default_graph, get_variable_scope, name_scope,
                             reset_default_graph, variable_scope)
from tensoropt.initializers import (constant_initializer, glorot_normal_initializer,
                                    glorot_uniform_initializer, he_normal, he_uniform,
                                    ones_initializer, random_normal_initializer,
                                    random_uniform_initializer, truncated_normal_initializer,
                                    variance_scaling_initializer, zeros_initializer)
from tensoropt.ops.array_ops import concat, reshape, split, transpose
from tensoropt.ops.slice_ops import slice  # noqa: A004 - tf.slice
from tensoropt.ops.compare_ops import (argmax, argmin, cast, equal, greater, greater_equal, less, less_equal,
                                       not_equal, one_hot, where, where_v2)
from tensoropt.ops.nn_ops import gather
from tensoropt.clipping import clip_by_global_norm
from tensoropt.train import gradients
from tensoropt.initial_values import random_normal, random_uniform, truncated_normal
from tensoropt.graph_collections import (GraphKeys, add_to_collection, get_collection, global_variables,
                                         trainable_variables)
from tensoropt.ops.composite_ops import (clip_by_value, constant, expand_dims, ones_like, shape, squeeze,
                                         stack, unstack, zeros_like)
from tensoropt.ops.elementwise_ops import (ceil, cos, erf, floor, log1p, reciprocal, round, sign, sin,
                                           stop_gradient)
from tensoropt.ops.math_ops import (abs, add, add_n, divide, exp, identity, log, matmul, maximum,
                                    minimum, multiply, negative, pow, reduce_max, reduce_mean, reduce_min,
                                    reduce_sum, rsqrt, sigmoid, sqrt, square, squared_difference, subtract,
                                    tanh)
from tensoropt.ops.logical_ops import logical_and, logical_not, logical_or, logical_xor
from tensoropt.ops.pad_ops import pad, tile
from tensoropt.ops.safe_math import clip_by_norm, reduce_logsumexp
from tensoropt.ops.sequence_ops import cumsum, range, sequence_mask  # noqa: A004 - tf.range
from tensoropt.ops.rnn_ops import fill, ones, zeros
from tensoropt.ops.source_ops import get_variable, placeholder
from tensoropt.plan import OpConfig, Plan
from tensoropt.runtime import World, find_strategy, init, search_strategy, set_random_seed
from tensoropt.session import build_execution_graph, run
from tensoropt import checkpoint
from tensoropt.inputs import input_slice

# to.train.Saver and to.train.latest_checkpoint, as in tf.compat.v1.train: they live in
# tensoropt.checkpoint (they read the built execution graph, above train in the layers).
train.Saver, train.latest_checkpoint = checkpoint.Saver, checkpoint.latest_checkpoint

__all__ = [
    # modules
    "nn", "train", "contrib", "ops", "checkpoint", "losses", "layers",
    # runtime
    "init", "find_strategy", "search_strategy", "build_execution_graph", "run", "set_random_seed", "World",
    "input_slice",
    "Plan", "OpConfig",
    # graph
    "Graph", "Operation", "Tensor", "TensorShape", "Variable", "get_default_graph",
    "reset_default_graph", "name_scope", "variable_scope", "get_variable_scope", "VariableScope",
    "AUTO_REUSE",
    # dtypes
    "DType", "as_dtype", "float32", "int32", "int64", "bool",
    # collections
    "GraphKeys", "add_to_collection", "get_collection", "trainable_variables", "global_variables",
    # sources and initializers
    "placeholder", "get_variable", "zeros", "ones", "fill", "truncated_normal", "random_normal", "random_uniform",
    "zeros_initializer", "ones_initializer", "constant_initializer", "random_normal_initializer",
    "truncated_normal_initializer", "random_uniform_initializer", "glorot_uniform_initializer",
    "glorot_normal_initializer", "variance_scaling_initializer", "he_normal", "he_uniform",
    # math and arrays
    "matmul", "add", "subtract", "multiply", "divide", "maximum", "minimum", "pow",
    "squared_difference", "add_n", "negative", "abs", "tanh", "sigmoid", "sqrt", "rsqrt", "exp",
    "log", "square", "identity", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
    "log1p", "reciprocal", "erf", "sin", "cos", "floor", "ceil", "round", "sign", "stop_gradient",
    "where", "where_v2", "gather",
    "reshape", "transpose", "concat", "split", "expand_dims", "squeeze", "slice", "tile", "pad",
    "one_hot", "argmax", "argmin", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "cast",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "clip_by_value", "clip_by_global_norm", "gradients", "clip_by_norm", "reduce_logsumexp",
    "range", "sequence_mask", "cumsum", "stack", "unstack", "zeros_like", "ones_like", "constant", "shape",
]

from tensoropt._missing import NEW_OP as _NEW_OP, missing_name_getter as _missing_name_getter

__getattr__ = _missing_name_getter(__name__, "tf", lambda: __all__, _NEW_OP)
