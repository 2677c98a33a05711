"""Dropout on one process: inverted scaling, its rate, a mask fixed by the op's seed (or
by its name when no seed is given) and not by how many ops the graph holds. That every
rank applies its slice of this same mask under any plan is checked under mpirun by
``tests/parallel/parity_driver.py`` (its MLP has a dropout layer)."""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to

RATE = 0.25


def _dropout_output(seed, extra_ops: int = 0, name="drop"):
    to.reset_default_graph()
    for i in range(extra_ops):     # ops before the dropout shift TensorFlow's op ids
        to.placeholder(to.float32, [2], name=f"unused{i}")
    x = to.placeholder(to.float32, [64, 32], name="x")
    w = to.get_variable("w", [32, 32], initializer=to.ones_initializer())
    y = to.nn.dropout(to.matmul(x, w), rate=RATE, seed=seed, name=name)
    to.build_execution_graph(plan=to.find_strategy())
    value = np.ones((64, 32), np.float32)
    return to.run(y, {x: value}), to.run(y, {x: value})


def test_dropout_scales_kept_values_and_drops_about_its_rate():
    (first, second) = _dropout_output(seed=5)
    kept = first != 0
    np.testing.assert_allclose(first[kept], 32.0 / (1.0 - RATE), rtol=1e-6)
    assert abs((~kept).mean() - RATE) < 0.05, (~kept).mean()
    assert (first != second).any(), "each step draws a new mask"


def test_the_mask_depends_on_the_seed_or_name_not_on_the_graph():
    seeded = _dropout_output(seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(seeded, _dropout_output(seed=5, extra_ops=3)))
    assert not np.array_equal(seeded[0], _dropout_output(seed=6)[0])
    unseeded = _dropout_output(seed=None)
    assert all(np.array_equal(a, b) for a, b in zip(unseeded, _dropout_output(seed=None, extra_ops=3)))
    assert not np.array_equal(unseeded[0], _dropout_output(seed=None, name="other")[0])


def _switched(make_rate):
    """A dropout whose rate is a tensor fed per run; the graph built once."""
    to.reset_default_graph()
    x = to.placeholder(to.float32, [64, 32], name="x")
    w = to.get_variable("w", [32, 32], initializer=to.ones_initializer())
    h = to.matmul(x, w)
    feed_name, y = make_rate(h)
    loss = to.reduce_sum(y)
    to.train.GradientDescentOptimizer(0.1).minimize(loss)      # built, never run here
    plan = to.find_strategy()
    assert plan.memory_bytes > 0
    to.build_execution_graph(plan=plan)
    return x, feed_name, y


def test_a_keep_prob_placeholder_switches_dropout_per_run():
    def make(h):
        keep = to.placeholder(to.float32, [], name="keep_prob")
        return keep, to.nn.dropout(h, keep_prob=keep, seed=3)
    x, keep, y = _switched(make)
    ones = np.ones((64, 32), np.float32)
    evaluated = to.run(y, {x: ones, keep: 1.0})
    np.testing.assert_array_equal(evaluated, 32.0)                  # keep everything, no scaling
    trained = to.run(y, {x: ones, keep: 0.5})
    kept = trained != 0
    np.testing.assert_allclose(trained[kept], 64.0, rtol=1e-6)       # 32 / 0.5
    assert abs(kept.mean() - 0.5) < 0.05


def test_layers_dropout_takes_a_training_switch_tensor():
    def make(h):
        training = to.placeholder(to.bool, [], name="is_training")
        return training, to.layers.dropout(h, rate=RATE, training=training, seed=4)
    x, training, y = _switched(make)
    ones = np.ones((64, 32), np.float32)
    np.testing.assert_array_equal(to.run(y, {x: ones, training: False}), 32.0)
    on = to.run(y, {x: ones, training: True})
    assert abs((on == 0).mean() - RATE) < 0.05
    np.testing.assert_allclose(on[on != 0], 32.0 / (1.0 - RATE), rtol=1e-6)


def test_a_rate_tensor_must_be_a_float_scalar():
    to.reset_default_graph()
    x = to.placeholder(to.float32, [8, 4], name="x")
    with pytest.raises(ValueError, match=r"rate tensor .* of shape \[8\].*a float scalar"):
        to.nn.dropout(x, rate=to.placeholder(to.float32, [8], name="r"))
    with pytest.raises(ValueError, match="give a bool scalar"):
        to.layers.dropout(x, training=to.placeholder(to.float32, [], name="t"))
