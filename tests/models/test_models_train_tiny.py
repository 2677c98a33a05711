"""Every tiny model lowers and trains two steps on one process with a finite, changing loss.

For the mlp, cnn, transformers, ResNet101 and WideResNet, the first loss must also equal
a reference forward pass written independently (numpy, and TensorFlow eager for
convolutions and batch norm) from the same initial weights: the models compute what
their docstrings say. Each model is lowered once, to keep the suite fast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import tensoropt as to
from tensoropt import models

# Models whose first loss is checked against a reference below; the others are only trained.
REFERENCED = {"mlp", "cnn", "transformer", "pase_transformer", "resnet101", "paper_wide_resnet",
              "paper_vgg16", "alexnet", "inception_v3",   # test_models_reference_conv.py
              "lstm", "rnnlm", "paper_rnn"}   # the LSTMs: test_models_reference_rnn.py


@dataclass
class TinyRun:
    spec: models.ModelSpec
    weights: dict        # variable name (without ":0") -> initial value
    data: dict           # input name -> fed value
    losses: tuple        # loss before the first update, and after it


def train_tiny(name: str, **overrides) -> TinyRun:
    """Builds ``name`` at tiny size, lowers it, and runs two training steps on one feed."""
    to.reset_default_graph()
    spec = models.build(name, size="tiny", **overrides)
    plan = to.find_strategy()
    to.build_execution_graph(plan=plan)
    variables = to.get_default_graph().trainable_variables
    weights = dict(zip((v.name[:-2] for v in variables), to.run(variables)))
    feed = spec.feed(3)
    first, _ = to.run([spec.loss, spec.train_op], feed_dict=feed)
    second, _ = to.run([spec.loss, spec.train_op], feed_dict=feed)
    assert np.isfinite(first) and np.isfinite(second), (name, first, second)
    assert first != second, f"{name}: the loss did not change after one step ({first})"
    assert second < first + 1.0, f"{name}: loss jumped from {first} to {second}"
    return TinyRun(spec, weights, {k: feed[t] for k, t in spec.inputs.items()}, (first, second))


def lowered(name, **overrides):
    run = train_tiny(name, **overrides)
    return run.spec, run.weights, run.data, run.losses[0]


# InceptionV3's 1729 recorded ops make TensorFlow's Adam graph slow to build; plain SGD
# halves its lowering time and still shows that it trains.
OVERRIDES = {"inception_v3": dict(optimizer="sgd", learning_rate=0.01)}


@pytest.mark.parametrize("name", sorted(set(models.names()) - REFERENCED))
def test_tiny_model_trains_two_steps(name):
    train_tiny(name, **OVERRIDES.get(name, {}))


def test_every_model_is_trained_here():
    assert REFERENCED <= set(models.names())


def xent(logits, labels):
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, labels[..., None], -1).mean()


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_mlp_matches_numpy():
    spec, w, data, loss = lowered("mlp", hidden=(12, 9))
    h = data["x"]
    for i in range(2):
        h = np.maximum(h @ w[f"fc{i}/kernel"] + w[f"fc{i}/bias"], 0)
    ref = xent(h @ w["logits/kernel"] + w["logits/bias"], data["labels"])
    np.testing.assert_allclose(loss, ref, rtol=1e-5)


def test_cnn_matches_tensorflow_eager():
    tf = pytest.importorskip("tensorflow")
    spec, w, data, loss = lowered("cnn")
    h = tf.constant(data["images"])
    for i in range(len(spec.params["filters"])):
        h = tf.nn.relu(tf.nn.conv2d(h, w[f"conv{i}/kernel"], 1, "SAME") + w[f"conv{i}/bias"])
        h = tf.nn.max_pool2d(h, 2, 2, "SAME")
    h = h.numpy().reshape(h.shape[0], -1)
    h = np.maximum(h @ w["fc0/kernel"] + w["fc0/bias"], 0)
    ref = xent(h @ w["logits/kernel"] + w["logits/bias"], data["labels"])
    np.testing.assert_allclose(loss, ref, rtol=1e-5)


def _attention(q_in, m_in, w, prefix, heads):
    b, s, d = q_in.shape
    m = m_in.shape[1]
    dk = d // heads

    def proj(x, n, length):
        y = x @ w[f"{prefix}/{n}/kernel"] + w[f"{prefix}/{n}/bias"]
        return y.reshape(b, length, heads, dk).transpose(0, 2, 1, 3)

    q, k, v = proj(q_in, "q", s), proj(m_in, "k", m), proj(m_in, "v", m)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    scores /= scores.sum(-1, keepdims=True)
    ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    return ctx @ w[f"{prefix}/out/kernel"] + w[f"{prefix}/out/bias"]


def _ffn(x, w, prefix):
    h = np.maximum(x @ w[f"{prefix}/fc1/kernel"] + w[f"{prefix}/fc1/bias"], 0)
    return h @ w[f"{prefix}/fc2/kernel"] + w[f"{prefix}/fc2/bias"]


def _embed(ids, w, prefix, d):
    return w[f"{prefix}/embedding"][ids] * np.sqrt(d) + w[f"{prefix}/positions"]


def _ln(x, w, prefix):
    return layer_norm(x, w[f"{prefix}/gamma"], w[f"{prefix}/beta"])


def _encoder(x, w, p):
    for i in range(p["encoder_layers"] if "encoder_layers" in p else p["layers"]):
        n = _ln(x, w, f"encoder{i}/ln1")
        x = x + _attention(n, n, w, f"encoder{i}/self", p["heads"])
        x = x + _ffn(_ln(x, w, f"encoder{i}/ln2"), w, f"encoder{i}/ffn")
    return _ln(x, w, "encoder_norm")


def test_encoder_transformer_matches_numpy():
    spec, w, data, loss = lowered("transformer")
    p = spec.params
    x = _encoder(_embed(data["tokens"], w, "encoder_embed", p["d_model"]), w, p)
    ref = xent(x @ w["vocab_projection/kernel"] + w["vocab_projection/bias"], data["targets"])
    np.testing.assert_allclose(loss, ref, rtol=1e-5)


def test_encoder_decoder_transformer_matches_numpy():
    spec, w, data, loss = lowered("pase_transformer", encoder_layers=1, decoder_layers=1)
    p = spec.params
    memory = _encoder(_embed(data["source"], w, "encoder_embed", p["d_model"]), w, p)
    y = _embed(data["target_in"], w, "decoder_embed", p["d_model"])
    for i in range(p["decoder_layers"]):
        n = _ln(y, w, f"decoder{i}/ln1")
        y = y + _attention(n, n, w, f"decoder{i}/self", p["heads"])
        y = y + _attention(_ln(y, w, f"decoder{i}/ln2"), memory, w, f"decoder{i}/cross", p["heads"])
        y = y + _ffn(_ln(y, w, f"decoder{i}/ln3"), w, f"decoder{i}/ffn")
    y = _ln(y, w, "decoder_norm")
    ref = xent(y @ w["vocab_projection/kernel"] + w["vocab_projection/bias"], data["targets"])
    np.testing.assert_allclose(loss, ref, rtol=1e-5)


def _tf_batch_norm(tf, x, w, prefix):
    mean, var = tf.nn.moments(x, axes=[0, 1, 2])
    return tf.nn.batch_normalization(x, mean, var, w[f"{prefix}/beta"], w[f"{prefix}/gamma"], 1e-3)


def test_resnet_bottlenecks_match_tensorflow_eager():
    tf = pytest.importorskip("tensorflow")
    spec, w, data, loss = lowered("resnet101")
    p = spec.params

    def conv_bn(x, prefix, stride=1, relu=True):
        y = tf.nn.conv2d(x, w[f"{prefix}/conv/kernel"], stride, "SAME")
        y = _tf_batch_norm(tf, y, w, f"{prefix}/bn")
        return tf.nn.relu(y) if relu else y

    h = conv_bn(tf.constant(data["images"]), "conv1", 2)
    h = tf.nn.max_pool2d(h, 3, 2, "SAME")
    for stage, n in enumerate(p["blocks"]):
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            b = f"layer{stage + 1}/block{i}"
            out = conv_bn(conv_bn(h, f"{b}/conv1"), f"{b}/conv2", stride)
            out = conv_bn(out, f"{b}/conv3", relu=False)
            planes = p["base"] * 2 ** stage * 4
            short = conv_bn(h, f"{b}/downsample", stride, relu=False) \
                if stride != 1 or h.shape[-1] != planes else h
            h = tf.nn.relu(out + short)
    h = tf.reduce_mean(h, axis=[1, 2]).numpy()
    ref = xent(h @ w["fc/kernel"] + w["fc/bias"], data["labels"])
    np.testing.assert_allclose(loss, ref, rtol=1e-4)


def test_wide_resnet_blocks_match_tensorflow_eager():
    tf = pytest.importorskip("tensorflow")
    spec, w, data, loss = lowered("paper_wide_resnet")
    p = spec.params
    h = tf.nn.conv2d(tf.constant(data["images"]), w["conv1/kernel"], 1, "SAME")
    for group, width in enumerate((16 * p["k"], 32 * p["k"], 64 * p["k"])):
        for i in range((p["depth"] - 4) // 6):
            stride = 2 if group > 0 and i == 0 else 1
            b = f"group{group + 1}/block{i}"
            pre = tf.nn.relu(_tf_batch_norm(tf, h, w, f"{b}/bn1"))
            out = tf.nn.conv2d(pre, w[f"{b}/conv1/kernel"], stride, "SAME")
            out = tf.nn.relu(_tf_batch_norm(tf, out, w, f"{b}/bn2"))
            out = tf.nn.conv2d(out, w[f"{b}/conv2/kernel"], 1, "SAME")
            short = tf.nn.conv2d(pre, w[f"{b}/shortcut/kernel"], stride, "SAME") \
                if stride != 1 or h.shape[-1] != width else h
            h = out + short
    h = tf.nn.relu(_tf_batch_norm(tf, h, w, "bn_final"))
    h = tf.reduce_mean(h, axis=[1, 2]).numpy()
    ref = xent(h @ w["fc/kernel"] + w["fc/bias"], data["labels"])
    np.testing.assert_allclose(loss, ref, rtol=1e-4)
