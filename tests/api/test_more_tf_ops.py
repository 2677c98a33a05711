"""The TensorFlow ops and functions a 1.x training script commonly reaches for beyond the
core set (activations, ``minimum``/``pow``/``squared_difference``, ``abs``, ``add_n``,
``l2_loss``, ``l2_normalize``, the logistic loss, ``expand_dims``/``squeeze``,
``reduce_max``/``reduce_min``, ``where``, ``gather``) give
TensorFlow's values and TensorFlow's gradients on one process.

Each case is built from a variable holding ``X`` (signs and magnitudes chosen to cross
every kink: below -1, between -1 and 0, between 0 and 6, above 6), and its gradient is
read as the step a learning rate of 1 takes: ``w0 - w1``.
"""

import numpy as np
import pytest

import tensoropt as to

X = np.array([[-8.5, -2.0, -0.6, -0.1], [0.2, 0.9, 3.0, 7.5], [-4.0, 1.7, 6.4, -1.3]], np.float32)
Y = np.random.default_rng(3).uniform(0.0, 1.0, X.shape).astype(np.float32)   # labels, and a second operand
C = np.random.default_rng(5).normal(size=X.shape).astype(np.float32)         # weighs the outputs' sum

CASES = {
    "relu6": lambda m, w, y: m.nn.relu6(w),
    "elu": lambda m, w, y: m.nn.elu(w),
    "selu": lambda m, w, y: m.nn.selu(w),
    "leaky_relu": lambda m, w, y: m.nn.leaky_relu(w),
    "leaky_relu alpha": lambda m, w, y: m.nn.leaky_relu(w, alpha=0.05),
    "softplus": lambda m, w, y: m.nn.softplus(w),
    "silu": lambda m, w, y: m.nn.silu(w),
    "silu beta": lambda m, w, y: m.nn.silu(w, beta=0.5),
    "swish": lambda m, w, y: m.nn.swish(w),
    "abs": lambda m, w, y: m.abs(w),
    "minimum": lambda m, w, y: m.minimum(w, y),
    "minimum scalar": lambda m, w, y: m.minimum(w, 0.5),
    "pow scalar exponent": lambda m, w, y: m.pow(w, 2.0),
    "pow tensor exponent": lambda m, w, y: m.pow(y + 0.5, w * 0.1),
    "squared_difference": lambda m, w, y: m.squared_difference(w, y),
    "add_n": lambda m, w, y: m.add_n([w, w * y, y]),
    "l2_loss": lambda m, w, y: m.nn.l2_loss(w),
    "l2_normalize axis": lambda m, w, y: m.nn.l2_normalize(w, axis=1),
    "l2_normalize all": lambda m, w, y: m.nn.l2_normalize(w),
    "l2_normalize dim": lambda m, w, y: m.nn.l2_normalize(w, dim=0, epsilon=1e-3),
    "softmax_cross_entropy_with_logits_v2": lambda m, w, y: m.nn.softmax_cross_entropy_with_logits_v2(
        labels=m.nn.softmax(y), logits=w),
    "sigmoid_cross_entropy_with_logits": lambda m, w, y: m.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=w),
    "expand_dims": lambda m, w, y: m.expand_dims(w, 1),
    "expand_dims last": lambda m, w, y: m.expand_dims(w, -1),
    "squeeze": lambda m, w, y: m.squeeze(m.expand_dims(w, 0)),
    "squeeze axis": lambda m, w, y: m.squeeze(m.expand_dims(m.expand_dims(w, 0), 3), axis=[3]),
    "reduce_max": lambda m, w, y: m.reduce_max(w, axis=1),
    "reduce_min keepdims": lambda m, w, y: m.reduce_min(w * y, axis=0, keepdims=True),
    "reduce_max all": lambda m, w, y: m.reduce_max(w),
    "where": lambda m, w, y: m.where(m.greater(w, 0.5), w * y, -w),
    "where_v2 broadcast": lambda m, w, y: m.where_v2(m.less(y[0], 0.5), w, m.zeros_like(w)),
    "gather": lambda m, w, y: m.gather(w * 2.0, m.argmax(y[:, :3], 1)),
    "log1p": lambda m, w, y: m.log1p(m.abs(w)),
    "reciprocal": lambda m, w, y: m.reciprocal(w),
    "erf": lambda m, w, y: m.erf(w * 0.3),
    "sin and cos": lambda m, w, y: m.sin(w) * m.cos(w * y),
    "softsign": lambda m, w, y: m.nn.softsign(w),
    "floor ceil round sign": lambda m, w, y: w * (m.floor(w) + m.ceil(w * y) + m.round(w * 0.7) + m.sign(w - 0.1)),
    "stop_gradient": lambda m, w, y: w * m.stop_gradient(w * w) + m.stop_gradient(w),
    "tile": lambda m, w, y: m.tile(w, [2, 1]) * m.tile(y, [2, 1]),
    "tile both axes": lambda m, w, y: m.tile(w * y, [1, 3]) + m.tile(w, [2, 3])[:3],
    "pad": lambda m, w, y: m.pad(w * y, [[1, 0], [0, 2]]),
    "pad constant": lambda m, w, y: m.pad(w, [[0, 0], [2, 1]], constant_values=1.5) * m.pad(y, [[0, 0], [1, 2]]),
    "pad reflect": lambda m, w, y: m.pad(w, [[2, 1], [0, 0]], mode="REFLECT"),
    "pad symmetric": lambda m, w, y: m.pad(w, [[0, 0], [3, 4]], mode="symmetric"),
    "logical ops": lambda m, w, y: m.where(m.logical_or(m.logical_and(m.greater(w, 0.0), m.less(y, 0.5)),
                                                         m.logical_xor(m.less(w, -1.0), m.logical_not(m.less(y, 0.2)))),
                                           w * y, -w),
    "reduce_logsumexp": lambda m, w, y: m.reduce_logsumexp(w * 3.0, axis=1),
    "reduce_logsumexp all keepdims": lambda m, w, y: m.reduce_logsumexp(w * y, keepdims=True),
    "clip_by_norm": lambda m, w, y: m.clip_by_norm(w, 2.0),
    "clip_by_norm rows": lambda m, w, y: m.clip_by_norm(w * y, 1.0, axes=[1]),
    "clip_by_norm of zeros": lambda m, w, y: m.clip_by_norm(w * 0.0, 1.0) + w,
    "cumsum": lambda m, w, y: m.cumsum(w * y, axis=1),
    "cumsum exclusive reverse": lambda m, w, y: m.cumsum(w, axis=0, exclusive=True, reverse=True),
    "sequence_mask": lambda m, w, y: w * m.sequence_mask(m.cast(m.argmax(y, 1), m.int32), 4, dtype=m.float32),
    "sequence_mask bool and range": lambda m, w, y: m.where(
        m.sequence_mask(m.argmin(y, 1), 4), w, w * m.cast(m.range(1, 5), m.float32)),
    "lrn": lambda m, w, y: m.nn.lrn(m.reshape(w, [1, 3, 1, 4]), 1, bias=1.0, alpha=0.3, beta=0.75),
    "local_response_normalization defaults": lambda m, w, y: m.nn.local_response_normalization(
        m.reshape(w * y, [1, 1, 3, 4])),
}


