"""Variable initializers, named and parameterized as in ``tf.compat.v1``.

Each initializer is a small frozen value. Lowering turns it into TensorFlow's own
initializer with the same arguments, so a TensorOpt script and the TensorFlow script it
was ported from start from the same values when seeds are given. When no seed is given,
TensorOpt derives one from the variable's name (TensorFlow would derive it from the op
count), so initial values never depend on the order of unrelated ops.

Usage::

    w = to.get_variable("w", [784, 10], initializer=to.glorot_uniform_initializer(seed=1))
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Initializer",
    "zeros_initializer",
    "ones_initializer",
    "constant_initializer",
    "random_normal_initializer",
    "truncated_normal_initializer",
    "random_uniform_initializer",
    "glorot_uniform_initializer",
    "glorot_normal_initializer",
    "variance_scaling_initializer",
    "he_normal",
    "he_uniform",
    "seed_for",
]


@dataclass(frozen=True)
class Initializer:
    """An initializer: TensorFlow's class name under ``tf.compat.v1`` and its arguments."""

    tf_name: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    seeded: bool = True

    def to_tensorflow(self, tf, seed: int | None):
        """The TensorFlow initializer object, with ``seed`` filled in when it takes one."""
        kwargs = dict(self.kwargs)
        if self.seeded and kwargs.get("seed") is None:
            kwargs["seed"] = seed
        return getattr(tf.compat.v1, self.tf_name)(**kwargs)

    @property
    def seed(self) -> int | None:
        return dict(self.kwargs).get("seed")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs)
        return f"{self.tf_name}({args})"


def seed_for(variable_name: str, graph_seed: int | None) -> int:
    """The op seed TensorOpt uses for an initializer given none: stable across runs."""
    return (zlib.crc32(variable_name.encode()) ^ (graph_seed or 0)) & 0x7FFFFFFF


def zeros_initializer() -> Initializer:
    return Initializer("zeros_initializer", seeded=False)


def ones_initializer() -> Initializer:
    return Initializer("ones_initializer", seeded=False)


def constant_initializer(value: float = 0) -> Initializer:
    return Initializer("constant_initializer", (("value", value),), seeded=False)


def random_normal_initializer(mean: float = 0.0, stddev: float = 1.0, seed: int | None = None) -> Initializer:
    return Initializer("random_normal_initializer", (("mean", mean), ("stddev", stddev), ("seed", seed)))


def truncated_normal_initializer(mean: float = 0.0, stddev: float = 1.0,
                                 seed: int | None = None) -> Initializer:
    return Initializer("truncated_normal_initializer",
                       (("mean", mean), ("stddev", stddev), ("seed", seed)))


def random_uniform_initializer(minval: float = -0.05, maxval: float = 0.05,
                               seed: int | None = None) -> Initializer:
    return Initializer("random_uniform_initializer",
                       (("minval", minval), ("maxval", maxval), ("seed", seed)))


def glorot_uniform_initializer(seed: int | None = None) -> Initializer:
    return Initializer("glorot_uniform_initializer", (("seed", seed),))


def glorot_normal_initializer(seed: int | None = None) -> Initializer:
    return Initializer("glorot_normal_initializer", (("seed", seed),))


def variance_scaling_initializer(scale: float = 1.0, mode: str = "fan_in",
                                 distribution: str = "truncated_normal",
                                 seed: int | None = None) -> Initializer:
    return Initializer("variance_scaling_initializer",
                       (("scale", scale), ("mode", mode), ("distribution", distribution),
                        ("seed", seed)))


def he_normal(seed: int | None = None) -> Initializer:
    """TensorFlow 1.x's ``he_normal``: variance scaling 2.0, fan-in, truncated normal."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> Initializer:
    """TensorFlow 1.x's ``he_uniform``: variance scaling 2.0, fan-in, uniform."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)
