"""VGG16 (Simonyan and Zisserman, configuration D): 13 3x3 convolutions with ReLU in five
stages, each closed by a 2x2 max-pool, then FC 4096, 4096 and the classifier.

Usage::

    spec = models.build("paper_vgg16", size="paper")   # 224x224x3, batch 256, 138.4M params
"""

from __future__ import annotations

from typing import Sequence

import tensoropt as to
from tensoropt.models import _layers as L
from tensoropt.models._registry import ModelSpec, register

__all__ = ["paper_vgg16", "VGG16_STAGES"]

VGG16_STAGES = ((64, 64), (128, 128), (256, 256, 256), (512, 512, 512), (512, 512, 512))


@register("paper_vgg16", presets={
    "paper": dict(batch=256, image=224, width=1.0, fc=4096, classes=1000),
    "small": dict(batch=16, image=64, width=0.25, fc=512, classes=100),
    "tiny": dict(batch=4, image=32, width=0.0625, fc=32, classes=8),
})
def paper_vgg16(batch: int = 256, image: int = 224, width: float = 1.0, fc: int = 4096,
                classes: int = 1000, stages: Sequence[Sequence[int]] = VGG16_STAGES,
                optimizer: str = "adam", learning_rate: float = 1e-3) -> ModelSpec:
    """TensorOpt Table 1 "VGG16" (0.52 GB of parameters; GB read as GiB, 2**30 bytes).

    Standard VGG16 at paper scale: input 224x224x3, batch 256, channels
    64-64 | 128-128 | 256x3 | 512x3 | 512x3 (3x3 SAME convs with bias, ReLU, 2x2 max-pool
    after each stage), flatten 7x7x512 = 25088, FC 4096, FC 4096, 1000 classes. Parameters:
    138,357,544 = 553.4e6 bytes = 0.515 GiB (-0.9% of 0.52). ``width`` scales every conv
    channel count (tiny and small presets). ``image`` must be a multiple of 32.
    """
    if image % 32:
        raise ValueError(f"paper_vgg16: image size {image} is not a multiple of 32 (5 pools of 2)")
    images = to.placeholder(to.float32, [batch, image, image, 3], name="images")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = images
    for s, stage in enumerate(stages):
        for c, channels in enumerate(stage):
            h = to.nn.relu(L.conv(h, max(1, int(channels * width)), 3, f"conv{s + 1}_{c + 1}",
                                  use_bias=True))
        h = to.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")
    return L.fc_classifier(h, fc, classes, images, labels, optimizer, learning_rate)
