"""A small Transformer encoder trained with TensorFlow 1.x, for comparison with transformer_to.py.

The two files differ only in the import and in the three TensorOpt calls. Both start
from the same initial values, made by numpy.
"""

import math

import numpy as np

import tensorflow.compat.v1 as tf

BATCH, SEQ, VOCAB, D_MODEL, HEADS, D_FF, LAYERS = 4, 6, 11, 16, 2, 32, 2


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


def layer_norm(x, name):
    gamma = tf.get_variable(name + "/gamma", [D_MODEL], initializer=tf.ones_initializer())
    beta = tf.get_variable(name + "/beta", [D_MODEL], initializer=tf.zeros_initializer())
    mean, variance = tf.nn.moments(x, axes=[2], keepdims=True)
    return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-6)


def dense(x, n_in, n_out, name, seed):
    w = tf.get_variable(name + "/w", [n_in, n_out], initializer=glorot([n_in, n_out], seed))
    b = tf.get_variable(name + "/b", [n_out], initializer=tf.zeros_initializer())
    return tf.reshape(tf.matmul(tf.reshape(x, [BATCH * SEQ, n_in]), w) + b, [BATCH, SEQ, n_out])


def heads(x):
    return tf.transpose(tf.reshape(x, [BATCH, SEQ, HEADS, D_MODEL // HEADS]), [0, 2, 1, 3])


def encoder_layer(x, i):
    q, k, v = tf.split(dense(x, D_MODEL, 3 * D_MODEL, f"layer{i}/qkv", 10 * i + 1), 3, axis=2)
    scores = tf.matmul(heads(q), heads(k), transpose_b=True) * (1.0 / math.sqrt(D_MODEL // HEADS))
    context = tf.matmul(tf.nn.softmax(scores), heads(v))
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [BATCH, SEQ, D_MODEL])
    x = layer_norm(x + dense(context, D_MODEL, D_MODEL, f"layer{i}/out", 10 * i + 2), f"layer{i}/ln1")
    hidden = tf.nn.relu(dense(x, D_MODEL, D_FF, f"layer{i}/ff1", 10 * i + 3))
    return layer_norm(x + dense(hidden, D_FF, D_MODEL, f"layer{i}/ff2", 10 * i + 4), f"layer{i}/ln2")


def train(batches, learning_rate=1e-2):
    """Trains one step per (tokens, targets) batch; returns the losses."""
    with tf.Graph().as_default():
        tf.set_random_seed(99)
        tokens = tf.placeholder(tf.int32, [BATCH, SEQ], name="tokens")
        targets = tf.placeholder(tf.int32, [BATCH, SEQ], name="targets")
        embedding = tf.get_variable("embedding", [VOCAB, D_MODEL], initializer=normal([VOCAB, D_MODEL], 0.5, 5))
        position = tf.get_variable("position", [SEQ, D_MODEL], initializer=normal([SEQ, D_MODEL], 0.1, 6))
        x = tf.nn.embedding_lookup(embedding, tokens) + position
        for i in range(LAYERS):
            x = encoder_layer(x, i)
        logits = dense(x, D_MODEL, VOCAB, "logits", 7)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))
        train_op = tf.train.AdamOptimizer(learning_rate).minimize(loss)
        session = tf.Session()
        session.run(tf.global_variables_initializer())
        return [session.run([loss, train_op], feed_dict={tokens: xs, targets: ys})[0] for xs, ys in batches]
