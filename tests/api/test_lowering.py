"""Each op lowered to TensorFlow on one process computes what numpy computes."""

import numpy as np
import pytest

import tensoropt as to

RNG = np.random.default_rng(42)


def _run(fetch, feeds):
    to.build_execution_graph(plan=to.find_strategy())
    return to.run(fetch, feed_dict=feeds)


def _softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_elementwise_and_reductions_match_numpy():
    a_val = RNG.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)
    b_val = RNG.uniform(0.5, 2.0, size=(4,)).astype(np.float32)
    a = to.placeholder(to.float32, [3, 4])
    b = to.placeholder(to.float32, [4])
    fetches = {
        "sqrt": to.sqrt(a), "exp": to.exp(a), "log": to.log(a), "square": to.square(a),
        "identity": to.identity(a), "maximum": to.maximum(a, b), "log_softmax": to.nn.log_softmax(a),
        "rsqrt": to.rsqrt(a), "div": a / b, "rsub": 1.0 - a, "sum": to.reduce_sum(a, axis=0),
        "mean": to.reduce_mean(a, axis=[0, 1], keepdims=True), "relu": to.nn.relu(a - 1.0),
    }
    out = _run(fetches, {a: a_val, b: b_val})
    expected = {
        "sqrt": np.sqrt(a_val), "exp": np.exp(a_val), "log": np.log(a_val), "square": a_val ** 2,
        "identity": a_val, "maximum": np.maximum(a_val, b_val),
        "log_softmax": np.log(_softmax(a_val)), "rsqrt": 1 / np.sqrt(a_val), "div": a_val / b_val,
        "rsub": 1.0 - a_val, "sum": a_val.sum(0), "mean": a_val.mean(keepdims=True),
        "relu": np.maximum(a_val - 1.0, 0),
    }
    for key, value in expected.items():
        np.testing.assert_allclose(out[key], value, rtol=1e-5, err_msg=key)


def test_matmul_reshape_transpose_concat_split_match_numpy():
    a_val = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    w_val = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    a = to.placeholder(to.float32, [2, 3, 4])
    w = to.placeholder(to.float32, [2, 5, 4])
    parts = to.split(a, [1, 3], axis=2)
    fetches = [to.matmul(a, w, transpose_b=True), to.reshape(a, [6, -1]), to.transpose(a, [2, 0, 1]),
               to.concat([a, a], axis=0), parts[1]]
    out = _run(fetches, {a: a_val, w: w_val})
    np.testing.assert_allclose(out[0], a_val @ w_val.transpose(0, 2, 1), rtol=1e-5)
    np.testing.assert_array_equal(out[1], a_val.reshape(6, 4))
    np.testing.assert_array_equal(out[2], a_val.transpose(2, 0, 1))
    np.testing.assert_array_equal(out[3], np.concatenate([a_val, a_val]))
    np.testing.assert_array_equal(out[4], a_val[:, :, 1:])


def test_embedding_and_cross_entropy_match_numpy():
    table = RNG.normal(size=(7, 3)).astype(np.float32)
    ids_val = RNG.integers(0, 7, size=(2, 4)).astype(np.int32)
    params = to.placeholder(to.float32, [7, 3])
    ids = to.placeholder(to.int32, [2, 4])
    logits = to.reshape(to.nn.embedding_lookup(params, ids), [8, 3])
    labels = to.reshape(ids, [8])
    three = to.placeholder(to.int32, [8])
    loss = to.nn.sparse_softmax_cross_entropy_with_logits(labels=three, logits=logits)
    lab = (ids_val.reshape(8) % 3).astype(np.int32)
    out = _run([logits, loss, labels], {params: table, ids: ids_val, three: lab})
    np.testing.assert_array_equal(out[0], table[ids_val].reshape(8, 3))
    expected = -np.log(_softmax(out[0])[np.arange(8), lab])
    np.testing.assert_allclose(out[1], expected, rtol=1e-5)


def test_fused_lstm_equals_unrolled_lstm():
    """dynamic_rnn's one fused op and static_rnn's primitives share variables and agree."""
    b, t, d, h = 3, 4, 5, 6
    x = to.placeholder(to.float32, [b, t, d])
    cell = to.nn.rnn_cell.LSTMCell(h)
    with to.variable_scope("shared"):
        fused, fused_state = to.nn.dynamic_rnn(cell, x, dtype=to.float32)
    steps = [to.reshape(s, [b, d]) for s in to.split(x, t, axis=1)]
    with to.variable_scope("shared", reuse=True):
        unrolled, state = to.nn.static_rnn(cell, steps, dtype=to.float32)
    assert len(to.get_default_graph().variables) == 2
    x_val = RNG.normal(size=(b, t, d)).astype(np.float32)
    out = _run([fused, fused_state.c, to.concat([to.reshape(o, [b, 1, h]) for o in unrolled], 1), state.c],
               {x: x_val})
    np.testing.assert_allclose(out[0], out[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], out[3], rtol=1e-5, atol=1e-6)
    assert np.abs(out[0]).max() > 1e-3


def test_initial_values_follow_the_initializer_and_are_stable():
    def values():
        to.reset_default_graph()
        w = to.get_variable("w", [50, 40])  # default glorot-uniform, seed from the name
        z = to.get_variable("z", [3], initializer=to.constant_initializer(0.5))
        return _run([w, z], {})

    w1, z1 = values()
    w2, _ = values()
    np.testing.assert_array_equal(w1, w2)
    limit = np.sqrt(6 / (50 + 40))
    assert np.abs(w1).max() <= limit and np.abs(w1).max() > 0.8 * limit
    np.testing.assert_array_equal(z1, [0.5, 0.5, 0.5])


@pytest.mark.parametrize("optimizer", [to.train.GradientDescentOptimizer(0.5),
                                       to.train.MomentumOptimizer(0.5, momentum=0.9),
                                       to.train.AdamOptimizer(0.1)])
def test_each_optimizer_reduces_a_quadratic(optimizer):
    w = to.get_variable("w", [4], initializer=to.ones_initializer())
    target = to.placeholder(to.float32, [4])
    loss = to.reduce_sum(to.square(w - target))
    step = optimizer.minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    feed = {target: np.array([0.0, 1.0, 2.0, 3.0], np.float32)}
    losses = [to.run([loss, step], feed)[0] for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]
