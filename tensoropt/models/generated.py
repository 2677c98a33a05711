"""Seeded random models over the recorded op set, for parity fuzzing.

``generate_model(seed)`` records, into the current default graph, a small model that is
valid by construction (every shape follows from the ones before), trains (a scalar
cross-entropy loss and an optimizer step), and varies with the seed:

- a stem: dense features, images (conv2d, bias_add, max/avg pooling), token ids
  (embedding lookup), or a float sequence (an LSTM);
- sequence blocks: softmax attention (batch matmuls, split, reshape, transpose),
  the fused LSTM, layer norm, position-wise dense;
- feature blocks: dense with relu/tanh/sigmoid, residual adds, split + concat,
  reshape + transpose, batch matmul against a weight, layer norm, reductions;
- a classifier head.

Widths are drawn from sizes that divide 2 and 4 ranks evenly (4, 8, 12) and unevenly
(3, 5, 6, 10), so plans split some dims and must leave others whole. Initializers and the
optimizer vary too. Every model records in milliseconds and trains a step in well under
a second on one CPU process. The stem is ``seed % 4``, so any 4 consecutive seeds cover
every stem; across seeds 0..29 every kind in ``FEATURES`` appears (tested).

Usage::

    import tensoropt as to
    from tensoropt.models.generated import generate_model
    to.reset_default_graph()
    model = generate_model(7)
    model.description          # 'tokens[8,4] -> embedding(10x6) -> attention(2 heads) -> ...'
    model.features             # frozenset({'embedding_lookup', 'softmax_attention', ...})
    feeds = model.feeds(2)     # two feed_dicts of valid data
    to.run([model.spec.loss, model.spec.train_op], feeds[0])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import tensoropt as to
from tensoropt.graph import Tensor
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec

__all__ = ["GeneratedModel", "generate_model", "FEATURES", "STEMS"]

STEMS = ("dense", "image", "tokens", "sequence")

#: What a generated model may contain; across seeds 0..29 each appears at least once.
FEATURES = ("matmul", "batch_matmul", "bias_add", "relu", "tanh", "sigmoid", "residual_add",
            "concat", "split", "reshape", "transpose", "conv2d", "max_pool", "avg_pool",
            "layer_norm", "softmax_attention", "embedding_lookup", "reduce_sum", "reduce_mean",
            "lstm", "uneven")

_EVEN = (4, 8, 12)
_UNEVEN = (3, 5, 6, 10)
_ACTIVATIONS = {"relu": to.nn.relu, "tanh": to.tanh, "sigmoid": to.sigmoid}
_OPTIMIZERS = ("sgd", "momentum", "adam")
_LEARNING_RATES = {"sgd": 0.1, "momentum": 0.05, "adam": 0.01}


@dataclass(frozen=True)
class GeneratedModel:
    """A generated model, recorded into the default graph.

    Attributes:
        seed: the generator's seed.
        spec: loss, training step and inputs (``spec.feed(rng)`` gives valid data).
        description: the blocks in order, with their sizes.
        features: the kinds of ``FEATURES`` the model contains.
    """

    seed: int
    spec: ModelSpec
    description: str
    features: frozenset[str]

    def feeds(self, steps: int, data_seed: int | None = None) -> list[dict]:
        """``steps`` feed_dicts of valid random data (seeded by ``data_seed``, else the
        model's seed)."""
        rng = np.random.default_rng(self.seed if data_seed is None else data_seed)
        return [self.spec.feed(rng) for _ in range(steps)]


class _Builder:
    """The state of one generation: the random stream, the parts, the features used."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        # Each stem recurs every 4 seeds; ``focus`` then cycles the first block of each
        # kind, so that a few dozen seeds cover every block whatever the random draws.
        self.focus = seed // len(STEMS)
        self.parts: list[str] = []
        self.features: set[str] = set()
        self.layer = 0

    def pick(self, options, weights=None):
        if weights is None:
            return options[int(self.rng.integers(len(options)))]
        return options[int(self.rng.choice(len(options), p=np.asarray(weights) / sum(weights)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def width(self) -> int:
        return self.pick(_UNEVEN if self.chance(0.5) else _EVEN)

    def scope(self, kind: str) -> str:
        self.layer += 1
        return f"{kind}{self.layer}"

    def initializer(self):
        kind = self.pick(("glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "truncated",
                          "uniform", "variance_scaling"))
        return {"glorot_uniform": to.glorot_uniform_initializer(), "glorot_normal": to.glorot_normal_initializer(),
                "he_normal": to.he_normal(), "he_uniform": to.he_uniform(),
                "truncated": to.truncated_normal_initializer(stddev=0.3),
                "uniform": to.random_uniform_initializer(-0.3, 0.3),
                "variance_scaling": to.variance_scaling_initializer(1.0, "fan_avg", "uniform")}[kind]

    def bias(self, n: int) -> Tensor:
        init = to.constant_initializer(0.1) if self.chance(0.3) else to.random_normal_initializer(stddev=0.1)
        return to.get_variable("bias", [n], initializer=init)

    def activation(self, x: Tensor) -> Tensor:
        name = self.pick(tuple(_ACTIVATIONS))
        self.features.add(name)
        return _ACTIVATIONS[name](x)

    # -- feature blocks on [b, f] -----------------------------------------------------------
    def dense(self, h: Tensor, units: int, activation: bool = True, note: bool = True) -> Tensor:
        with to.variable_scope(self.scope("dense")):
            w = to.get_variable("kernel", [h.shape[-1], units], initializer=self.initializer())
            y = to.matmul(h, w)
            self.features.add("matmul")
            if self.chance(0.7):
                y = to.nn.bias_add(y, self.bias(units))
                self.features.add("bias_add")
            if activation:
                y = self.activation(y)
        if note:
            self.parts.append(f"dense({units})")
        return y

    def residual(self, h: Tensor) -> Tensor:
        y = self.dense(h, h.shape[-1], note=False)
        self.features.add("residual_add")
        self.parts.append(f"residual({h.shape[-1]})")
        return h + y

    def split_concat(self, h: Tensor) -> Tensor:
        f = h.shape[-1]
        if f % 2 == 0 and self.chance(0.5):
            a, b = to.split(h, 2, axis=1)
        else:
            cut = int(self.rng.integers(1, f))
            a, b = to.split(h, [cut, f - cut], axis=1)
        self.features.update({"split", "concat"})
        self.parts.append(f"split({a.shape[1]}+{b.shape[1]})+concat")
        return to.concat([self.activation(a), b * 0.5], axis=1)

    def _factored(self, h: Tensor) -> tuple[Tensor, int, int]:
        """``h`` projected to a width rows x cols, as [b, rows, cols]."""
        rows, cols = self.pick((2, 3, 4)), self.pick((2, 3, 4, 6))
        h = self.dense(h, rows * cols, note=False)
        self.features.add("reshape")
        return to.reshape(h, [h.shape[0], rows, cols]), rows, cols

    def reshape_transpose(self, h: Tensor) -> Tensor:
        x, rows, cols = self._factored(h)
        self.features.add("transpose")
        self.parts.append(f"reshape({rows}x{cols})+transpose")
        return to.reshape(to.transpose(x, [0, 2, 1]), [x.shape[0], rows * cols])

    def batch_matmul(self, h: Tensor) -> Tensor:
        x, rows, cols = self._factored(h)
        self.features.add("batch_matmul")
        if self.chance(0.5):  # against a rank-2 weight
            units = self.width()
            with to.variable_scope(self.scope("bmm")):
                w = to.get_variable("kernel", [cols, units], initializer=self.initializer())
            y = to.matmul(x, w)
            self.parts.append(f"batch_matmul([{rows},{cols}]x[{cols},{units}])")
            return to.reshape(y, [x.shape[0], rows * units])
        y = to.matmul(x, x, transpose_b=True)   # a Gram matrix per row
        self.parts.append(f"batch_matmul(gram {rows}x{rows})")
        return to.reshape(y, [x.shape[0], rows * rows])

    def layer_norm(self, h: Tensor) -> Tensor:
        self.features.update({"layer_norm", "reduce_mean"})
        self.parts.append("layer_norm")
        return to.contrib.layers.layer_norm(h, epsilon=1e-3, scope=self.scope("ln"))

    def reduction(self, h: Tensor) -> Tensor:
        if self.chance(0.5):
            self.features.add("reduce_mean")
            self.parts.append("centre(reduce_mean)")
            return h - to.reduce_mean(h, axis=1, keepdims=True)
        self.features.update({"reduce_sum", "sigmoid"})
        self.parts.append("gate(reduce_sum)")
        return h * to.sigmoid(to.reduce_sum(h, axis=1, keepdims=True) * 0.1)

    # -- sequence blocks on [b, s, e] -------------------------------------------------------
    def attention(self, x: Tensor) -> Tensor:
        b, s, e = x.shape
        heads = 2 if e % 2 == 0 and self.chance(0.6) else 1
        with to.variable_scope(self.scope("attention")):
            w = to.get_variable("qkv", [e, 3 * e], initializer=self.initializer())
        qkv = to.reshape(to.matmul(to.reshape(x, [b * s, e]), w), [b, s, 3 * e])
        q, k, v = to.split(qkv, 3, axis=2)

        def split_heads(t):
            return to.transpose(to.reshape(t, [b, s, heads, e // heads]), [0, 2, 1, 3])

        scores = to.matmul(split_heads(q), split_heads(k), transpose_b=True) * (1.0 / math.sqrt(e // heads))
        context = to.matmul(to.nn.softmax(scores), split_heads(v))
        context = to.reshape(to.transpose(context, [0, 2, 1, 3]), [b, s, e])
        self.features.update({"softmax_attention", "batch_matmul", "matmul", "split", "reshape",
                              "transpose", "residual_add"})
        self.parts.append(f"attention({heads} head{'s' if heads > 1 else ''})")
        return x + context

    def lstm(self, x: Tensor) -> tuple[Tensor, Tensor]:
        units = self.width()
        cell = to.nn.rnn_cell.LSTMCell(units)
        outputs, state = to.nn.dynamic_rnn(cell, x, dtype=to.float32, scope=self.scope("rnn"))
        self.features.add("lstm")
        self.parts.append(f"lstm({units})")
        return outputs, state.h

    def position_dense(self, x: Tensor) -> Tensor:
        b, s, e = x.shape
        units = self.width()
        y = self.dense(to.reshape(x, [b * s, e]), units, note=False)
        self.features.add("reshape")
        self.parts.append(f"position_dense({units})")
        return to.reshape(y, [b, s, units])

    def to_features(self, x: Tensor, last_h: Tensor | None) -> Tensor:
        b, s, e = x.shape
        choice = self.pick(("mean", "sum", "flatten", "state") if last_h is not None else
                           ("mean", "sum", "flatten"))
        self.parts.append({"mean": "reduce_mean(seq)", "sum": "reduce_sum(seq)", "flatten": "flatten",
                           "state": "last_state"}[choice])
        if choice == "mean":
            self.features.add("reduce_mean")
            return to.reduce_mean(x, axis=1)
        if choice == "sum":
            self.features.add("reduce_sum")
            return to.reduce_sum(x, axis=1) * (1.0 / s)
        if choice == "flatten":
            self.features.add("reshape")
            return to.reshape(x, [b, s * e])
        return last_h

    def sequence_blocks(self, x: Tensor, lstm_first: bool) -> Tensor:
        last_h = None
        if lstm_first:
            x, last_h = self.lstm(x)
        kinds = ("attention", "lstm", "layer_norm", "position_dense")
        for i in range(self.pick((1, 2), (3, 1))):
            block = kinds[self.focus % len(kinds)] if i == 0 else self.pick(kinds, (4, 2, 2, 2))
            if block == "attention":
                x = self.attention(x)
            elif block == "lstm":
                x, last_h = self.lstm(x)
            elif block == "layer_norm":
                x = self.layer_norm(x)
            else:
                x = self.position_dense(x)
                last_h = None
        return self.to_features(x, last_h)

    # -- stems --------------------------------------------------------------------------------
    def image_stem(self, images: Tensor) -> Tensor:
        h = images
        for i in range(int(self.rng.integers(1, 3))):
            filters, k = self.width(), self.pick((1, 3))
            with to.variable_scope(self.scope("conv")):
                w = to.get_variable("kernel", [k, k, h.shape[-1], filters], initializer=self.initializer())
                h = to.nn.conv2d(h, w, strides=1, padding="SAME")
                if self.chance(0.6):
                    h = to.nn.bias_add(h, self.bias(filters))
                    self.features.add("bias_add")
            h = self.activation(h)
            self.features.add("conv2d")
            pools = ("max", "avg", "none")
            pool = pools[self.focus % 3] if i == 0 else self.pick(pools)
            pool = pool if h.shape[1] >= 2 else "none"
            if pool != "none":
                h = (to.nn.max_pool2d if pool == "max" else to.nn.avg_pool2d)(h, 2, 2, "VALID")
                self.features.add(f"{pool}_pool")
            self.parts.append(f"conv{k}x{k}({filters})" + ("" if pool == "none" else f"+{pool}_pool"))
        if self.chance(0.5):
            self.features.add("reduce_mean")
            self.parts.append("reduce_mean(hw)")
            return to.reduce_mean(h, axis=[1, 2])
        self.features.add("reshape")
        self.parts.append("flatten")
        b, hh, ww, c = h.shape
        return to.reshape(h, [b, hh * ww * c])


def generate_model(seed: int, batch: int | None = None, optimizer: str | None = None) -> GeneratedModel:
    """Records generated model ``seed`` into the current default graph.

    Args:
        seed: any non-negative int; the same seed gives the same model.
        batch: the batch size; default drawn from 4, 6, 8, 12 (6 divides 4 ranks unevenly).
        optimizer: "sgd", "momentum" or "adam"; default drawn from the seed.

    Raises:
        ValueError: for a negative seed, a batch < 1 or an unknown optimizer.
    """
    if seed < 0:
        raise ValueError(f"generate_model: seed {seed} must be >= 0")
    if batch is not None and batch < 1:
        raise ValueError(f"generate_model: batch {batch} must be >= 1")
    g = _Builder(seed)
    drawn_batch, drawn_optimizer = g.pick((4, 6, 8, 12)), g.pick(_OPTIMIZERS, (2, 1, 1))
    b, optimizer = batch or drawn_batch, optimizer or drawn_optimizer
    if optimizer not in _OPTIMIZERS:
        raise ValueError(f"generate_model: optimizer {optimizer!r}; choose one of {', '.join(_OPTIMIZERS)}")
    stem = STEMS[seed % len(STEMS)]
    inputs, ranges = {}, {}
    if stem == "dense":
        d = g.width()
        h = inputs["x"] = to.placeholder(to.float32, [b, d], name="x")
        g.parts.append(f"x[{b},{d}]")
    elif stem == "image":
        size, c = g.pick((4, 6)), g.pick((2, 3, 4))
        images = inputs["images"] = to.placeholder(to.float32, [b, size, size, c], name="images")
        g.parts.append(f"images[{b},{size},{size},{c}]")
        h = g.image_stem(images)
    elif stem == "tokens":
        s, vocab, e = g.pick((2, 3, 4)), g.pick((7, 10, 12)), g.pick((4, 6, 8))
        ids = inputs["tokens"] = to.placeholder(to.int32, [b, s], name="tokens")
        ranges["tokens"] = IntRange(0, vocab)
        table = to.get_variable("embedding", [vocab, e], initializer=to.random_normal_initializer(stddev=0.5))
        g.features.add("embedding_lookup")
        g.parts.append(f"tokens[{b},{s}] -> embedding({vocab}x{e})")
        h = g.sequence_blocks(to.nn.embedding_lookup(table, ids), lstm_first=False)
    else:
        t, d = g.pick((2, 3), (3, 1)), g.pick((3, 4, 6))
        seq = inputs["sequence"] = to.placeholder(to.float32, [b, t, d], name="sequence")
        g.parts.append(f"sequence[{b},{t},{d}]")
        h = g.sequence_blocks(seq, lstm_first=True)
    blocks = (lambda x: g.dense(x, g.width()), g.residual, g.split_concat, g.reshape_transpose, g.batch_matmul, g.layer_norm,
              g.reduction)
    for i in range(g.pick((1, 2, 3), (1, 2, 1)) if stem == "dense" else g.pick((1, 2), (2, 1))):
        h = (blocks[g.focus % len(blocks)] if i == 0 else g.pick(blocks))(h)
    classes = g.pick((3, 5, 6, 8))
    logits = g.dense(h, classes, activation=False, note=False)
    labels = inputs["labels"] = to.placeholder(to.int32, [b], name="labels")
    ranges["labels"] = IntRange(0, classes)
    g.parts.append(f"logits({classes}) -> xent, {optimizer}")
    loss = L.sparse_xent_loss(logits, labels)
    spec = L.finish(loss, inputs, optimizer, _LEARNING_RATES[optimizer], logits=logits, int_ranges=ranges)
    spec.name, spec.params = "generated", {"seed": seed, "batch": b, "optimizer": optimizer}
    graph = to.get_default_graph()
    if any(n > 1 and n % 4 for op in graph.operations for n in op.space.dims.values()):
        g.features.add("uneven")
    return GeneratedModel(seed, spec, " -> ".join(g.parts), frozenset(g.features))
