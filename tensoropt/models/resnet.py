"""Residual networks: ResNet101 (bottleneck blocks, as in PaSE's graph) and a Wide ResNet
(Zagoruyko and Komodakis: pre-activation basic blocks widened by a factor ``k``).

Batch normalization is training-mode: ``moments`` over batch, height and width, then
``batch_normalization`` with gamma/beta variables.

Usage::

    spec = models.build("resnet101", size="paper")          # batch 128, 227x227x3
    spec = models.build("paper_wide_resnet", size="paper")  # WRN-28-73 on 32x32, batch 256
"""

from __future__ import annotations

from typing import Sequence

import tensoropt as to
from tensoropt.graph import Tensor
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec, register

__all__ = ["resnet101", "paper_wide_resnet", "bottleneck", "wide_basic_block", "resnet_conv_count",
           "wrn_conv_count"]


def resnet_conv_count(blocks: Sequence[int]) -> int:
    """conv2d ops of :func:`resnet101`: stem, 3 per bottleneck, one projection per stage."""
    return 1 + 3 * sum(blocks) + len(blocks)


def wrn_conv_count(depth: int) -> int:
    """conv2d ops of :func:`paper_wide_resnet`: stem, 2 per block, one projection per group."""
    return 1 + 2 * 3 * ((depth - 4) // 6) + 3


def bottleneck(x: Tensor, planes: int, stride: int, name: str, expansion: int = 4) -> Tensor:
    """ResNet bottleneck: 1x1 planes -> 3x3 planes (stride) -> 1x1 planes*expansion, each with
    batch norm, plus the identity (or a 1x1 conv + batch norm projection when the shape
    changes), then ReLU."""
    relu = to.nn.relu
    with to.variable_scope(name):
        out = L.conv_bn(x, planes, 1, "conv1", activation=relu)
        out = L.conv_bn(out, planes, 3, "conv2", stride=stride, activation=relu)
        out = L.conv_bn(out, planes * expansion, 1, "conv3")
        shortcut = x
        if stride != 1 or x.shape[-1] != planes * expansion:
            shortcut = L.conv_bn(x, planes * expansion, 1, "downsample", stride=stride)
        return relu(out + shortcut)


@register("resnet101", presets={
    "paper": dict(batch=128, image=227, blocks=(3, 4, 23, 3), base=64, classes=1000),
    "small": dict(batch=16, image=64, blocks=(1, 1, 1, 1), base=16, classes=100),
    "tiny": dict(batch=4, image=32, blocks=(1, 1, 1, 1), base=4, classes=8),
})
def resnet101(batch: int = 128, image: int = 227, blocks: Sequence[int] = (3, 4, 23, 3),
              base: int = 64, classes: int = 1000, optimizer: str = "adam",
              learning_rate: float = 1e-3) -> ModelSpec:
    """PaSE's ResNet101 benchmark: batch 128, input 227x227x3; conv 7x7/2 64 + batch norm +
    ReLU, max-pool 3x3/2 (SAME); four stages of bottleneck blocks (3, 4, 23, 3) with planes
    64, 128, 256, 512 (x4 expansion; stride 2 from the second stage); global average pool
    (``reduce_mean`` over height and width); FC to 1000 classes; softmax cross-entropy.
    About 44.5M parameters, 104 convolutions. ``blocks`` and ``base`` (the first stage's
    planes) shrink it for the tiny and small presets.
    """
    images = to.placeholder(to.float32, [batch, image, image, 3], name="images")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = L.conv_bn(images, base, 7, "conv1", stride=2, activation=to.nn.relu)
    h = to.nn.max_pool2d(h, ksize=3, strides=2, padding="SAME")
    for stage, n in enumerate(blocks):
        planes = base * 2 ** stage
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            h = bottleneck(h, planes, stride, f"layer{stage + 1}/block{i}")
    h = to.reduce_mean(h, axis=[1, 2])
    logits = L.dense(h, classes, "fc")
    loss = L.sparse_xent_loss(logits, labels)
    return L.finish(loss, {"images": images, "labels": labels}, optimizer, learning_rate,
                    logits=logits, int_ranges={"labels": IntRange(0, classes)})


def wide_basic_block(x: Tensor, width: int, stride: int, name: str) -> Tensor:
    """Pre-activation wide basic block: BN-ReLU-conv3x3(stride)-BN-ReLU-conv3x3, plus the
    identity or a 1x1 projection of the pre-activated input when the shape changes."""
    with to.variable_scope(name):
        pre = to.nn.relu(L.batch_norm(x, "bn1"))
        out = L.conv(pre, width, 3, "conv1", stride=stride)
        out = L.conv(to.nn.relu(L.batch_norm(out, "bn2")), width, 3, "conv2")
        shortcut = x
        if stride != 1 or x.shape[-1] != width:
            shortcut = L.conv(pre, width, 1, "shortcut", stride=stride)
        return out + shortcut


@register("paper_wide_resnet", presets={
    "paper": dict(batch=256, image=32, depth=28, k=73, classes=1000),
    "small": dict(batch=16, image=32, depth=16, k=4, classes=100),
    "tiny": dict(batch=4, image=16, depth=10, k=1, classes=8),
})
def paper_wide_resnet(batch: int = 256, image: int = 32, depth: int = 28, k: int = 73,
                      classes: int = 1000, optimizer: str = "adam",
                      learning_rate: float = 1e-3) -> ModelSpec:
    """TensorOpt Table 1 "WideResNet" (7.3 GB of parameters; GB read as GiB, 2**30 bytes).

    The paper gives no widths. Chosen: WRN-28-73, i.e. the WRN-d-k of Zagoruyko and
    Komodakis with depth 28 (4 pre-activation basic blocks per group) and width factor 73:
    a 3x3 stem conv of 16 channels, three groups of 16k = 1168, 32k = 2336 and 64k = 4672
    channels (stride 1, 2, 2), final BN-ReLU, global average pool and FC to 1000 classes;
    input 32x32x3 (CIFAR-style), batch 256. Parameters: 1.946G = 7.785e9 bytes = 7.25 GiB
    (-0.7% of 7.3). Saved activations are 72.6 GiB by ``graph_stats``, so parameters plus
    activations (79.9 GiB) come near the paper's 83 GB single-GPU estimate.
    """
    if (depth - 4) % 6:
        raise ValueError(f"paper_wide_resnet: depth {depth} is not 6n + 4")
    n = (depth - 4) // 6
    images = to.placeholder(to.float32, [batch, image, image, 3], name="images")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = L.conv(images, 16, 3, "conv1")
    for group, width in enumerate((16 * k, 32 * k, 64 * k)):
        for i in range(n):
            stride = 2 if group > 0 and i == 0 else 1
            h = wide_basic_block(h, width, stride, f"group{group + 1}/block{i}")
    h = to.nn.relu(L.batch_norm(h, "bn_final"))
    h = to.reduce_mean(h, axis=[1, 2])
    logits = L.dense(h, classes, "fc")
    loss = L.sparse_xent_loss(logits, labels)
    return L.finish(loss, {"images": images, "labels": labels}, optimizer, learning_rate,
                    logits=logits, int_ranges={"labels": IntRange(0, classes)})
