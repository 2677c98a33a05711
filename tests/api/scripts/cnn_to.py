"""The same small CNN trained with TensorOpt, for comparison with cnn_tf.py.

The two files differ only in the import and in the three TensorOpt calls; the test
checks that with difflib. Both start from the same initial values, made by numpy.
"""

import numpy as np

import tensoropt as tf

BATCH, SIZE, CHANNELS, CLASSES = 8, 16, 3, 5


def glorot(shape, seed):
    """Glorot-uniform values made by numpy, so that both scripts start from the same ones."""
    fan_in, fan_out = np.prod(shape[:-1]), shape[-1] * np.prod(shape[:-2])
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    values = np.random.default_rng(seed).uniform(-limit, limit, shape).astype(np.float32)
    return tf.constant_initializer(values)


def normal(shape, stddev, seed):
    """Normal values made by numpy, so that both scripts start from the same ones."""
    values = np.random.default_rng(seed).normal(0.0, stddev, shape).astype(np.float32)
    return tf.constant_initializer(values)


def train(batches, learning_rate=1e-2):
    """Trains one step per (images, labels) batch; returns the losses."""
    with tf.Graph().as_default():
        tf.set_random_seed(1234)
        x = tf.placeholder(tf.float32, [BATCH, SIZE, SIZE, CHANNELS], name="x")
        y = tf.placeholder(tf.int32, [BATCH], name="y")
        w1 = tf.get_variable("conv1/w", [3, 3, CHANNELS, 8], initializer=glorot([3, 3, CHANNELS, 8], 1))
        b1 = tf.get_variable("conv1/b", [8], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w1, strides=[1, 1, 1, 1], padding="SAME"), b1))
        h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
        w2 = tf.get_variable("conv2/w", [3, 3, 8, 16], initializer=glorot([3, 3, 8, 16], 2))
        h = tf.nn.relu(tf.nn.conv2d(h, w2, strides=[1, 2, 2, 1], padding="VALID"))
        h = tf.nn.avg_pool2d(h, ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")
        mean, variance = tf.nn.moments(h, axes=[0, 1, 2])
        gamma = tf.get_variable("bn/gamma", [16], initializer=tf.ones_initializer())
        beta = tf.get_variable("bn/beta", [16], initializer=tf.zeros_initializer())
        h = tf.nn.batch_normalization(h, mean, variance, beta, gamma, 1e-3)
        flat = tf.reshape(h, [BATCH, -1])
        w3 = tf.get_variable("fc/w", [flat.shape[1], CLASSES], initializer=normal([flat.shape[1], CLASSES], 0.1, 3))
        b3 = tf.get_variable("fc/b", [CLASSES], initializer=tf.constant_initializer(0.1))
        logits = tf.matmul(flat, w3) + b3
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)
        plan = tf.find_strategy(option="mini_time")
        tf.build_execution_graph(engine="tensorflow", plan=plan)
        return [tf.run([loss, train_op], feed_dict={x: xs, y: ys})[0] for xs, ys in batches]
