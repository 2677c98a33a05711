"""InceptionV3 as in torchvision and PaSE's graph: the stem, modules A (x3), B, C (x4), D,
E (x2), global average pool and the classifier; no auxiliary head.

Each "basic conv" is a bias-free convolution, batch norm (``moments`` +
``batch_normalization``) and ReLU. Padded torchvision convolutions become SAME, unpadded
ones VALID; the pools inside modules A, C and E are 3x3/1 SAME average pools, those of B
and D 3x3/2 VALID max-pools.

Usage::

    spec = models.build("inception_v3", size="paper")   # batch 128, 299x299x3
"""

from __future__ import annotations

import tensoropt as to
from tensoropt.graph import Tensor
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec, register

__all__ = ["inception_v3", "CONVS", "POOLS", "CONCATS", "pase_vertex_count"]

CONVS = 94    # basic convs: stem 5, A 7 (x3), B 4, C 10 (x4), D 6, E 9 (x2)
POOLS = 13    # stem 2, A 1 (x3), B 1, C 1 (x4), D 1, E 1 (x2)
CONCATS = 15  # A 1 (x3), B 1, C 1 (x4), D 1, E 3 (x2)


def pase_vertex_count(convs: int = CONVS, pools: int = POOLS, concats: int = CONCATS) -> int:
    """Vertices of the same network in PaSE's graph, where a conv and its batch norm are
    two vertices: convs + batch norms + pools + concats + input, mean, FC and loss (220;
    PaSE's paper reports about 218)."""
    return 2 * convs + pools + concats + 4


def inception_v3_body(images: Tensor, width: float) -> Tensor:
    """The InceptionV3 feature extractor; returns the last module's output [b, h, w, c]."""

    def ch(n: int) -> int:
        return max(1, int(n * width))

    counter = [0]

    def basic(x: Tensor, filters: int, ksize, stride: int = 1, padding: str = "SAME") -> Tensor:
        counter[0] += 1
        return L.conv_bn(x, ch(filters), ksize, f"conv{counter[0]}", stride=stride,
                         padding=padding, activation=to.nn.relu)

    def avg_pool(x: Tensor) -> Tensor:
        return to.nn.avg_pool2d(x, ksize=3, strides=1, padding="SAME")

    def max_pool(x: Tensor) -> Tensor:
        return to.nn.max_pool2d(x, ksize=3, strides=2, padding="VALID")

    def module_a(x: Tensor, pool_features: int) -> Tensor:
        b1 = basic(x, 64, 1)
        b5 = basic(basic(x, 48, 1), 64, 5)
        b3 = basic(basic(basic(x, 64, 1), 96, 3), 96, 3)
        bp = basic(avg_pool(x), pool_features, 1)
        return to.concat([b1, b5, b3, bp], axis=3)

    def module_b(x: Tensor) -> Tensor:
        b3 = basic(x, 384, 3, stride=2, padding="VALID")
        bd = basic(basic(basic(x, 64, 1), 96, 3), 96, 3, stride=2, padding="VALID")
        return to.concat([b3, bd, max_pool(x)], axis=3)

    def module_c(x: Tensor, c7: int) -> Tensor:
        b1 = basic(x, 192, 1)
        b7 = basic(basic(basic(x, c7, 1), c7, (1, 7)), 192, (7, 1))
        bd = basic(x, c7, 1)
        bd = basic(basic(basic(basic(bd, c7, (7, 1)), c7, (1, 7)), c7, (7, 1)), 192, (1, 7))
        bp = basic(avg_pool(x), 192, 1)
        return to.concat([b1, b7, bd, bp], axis=3)

    def module_d(x: Tensor) -> Tensor:
        b3 = basic(basic(x, 192, 1), 320, 3, stride=2, padding="VALID")
        b7 = basic(basic(basic(x, 192, 1), 192, (1, 7)), 192, (7, 1))
        b7 = basic(b7, 192, 3, stride=2, padding="VALID")
        return to.concat([b3, b7, max_pool(x)], axis=3)

    def module_e(x: Tensor) -> Tensor:
        b1 = basic(x, 320, 1)
        b3 = basic(x, 384, 1)
        b3 = to.concat([basic(b3, 384, (1, 3)), basic(b3, 384, (3, 1))], axis=3)
        bd = basic(basic(x, 448, 1), 384, 3)
        bd = to.concat([basic(bd, 384, (1, 3)), basic(bd, 384, (3, 1))], axis=3)
        bp = basic(avg_pool(x), 192, 1)
        return to.concat([b1, b3, bd, bp], axis=3)

    h = basic(images, 32, 3, stride=2, padding="VALID")      # 149
    h = basic(h, 32, 3, padding="VALID")                      # 147
    h = basic(h, 64, 3)                                       # 147
    h = max_pool(h)                                           # 73
    h = basic(h, 80, 1)
    h = basic(h, 192, 3, padding="VALID")                     # 71
    h = max_pool(h)                                           # 35
    for i, pool_features in enumerate((32, 64, 64)):
        with to.variable_scope(f"mixed5{'bcd'[i]}"):
            h = module_a(h, pool_features)
    with to.variable_scope("mixed6a"):
        h = module_b(h)                                       # 17
    for i, c7 in enumerate((128, 160, 160, 192)):
        with to.variable_scope(f"mixed6{'bcde'[i]}"):
            h = module_c(h, c7)
    with to.variable_scope("mixed7a"):
        h = module_d(h)                                       # 8
    for i in range(2):
        with to.variable_scope(f"mixed7{'bc'[i]}"):
            h = module_e(h)
    return h


@register("inception_v3", presets={
    "paper": dict(batch=128, image=299, width=1.0, classes=1000),
    "tiny": dict(batch=4, image=107, width=0.0625, classes=8),  # last modules at 2x2
})
def inception_v3(batch: int = 128, image: int = 299, width: float = 1.0, classes: int = 1000,
                 optimizer: str = "adam", learning_rate: float = 1e-3) -> ModelSpec:
    """PaSE's InceptionV3 benchmark: batch 128, input 299x299x3, torchvision-style modules
    A-E, no auxiliary head, global average pool, FC to 1000 classes, softmax
    cross-entropy. 94 convolutions (each with batch norm), 13 pools, 15 concats; about
    23.8M parameters. ``width`` scales every channel count (tiny preset); ``image`` must
    be at least 75.
    """
    if image < 75:
        raise ValueError(f"inception_v3: image size {image} is below the minimum of 75")
    images = to.placeholder(to.float32, [batch, image, image, 3], name="images")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = inception_v3_body(images, width)
    h = to.reduce_mean(h, axis=[1, 2])
    logits = L.dense(h, classes, "fc")
    loss = L.sparse_xent_loss(logits, labels)
    return L.finish(loss, {"images": images, "labels": labels}, optimizer, learning_rate,
                    logits=logits, int_ranges={"labels": IntRange(0, classes)})
