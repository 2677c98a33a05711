"""Transformers (pre-layer-norm, as in PaSE's graph): token embeddings plus learned
position embeddings, ``encoder_layers`` encoder layers and optionally ``decoder_layers``
decoder layers, a final layer norm, a projection to the vocabulary and softmax
cross-entropy.

Registered models sharing :func:`transformer_model`: ``transformer`` (encoder only, small
sizes), ``pase_transformer`` (PaSE's benchmark), ``paper_transformer`` (the TensorOpt
paper's Table 1 Transformer) and ``paper_transformer_s`` (its Table 4 "Transformer-S").

Matmuls recorded: per attention 6 (q, k, v and output projections, scores, weighted sum);
per feed-forward block 2; plus 1 for the vocabulary projection. An encoder layer has 8, a
decoder layer 14 (self-attention, cross-attention, feed-forward). Decoder self-attention
is unmasked, as in PaSE's graph: a causal mask changes values, not shapes or costs.

Usage::

    spec = models.build("pase_transformer", size="paper")
"""

from __future__ import annotations

import math

import tensoropt as to
from tensoropt.graph import Tensor
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec, register

__all__ = ["transformer_model", "attention", "transformer", "pase_transformer",
           "paper_transformer", "paper_transformer_s", "matmul_count"]


SEQ_PAPER = 24  # see paper_transformer


def matmul_count(encoder_layers: int, decoder_layers: int) -> int:
    """The number of matmul ops :func:`transformer_model` records."""
    return 8 * encoder_layers + 14 * decoder_layers + 1


def attention(query: Tensor, memory: Tensor, heads: int, name: str) -> Tensor:
    """Multi-head scaled dot-product attention of ``query`` [b, s, d] over ``memory`` [b, m, d]."""
    b, s, d = query.shape
    m = memory.shape[1]
    if d % heads:
        raise ValueError(f"attention {name}: d_model {d} is not divisible by heads {heads}")
    dk = d // heads

    def split_heads(x: Tensor, length: int) -> Tensor:       # [b, l, d] -> [b, h, l, dk]
        return to.transpose(to.reshape(x, [b, length, heads, dk]), [0, 2, 1, 3])

    with to.variable_scope(name):
        q = split_heads(L.dense(query, d, "q"), s)
        k = split_heads(L.dense(memory, d, "k"), m)
        v = split_heads(L.dense(memory, d, "v"), m)
        scores = to.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(dk))   # [b, h, s, m]
        context = to.matmul(to.nn.softmax(scores), v)                          # [b, h, s, dk]
        context = to.reshape(to.transpose(context, [0, 2, 1, 3]), [b, s, d])
        return L.dense(context, d, "out")


def _self_attention(x: Tensor, heads: int) -> Tensor:
    normed = to.contrib.layers.layer_norm(x, scope="ln1")
    return attention(normed, normed, heads, "self")


def _feed_forward(x: Tensor, d_ff: int, name: str) -> Tensor:
    with to.variable_scope(name):
        return L.dense(L.dense(x, d_ff, "fc1", activation=to.nn.relu), x.shape[-1], "fc2")


def _embed(ids: Tensor, vocab: int, d_model: int, name: str) -> Tensor:
    with to.variable_scope(name):
        table = to.get_variable("embedding", [vocab, d_model],
                                initializer=to.random_normal_initializer(stddev=d_model ** -0.5))
        positions = to.get_variable("positions", [ids.shape[1], d_model],
                                    initializer=to.random_normal_initializer(stddev=0.02))
        return to.nn.embedding_lookup(table, ids) * math.sqrt(d_model) + positions


