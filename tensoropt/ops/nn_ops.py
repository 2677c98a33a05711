"""Neural-network ops that are not plain math: softmax, dropout, embeddings, losses.

Usage::

    h = to.nn.relu(to.nn.bias_add(to.matmul(x, w), b))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
"""

from __future__ import annotations

import zlib

from tensoropt.dtypes import INTEGERS, float32
from tensoropt.graph import Tensor, get_default_graph
from tensoropt.ops._common import as_tensor, normalize_axis, op_error, tf1_alias
from tensoropt.ops.elementwise_ops import subtract
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, elementwise_space

__all__ = ["gather", "relu", "gelu", "relu6", "elu", "selu", "leaky_relu", "softplus", "silu", "swish",
           "softmax", "log_softmax", "bias_add", "dropout", "embedding_lookup",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits"]



def _create(kind, inputs, attrs=None, name=None):
    return get_default_graph().create_op(kind, [as_tensor(kind, x) for x in inputs], attrs or {}, name=name)


def relu(features, name=None):
    return _create("relu", [features], name=name).outputs[0]


def gelu(features, approximate=False, name=None):
    return _create("gelu", [features], {"approximate": bool(approximate)}, name=name).outputs[0]


def relu6(features, name=None):
    return _create("relu6", [features], name=name).outputs[0]


def elu(features, name=None):
    return _create("elu", [features], name=name).outputs[0]


def selu(features, name=None):
    return _create("selu", [features], name=name).outputs[0]


def _number(kind: str, name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{kind}: {name}={value!r} is not a number; give a Python float, e.g. {name}=0.2")
    return float(value)


def leaky_relu(features, alpha=0.2, name=None):
    return _create("leaky_relu", [features], {"alpha": _number("leaky_relu", "alpha", alpha)},
                   name=name).outputs[0]


def softplus(features, name=None):
    return _create("softplus", [features], name=name).outputs[0]


def silu(features, beta=1.0, name=None):
    """``features * sigmoid(beta * features)``, as ``tf.nn.silu`` (``tf.nn.swish``)."""
    return _create("silu", [features], {"beta": _number("silu", "beta", beta)}, name=name).outputs[0]


swish = silu


class SoftmaxDef(OpDef):
    """Softmax along one axis. That axis cannot be split: every output needs its whole row."""

    log = False

    def infer(self, op):
        x = op.inputs[0]
        axis = normalize_axis(op, op.attrs["axis"], x.shape.rank)
        op.attrs["axis"] = axis
        space = elementwise_space([x.shape], x.shape, 10.0, saved_outputs=(0,))
        space = IterationSpace(dims=space.dims, inputs=space.inputs, outputs=space.outputs,
                               unsplittable={f"d{axis}"}, flops=space.flops, saved_outputs=(0,),
                               notes=f"d{axis}: the normalized axis needs whole rows")
        return Signature(((tuple(x.shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        fn = tf.nn.log_softmax if self.log else tf.nn.softmax
        return [fn(inputs[0], axis=op.attrs["axis"])]

    grad_from_output_ok = True

    def grad_from_output(self, tf, op, y, dy):
        axis = op.attrs["axis"]
        if self.log:
            return dy - tf.exp(y) * tf.reduce_sum(dy, axis=axis, keepdims=True)
        return (dy - tf.reduce_sum(dy * y, axis=axis, keepdims=True)) * y


@register
class SoftmaxOpDef(SoftmaxDef):
    kind = "softmax"


@register
class LogSoftmaxOpDef(SoftmaxDef):
    kind = "log_softmax"
    log = True


def softmax(logits, axis=None, name=None, dim=None):
    """``tf.compat.v1.nn.softmax`` (``dim``: the 1.x name of ``axis``)."""
    axis = tf1_alias("softmax", "axis", axis, "dim", dim, default=-1)
    return _create("softmax", [logits], {"axis": axis}, name=name).outputs[0]


def log_softmax(logits, axis=None, name=None, dim=None):
    """``tf.compat.v1.nn.log_softmax`` (``dim``: the 1.x name of ``axis``)."""
    axis = tf1_alias("log_softmax", "axis", axis, "dim", dim, default=-1)
    return _create("log_softmax", [logits], {"axis": axis}, name=name).outputs[0]


@register
class BiasAddDef(OpDef):
    kind = "bias_add"
    default_name = "BiasAdd"

    def infer(self, op):
        value, bias = op.inputs
        if bias.shape.rank != 1 or value.shape.rank < 2 or value.shape[-1] != bias.shape[0]:
            raise op_error(op, f"value {tuple(value.shape)} and bias {tuple(bias.shape)}",
                           "a rank-1 bias of size value.shape[-1]")
        space = elementwise_space([value.shape, bias.shape], value.shape, 1.0)
        return Signature(((tuple(value.shape), value.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        return [tf.nn.bias_add(inputs[0], inputs[1])]


def bias_add(value, bias, data_format=None, name=None):
    if data_format not in (None, "NHWC", "N...C"):
        raise ValueError(f"bias_add: data_format {data_format!r} is not supported; use NHWC")
    return _create("bias_add", [value, bias], name=name).outputs[0]


@register
class DropoutDef(OpDef):
    """Inverted dropout with ``rate``; backward keeps the mask (counted as the output).

    Every process draws the mask of the whole tensor from the same seeded stream (the
    op's ``seed``, or one derived from its name, so that it does not depend on how many
    ops a rank's graph holds) and keeps its own slice: under any plan the ranks together
    apply the mask a single process applies. The full mask is a transient [full shape]
    bool tensor on every rank.
    """

    kind = "dropout"

    def infer(self, op):
        x = op.inputs[0]
        if len(op.inputs) == 2:        # the rate is a tensor: a scalar fed or computed per step
            rate = op.inputs[1]
            if tuple(rate.shape) != () or not rate.dtype.is_floating:
                raise op_error(op, f"rate tensor {rate.name} of shape {list(rate.shape)} and dtype "
                                   f"{rate.dtype.name}", "a float scalar, e.g. to.placeholder(to.float32, [])")
            space = elementwise_space([x.shape, ()], x.shape, 3.0, saved_outputs=(0,))
            return Signature(((tuple(x.shape), x.dtype),), space)
        rate = op.attrs["rate"]
        if not 0.0 <= rate < 1.0:
            raise op_error(op, f"rate {rate}", "a rate in [0, 1)")
        space = elementwise_space([x.shape], x.shape, 3.0, saved_outputs=(0,))
        return Signature(((tuple(x.shape), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        x = inputs[0]
        if len(inputs) == 2:
            rate = tf.cast(inputs[1], x.dtype)
        else:
            rate = op.attrs["rate"]
            if rate == 0.0:
                return [tf.identity(x)]
        dims = op.space.outputs[0]
        full = [ctx.dim_sizes[d] for d in dims]
        offsets = [ctx.extra.get("dim_offsets", {}).get(d, 0) for d in dims]
        seed = op.attrs["seed"] if op.attrs["seed"] is not None else zlib.crc32(op.name.encode()) % (2 ** 31)
        keep = tf.random.uniform(full, seed=seed, dtype=x.dtype) >= rate
        keep = tf.slice(keep, offsets, list(ctx.output_shapes[0]))
        return [x * tf.cast(keep, x.dtype) / (1.0 - rate)]


def dropout(x, rate=None, noise_shape=None, seed=None, name=None, keep_prob=None):
    """Dropout, as ``tf.nn.dropout`` (``rate``) or TF 1.x (``keep_prob``). Either may be a
    float scalar tensor, e.g. a ``keep_prob`` placeholder fed 0.5 to train and 1.0 to
    evaluate."""
    if noise_shape is not None:
        raise ValueError("dropout: noise_shape is not supported; leave it None")
    if isinstance(rate, Tensor) or isinstance(keep_prob, Tensor):
        rate_t = rate if rate is not None else subtract(1.0, keep_prob)
        return _create("dropout", [x, rate_t], {"rate": None, "seed": seed}, name=name).outputs[0]
    if rate is None:
        rate = 0.0 if keep_prob is None else 1.0 - keep_prob
    return _create("dropout", [x], {"rate": float(rate), "seed": seed}, name=name).outputs[0]


@register
class EmbeddingLookupDef(OpDef):
    """Gathers rows of ``params`` [V, E] by integer ``ids``.

    Splitting the vocabulary dim ``v`` gives each shard the rows it owns, zeros elsewhere:
    the output is then a partial sum, so ``v`` is a reduction dim.
    """

    kind = "embedding_lookup"

    def infer(self, op):
        params, ids = op.inputs
        if params.shape.rank != 2:
            raise op_error(op, f"params of rank {params.shape.rank}", "params of shape [vocab, dim]")
        if ids.dtype not in INTEGERS:
            raise op_error(op, f"ids of dtype {ids.dtype.name}", "int32 or int64 ids")
        id_dims = tuple(f"i{j}" for j in range(ids.shape.rank))
        dims = {**dict(zip(id_dims, ids.shape)), "v": params.shape[0], "e": params.shape[1]}
        out_shape = tuple(ids.shape) + (params.shape[1],)
        n_out = ids.shape.num_elements() * params.shape[1]
        space = IterationSpace(dims=dims, inputs=(("v", "e"), id_dims), outputs=(id_dims + ("e",),),
                               reductions={"v"}, flops=2.0 * n_out, saved_inputs=(1,))
        return Signature(((out_shape, params.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        params, ids = inputs
        full_v, local_v = ctx.dim_sizes["v"], ctx.local_dim_sizes["v"]
        if full_v == local_v:
            return [tf.nn.embedding_lookup(params, ids)]
        start = ctx.extra["dim_offsets"]["v"]
        local = ids - start
        inside = tf.logical_and(local >= 0, local < local_v)
        rows = tf.gather(params, tf.where(inside, local, tf.zeros_like(local)))
        return [rows * tf.cast(tf.expand_dims(inside, -1), rows.dtype)]


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """``tf.gather`` of rows (axis 0) of a rank-2 ``params``: an ``embedding_lookup``."""
    p = as_tensor("gather", params)
    if not isinstance(indices, Tensor):
        raise ValueError(f"gather: indices {indices!r} are not a tensor; TensorOpt records no array "
                         "constants: feed them through an int32 placeholder")
    if (axis or 0) != 0 or batch_dims or p.shape.rank != 2:
        raise ValueError(f"gather: params {p.name} {tuple(p.shape)} with axis={axis!r}, "
                         f"batch_dims={batch_dims!r}; TensorOpt gathers rows (axis 0) of a rank-2 tensor "
                         "only (reshape it to [rows, -1] first)")
    return embedding_lookup(p, indices, name=name or "GatherV2")


def embedding_lookup(params, ids, max_norm=None, name=None):
    if max_norm is not None:
        raise ValueError("embedding_lookup: max_norm is not supported; leave it None")
    return _create("embedding_lookup", [params, ids], name=name).outputs[0]


class CrossEntropyDef(OpDef):
    """Softmax cross-entropy of ``logits`` [..., C] against labels; one loss per row.

    The class dim ``c`` is unsplittable here: the softmax needs whole rows.
    """

    sparse = False
    #: TensorFlow's gradient reads the op's second (backprop) output: differentiating it
    #: on a rebuilt input runs its forward again (``costs.model.reruns_forward``).
    backward_reads_outputs = True

    def infer(self, op):
        labels, logits = op.inputs
        if logits.dtype != float32 or logits.shape.rank < 2:
            raise op_error(op, f"logits {tuple(logits.shape)} {logits.dtype.name}",
                           "float32 logits of shape [batch, classes]")
        rows = tuple(logits.shape[:-1])
        if self.sparse:
            if labels.dtype not in INTEGERS or tuple(labels.shape) != rows:
                raise op_error(op, f"labels {tuple(labels.shape)} {labels.dtype.name}",
                               f"int32 or int64 labels of shape {rows}")
        elif tuple(labels.shape) != tuple(logits.shape):
            raise op_error(op, f"labels {tuple(labels.shape)} vs logits {tuple(logits.shape)}",
                           "labels of the same shape as logits")
        row_dims = tuple(f"d{i}" for i in range(len(rows)))
        dims = {**dict(zip(row_dims, rows)), "c": logits.shape[-1]}
        label_axes = row_dims if self.sparse else row_dims + ("c",)
        space = IterationSpace(dims=dims, inputs=(label_axes, row_dims + ("c",)), outputs=(row_dims,),
                               unsplittable={"c"}, flops=8.0 * logits.shape.num_elements(),
                               saved_inputs=(1,), notes="c: the softmax needs whole rows")
        return Signature(((rows, float32),), space)

    def lower(self, tf, op, inputs, ctx):
        labels, logits = inputs
        if self.sparse:
            return [tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)]
        return [tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)]


@register
class SoftmaxCrossEntropyDef(CrossEntropyDef):
    kind = "softmax_cross_entropy_with_logits"


@register
class SparseSoftmaxCrossEntropyDef(CrossEntropyDef):
    kind = "sparse_softmax_cross_entropy_with_logits"
    sparse = True


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits: pass both labels= and logits=")
    if axis not in (-1, None):
        raise ValueError("softmax_cross_entropy_with_logits: only axis=-1 is supported")
    return _create("softmax_cross_entropy_with_logits", [labels, logits], name=name).outputs[0]


#: TF 1.x's v2 name. Both names backpropagate into labels computed from variables, as v2
#: does (tf.compat.v1's v1 stops that gradient); for fed labels they are the same.
softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits: pass both labels= and logits=")
    return _create("sparse_softmax_cross_entropy_with_logits", [labels, logits], name=name).outputs[0]
