"""The global step and learning-rate schedules: the rates are TensorFlow's step by step,
training with them matches ``tf.compat.v1``, the step survives a checkpoint into a new
build, and bad arguments are refused by name (one process; the step is whole on every rank,
as the other optimizer variables are that tests/parallel's checkpoint chains reshard)."""

import json
import os

import numpy as np
import pytest

import tensoropt as to
from tensoropt.checkpoint.manifest import Manifest
from tensoropt.costs.profiler._update import update_key

STEPS = 5
SCHEDULES = {
    "exponential_decay": lambda train, gs: train.exponential_decay(0.5, gs, 2, 0.5),
    "exponential_decay staircase": lambda train, gs: train.exponential_decay(0.5, gs, 2, 0.5, staircase=True),
    "inverse_time_decay": lambda train, gs: train.inverse_time_decay(0.4, gs, 1, 0.7),
    "natural_exp_decay staircase": lambda train, gs: train.natural_exp_decay(0.4, gs, 2, 0.3, staircase=True),
    "polynomial_decay": lambda train, gs: train.polynomial_decay(0.3, gs, 4, end_learning_rate=0.01, power=2.0),
    "polynomial_decay cycle": lambda train, gs: train.polynomial_decay(0.3, gs, 2, cycle=True),
    "cosine_decay": lambda train, gs: train.cosine_decay(0.3, gs, 4, alpha=0.1),
    "piecewise_constant": lambda train, gs: train.piecewise_constant(gs, [1, 3], [0.3, 0.1, 0.02]),
}


def _data():
    rng = np.random.default_rng(8)
    w0 = rng.normal(size=(6, 3)).astype(np.float32)
    batches = [(rng.normal(size=(5, 6)).astype(np.float32), rng.integers(0, 3, 5).astype(np.int32))
               for _ in range(STEPS)]
    return w0, batches


def _tensoropt(schedule):
    w0, batches = _data()
    x = to.placeholder(to.float32, [5, 6], name="x")
    y = to.placeholder(to.int32, [5], name="y")
    w = to.get_variable("w", [6, 3], initializer=to.constant_initializer(w0))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=to.matmul(x, w)))
    gs = to.train.get_or_create_global_step()
    lr = SCHEDULES[schedule](to.train, gs)
    step = to.train.MomentumOptimizer(lr, 0.9).minimize(loss, global_step=gs)
    to.build_execution_graph(plan=to.find_strategy())
    rates, losses, counts = [], [], []
    for xs, ys in batches:
        rates.append(to.run(lr))
        losses.append(to.run([loss, step], {x: xs, y: ys})[0])
        counts.append(to.run(gs))
    return np.array(rates), np.array(losses), to.run(w), counts


def _tensorflow(schedule):
    tf = pytest.importorskip("tensorflow")
    w0, batches = _data()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [5, 6])
        y = tf.compat.v1.placeholder(tf.int32, [5])
        w = tf.compat.v1.get_variable("w", initializer=w0)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=tf.matmul(x, w)))
        gs = tf.compat.v1.train.get_or_create_global_step()
        lr = SCHEDULES[schedule](tf.compat.v1.train, gs)
        step = tf.compat.v1.train.MomentumOptimizer(lr, 0.9).minimize(loss, global_step=gs)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            rates, losses = [], []
            for xs, ys in batches:
                rates.append(sess.run(lr))
                losses.append(sess.run([loss, step], {x: xs, y: ys})[0])
            return np.array(rates), np.array(losses), sess.run(w)


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_schedule_trains_as_tensorflow_does_step_by_step(schedule):
    rates, losses, w, counts = _tensoropt(schedule)
    tf_rates, tf_losses, tf_w = _tensorflow(schedule)
    assert counts == [1, 2, 3, 4, 5], "minimize(global_step=...) adds one a step"
    np.testing.assert_allclose(rates, tf_rates, rtol=1e-6)
    assert len(set(np.round(rates, 7))) > 1, "the rate must change over the steps"
    np.testing.assert_allclose(losses, tf_losses, rtol=1e-5)
    np.testing.assert_allclose(w, tf_w, rtol=1e-5, atol=1e-6)


def _model():
    x = to.placeholder(to.float32, [4, 3], name="x")
    w = to.get_variable("w", [3, 2])
    return x, to.reduce_sum(to.matmul(x, w))


