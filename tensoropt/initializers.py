"""Variable initializers, named and parameterized as in ``tf.compat.v1``, made shard by shard.

Each initializer is a small frozen value with TensorFlow 1.x's name and arguments and
TensorFlow's distribution: glorot/he/variance scaling compute their fans on the *logical*
(whole) shape, ``truncated_normal`` redraws beyond two standard deviations, constants
fill. What differs from TensorFlow is how the random numbers are drawn, so that a rank
can make its shard of a variable without ever holding the whole variable:

- The logical tensor is cut into fixed blocks (``block_shape``: at most
  ``BLOCK_ELEMENTS`` elements, chosen from the logical shape alone).
- Block ``i`` of a variable is drawn by TensorFlow's stateless random ops (Philox),
  keyed by ``(variable key, i)``; the variable key comes from the variable's name, the
  initializer's seed and the graph seed (``seed_for``).
- A shard is the union of the whole or partial blocks it overlaps. One process (whole
  tensors) and every plan's shards therefore hold the same values, and no rank ever
  holds a whole variable: ``Lowered.initialize`` makes one variable per
  ``session.run``, so initializing needs a rank's shards plus about one shard of
  temporaries.

Initial values thus differ from what ``tf.compat.v1``'s own initializers draw for the
same seed (the distribution is the same). To start a TensorFlow script and its TensorOpt
port from identical values, make them with numpy and pass them to both through
``constant_initializer(array)``, as ``tests/api/scripts`` do. When no seed is given,
the key comes from the variable's name, so initial values never depend on the order of
unrelated ops.

Usage::

    w = to.get_variable("w", [784, 10], initializer=to.glorot_uniform_initializer(seed=1))
    e = to.get_variable("e", [100, 8], initializer=to.constant_initializer(np_array))
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

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
    "block_shape",
    "BLOCK_ELEMENTS",
]

#: Most elements in one random block (4 MiB of float32). Read when a shard is built.
BLOCK_ELEMENTS = 1 << 20

# The stddev of a unit normal truncated to [-2, 2] (TensorFlow's correction constant).
_TRUNCATED_STDDEV = 0.87962566103423978
_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("normal", "truncated_normal", "untruncated_normal", "uniform")


class _Array:
    """A constant's array value: hashable and comparable by content."""

    def __init__(self, value: np.ndarray):
        self.value = np.array(value, copy=True)
        self.value.flags.writeable = False
        self._digest = (self.value.shape, str(self.value.dtype), self.value.tobytes())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Array) and self._digest == other._digest

    def __hash__(self) -> int:
        return hash(self._digest)

    def __repr__(self) -> str:
        return f"array(shape={self.value.shape})"


@dataclass(frozen=True)
class Initializer:
    """An initializer: TensorFlow 1.x's name under ``tf.compat.v1`` and its arguments.

    Attributes:
        tf_name: e.g. ``"glorot_uniform_initializer"``.
        kwargs: its arguments, as (name, value) pairs.
        seeded: whether it draws random numbers (and so takes a seed).
    """

    tf_name: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    seeded: bool = True

    @property
    def seed(self) -> int | None:
        return dict(self.kwargs).get("seed")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs)
        return f"{self.tf_name}({args})"

    def shard(self, tf, shape: Sequence[int], dtype, key: int, offsets: Sequence[int] | None = None,
              local_shape: Sequence[int] | None = None, name: str = "variable"):
        """The values of the box ``[offsets, offsets + local_shape)`` of a ``shape`` tensor.

        Args:
            tf: the tensorflow module.
            shape: the variable's logical (whole) shape; fans are computed on it.
            dtype: a TensorFlow dtype.
            key: the variable's key (``seed_for``); unused by constants.
            offsets, local_shape: the box; default the whole tensor.
            name: the variable's name, for error messages.

        Raises:
            ValueError: a random initializer for a non-float dtype, or a constant array
                whose size is not the variable's.
        """
        shape = tuple(int(n) for n in shape)
        offsets = tuple(offsets) if offsets is not None else (0,) * len(shape)
        local = tuple(local_shape) if local_shape is not None else shape
        kw = dict(self.kwargs)
        if not self.seeded:
            value = kw.get("value", 0.0 if self.tf_name == "zeros_initializer" else 1.0)
            if isinstance(value, _Array):
                return tf.constant(_constant_box(value.value, shape, offsets, local, name), dtype=dtype)
            return tf.fill(list(local), tf.constant(value, dtype=dtype))
        if not dtype.is_floating:
            raise ValueError(f"variable {name!r}: {self!r} draws random floats, but the variable "
                             f"is {dtype.name}; use zeros/ones/constant_initializer for it")
        draw = _sampler(tf, self.tf_name, kw, shape, dtype)
        return _assemble(tf, shape, offsets, local, key, draw)