def _weights(m, out):
    """A fixed weighing of ``out``'s elements, so every element's gradient differs."""
    size = int(np.prod(out.shape))
    flat = np.resize(C.ravel(), size).reshape([int(n) for n in out.shape])
    return m.constant(flat) if hasattr(m, "constant") else flat


def _tensoropt(case):
    w = to.get_variable("w", X.shape, initializer=to.constant_initializer(X))
    y = to.placeholder(to.float32, X.shape, name="y")
    out = CASES[case](to, w, y)
    weights = to.placeholder(to.float32, list(out.shape), name="c")
    loss = to.reduce_sum(out * weights) if len(out.shape) else out * 1.0
    step = to.train.GradientDescentOptimizer(1.0).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    feed = {y: Y, weights: _weights(np, out)}
    value = to.run(out, feed)
    to.run(step, feed)
    return value, X - to.run(w)


def _tensorflow(case):
    tf = pytest.importorskip("tensorflow")
    graph = tf.Graph()
    with graph.as_default():
        w = tf.constant(X)
        y = tf.constant(Y)
        out = CASES[case](tf.compat.v1, w, y)
        loss = tf.reduce_sum(out * _weights(np, out)) if len(out.shape) else out
        grad, = tf.compat.v1.gradients(loss, [w])
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run([out, grad])


