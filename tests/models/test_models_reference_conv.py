"""The conv-stack zoo models' first loss equals a TensorFlow-eager forward pass written
from their docstrings, from the same initial weights: VGG16, AlexNet and InceptionV3
(tiny sizes). Batch norm is training-mode (batch statistics, epsilon 1e-3)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.models.test_models_train_tiny import OVERRIDES, lowered, xent

tf = pytest.importorskip("tensorflow")


def _conv(h, w, scope, stride=1, padding="SAME", bias=True):
    y = tf.nn.conv2d(h, w[f"{scope}/kernel"], stride, padding)
    return y + w[f"{scope}/bias"] if bias else y


def _head(h, w, labels):
    h = h.numpy().reshape(h.shape[0], -1)
    h = np.maximum(h @ w["fc6/kernel"] + w["fc6/bias"], 0)
    h = np.maximum(h @ w["fc7/kernel"] + w["fc7/bias"], 0)
    return xent(h @ w["fc8/kernel"] + w["fc8/bias"], labels)


def test_vgg16_matches_tensorflow_eager():
    spec, w, data, loss = lowered("paper_vgg16")
    h = tf.constant(data["images"])
    for s, stage in enumerate((2, 2, 3, 3, 3)):
        for c in range(stage):
            h = tf.nn.relu(_conv(h, w, f"conv{s + 1}_{c + 1}"))
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
    np.testing.assert_allclose(loss, _head(h, w, data["labels"]), rtol=1e-5)


def test_alexnet_matches_tensorflow_eager():
    spec, w, data, loss = lowered("alexnet")
    h = tf.nn.relu(_conv(tf.constant(data["images"]), w, "conv1", stride=4, padding="VALID"))
    h = tf.nn.max_pool2d(h, 3, 2, "VALID")
    h = tf.nn.max_pool2d(tf.nn.relu(_conv(h, w, "conv2")), 3, 2, "VALID")
    for n in (3, 4, 5):
        h = tf.nn.relu(_conv(h, w, f"conv{n}"))
    h = tf.nn.max_pool2d(h, 3, 2, "VALID")
    np.testing.assert_allclose(loss, _head(h, w, data["labels"]), rtol=1e-5)


class _Inception:
    """InceptionV3's body in TensorFlow eager, its basic convs numbered in model order."""

    def __init__(self, w):
        self.w, self.n, self.scope = w, 0, ""

    def basic(self, x, ksize=None, stride=1, padding="SAME"):
        self.n += 1
        p = f"{self.scope}conv{self.n}"
        y = tf.nn.conv2d(x, self.w[f"{p}/conv/kernel"], stride, padding)
        mean, var = tf.nn.moments(y, axes=[0, 1, 2])
        y = tf.nn.batch_normalization(y, mean, var, self.w[f"{p}/bn/beta"], self.w[f"{p}/bn/gamma"], 1e-3)
        return tf.nn.relu(y)

    def a(self, x):
        b1 = self.basic(x)
        b5 = self.basic(self.basic(x))
        b3 = self.basic(self.basic(self.basic(x)))
        return tf.concat([b1, b5, b3, self.basic(tf.nn.avg_pool2d(x, 3, 1, "SAME"))], 3)

    def b(self, x):
        b3 = self.basic(x, stride=2, padding="VALID")
        bd = self.basic(self.basic(self.basic(x)), stride=2, padding="VALID")
        return tf.concat([b3, bd, tf.nn.max_pool2d(x, 3, 2, "VALID")], 3)

    def c(self, x):
        b1 = self.basic(x)
        b7 = self.basic(self.basic(self.basic(x)))
        bd = self.basic(x)
        bd = self.basic(self.basic(self.basic(self.basic(bd))))
        return tf.concat([b1, b7, bd, self.basic(tf.nn.avg_pool2d(x, 3, 1, "SAME"))], 3)

    def d(self, x):
        b3 = self.basic(self.basic(x), stride=2, padding="VALID")
        b7 = self.basic(self.basic(self.basic(self.basic(x))), stride=2, padding="VALID")
        return tf.concat([b3, b7, tf.nn.max_pool2d(x, 3, 2, "VALID")], 3)

    def e(self, x):
        b1 = self.basic(x)
        b3 = self.basic(x)
        b3 = tf.concat([self.basic(b3), self.basic(b3)], 3)
        bd = self.basic(self.basic(x))
        bd = tf.concat([self.basic(bd), self.basic(bd)], 3)
        return tf.concat([b1, b3, bd, self.basic(tf.nn.avg_pool2d(x, 3, 1, "SAME"))], 3)

    def __call__(self, images):
        h = self.basic(images, stride=2, padding="VALID")
        h = self.basic(h, padding="VALID")
        h = tf.nn.max_pool2d(self.basic(h), 3, 2, "VALID")
        h = self.basic(self.basic(h), padding="VALID")
        h = tf.nn.max_pool2d(h, 3, 2, "VALID")
        for scope, module in [("mixed5b", self.a), ("mixed5c", self.a), ("mixed5d", self.a), ("mixed6a", self.b),
                              ("mixed6b", self.c), ("mixed6c", self.c), ("mixed6d", self.c), ("mixed6e", self.c),
                              ("mixed7a", self.d), ("mixed7b", self.e), ("mixed7c", self.e)]:
            self.scope = f"{scope}/"
            h = module(h)
        return h


def test_inception_v3_matches_tensorflow_eager():
    spec, w, data, loss = lowered("inception_v3", **OVERRIDES["inception_v3"])
    h = _Inception(w)(tf.constant(data["images"]))
    assert h.shape[1:3] == (2, 2)
    logits = tf.reduce_mean(h, axis=[1, 2]).numpy() @ w["fc/kernel"] + w["fc/bias"]
    np.testing.assert_allclose(loss, xent(logits, data["labels"]), rtol=1e-4)
