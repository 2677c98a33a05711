"""SGD, Momentum, RMSProp and Adagrad update variables as ``tf.compat.v1.train``'s optimizers do, over 3
steps of the same model from the same initial values and batches."""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to

STEPS = 3


def _data():
    rng = np.random.default_rng(4)
    w0 = rng.normal(size=(5, 3)).astype(np.float32)
    b0 = rng.normal(size=(3,)).astype(np.float32)
    batches = [(rng.normal(size=(6, 5)).astype(np.float32), rng.integers(0, 3, 6).astype(np.int32))
               for _ in range(STEPS)]
    return w0, b0, batches


def _tensoropt(make_optimizer):
    w0, b0, batches = _data()
    x = to.placeholder(to.float32, [6, 5], name="x")
    y = to.placeholder(to.int32, [6], name="y")
    w = to.get_variable("w", [5, 3], initializer=to.constant_initializer(w0))
    b = to.get_variable("b", [3], initializer=to.constant_initializer(b0))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=to.matmul(x, w) + b))
    step = make_optimizer(to.train).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    losses = [to.run([loss, step], {x: xs, y: ys})[0] for xs, ys in batches]
    return np.array(losses), to.run([w, b])


def _tensorflow(make_optimizer):
    tf = pytest.importorskip("tensorflow")
    w0, b0, batches = _data()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [6, 5])
        y = tf.compat.v1.placeholder(tf.int32, [6])
        w = tf.compat.v1.get_variable("w", initializer=w0)
        b = tf.compat.v1.get_variable("b", initializer=b0)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, w) + b))
        step = make_optimizer(tf.compat.v1.train).minimize(loss)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            losses = [sess.run([loss, step], {x: xs, y: ys})[0] for xs, ys in batches]
            return np.array(losses), sess.run([w, b])


@pytest.mark.parametrize("make_optimizer, make_tf_optimizer", [
    (lambda train: train.GradientDescentOptimizer(0.5), None),
    (lambda train: train.MomentumOptimizer(0.5, 0.9), None),
    (lambda train: train.MomentumOptimizer(0.5, 0.9, use_nesterov=True), None),
    # TensorOpt's default momentum is 0.9 (TensorFlow's has none)
    (lambda train: train.MomentumOptimizer(0.5), lambda train: train.MomentumOptimizer(0.5, 0.9)),
    (lambda train: train.RMSPropOptimizer(0.05), None),
    (lambda train: train.RMSPropOptimizer(0.05, decay=0.8, momentum=0.5, epsilon=1e-6, centered=True), None),
    (lambda train: train.AdagradOptimizer(0.3), None),
    (lambda train: train.AdagradOptimizer(0.3, initial_accumulator_value=0.5), None),
], ids=["sgd", "momentum", "nesterov", "default_momentum", "rmsprop", "rmsprop_centered", "adagrad",
        "adagrad_accumulator"])
def test_optimizer_matches_tf_compat_v1_over_three_steps(make_optimizer, make_tf_optimizer):
    losses, (w, b) = _tensoropt(make_optimizer)
    tf_losses, (tf_w, tf_b) = _tensorflow(make_tf_optimizer or make_optimizer)
    np.testing.assert_allclose(losses, tf_losses, rtol=1e-5)
    np.testing.assert_allclose(w, tf_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, tf_b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(w, _data()[0], atol=1e-3), "the weights moved"


@pytest.mark.parametrize("optimizer, slots", [
    (to.train.GradientDescentOptimizer(0.1), 0), (to.train.MomentumOptimizer(0.1), 1),
    (to.train.AdamOptimizer(), 2), (to.train.RMSPropOptimizer(0.1), 2),
    (to.train.RMSPropOptimizer(0.1, centered=True), 3), (to.train.AdagradOptimizer(0.1), 1)])
def test_slot_count_is_the_number_of_slots_tensorflow_makes(optimizer, slots):
    """The cost model charges ``slots_per_variable`` copies of each parameter: it must be
    what TensorFlow creates (RMSProp makes its momentum slot even at momentum 0)."""
    tf = pytest.importorskip("tensorflow")
    assert optimizer.slots_per_variable == slots
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", initializer=np.ones((2, 3), np.float32))
        optimizer.to_tensorflow(tf).minimize(tf.reduce_sum(w * w))
        made = [v for v in graph.get_collection("variables") if v.op.name.startswith("w/")]
    assert len(made) == slots, [v.op.name for v in made]


@pytest.mark.parametrize("make, named", [
    (lambda: to.train.RMSPropOptimizer(0.1, centered="yes"), "centered='yes'; give True or False"),
    (lambda: to.train.RMSPropOptimizer(0.1, decay=-0.5), "decay=-0.5; give a finite number >= 0"),
    (lambda: to.train.AdagradOptimizer(0.1, initial_accumulator_value=0), "initial_accumulator_value=0; give a number > 0"),
])
def test_bad_hyperparameters_are_refused_by_name(make, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        make()
