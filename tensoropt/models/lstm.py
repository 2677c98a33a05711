"""LSTM language models: embedding -> stacked LSTM (one fused op per layer) -> vocabulary
projection -> softmax cross-entropy against the next tokens.

Three registered models share :func:`lstm_lm`: ``lstm`` (small sizes), ``rnnlm`` (PaSE's
RNNLM) and ``paper_rnn`` (the TensorOpt paper's Table 1 RNN).

Usage::

    spec = models.build("rnnlm", size="paper")     # PaSE: 2 x LSTM-2048, vocab 100k, seq 256
"""

from __future__ import annotations

import tensoropt as to
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec, register

__all__ = ["lstm_lm", "lstm", "rnnlm", "paper_rnn"]


def lstm_lm(batch: int, seq: int, vocab: int, embed: int, hidden: int, layers: int,
            optimizer: str = "adam", learning_rate: float = 1e-3) -> ModelSpec:
    """Records the LSTM language model and returns its ModelSpec.

    Parameters: embedding [vocab, embed]; per layer a kernel [in + hidden, 4 hidden] and a
    bias [4 hidden] (``in`` is ``embed`` for the first layer, ``hidden`` after); output
    projection [hidden, vocab] + bias [vocab].

    Inputs: ``tokens`` and ``targets``, both [batch, seq] int32 in [0, vocab).
    """
    tokens = to.placeholder(to.int32, [batch, seq], name="tokens")
    targets = to.placeholder(to.int32, [batch, seq], name="targets")
    embedding = to.get_variable("embedding", [vocab, embed],
                                initializer=to.random_uniform_initializer(-0.05, 0.05))
    x = to.nn.embedding_lookup(embedding, tokens)                        # [b, t, embed]
    cells = [to.nn.rnn_cell.LSTMCell(hidden) for _ in range(layers)]
    cell = to.nn.rnn_cell.MultiRNNCell(cells) if layers > 1 else cells[0]
    outputs, _ = to.nn.dynamic_rnn(cell, x, dtype=to.float32)            # [b, t, hidden]
    logits = L.dense(outputs, vocab, "softmax")                          # [b, t, vocab]
    loss = L.sparse_xent_loss(logits, targets)
    ids = IntRange(0, vocab)
    return L.finish(loss, {"tokens": tokens, "targets": targets}, optimizer, learning_rate,
                    logits=logits, int_ranges={"tokens": ids, "targets": ids})


@register("lstm", presets={
    "paper": dict(batch=256, seq=64, vocab=32768, embed=1024, hidden=1024, layers=2),
    "small": dict(batch=32, seq=32, vocab=10000, embed=256, hidden=256, layers=2),
    "tiny": dict(batch=4, seq=6, vocab=48, embed=16, hidden=16, layers=2),
})
def lstm(batch: int = 32, seq: int = 32, vocab: int = 10000, embed: int = 256, hidden: int = 256,
         layers: int = 2, optimizer: str = "adam", learning_rate: float = 1e-3) -> ModelSpec:
    """LSTM language model family (embedding, ``layers`` LSTMs of ``hidden`` units, vocabulary
    softmax). Inputs ``tokens``/``targets`` [batch, seq] int32 in [0, vocab)."""
    return lstm_lm(batch, seq, vocab, embed, hidden, layers, optimizer, learning_rate)


@register("rnnlm", presets={
    "paper": dict(batch=64, seq=256, vocab=100000, embed=2048, hidden=2048, layers=2),
    "tiny": dict(batch=4, seq=6, vocab=64, embed=16, hidden=16, layers=2),
})
def rnnlm(batch: int = 64, seq: int = 256, vocab: int = 100000, embed: int = 2048,
          hidden: int = 2048, layers: int = 2, optimizer: str = "adam",
          learning_rate: float = 1e-3) -> ModelSpec:
    """PaSE's RNNLM benchmark: batch 64, 2-layer LSTM with hidden 2048, vocabulary 100k,
    sequence 256, embedding 2048, then an output projection to the vocabulary with softmax
    cross-entropy. About 477M parameters (1.78 GiB): embedding and projection 2 x 204.8M,
    LSTM kernels 2 x 33.6M."""
    return lstm_lm(batch, seq, vocab, embed, hidden, layers, optimizer, learning_rate)


@register("paper_rnn", presets={
    "paper": dict(batch=256, seq=11, vocab=32768, embed=16384, hidden=16384, layers=13),
    "small": dict(batch=32, seq=10, vocab=4096, embed=1024, hidden=1024, layers=4),
    "tiny": dict(batch=4, seq=5, vocab=32, embed=16, hidden=16, layers=3),
})
def paper_rnn(batch: int = 256, seq: int = 11, vocab: int = 32768, embed: int = 16384,
              hidden: int = 16384, layers: int = 13, optimizer: str = "adam",
              learning_rate: float = 1e-3) -> ModelSpec:
    """TensorOpt Table 1 "RNN" (108 GB of parameters; GB read as GiB, 2**30 bytes).

    The paper gives no widths. Chosen: 13 LSTM layers of 16384 hidden units, embedding
    16384, vocabulary 32768, batch 256, sequence 11. Parameters (float32): 13 LSTM kernels
    [32768, 65536] + biases = 27.92G, embedding 0.537G, output projection 0.537G: 28.99G
    parameters = 115.97e9 bytes = 108.0 GiB (+0.0%). The sequence length (11) is chosen so
    that parameters plus saved activations (18.2 GiB by ``graph_stats``), 126.2 GiB, match
    the paper's 126 GB single-GPU memory estimate. (For VGG16, whose shapes are fixed,
    parameters plus saved activations give 29.9 GiB against the paper's 30 GB, which
    supports reading that column this way.)
    """
    return lstm_lm(batch, seq, vocab, embed, hidden, layers, optimizer, learning_rate)
