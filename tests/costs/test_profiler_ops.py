"""Every compute op kind of the zoo profiles on a split configuration; int inputs are valid."""

from __future__ import annotations

import importlib

import pytest

import tensoropt as to
from tensoropt.configs import Config, enumerate_configs
from tensoropt.costs.profiler import SOURCE_KINDS, ComputeProfiler, int_input_ranges, local_shard

ZOO_KINDS = {
    "matmul", "conv2d", "max_pool2d", "avg_pool2d", "bias_add", "relu", "gelu", "tanh", "sigmoid",
    "add", "subtract", "multiply", "divide", "maximum", "exp", "log", "sqrt", "rsqrt", "square",
    "negative", "identity", "dropout", "softmax", "log_softmax", "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits", "embedding_lookup", "reshape", "transpose", "concat",
    "split", "lstm", "reduce_sum", "reduce_mean",
}


def build_all_kinds():
    """Records one op of every compute kind; returns the default graph."""
    b = 8
    img = to.placeholder(to.float32, [b, 12, 12, 4], name="img")
    f = to.get_variable("filters", [3, 3, 4, 8])
    conv = to.nn.conv2d(img, f, strides=1, padding="SAME")
    mp = to.nn.max_pool2d(conv, ksize=2, strides=2, padding="VALID")
    ap = to.nn.avg_pool2d(mp, ksize=2, strides=2, padding="SAME")
    flat = to.reshape(ap, [b, -1])                                   # [8, 72]
    w = to.get_variable("w", [72, 16])
    bias = to.get_variable("bias", [16], initializer=to.zeros_initializer())
    h = to.nn.bias_add(to.matmul(flat, w), bias)
    h = to.nn.relu(h)
    h = to.nn.gelu(h)
    h = to.tanh(h) + to.sigmoid(h)
    h = to.subtract(h, to.exp(h)) * 0.5
    h = to.divide(to.maximum(h, to.square(h)), to.sqrt(to.rsqrt(to.exp(h))))
    h = to.identity(to.negative(to.log(to.exp(h))))
    h = to.nn.dropout(h, rate=0.1)
    h = to.contrib.layers.layer_norm(h)                              # moments: reduce_mean etc.
    t = to.transpose(h)                                              # [16, 8]
    parts = to.split(t, 2, axis=0)                                   # 2 x [8, 8]
    cat = to.concat(parts, axis=1)                                   # [8, 16]
    s = to.reduce_sum(cat, axis=1, keepdims=True)
    logits = cat + s
    probs = to.nn.softmax(logits)
    logp = to.nn.log_softmax(logits)
    labels = to.placeholder(to.int32, [b], name="labels")
    dense = to.placeholder(to.float32, [b, 16], name="dense_labels")
    sparse_ce = to.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    dense_ce = to.nn.softmax_cross_entropy_with_logits(labels=dense, logits=probs + logp)
    ids = to.placeholder(to.int32, [b, 6], name="ids")
    table = to.get_variable("table", [64, 12])
    emb = to.nn.embedding_lookup(table, ids)                         # [8, 6, 12]
    cell = to.nn.rnn_cell.LSTMCell(8)
    seq, _ = to.nn.dynamic_rnn(cell, emb, dtype=to.float32)          # [8, 6, 8]
    to.reduce_mean(seq) + to.reduce_mean(sparse_ce + dense_ce)
    return to.get_default_graph()


def fast_profiler() -> ComputeProfiler:
    return ComputeProfiler(cache_path=None, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)


def split_config(op, num_devices: int = 4) -> Config | None:
    """The first configuration that divides the op's work (None for scalar ops)."""
    for config in enumerate_configs(op, num_devices):
        if config.split_factor() > 1:
            return config
    return None


def test_every_zoo_kind_profiles_on_a_split_config():
    graph = build_all_kinds()
    p = fast_profiler()
    seen = set()
    for op in graph.operations:
        if op.kind in SOURCE_KINDS:
            continue
        config = split_config(op)
        if config is None:  # e.g. an add of two scalars: profiled unsplit
            config = enumerate_configs(op, 4)[0]
        else:
            seen.add(op.kind)
        before = p.measurements + p.hits
        seconds = p.compute_s(op, config)
        assert seconds >= 0.0 and p.measurements + p.hits == before + 1, (op.name, str(config))
    assert ZOO_KINDS <= seen, f"not profiled on a split config: {sorted(ZOO_KINDS - seen)}"


def _embedding():
    ids = to.placeholder(to.int32, [8, 6], name="ids")
    table = to.get_variable("table", [64, 12])
    return to.nn.embedding_lookup(table, ids).op


def _sparse_ce():
    labels = to.placeholder(to.int32, [8], name="labels")
    logits = to.placeholder(to.float32, [8, 10], name="logits")
    return to.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits).op


def test_int_ranges_follow_the_other_inputs():
    assert int_input_ranges(_embedding()) == (None, 64)       # ids below the full vocabulary
    assert int_input_ranges(_sparse_ce()) == (10, None)       # labels below the class count


@pytest.mark.parametrize("config", [Config((1,), (None,)), Config((4,), ("v",)), Config((2,), ("i0",)),
                                    Config((2, 2), ("v", "e"))])
def test_embedding_profiles(config):
    op = _embedding()
    p = fast_profiler()
    assert p.compute_s(op, config) >= 0.0 and p.measurements == 1


@pytest.mark.parametrize("config", [Config((1,), (None,)), Config((4,), ("d0",))])
def test_sparse_cross_entropy_profiles(config):
    op = _sparse_ce()
    p = fast_profiler()
    assert p.compute_s(op, config) >= 0.0 and p.measurements == 1


def test_out_of_range_ints_would_fail(monkeypatch):
    """The valid ranges matter: with ids far beyond the vocabulary TensorFlow refuses."""
    shard_module = importlib.import_module("tensoropt.costs.profiler._shard")
    monkeypatch.setattr(shard_module, "int_input_ranges", lambda op: (None, 1 << 20))
    with pytest.raises(Exception, match="(?i)indices|out of range|not in"):
        fast_profiler().compute_s(_embedding(), Config((1,), (None,)))


def test_lstm_with_split_hidden_profiles():
    x = to.placeholder(to.float32, [4, 3, 8])
    seq, _ = to.nn.dynamic_rnn(to.nn.rnn_cell.LSTMCell(8), x, dtype=to.float32)
    op = seq.op
    p = fast_profiler()
    for config in (Config((2,), ("h",)), Config((2, 2), ("b", "h"))):
        shard = local_shard(op, config)
        assert shard.split_dims and "h" in shard.split_dims
        assert p.compute_s(op, config) >= 0.0
    assert p.measurements == 2
