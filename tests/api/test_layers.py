"""``to.layers`` (TensorFlow 1.15's ``tf.layers``) computes what the same ops written by
hand compute, names its variables as TensorFlow 1.x does, and refuses what it does not
support by name. (TensorFlow 2.21 has no ``tf.compat.v1.layers`` under Keras 3 to compare
with.) Under plans these are ordinary ops: matmul, conv2d, pooling, reshape, dropout."""

import numpy as np
import pytest

import tensoropt as to

RNG = np.random.default_rng(3)
IMAGES = RNG.normal(size=(2, 8, 8, 3)).astype(np.float32)
KERNEL = RNG.normal(size=(3, 3, 3, 4)).astype(np.float32)
DENSE = RNG.normal(size=(64, 5)).astype(np.float32)
BIAS = RNG.normal(size=(5,)).astype(np.float32)


def test_layers_compute_the_ops_written_by_hand():
    x = to.placeholder(to.float32, IMAGES.shape, name="x")
    h = to.layers.conv2d(x, 4, 3, strides=2, padding="same", activation=to.nn.relu,
                         kernel_initializer=to.constant_initializer(KERNEL))
    p = to.layers.max_pooling2d(h, 2, 2)
    a = to.layers.average_pooling2d(h, [2, 2], [1, 1], padding="same")
    flat = to.layers.flatten(h)
    y = to.layers.dense(flat, 5, kernel_initializer=to.constant_initializer(DENSE),
                        bias_initializer=to.constant_initializer(BIAS))
    by_hand_h = to.nn.relu(to.nn.conv2d(x, to.get_variable("k", KERNEL.shape, initializer=to.constant_initializer(KERNEL)),
                                        strides=[1, 2, 2, 1], padding="SAME"))
    by_hand = [by_hand_h, to.nn.max_pool2d(by_hand_h, 2, 2, "VALID"), to.nn.avg_pool2d(by_hand_h, 2, 1, "SAME"),
               to.matmul(to.reshape(by_hand_h, [2, -1]), to.get_variable("d", DENSE.shape,
                         initializer=to.constant_initializer(DENSE))) + to.constant(0.0)]
    to.build_execution_graph(plan=to.find_strategy())
    got = to.run([h, p, a, y], {x: IMAGES})
    want = to.run(by_hand, {x: IMAGES})
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(got[3], want[3] + BIAS, rtol=1e-5, atol=1e-5)
    assert tuple(flat.shape) == (2, 64)


def test_layers_name_their_variables_as_tensorflow_1_does():
    x = to.placeholder(to.float32, [2, 6], name="x")
    to.layers.dense(x, 3)
    to.layers.dense(x, 3, use_bias=False)
    with to.variable_scope("block"):
        to.layers.dense(x, 3)
        to.layers.dense(x, 3, name="head", kernel_regularizer=to.contrib.layers.l2_regularizer(0.1))
    to.layers.conv2d(to.placeholder(to.float32, [1, 4, 4, 2]), 2, 1)
    assert sorted(to.get_default_graph().variables) == [
        "block/dense/bias", "block/dense/kernel", "block/head/bias", "block/head/kernel", "conv2d/bias",
        "conv2d/kernel", "dense/bias", "dense/kernel", "dense_1/kernel"]
    assert len(to.losses.get_regularization_losses()) == 1


def test_dropout_drops_only_when_training():
    x = to.placeholder(to.float32, [4, 100], name="x")
    assert to.layers.dropout(x, rate=0.5) is x
    y = to.layers.dropout(x, rate=0.5, seed=3, training=True)
    assert y.op.kind == "dropout"
    to.build_execution_graph(plan=to.find_strategy())
    kept = to.run(y, {x: np.ones((4, 100), np.float32)})
    assert set(np.unique(kept)) <= {0.0, 2.0} and 100 < np.count_nonzero(kept) < 300


@pytest.mark.parametrize("call, named", [
    (lambda x: to.layers.conv2d(x, 2, 3, data_format="channels_first"), "'channels_first'; TensorOpt supports"),
    (lambda x: to.layers.conv2d(x, 2, 3, dilation_rate=2), "dilation_rate=2; TensorOpt supports 1 only"),
    (lambda x: to.layers.conv2d(x, 2, 3, padding="full"), "padding='full'; give 'same' or 'valid'"),
    (lambda x: to.layers.max_pooling2d(x, 0, 1), "pool_size=0; give an int >= 1"),
    (lambda x: to.layers.dropout(x, training=to.placeholder(to.float32, [])), "training is .* give a bool scalar"),
    (lambda x: to.layers.dense(x, 3, kernel_constraint=abs), "constraints are not supported"),
])
def test_unsupported_arguments_are_refused_by_name(call, named):
    x = to.placeholder(to.float32, [1, 8, 8, 3], name="x")
    with pytest.raises(ValueError, match=named):
        call(x)
