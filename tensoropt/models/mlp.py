"""A multi-layer perceptron classifier.

Usage::

    spec = models.build("mlp", size="tiny")        # 784 -> 32 -> 10, batch 8
"""

from __future__ import annotations

from typing import Sequence

import tensoropt as to
from tensoropt.models import _layers as L
from tensoropt.models._registry import IntRange, ModelSpec, register

__all__ = ["mlp"]


@register("mlp", presets={
    "paper": dict(batch=256, input_dim=784, hidden=(4096, 4096, 4096), classes=1000),
    "small": dict(batch=64, input_dim=784, hidden=(512, 512), classes=10),
    "tiny": dict(batch=8, input_dim=64, hidden=(32,), classes=8),
})
def mlp(batch: int = 64, input_dim: int = 784, hidden: Sequence[int] = (512, 512), classes: int = 10,
        optimizer: str = "adam", learning_rate: float = 1e-3) -> ModelSpec:
    """MLP: input_dim -> hidden... (ReLU) -> classes, softmax cross-entropy.

    Inputs: ``x`` [batch, input_dim] float32, ``labels`` [batch] int32 in [0, classes).
    The "paper" preset (batch 256, three 4096-wide layers, 1000 classes) is a dense
    stress model, not one of the papers' benchmarks.
    """
    x = to.placeholder(to.float32, [batch, input_dim], name="x")
    labels = to.placeholder(to.int32, [batch], name="labels")
    h = x
    for i, width in enumerate(hidden):
        h = L.dense(h, width, f"fc{i}", activation=to.nn.relu)
    logits = L.dense(h, classes, "logits")
    loss = L.sparse_xent_loss(logits, labels)
    return L.finish(loss, {"x": x, "labels": labels}, optimizer, learning_rate, logits=logits,
                    int_ranges={"labels": IntRange(0, classes)})
