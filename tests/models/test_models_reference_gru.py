"""``nn.rnn_cell.GRUCell`` against a numpy GRU written from TensorFlow 1.x's ``GRUCell``
formulas (TF 2.21 no longer ships that cell with Keras 3): gates ``r, u =
split(sigmoid([x, h] @ gates/kernel + gates/bias))``, candidate ``c = tanh([x, r * h] @
candidate/kernel + candidate/bias)``, ``h' = u * h + (1 - u) * c``; the gate bias starts
at one, the candidate's at zero. TensorOpt unrolls it from primitives, under
``dynamic_rnn`` and ``static_rnn`` alike."""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_gru(x, w):
    b, t, _ = x.shape
    units = w["candidate/bias"].shape[0]
    h, out = np.zeros((b, units)), []
    for s in range(t):
        gates = _sigmoid(np.concatenate([x[:, s], h], axis=1) @ w["gates/kernel"] + w["gates/bias"])
        r, u = np.split(gates, 2, axis=1)
        c = np.tanh(np.concatenate([x[:, s], r * h], axis=1) @ w["candidate/kernel"] + w["candidate/bias"])
        h = u * h + (1 - u) * c
        out.append(h)
    return np.stack(out, axis=1), h


@pytest.mark.parametrize("unrolled_by", ["dynamic_rnn", "static_rnn"])
def test_gru_cell_matches_tensorflows_formulas(unrolled_by):
    rng = np.random.default_rng(2)
    b, t, d, units = 3, 4, 5, 6
    x_value = rng.normal(size=(b, t, d)).astype(np.float32)
    cell = to.nn.rnn_cell.GRUCell(units)
    if unrolled_by == "dynamic_rnn":
        x = to.placeholder(to.float32, [b, t, d], name="x")
        out, state = to.nn.dynamic_rnn(cell, x, dtype=to.float32)
        feed = {x: x_value}
    else:
        xs = [to.placeholder(to.float32, [b, d], name=f"x{s}") for s in range(t)]
        outs, state = to.nn.static_rnn(cell, xs, dtype=to.float32)
        out = to.stack(outs, axis=1)
        feed = {xs[s]: x_value[:, s] for s in range(t)}
    variables = to.get_default_graph().trainable_variables
    names = [v.op.name for v in variables]
    assert sorted(names) == ["rnn/gru_cell/candidate/bias", "rnn/gru_cell/candidate/kernel",
                             "rnn/gru_cell/gates/bias", "rnn/gru_cell/gates/kernel"]
    to.build_execution_graph(plan=to.find_strategy())
    w = {n.split("/", 2)[2]: v.astype(np.float64) for n, v in zip(names, to.run(list(variables)))}
    np.testing.assert_array_equal(w["gates/bias"], 1.0)
    np.testing.assert_array_equal(w["candidate/bias"], 0.0)
    got, got_state = to.run([out, state], feed)
    want, want_state = numpy_gru(x_value.astype(np.float64), w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-5, atol=1e-6)


def test_a_gru_trains_under_dynamic_rnn_with_tf_gradients_and_a_global_norm_clip():
    """The PTB tutorial's step: ``clip_by_global_norm(tf.gradients(loss, tvars))``."""
    rng = np.random.default_rng(3)
    x = to.placeholder(to.float32, [4, 3, 5], name="x")
    out, _ = to.nn.dynamic_rnn(to.nn.rnn_cell.GRUCell(6), x, dtype=to.float32)
    loss = to.reduce_mean(to.square(out))
    tvars = to.trainable_variables()
    grads, norm = to.clip_by_global_norm(to.gradients(loss, tvars), 0.01)
    step = to.train.GradientDescentOptimizer(0.5).apply_gradients(zip(grads, tvars))
    to.build_execution_graph(plan=to.find_strategy())
    feed = {x: rng.normal(size=(4, 3, 5)).astype(np.float32)}
    before = to.run(loss, feed)
    _, n = to.run([step, norm], feed)
    assert n > 0.01                                   # clipped: the step moved 0.5 * 0.01 at most
    after = to.run(loss, feed)
    assert after < before and before - after < 0.5 * 0.01 * n + 1e-6
    with pytest.raises(ValueError, match="is not a variable; TensorOpt gives the gradients of a loss"):
        to.gradients(loss, [out])
