"""``to.losses`` against ``tf.compat.v1.losses``: the same value, the same gradient, and the
same LOSSES collection, for every loss function, weight and reduction a 1.x script uses."""

import numpy as np
import pytest

import tensoropt as to

P = np.random.default_rng(0).uniform(0.05, 0.95, (6, 4)).astype(np.float32)   # predictions, probabilities
L = (np.random.default_rng(1).uniform(size=(6, 4)) < 0.4).astype(np.float32)    # 0/1 labels
Z = np.random.default_rng(2).normal(0, 2.0, (6, 4)).astype(np.float32)          # logits, regression targets
IDS = np.array([0, 3, 1, 2, 3, 0], np.int32)

ONEHOT = np.eye(4, dtype=np.float32)[IDS]
OPERANDS = {"z": Z, "labels": L, "ids": IDS, "onehot": ONEHOT}
R = "reduction"

# case -> loss of (module, variable w holding P, operands by name: placeholders fed the arrays
# in TensorOpt, constants in TensorFlow)
CASES = {
    "mean_squared_error": lambda m, w, d: m.losses.mean_squared_error(labels=d["z"], predictions=w),
    "mean_squared_error weight 0.5": lambda m, w, d: m.losses.mean_squared_error(d["z"], w, weights=0.5),
    "mean_squared_error weight 0": lambda m, w, d: (m.losses.mean_squared_error(d["z"], w, weights=0.0)
                                                   + m.reduce_sum(w)),
    "mean_squared_error sum": lambda m, w, d: m.losses.mean_squared_error(
        d["z"], w, weights=2.0, **{R: m.losses.Reduction.SUM}),
    "mean_squared_error mean": lambda m, w, d: m.losses.mean_squared_error(
        d["z"], w, weights=2.0, **{R: m.losses.Reduction.MEAN}),
    "mean_squared_error over batch": lambda m, w, d: m.losses.mean_squared_error(
        d["z"], w, weights=3.0, **{R: m.losses.Reduction.SUM_OVER_BATCH_SIZE}),
    "mean_squared_error none": lambda m, w, d: m.reduce_sum(m.losses.mean_squared_error(
        d["z"], w, weights=2.0, **{R: m.losses.Reduction.NONE}) * d["z"]),
    "absolute_difference": lambda m, w, d: m.losses.absolute_difference(labels=d["z"], predictions=w),
    "huber_loss": lambda m, w, d: m.losses.huber_loss(labels=d["z"], predictions=w * 3.0),
    "huber_loss delta": lambda m, w, d: m.losses.huber_loss(labels=d["z"], predictions=w * 3.0, delta=0.3),
    "log_loss": lambda m, w, d: m.losses.log_loss(labels=d["labels"], predictions=m.sigmoid(w)),
    "sparse_softmax_cross_entropy": lambda m, w, d: m.losses.sparse_softmax_cross_entropy(labels=d["ids"],
                                                                                          logits=w),
    "softmax_cross_entropy": lambda m, w, d: m.losses.softmax_cross_entropy(onehot_labels=d["onehot"], logits=w),
    "softmax_cross_entropy smoothing": lambda m, w, d: m.losses.softmax_cross_entropy(
        d["onehot"], w, label_smoothing=0.1),
    "sigmoid_cross_entropy": lambda m, w, d: m.losses.sigmoid_cross_entropy(multi_class_labels=d["labels"],
                                                                            logits=w),
    "sigmoid_cross_entropy smoothing": lambda m, w, d: m.losses.sigmoid_cross_entropy(
        d["labels"], w, label_smoothing=0.2),
}


def _total(m, case, loss):
    return loss if case == "mean_squared_error none" else m.losses.get_total_loss()


def _tensoropt(case):
    w = to.get_variable("w", initializer=P)
    d = {k: to.placeholder(to.int32 if v.dtype == np.int32 else to.float32, list(v.shape), name=k)
         for k, v in OPERANDS.items()}
    loss = CASES[case](to, w, d)
    total = _total(to, case, loss)
    step = to.train.GradientDescentOptimizer(1.0).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    feed = {d[k]: v for k, v in OPERANDS.items()}
    value, total_value = to.run([loss, total], feed)
    to.run(step, feed)
    return value, total_value, P - to.run(w), len(to.losses.get_losses())


def _tensorflow(case):
    tf = pytest.importorskip("tensorflow")
    graph = tf.Graph()
    with graph.as_default():
        w = tf.constant(P)
        loss = CASES[case](tf.compat.v1, w, {k: tf.constant(v) for k, v in OPERANDS.items()})
        total = _total(tf.compat.v1, case, loss)
        grad, = tf.compat.v1.gradients(loss, [w])
        count = len(tf.compat.v1.losses.get_losses())
        with tf.compat.v1.Session(graph=graph) as sess:
            return (*sess.run([loss, total, grad]), count)


@pytest.mark.parametrize("case", sorted(CASES))
def test_value_gradient_and_collection_are_tensorflows(case):
    value, total, grad, count = _tensoropt(case)
    tf_value, tf_total, tf_grad, tf_count = _tensorflow(case)
    np.testing.assert_allclose(value, tf_value, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(total, tf_total, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(grad, tf_grad, rtol=2e-4, atol=1e-6)
    assert count == tf_count
    assert np.any(grad != 0), "the case must reach the variable"


@pytest.mark.parametrize("call, named", [
    (lambda w: to.losses.mean_squared_error(w, w, weights=w), r"weights=.* takes a Python number.*multiply"),
    (lambda w: to.losses.mean_squared_error(w, w, reduction="mean"), r"reduction='mean'.*weighted_mean"),
    (lambda w: to.losses.log_loss(labels=w), "pass both labels= and predictions="),
    (lambda w: to.losses.get_total_loss(), "no losses were recorded"),
])
def test_misuse_is_refused_by_name(call, named):
    w = to.get_variable("w", initializer=P)
    with pytest.raises(ValueError, match=named):
        call(w)
