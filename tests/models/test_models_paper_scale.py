"""Every model records at paper (or PaSE) scale with the right sizes and structure.

Recording creates no TensorFlow object, so these tests build the full-size graphs. How
long recording takes is a benchmark: ``python -m tensoropt.bench timings``.
"""

from __future__ import annotations

from collections import Counter

import pytest

import tensoropt as to
from tensoropt import models
from tensoropt.models import inception, resnet, transformer
from tensoropt.stats import graph_stats

GIB = 2 ** 30


def build(name, **overrides):
    spec = models.build(name, size="paper", **overrides)
    graph = to.get_default_graph()
    return spec, graph, graph_stats(graph), Counter(op.kind for op in graph.operations)


@pytest.mark.parametrize("name", models.names())
def test_every_model_records_at_paper_size(name):
    spec, graph, stats, _ = build(name)
    assert stats.param_bytes > 0 and stats.saved_activation_bytes > 0 and stats.flops > 0
    assert spec.loss.shape == () and graph.train_steps == [spec.train_op]
    assert set(spec.inputs.values()) == {op.outputs[0] for op in graph.operations
                                         if op.kind == "placeholder"}


@pytest.mark.parametrize("name, target_gib", sorted(models.TABLE1_PARAM_GIB.items()))
def test_table1_parameter_sizes_within_10_percent(name, target_gib):
    spec, _, stats, _ = build(name)
    assert spec.params["batch"] == 256
    gib = stats.param_bytes / GIB
    assert abs(gib / target_gib - 1) <= 0.10, f"{name}: {gib:.3f} GiB vs {target_gib} GiB"


@pytest.mark.parametrize("name, target", sorted(models.TABLE1_PARAM_GIB.items()))
def test_table1_sizes_hold_in_decimal_gigabytes_too(name, target):
    """The unit is ambiguous in the paper; the chosen widths are within 10% either way."""
    _, _, stats, _ = build(name)
    assert abs(stats.param_bytes / 1e9 / target - 1) <= 0.10


def test_table1_targets_are_the_papers():
    assert models.TABLE1_PARAM_GIB == {"paper_rnn": 108.0, "paper_wide_resnet": 7.3,
                                       "paper_transformer": 9.7, "paper_vgg16": 0.52,
                                       "paper_transformer_s": 4.8}


@pytest.mark.parametrize("name, batch", sorted(models.PASE_BENCHMARKS.items()))
def test_pase_benchmarks_use_pase_batch_sizes(name, batch):
    spec, *_ = build(name)
    assert spec.params["batch"] == batch
    assert all(t.shape[0] == batch for t in spec.inputs.values())


def test_vgg16_is_the_standard_138m_parameter_network():
    spec, graph, stats, kinds = build("paper_vgg16")
    assert stats.param_count == 138_357_544
    assert kinds["conv2d"] == 13 and kinds["max_pool2d"] == 5 and kinds["matmul"] == 3
    assert tuple(spec.inputs["images"].shape) == (256, 224, 224, 3)
    assert tuple(spec.logits.shape) == (256, 1000)


def test_paper_rnn_is_13_fused_lstm_layers_of_16384():
    spec, graph, stats, kinds = build("paper_rnn")
    lstms = [op for op in graph.operations if op.kind == "lstm"]
    assert len(lstms) == 13
    assert all(tuple(op.outputs[0].shape) == (256, 11, 16384) for op in lstms)
    assert tuple(spec.logits.shape) == (256, 11, 32768)


def test_wide_resnet_structure():
    spec, graph, stats, kinds = build("paper_wide_resnet")
    assert kinds["conv2d"] == resnet.wrn_conv_count(28) == 28
    widths = sorted({op.outputs[0].shape[-1] for op in graph.operations if op.kind == "conv2d"})
    assert widths == [16, 16 * 73, 32 * 73, 64 * 73]


def test_resnet101_has_104_convs_each_with_batch_norm():
    spec, graph, stats, kinds = build("resnet101")
    assert kinds["conv2d"] == resnet.resnet_conv_count((3, 4, 23, 3)) == 104
    assert kinds["rsqrt"] == 104                     # one batch_normalization per conv
    assert kinds["matmul"] == 1
    assert tuple(spec.inputs["images"].shape) == (128, 227, 227, 3)
    assert tuple(spec.logits.shape) == (128, 1000)
    assert 40e6 < stats.param_count < 48e6           # torchvision: 44.5M


def test_inception_v3_structure_and_vertex_count():
    spec, graph, stats, kinds = build("inception_v3")
    assert kinds["conv2d"] == inception.CONVS == 94
    assert kinds["rsqrt"] == 94
    assert kinds["max_pool2d"] + kinds["avg_pool2d"] == inception.POOLS == 13
    assert kinds["concat"] == inception.CONCATS == 15
    vertices = inception.pase_vertex_count(kinds["conv2d"], kinds["max_pool2d"] + kinds["avg_pool2d"],
                                           kinds["concat"])
    assert 210 <= vertices <= 230                    # PaSE: about 218
    last = [op for op in graph.operations if op.kind == "concat"][-1]
    assert tuple(last.outputs[0].shape) == (128, 8, 8, 2048)
    assert 22e6 < stats.param_count < 26e6           # torchvision without aux head: 23.8M


def test_alexnet_matches_pase():
    spec, graph, stats, kinds = build("alexnet")
    assert kinds["conv2d"] == 5 and kinds["max_pool2d"] == 3 and kinds["matmul"] == 3
    fc6 = next(v for v in graph.trainable_variables if v.name == "fc6/kernel:0")
    assert tuple(fc6.shape) == (9216, 4096)
    assert tuple(spec.logits.shape) == (128, 1024)


def test_rnnlm_matches_pase():
    spec, graph, stats, kinds = build("rnnlm")
    lstms = [op for op in graph.operations if op.kind == "lstm"]
    assert len(lstms) == 2 and all(op.outputs[0].shape[-1] == 2048 for op in lstms)
    assert tuple(spec.inputs["tokens"].shape) == (64, 256)
    assert tuple(spec.logits.shape) == (64, 256, 100_000)
    assert kinds["embedding_lookup"] == 1


@pytest.mark.parametrize("name, enc, dec", [
    ("pase_transformer", 6, 6), ("paper_transformer", 20, 20), ("paper_transformer_s", 9, 9),
    ("transformer", 12, 0),
])
def test_transformers_have_the_expected_matmuls_and_softmaxes(name, enc, dec):
    spec, graph, stats, kinds = build(name)
    assert kinds["matmul"] == transformer.matmul_count(enc, dec) == 8 * enc + 14 * dec + 1
    assert kinds["softmax"] == enc + 2 * dec          # one per attention
    d_model = spec.params["d_model"]
    assert tuple(spec.logits.shape) == (spec.params["batch"], spec.params["seq"], spec.params["vocab"])
    scores = [op for op in graph.operations if op.kind == "softmax"]
    b, s, h = spec.params["batch"], spec.params["seq"], spec.params["heads"]
    assert all(tuple(op.outputs[0].shape) == (b, h, s, s) for op in scores)
    assert d_model % h == 0


def test_pase_transformer_shapes():
    spec, graph, stats, kinds = build("pase_transformer")
    p = spec.params
    assert (p["batch"], p["seq"], p["vocab"], p["d_model"], p["heads"], p["d_ff"]) == \
        (64, 256, 50_000, 512, 8, 2048)
    ffn = [v for v in graph.trainable_variables if v.name.endswith("ffn/fc1/kernel:0")]
    assert len(ffn) == 12 and all(tuple(v.shape) == (512, 2048) for v in ffn)
