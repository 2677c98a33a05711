"""The LSTM zoo models' first loss equals a numpy forward pass from the same weights.

The numpy LSTM is written from TensorFlow's ``LSTMCell`` formulas (forget bias 1.0 by
default), not from the fused op: ``c' = sigmoid(f + forget_bias) * c + sigmoid(i) *
tanh(j)``, ``h' = sigmoid(o) * tanh(c')``. TensorOpt's kernel column for gate g of unit u
is ``4 u + g`` (gates i, j, f, o interleaved per unit, so that splitting the units splits
whole gates); TensorFlow's is ``g * units + u``. ``tf_columns`` is that permutation.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to
from tests.models.test_models_train_tiny import lowered, xent


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def tf_columns(units: int) -> np.ndarray:
    """TensorOpt's kernel columns in TensorFlow's order: ``kernel[:, tf_columns(u)]`` is the
    kernel TensorFlow's LSTMCell would hold."""
    return np.array([4 * u + g for g in range(4) for u in range(units)])


def numpy_lstm(x, kernel, bias, forget_bias=1.0):
    """[b, t, d] -> [b, t, units] with TensorFlow's (block) gate order i, j, f, o."""
    b, t, _ = x.shape
    units = kernel.shape[1] // 4
    k, bb = kernel[:, tf_columns(units)], bias[tf_columns(units)]
    h, c, out = np.zeros((b, units)), np.zeros((b, units)), []
    for s in range(t):
        z = np.concatenate([x[:, s], h], axis=1) @ k + bb
        i, j, f, o = np.split(z, 4, axis=1)
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, axis=1)


@pytest.mark.parametrize("name", ["lstm", "rnnlm", "paper_rnn"])
def test_lstm_language_models_match_numpy(name):
    spec, w, data, loss = lowered(name)
    kernels = sorted(k for k in w if k.endswith("kernel") and "softmax" not in k)
    assert len(kernels) == spec.params["layers"], sorted(w)
    h = w["embedding"][data["tokens"]].astype(np.float64)
    for k in kernels:
        h = numpy_lstm(h, w[k], w[k[:-len("kernel")] + "bias"])
    logits = h @ w["softmax/kernel"] + w["softmax/bias"]
    np.testing.assert_allclose(loss, xent(logits, data["targets"]), rtol=1e-5)


@pytest.mark.parametrize("forget_bias", [None, 0.0, 0.5])
@pytest.mark.parametrize("fused", [True, False])
def test_lstm_cell_matches_numpy_with_its_forget_bias(forget_bias, fused):
    """dynamic_rnn (the fused op) and static_rnn (primitives); the bias starts at zero, so
    the forget bias is the only offset."""
    rng = np.random.default_rng(1)
    b, t, d, units = 3, 4, 5, 6
    x_value = rng.normal(size=(b, t, d)).astype(np.float32)
    if fused:
        x = to.placeholder(to.float32, [b, t, d], name="x")
        feed = {x: x_value}
    else:
        xs = [to.placeholder(to.float32, [b, d], name=f"x{s}") for s in range(t)]
        feed = {xs[s]: x_value[:, s] for s in range(t)}
    kw = {} if forget_bias is None else {"forget_bias": forget_bias}
    cell = to.nn.rnn_cell.LSTMCell(units, **kw)
    if fused:
        out, _ = to.nn.dynamic_rnn(cell, x, dtype=to.float32)
    else:
        out, _ = to.nn.static_rnn(cell, xs, dtype=to.float32)
    kernel, bias = to.get_default_graph().trainable_variables
    to.build_execution_graph(plan=to.find_strategy())
    kernel_value, bias_value = to.run([kernel, bias])
    got = to.run(out, feed)
    got = np.asarray(got if fused else np.stack(got, axis=1))
    want = numpy_lstm(x_value.astype(np.float64), kernel_value, bias_value,
                      1.0 if forget_bias is None else forget_bias)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