def transformer_model(batch: int, seq: int, vocab: int, d_model: int, heads: int, d_ff: int,
                      encoder_layers: int, decoder_layers: int, *, optimizer: str = "adam",
                      learning_rate: float = 1e-3) -> ModelSpec:
    """Records the Transformer and returns its ModelSpec.

    With ``decoder_layers == 0`` it is an encoder-only token classifier: inputs ``tokens``
    and ``targets`` [batch, seq] int32. Otherwise an encoder-decoder: inputs ``source``,
    ``target_in`` and ``targets`` [batch, seq] int32; separate source and target
    embeddings. All ids lie in [0, vocab).

    Parameters: embeddings [vocab, d_model] (one or two) and positions [seq, d_model];
    per encoder layer 4 d_model^2 + 2 d_model d_ff (+ biases and 2 layer norms); per
    decoder layer 8 d_model^2 + 2 d_model d_ff (+ biases and 3 layer norms); vocabulary
    projection [d_model, vocab] + bias.
    """
    ids = IntRange(0, vocab)
    if decoder_layers:
        source = to.placeholder(to.int32, [batch, seq], name="source")
        target_in = to.placeholder(to.int32, [batch, seq], name="target_in")
        inputs = {"source": source, "target_in": target_in}
    else:
        source = to.placeholder(to.int32, [batch, seq], name="tokens")
        inputs = {"tokens": source}
    targets = to.placeholder(to.int32, [batch, seq], name="targets")
    inputs["targets"] = targets

    x = _embed(source, vocab, d_model, "encoder_embed")
    for i in range(encoder_layers):
        with to.variable_scope(f"encoder{i}"):
            x = x + _self_attention(x, heads)
            x = x + _feed_forward(to.contrib.layers.layer_norm(x, scope="ln2"), d_ff, "ffn")
    x = to.contrib.layers.layer_norm(x, scope="encoder_norm")

    if decoder_layers:
        memory = x
        y = _embed(target_in, vocab, d_model, "decoder_embed")
        for i in range(decoder_layers):
            with to.variable_scope(f"decoder{i}"):
                y = y + _self_attention(y, heads)
                y = y + attention(to.contrib.layers.layer_norm(y, scope="ln2"), memory, heads, "cross")
                y = y + _feed_forward(to.contrib.layers.layer_norm(y, scope="ln3"), d_ff, "ffn")
        x = to.contrib.layers.layer_norm(y, scope="decoder_norm")

    logits = L.dense(x, vocab, "vocab_projection")                       # [b, s, vocab]
    loss = L.sparse_xent_loss(logits, targets)
    return L.finish(loss, inputs, optimizer, learning_rate, logits=logits,
                    int_ranges={k: ids for k in inputs})


@register("transformer", presets={
    "paper": dict(batch=256, seq=128, vocab=32768, d_model=1024, heads=16, d_ff=4096, layers=12),
    "small": dict(batch=16, seq=64, vocab=8000, d_model=256, heads=4, d_ff=1024, layers=4),
    "tiny": dict(batch=4, seq=8, vocab=48, d_model=16, heads=2, d_ff=32, layers=2),
})
def transformer(*, batch: int = 16, seq: int = 64, vocab: int = 8000, d_model: int = 256, heads: int = 4,
                d_ff: int = 1024, layers: int = 4, optimizer: str = "adam",
                learning_rate: float = 1e-3) -> ModelSpec:
    """Encoder-only Transformer family: ``layers`` pre-LN encoder layers, then a per-token
    vocabulary softmax. Inputs ``tokens``/``targets`` [batch, seq] int32 in [0, vocab)."""
    return transformer_model(batch, seq, vocab, d_model, heads, d_ff, layers, 0, optimizer=optimizer,
                             learning_rate=learning_rate)