def _constant_box(value: np.ndarray, shape, offsets, local, name) -> np.ndarray:
    if value.size == 1:
        full = np.broadcast_to(value.reshape(()), shape)
    elif value.size == math.prod(shape):
        full = value.reshape(shape)
    else:
        raise ValueError(f"variable {name!r}: constant_initializer holds {value.size} values "
                         f"(shape {value.shape}) but the variable has shape {shape} "
                         f"({math.prod(shape)} values); pass a scalar or an array of that size")
    return np.ascontiguousarray(full[tuple(slice(o, o + n) for o, n in zip(offsets, local))])


def _fans(shape: tuple[int, ...]) -> tuple[float, float]:
    """TensorFlow's fans: receptive field x input/output channels (last two axes)."""
    if not shape:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = math.prod(shape[:-2])
    return float(shape[-2] * receptive), float(shape[-1] * receptive)


def _sampler(tf, kind: str, kw: dict, shape, dtype):
    """``draw(block_shape, key) -> tensor``: one block in the initializer's distribution,
    from Philox keyed by the 64-bit ``key`` (counter 0).

    The counter enters through a ``placeholder_with_default``: otherwise every block is
    a function of constants, and the session's constant folding would store each block
    (up to 10 MB) in the graph, a second copy of the variable that lives as long as the
    session."""
    raw = tf.raw_ops
    counter = tf.compat.v1.placeholder_with_default(np.zeros(2, np.uint64), shape=[2], name="counter")

    def philox(op, block, key):
        return op(shape=block, key=np.array([key], np.uint64), counter=counter, alg=1, dtype=dtype)

    def normal(mean, stddev, truncated=False):
        op = raw.StatelessTruncatedNormalV2 if truncated else raw.StatelessRandomNormalV2
        return lambda block, key: philox(op, block, key) * stddev + mean

    def uniform(low, high):
        return lambda block, key: philox(raw.StatelessRandomUniformV2, block, key) * (high - low) + low

    if kind == "random_normal_initializer":
        return normal(kw["mean"], kw["stddev"])
    if kind == "truncated_normal_initializer":
        return normal(kw["mean"], kw["stddev"], truncated=True)
    if kind == "random_uniform_initializer":
        return uniform(kw["minval"], kw["maxval"])
    if kind in ("glorot_uniform_initializer", "glorot_normal_initializer"):
        scale, mode = 1.0, "fan_avg"
        distribution = "uniform" if kind == "glorot_uniform_initializer" else "truncated_normal"
    else:
        assert kind == "variance_scaling_initializer", kind
        scale, mode, distribution = kw["scale"], kw["mode"], kw["distribution"]
    fan_in, fan_out = _fans(shape)
    n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[mode]
    scale /= max(1.0, n)
    if distribution in ("normal", "truncated_normal"):
        return normal(0.0, math.sqrt(scale) / _TRUNCATED_STDDEV, truncated=True)
    if distribution == "untruncated_normal":
        return normal(0.0, math.sqrt(scale))
    limit = math.sqrt(3.0 * scale)
    return uniform(-limit, limit)


def block_shape(shape: Sequence[int], block_elements: int | None = None) -> tuple[int, ...]:
    """The shape of the random blocks of a ``shape`` tensor (the last block along an axis
    may be shorter). Depends on the logical shape only, so every rank agrees.

    The largest axis is divided by its smallest factor up to 7 (halved, rounding up,
    when it has none) until a block holds at most ``block_elements`` (default
    ``BLOCK_ELEMENTS``): blocks then align with even splits of power-of-two-ish axes.
    """
    limit = BLOCK_ELEMENTS if block_elements is None else int(block_elements)
    b = [int(n) for n in shape]
    while math.prod(b) > limit:
        d = max(range(len(b)), key=lambda i: (b[i], -i))
        factor = next((p for p in (2, 3, 5, 7) if b[d] % p == 0), None)
        b[d] = b[d] // factor if factor else -(-b[d] // 2)
    return tuple(b)


