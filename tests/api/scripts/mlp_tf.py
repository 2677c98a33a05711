"""A tutorial-style MLP trained with TensorFlow 1.x (tf.compat.v1), for comparison with mlp_to.py.

It uses tf.Variable, int64 labels, a regularizer and a collection, a global step with a
decaying learning rate, gradients clipped by global norm, and an accuracy.

The two files differ only in the import and in the three TensorOpt calls; the test
checks that with difflib. Both start from the same initial values, made by numpy.
"""

import numpy as np

import tensorflow.compat.v1 as tf

BATCH, FEATURES, HIDDEN, CLASSES = 16, 12, 32, 4


def initial(shape, seed, stddev=0.3):
    """Initial values made by numpy, so that both scripts start from the same ones."""
    return np.random.default_rng(seed).normal(0.0, stddev, shape).astype(np.float32)


def train(batches):
    """Trains one step per (features, labels) batch; returns (loss, accuracy, norm) per step."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [BATCH, FEATURES + 2], name="x")
        y = tf.placeholder(tf.int64, [BATCH], name="y")
        features = x[:, 2:]
        w1 = tf.Variable(initial([FEATURES, HIDDEN], 1), name="w1")
        b1 = tf.Variable(np.zeros(HIDDEN, np.float32), name="b1")
        h = tf.nn.leaky_relu(tf.matmul(features, w1) + b1, alpha=0.1)
        w2 = tf.get_variable("w2", [HIDDEN, CLASSES], initializer=tf.constant_initializer(initial([HIDDEN, CLASSES], 2)),
                             regularizer=lambda w: 1e-2 * tf.nn.l2_loss(w))
        logits = tf.matmul(h, w2)
        tf.add_to_collection("losses", tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)))
        loss = tf.add_n(tf.get_collection("losses")) + tf.losses.get_regularization_loss()
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        global_step = tf.train.get_or_create_global_step()
        learning_rate = tf.train.exponential_decay(0.1, global_step, 2, 0.5, staircase=True)
        optimizer = tf.train.MomentumOptimizer(learning_rate, 0.9)
        grads, variables = zip(*optimizer.compute_gradients(loss))
        grads, norm = tf.clip_by_global_norm(grads, 1.0)
        train_op = optimizer.apply_gradients(zip(grads, variables), global_step=global_step)
        session = tf.Session()
        session.run(tf.global_variables_initializer())
        return [session.run([loss, accuracy, norm, train_op], feed_dict={x: xs, y: ys})[:3] for xs, ys in batches]
