"""A small convolutional classifier: (conv + ReLU + max-pool) blocks, then dense layers.

Usage::

    spec = models.build("cnn", size="tiny")        # 16x16x3 images, 2 conv blocks
"""

from __future__ import annotations

from typing import Sequence

import tensoropt as to
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec, register

__all__ = ["cnn"]


@register("cnn", presets={
    "paper": dict(batch=256, image=32, channels=3, filters=(64, 128, 256), dense=(1024,), classes=10),
    "small": dict(batch=32, image=32, channels=3, filters=(32, 64), dense=(256,), classes=10),
    "tiny": dict(batch=8, image=16, channels=3, filters=(8, 16), dense=(32,), classes=8),
})
def cnn(batch: int = 32, image: int = 32, channels: int = 3, filters: Sequence[int] = (32, 64),
        dense: Sequence[int] = (256,), classes: int = 10, optimizer: str = "adam",
        learning_rate: float = 1e-3) -> ModelSpec:
    """Small CNN: per entry of ``filters`` a 3x3 SAME conv (+bias, ReLU) and a 2x2 max-pool;
    then flatten, dense layers (ReLU) and a classes-way softmax cross-entropy.

    Inputs: ``images`` [batch, image, image, channels] float32 (NHWC), ``labels`` [batch]
    int32 in [0, classes).
    """
    images = to.placeholder(to.float32, [batch, image, image, channels], name="images")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = images
    for i, f in enumerate(filters):
        h = to.nn.relu(L.conv(h, f, 3, f"conv{i}", use_bias=True))
        h = to.nn.max_pool2d(h, ksize=2, strides=2, padding="SAME")
    h = to.reshape(h, [batch, h.shape[1] * h.shape[2] * h.shape[3]])
    for i, width in enumerate(dense):
        h = L.dense(h, width, f"fc{i}", activation=to.nn.relu)
    logits = L.dense(h, classes, "logits")
    loss = L.sparse_xent_loss(logits, labels)
    return L.finish(loss, {"images": images, "labels": labels}, optimizer, learning_rate,
                    logits=logits, int_ranges={"labels": IntRange(0, classes)})