@register("pase_transformer", presets={
    "paper": dict(batch=64, seq=256, vocab=50000, d_model=512, heads=8, d_ff=2048,
                  encoder_layers=6, decoder_layers=6),
    "tiny": dict(batch=4, seq=8, vocab=64, d_model=16, heads=2, d_ff=32, encoder_layers=2,
                 decoder_layers=2),
})
def pase_transformer(*, batch: int = 64, seq: int = 256, vocab: int = 50000, d_model: int = 512,
                     heads: int = 8, d_ff: int = 2048, encoder_layers: int = 6,
                     decoder_layers: int = 6, optimizer: str = "adam",
                     learning_rate: float = 1e-3) -> ModelSpec:
    """PaSE's Transformer benchmark: batch 64, sequence 256, vocabulary 50k, d_model 512,
    8 heads, d_ff 2048, 6 encoder + 6 decoder layers (121M parameters, 0.45 GiB: two
    25.6M embeddings, a 25.6M vocabulary projection, 44M in the layers)."""
    return transformer_model(batch, seq, vocab, d_model, heads, d_ff, encoder_layers,
                             decoder_layers, optimizer=optimizer, learning_rate=learning_rate)


@register("paper_transformer", presets={
    "paper": dict(batch=256, seq=SEQ_PAPER, vocab=32768, d_model=2048, heads=16, d_ff=8192,
                  encoder_layers=20, decoder_layers=20),
    "small": dict(batch=16, seq=32, vocab=4096, d_model=256, heads=4, d_ff=1024,
                  encoder_layers=4, decoder_layers=4),
    "tiny": dict(batch=4, seq=8, vocab=64, d_model=16, heads=2, d_ff=32, encoder_layers=2,
                 decoder_layers=2),
})
def paper_transformer(*, batch: int = 256, seq: int = SEQ_PAPER, vocab: int = 32768, d_model: int = 2048,
                      heads: int = 16, d_ff: int = 8192, encoder_layers: int = 20,
                      decoder_layers: int = 20, optimizer: str = "adam",
                      learning_rate: float = 1e-3) -> ModelSpec:
    """TensorOpt Table 1 "Transformer" (9.7 GB of parameters; GB read as GiB, 2**30 bytes).

    The paper gives no widths. Chosen: an encoder-decoder with 20 encoder + 20 decoder
    layers, d_model 2048, 16 heads (d_k 128), d_ff 8192, vocabulary 32768, batch 256,
    sequence 24. Parameters: 2.552G = 10.21e9 bytes = 9.51 GiB (-2.0% of 9.7). Layers
    hold 2.35G (encoder layer 50.4M, decoder layer 67.2M), the two embeddings and the
    vocabulary projection 0.2G. The sequence length (24) is chosen so that parameters
    plus saved activations (67.2 GiB by ``graph_stats``), 76.7 GiB, come near the paper's
    74 GB single-GPU memory estimate.
    """
    return transformer_model(batch, seq, vocab, d_model, heads, d_ff, encoder_layers,
                             decoder_layers, optimizer=optimizer, learning_rate=learning_rate)


@register("paper_transformer_s", presets={
    "paper": dict(batch=256, seq=SEQ_PAPER, vocab=32768, d_model=2048, heads=16, d_ff=8192,
                  encoder_layers=9, decoder_layers=9),
    "tiny": dict(batch=4, seq=8, vocab=64, d_model=16, heads=2, d_ff=32, encoder_layers=1,
                 decoder_layers=1),
})
def paper_transformer_s(*, batch: int = 256, seq: int = SEQ_PAPER, vocab: int = 32768,
                        d_model: int = 2048, heads: int = 16, d_ff: int = 8192,
                        encoder_layers: int = 9, decoder_layers: int = 9, optimizer: str = "adam",
                        learning_rate: float = 1e-3) -> ModelSpec:
    """TensorOpt Table 4 "Transformer-S" (4.8 GB of parameters; GB read as GiB).

    The paper_transformer with fewer layers: 9 encoder + 9 decoder layers, d_model 2048,
    16 heads, d_ff 8192, vocabulary 32768, batch 256, sequence 24. Parameters:
    1.259G = 5.04e9 bytes = 4.69 GiB (-2.3% of 4.8).
    """
    return transformer_model(batch, seq, vocab, d_model, heads, d_ff, encoder_layers,
                             decoder_layers, optimizer=optimizer, learning_rate=learning_rate)