def test_only_steps_given_the_global_step_count():
    x, loss = _model()
    gs = to.train.get_or_create_global_step()
    assert to.train.get_or_create_global_step() is gs and to.train.get_global_step() is gs
    counting = to.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    silent = to.train.GradientDescentOptimizer(0.1).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    feed = {x: np.ones((4, 3), np.float32)}
    to.run([counting, silent], feed)
    to.run(silent, feed)
    to.run(counting, feed)
    assert to.run(gs) == 2


def test_the_global_step_and_its_schedule_survive_a_checkpoint_into_a_new_build(tmp_path):
    x, loss = _model()
    gs = to.train.get_or_create_global_step()
    lr = to.train.exponential_decay(0.5, gs, 1, 0.5)
    step = to.train.AdamOptimizer(lr).minimize(loss, global_step=gs)
    to.build_execution_graph(plan=to.find_strategy())
    feed = {x: np.ones((4, 3), np.float32)}
    for _ in range(3):
        to.run(step, feed)
    saver = to.train.Saver()
    path = saver.save(str(tmp_path / "model"), global_step=gs)
    assert path.endswith("model-3")
    names = [t.name for t in Manifest.read(path).tensors]
    assert names.count("global_step") == 1, names
    to.build_execution_graph(plan=to.find_strategy())          # fresh variables
    assert (to.run(gs), to.run(lr)) == (0, 0.5)
    assert saver.restore(to.train.latest_checkpoint(str(tmp_path))) == 3
    assert to.run(gs) == 3 and to.run(lr) == pytest.approx(0.5 * 0.5 ** 3)


def test_a_checkpoint_named_by_an_int_step_restores_into_a_graph_with_a_global_step(tmp_path):
    x, loss = _model()
    step = to.train.GradientDescentOptimizer(0.1).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    to.run(step, {x: np.ones((4, 3), np.float32)})
    path = to.train.Saver().save(str(tmp_path / "model"), global_step=40)
    to.reset_default_graph()
    x, loss = _model()
    gs = to.train.get_or_create_global_step()
    to.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    to.build_execution_graph(plan=to.find_strategy())
    assert to.train.Saver().restore(path) == 40 and to.run(gs) == 40


def test_a_schedule_prices_its_update_by_name():
    gs = to.train.get_or_create_global_step()
    key = json.loads(update_key(to.train.AdamOptimizer(to.train.cosine_decay(0.1, gs, 100)), 10, "float32"))
    assert key["hyperparameters"]["learning_rate"] == "cosine_decay(learning_rate=0.1, decay_steps=100, alpha=0.0)"


@pytest.mark.parametrize("make, named", [
    (lambda gs: to.train.exponential_decay(0.1, 100, 10, 0.9), "global_step=100 is not the graph's global step"),
    (lambda gs: to.train.exponential_decay(0.1, gs, 0, 0.9), "decay_steps=0; give a whole number of steps >= 1"),
    (lambda gs: to.train.exponential_decay(-0.1, gs, 10, 0.9), r"learning_rate=-0.1; give a finite number > 0"),
    (lambda gs: to.train.exponential_decay(0.1, gs, 10, 0.9, staircase=1), "staircase=1; give True or False"),
    (lambda gs: to.train.piecewise_constant(gs, [5, 2], [0.3, 0.2, 0.1]), r"boundaries=\[5, 2\] must increase"),
    (lambda gs: to.train.piecewise_constant(gs, [5], [0.3]), "1 values for 1 boundaries; give one value more"),
    (lambda gs: to.train.polynomial_decay(0.1, gs, 10, power=float("nan")), "power=nan"),
])
def test_bad_schedule_arguments_are_refused_by_name(make, named):
    gs = to.train.get_or_create_global_step()
    with pytest.raises(ValueError, match=named):
        make(gs)


def test_a_global_step_of_another_graph_is_refused():
    old = to.train.get_or_create_global_step()
    to.reset_default_graph()
    x, loss = _model()
    with pytest.raises(ValueError, match="minimize: global_step=.* is not this graph's global step"):
        to.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=old)
    with pytest.raises(ValueError, match="global_step is another graph's"):
        to.train.exponential_decay(0.1, old, 10, 0.9)


def test_a_global_step_made_after_the_build_cannot_be_fetched():
    x, loss = _model()
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    gs = to.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="created after build_execution_graph"):
        to.run(gs)
