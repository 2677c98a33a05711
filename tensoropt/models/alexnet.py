"""AlexNet as in PaSE's graph: 5 convolutions, 3 max-pools, FC 4096, 4096, 1024.

Usage::

    spec = models.build("alexnet", size="paper")   # batch 128, 227x227x3
"""

from __future__ import annotations

import tensoropt as to
from tensoropt.models import _layers as L
from tensoropt.models._registry import ModelSpec, register

__all__ = ["alexnet"]


@register("alexnet", presets={
    "paper": dict(batch=128, image=227, width=1.0, fc=4096, classes=1024),
    "tiny": dict(batch=4, image=67, width=0.0625, fc=32, classes=8),
})
def alexnet(batch: int = 128, image: int = 227, width: float = 1.0, fc: int = 4096,
            classes: int = 1024, optimizer: str = "adam", learning_rate: float = 1e-3) -> ModelSpec:
    """PaSE's AlexNet benchmark: batch 128, input 227x227x3; conv 96 k11 s4 (VALID),
    max-pool 3 s2, conv 256 k5, max-pool 3 s2, conv 384 k3, 384 k3, 256 k3 (SAME, all with
    bias and ReLU), max-pool 3 s2, flatten 6x6x256 = 9216, FC 4096, 4096 (ReLU), FC 1024
    (PaSE uses 1024 classes, not 1000), softmax cross-entropy. 62.5M parameters.
    ``width`` scales the conv channels (tiny preset).
    """
    images = to.placeholder(to.float32, [batch, image, image, 3], name="images")
    labels = to.placeholder(to.int32, [batch], name="labels")

    def ch(n: int) -> int:
        return max(1, int(n * width))

    h = to.nn.relu(L.conv(images, ch(96), 11, "conv1", stride=4, padding="VALID", use_bias=True))
    h = to.nn.max_pool2d(h, ksize=3, strides=2, padding="VALID")
    h = to.nn.relu(L.conv(h, ch(256), 5, "conv2", use_bias=True))
    h = to.nn.max_pool2d(h, ksize=3, strides=2, padding="VALID")
    h = to.nn.relu(L.conv(h, ch(384), 3, "conv3", use_bias=True))
    h = to.nn.relu(L.conv(h, ch(384), 3, "conv4", use_bias=True))
    h = to.nn.relu(L.conv(h, ch(256), 3, "conv5", use_bias=True))
    h = to.nn.max_pool2d(h, ksize=3, strides=2, padding="VALID")
    return L.fc_classifier(h, fc, classes, images, labels, optimizer, learning_rate)