@pytest.mark.parametrize("case", sorted(CASES))
def test_value_and_gradient_are_tensorflows(case):
    value, grad = _tensoropt(case)
    tf_value, tf_grad = _tensorflow(case)
    assert np.asarray(value).shape == tf_value.shape
    np.testing.assert_allclose(value, tf_value, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(grad, tf_grad, rtol=2e-4, atol=1e-5)
    assert np.any(grad != 0), "the case must reach the variable"


@pytest.mark.parametrize("kind", ["relu", "tanh", "sigmoid", "sqrt", "rsqrt", "exp", "relu6", "elu", "selu"])
def test_gradient_from_the_output_is_tensorflows(kind):
    """A plan that drops an op's saved input rebuilds its gradient from its output
    (``OpDef.grad_from_output``, tensor reuse): it must be TensorFlow's gradient."""
    tf = pytest.importorskip("tensorflow")
    from tensoropt.ops import get_op_def
    op_def = get_op_def(kind)
    assert op_def.grad_from_output_ok
    x = tf.constant(np.abs(X) + 0.05 if kind in ("sqrt", "rsqrt") else X / (3.0 if kind == "exp" else 1.0))
    dy = tf.constant(C)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = getattr(tf.nn, kind)(x) if hasattr(tf.nn, kind) else getattr(tf.math, kind)(x)
    expected = tape.gradient(y, x, output_gradients=dy)
    got = op_def.grad_from_output(tf, None, y, dy)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, named", [
    (lambda w: to.nn.leaky_relu(w, alpha="0.1"), "leaky_relu: alpha='0.1' is not a number"),
    (lambda w: to.add_n([]), "add_n: expected a non-empty list"),
    (lambda w: to.add_n([w, to.reshape(w, [4, 3])]), r"add_n: the inputs' shapes differ: \[\(3, 4\), \(4, 3\)\]"),
    (lambda w: to.squeeze(w, axis=0), r"squeeze: .* has size \[3\] at axis \[0\]; only dims of size 1"),
    (lambda w: to.expand_dims(w, 3), r"expand_dims: axis 3 is out of range .* give an int in \[-3, 2\]"),
    (lambda w: to.nn.sigmoid_cross_entropy_with_logits(labels=to.reshape(w, [4, 3]), logits=w),
     r"labels .* \(4, 3\) and logits .* \(3, 4\) differ in shape"),
    (lambda w: to.nn.sigmoid_cross_entropy_with_logits(w, w), "pass both labels= and logits= by name"),
    (lambda w: to.nn.l2_normalize(w, axis=0, dim=1), "axis=0 and dim=1"),
    (lambda w: to.tile(w, [2]), r"tile 'tile': 1 multiples for a rank-2 input; .* one multiple per axis"),
    (lambda w: to.tile(w, [2, 0]), r"tile: multiples=\[2, 0\]; give a list of Python ints >= 1"),
    (lambda w: to.pad(w, [[1, 1]]), r"1 rows of paddings for a rank-2 input"),
    (lambda w: to.pad(w, [[1, 1], [1]]), r"one \[before, after\] pair per axis"),
    (lambda w: to.pad(w, [[3, 0], [0, 0]], mode="REFLECT"), r"padding \[3, 0\] on axis 0 of size 3 in mode REFLECT"),
    (lambda w: to.pad(w, [[1, 0], [0, 0]], mode="EDGE"), r"mode='EDGE'; use one of"),
    (lambda w: to.clip_by_norm(w, 0.0), r"clip_by_norm: clip_norm=0.0; give a positive Python number"),
    (lambda w: to.reduce_logsumexp(w, axis=2), r"reduce_logsumexp: axis 2 is out of range .* rank 2"),
    (lambda w: to.sequence_mask(to.argmax(w, 1)), r"sequence_mask: give maxlen="),
    (lambda w: to.sequence_mask(w, 4), r"sequence_mask .*lengths of dtype float32.*int32 or int64 lengths"),
    (lambda w: to.range(3, 3), r"range 'range': start=3, limit=3, delta=1 give no element"),
    (lambda w: to.range(2.5), r"range: limit=2.5; give Python ints"),
    (lambda w: to.nn.lrn(w), r"lrn 'LRN': a float32 input of shape \(3, 4\).*expected a 4-D float32 NHWC"),
    (lambda w: to.nn.lrn(to.reshape(w, [1, 1, 3, 4]), depth_radius=1.5), "depth_radius=1.5; give an int >= 0"),
    (lambda w: to.nn.lrn(to.reshape(w, [1, 1, 3, 4]), beta="0.75"), "beta='0.75' is not a number"),
])
def test_bad_arguments_are_refused_by_name(call, named):
    w = to.get_variable("w", X.shape)
    with pytest.raises(ValueError, match=named):
        call(w)


def test_a_variable_reached_only_through_stop_gradient_or_floor_is_not_trained():
    frozen = to.get_variable("frozen", initializer=np.full([4], 2.0, np.float32))
    rounded = to.get_variable("rounded", initializer=np.full([4], 1.5, np.float32))
    trained = to.get_variable("trained", initializer=np.ones([4], np.float32))
    loss = to.reduce_sum(to.stop_gradient(frozen) * trained + to.floor(rounded) * trained)
    step = to.train.GradientDescentOptimizer(0.1).minimize(loss)
    assert {v.op.name for v in to.get_default_graph().train_steps[-1].var_list} == {"trained"}
    to.build_execution_graph(plan=to.find_strategy())
    to.run(step)
    np.testing.assert_allclose(to.run(trained), 1.0 - 0.1 * (2.0 + 1.0))
    np.testing.assert_array_equal(to.run(frozen), 2.0)
    with pytest.raises(ValueError, match="no trainable variable"):
        to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_sum(to.stop_gradient(trained)))


def test_clip_by_norm_of_a_gradient_says_to_clip_by_global_norm():
    w = to.get_variable("w", initializer=X)
    (grad, _), = to.train.GradientDescentOptimizer(0.1).compute_gradients(to.reduce_sum(w * w))
    with pytest.raises(ValueError, match=r"clip_by_norm: .* to.clip_by_global_norm\(grads, clip_norm\)"):
        to.clip_by_norm(grad, 1.0)