def _assemble(tf, shape, offsets, local, key: int, draw):
    """The box from whole/partial blocks; block ``i`` is drawn with Philox key
    ``key * 2**32 + i``. Bands along axis 0 are drawn one after another (control
    dependencies), then concatenated."""
    if not shape:  # a scalar: one block
        return draw([], key << 32)
    blocks = block_shape(shape)
    grid = [-(-n // b) for n, b in zip(shape, blocks)]
    per_axis = []  # per axis: (block coordinate, start inside the block, stop inside it)
    for n, b, o, m in zip(shape, blocks, offsets, local):
        per_axis.append([(c, max(o - c * b, 0), min(o + m - c * b, b, n - c * b))
                         for c in range(o // b, (o + m - 1) // b + 1)])

    def block(parts):
        coords = [c for c, _, _ in parts]
        index = 0
        for c, g in zip(coords, grid):
            index = index * g + c
        assert index < 1 << 32, (shape, blocks)
        full = [min(b, n - c * b) for c, b, n in zip(coords, blocks, shape)]
        value = draw(full, (key << 32) | index)
        size = [stop - start for _, start, stop in parts]
        return value if size == full else tf.slice(value, [start for _, start, _ in parts], size)

    def box(axis: int, prefix: tuple):
        if axis == len(shape):
            return block(prefix)
        pieces = [box(axis + 1, prefix + (part,)) for part in per_axis[axis]]
        return pieces[0] if len(pieces) == 1 else tf.concat(pieces, axis=axis)

    if len(per_axis[0]) == 1:
        return box(1, (per_axis[0][0],))
    bands = []
    for part in per_axis[0]:
        with tf.control_dependencies(bands[-1:]):
            bands.append(box(1, (part,)))
    return tf.concat(bands, axis=0)


def seed_for(variable_name: str, graph_seed: int | None, op_seed: int | None = None) -> int:
    """The key of a variable's random blocks: from its name, the initializer's seed and the
    graph seed; stable across runs, processes and plans."""
    text = f"{variable_name}|{op_seed}|{graph_seed}"
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def zeros_initializer() -> Initializer:
    return Initializer("zeros_initializer", seeded=False)


def ones_initializer() -> Initializer:
    return Initializer("ones_initializer", seeded=False)


def constant_initializer(value: Any = 0) -> Initializer:
    """A scalar fill, or an array (numpy or nested lists) of the variable's size, reshaped
    to its shape as ``tf.compat.v1.constant_initializer`` does.

    Raises:
        ValueError: for a value that is not numeric.
    """
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"constant_initializer: value {value!r} is not numeric; pass a number "
                         "or a numeric array")
    if array.ndim == 0:
        return Initializer("constant_initializer", (("value", float(array)),), seeded=False)
    return Initializer("constant_initializer", (("value", _Array(array)),), seeded=False)


def _check_stddev(name: str, stddev: float) -> None:
    if not stddev >= 0:
        raise ValueError(f"{name}: stddev {stddev!r} must be >= 0")


def random_normal_initializer(mean: float = 0.0, stddev: float = 1.0, seed: int | None = None) -> Initializer:
    _check_stddev("random_normal_initializer", stddev)
    return Initializer("random_normal_initializer", (("mean", mean), ("stddev", stddev), ("seed", seed)))


def truncated_normal_initializer(mean: float = 0.0, stddev: float = 1.0,
                                 seed: int | None = None) -> Initializer:
    """Normal values more than two standard deviations from the mean are redrawn."""
    _check_stddev("truncated_normal_initializer", stddev)
    return Initializer("truncated_normal_initializer",
                       (("mean", mean), ("stddev", stddev), ("seed", seed)))


def random_uniform_initializer(minval: float = -0.05, maxval: float = 0.05,
                               seed: int | None = None) -> Initializer:
    if not maxval > minval:
        raise ValueError(f"random_uniform_initializer: maxval {maxval!r} must exceed minval {minval!r}")
    return Initializer("random_uniform_initializer",
                       (("minval", minval), ("maxval", maxval), ("seed", seed)))


def glorot_uniform_initializer(seed: int | None = None) -> Initializer:
    """Uniform in ±sqrt(6 / (fan_in + fan_out)), fans of the whole variable."""
    return Initializer("glorot_uniform_initializer", (("seed", seed),))


def glorot_normal_initializer(seed: int | None = None) -> Initializer:
    """Truncated normal of stddev sqrt(2 / (fan_in + fan_out)), fans of the whole variable."""
    return Initializer("glorot_normal_initializer", (("seed", seed),))


def variance_scaling_initializer(scale: float = 1.0, mode: str = "fan_in",
                                 distribution: str = "truncated_normal",
                                 seed: int | None = None) -> Initializer:
    """TensorFlow 1.x's variance scaling: ``scale / n`` variance, ``n`` the fan ``mode``
    names; "normal" means truncated normal, as in TensorFlow 1.x.

    Raises:
        ValueError: for a non-positive scale, an unknown mode or distribution.
    """
    if not scale > 0:
        raise ValueError(f"variance_scaling_initializer: scale {scale!r} must be > 0")
    if mode not in _MODES:
        raise ValueError(f"variance_scaling_initializer: mode {mode!r}; choose one of {', '.join(_MODES)}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"variance_scaling_initializer: distribution {distribution!r}; choose one "
                         f"of {', '.join(_DISTRIBUTIONS)}")
    return Initializer("variance_scaling_initializer",
                       (("scale", scale), ("mode", mode), ("distribution", distribution),
                        ("seed", seed)))


def he_normal(seed: int | None = None) -> Initializer:
    """TensorFlow 1.x's ``he_normal``: variance scaling 2.0, fan-in, truncated normal."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> Initializer:
    """TensorFlow 1.x's ``he_uniform``: variance scaling 2.0, fan-in, uniform."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)
