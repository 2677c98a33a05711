"""What one device computes for one op under one configuration, as plain data.

A ``LocalShard`` holds the local input shapes and dtypes, the local output shapes, the
dims the configuration splits, the attributes that shape the computation, and, for
integer inputs, the range their values must lie in (ids below the vocabulary size,
labels below the class count). Its ``key`` is what the profile cache is keyed by; two
ops with the same key run the same TensorFlow computation, e.g. the same layer of every
transformer block.

Usage::

    shard = local_shard(op, config)
    shard.inputs          # ((local shape, dtype name), ...)
    shard.key()           # canonical JSON text, without the machine's description
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tensoropt.configs import Config, input_layout, local_dim_sizes, output_layout

__all__ = ["LocalShard", "local_shard", "int_input_ranges", "shard_bytes", "subdivide", "fit_shard"]

# Attributes that repeat what the local shapes already say (and would otherwise keep
# equal local computations apart).
_SHAPE_ATTRS = {"reshape": {"shape"}}


def _canonical(value: Any) -> Any:
    """A JSON-able, deterministic form of an attribute value."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    name = getattr(value, "name", None)  # DType and similar named values
    if isinstance(name, str):
        return name
    return type(value).__name__


def int_input_ranges(op) -> tuple[int | None, ...]:
    """Per input, the exclusive upper bound of valid values for an int input (else None).

    Embedding ids lie below the full vocabulary size (so a shard of a split vocabulary
    sees both hits and misses, as in training); sparse labels below the class count.
    Any other int input gets zeros, valid wherever an index is.
    """
    ranges: list[int | None] = []
    for i, t in enumerate(op.inputs):
        if t.dtype.is_floating:
            ranges.append(None)
        elif op.kind == "embedding_lookup" and i == 1:
            ranges.append(int(op.space.dims["v"]))
        elif op.kind == "sparse_softmax_cross_entropy_with_logits" and i == 0:
            ranges.append(int(op.inputs[1].shape[-1]))
        else:
            ranges.append(1)
    return tuple(ranges)


@dataclass(frozen=True)
class LocalShard:
    """One device's part of one op.

    Attributes:
        kind: the op kind.
        inputs: per input, (local shape, dtype name).
        outputs: per output, (local shape, dtype name).
        split_dims: dims the configuration splits, sorted (lowerings differ when, e.g.,
            an embedding's vocabulary or an LSTM's hidden dim is split).
        attrs: canonical JSON text of the attributes that shape the computation.
        int_ranges: per input, the exclusive bound of an int input's values, else None.
        dim_sizes: the op's full dim sizes.
        local_dim_sizes: the shard's dim sizes.
    """

    kind: str
    inputs: tuple[tuple[tuple[int, ...], str], ...]
    outputs: tuple[tuple[tuple[int, ...], str], ...]
    split_dims: tuple[str, ...]
    attrs: str
    int_ranges: tuple[int | None, ...]
    dim_sizes: tuple[tuple[str, int], ...]
    local_dim_sizes: tuple[tuple[str, int], ...]

    def key(self) -> str:
        """Canonical JSON of (kind, local shapes, split dims, attributes)."""
        return json.dumps({
            "kind": self.kind,
            "inputs": [[list(s), d] for s, d in self.inputs],
            "outputs": [[list(s), d] for s, d in self.outputs],
            "split": list(self.split_dims),
            "attrs": json.loads(self.attrs),
        }, sort_keys=True, separators=(",", ":"))

    @property
    def elements(self) -> int:
        """Elements of all local inputs and outputs (a rough size, for progress output)."""
        n = 0
        for shape, _ in self.inputs + self.outputs:
            m = 1
            for d in shape:
                m *= d
            n += m
        return n


def local_shard(op, config: Config) -> LocalShard:
    """The shard of ``op`` that one device computes under ``config``."""
    space = op.space
    local = local_dim_sizes(space, config)
    inputs = tuple((tuple(input_layout(op, config, i).local_shape(tuple(t.shape))), t.dtype.name)
                   for i, t in enumerate(op.inputs))
    outputs = tuple((tuple(output_layout(op, config, j).local_shape(tuple(t.shape))), t.dtype.name)
                    for j, t in enumerate(op.outputs))
    split = tuple(sorted(d for d in space.dims if local[d] != space.dims[d]))
    skip = _SHAPE_ATTRS.get(op.kind, set())
    attrs = {k: _canonical(v) for k, v in op.attrs.items() if k not in skip}
    return LocalShard(
        kind=op.kind,
        inputs=tuple((tuple(int(d) for d in s), dt) for s, dt in inputs),
        outputs=tuple((tuple(int(d) for d in s), dt) for s, dt in outputs),
        split_dims=split,
        attrs=json.dumps(attrs, sort_keys=True, separators=(",", ":")),
        int_ranges=int_input_ranges(op),
        dim_sizes=tuple((d, int(n)) for d, n in space.dims.items()),
        local_dim_sizes=tuple((d, int(n)) for d, n in local.items()),
    )


def shard_bytes(shard: LocalShard) -> int:
    """Bytes a measurement holds: inputs and outputs, and as much again for their
    gradients and the output gradients fed to backward (4-byte elements)."""
    return 2 * 4 * shard.elements


def subdivide(op, shard: LocalShard, dim: str, factor: int) -> LocalShard:
    """``shard`` with ``dim`` further divided ``factor`` ways (every tensor axis carrying
    ``dim`` shrinks by ``factor``): a smaller stand-in whose time, times ``factor``,
    estimates the shard's when the shard itself is too large to run here.

    Raises:
        ValueError: if ``factor`` does not divide the shard's size of ``dim``.
    """
    local = dict(shard.local_dim_sizes)
    if factor < 1 or local[dim] % factor:
        raise ValueError(f"{op.kind} '{op.name}': cannot divide dim {dim} of local size "
                         f"{local[dim]} by {factor}; pick a divisor")
    local[dim] //= factor

    def shrink(shapes, carried):
        out = []
        for (shape, dtype), dims in zip(shapes, carried):
            out.append((tuple(n // factor if d == dim else n for n, d in zip(shape, dims)), dtype))
        return tuple(out)

    split = tuple(sorted(set(shard.split_dims) | {dim}))
    return LocalShard(kind=shard.kind, inputs=shrink(shard.inputs, op.space.inputs),
                      outputs=shrink(shard.outputs, op.space.outputs), split_dims=split,
                      attrs=shard.attrs, int_ranges=shard.int_ranges, dim_sizes=shard.dim_sizes,
                      local_dim_sizes=tuple((d, local[d]) for d, _ in shard.local_dim_sizes))


def fit_shard(op, shard: LocalShard, flops: float, max_bytes: float, max_flops: float
              ) -> tuple[LocalShard, int]:
    """A stand-in for ``shard`` within ``max_bytes`` and ``max_flops``, and the factor to
    scale its time by (1: the shard itself).

    The divided dim is the largest local dim that may be split, preferring dims that are
    not reductions (dividing those keeps every lowering path unchanged); the factor is
    the smallest divisor of its local size at least the ratio by which the shard exceeds
    its limits (or the whole size when none is). Tensors that do not carry the dim (a
    weight, when the batch is divided) keep their size, so the stand-in can still be
    somewhat over ``max_bytes``.
    """
    need = max(shard_bytes(shard) / max_bytes, flops / max_flops, 1.0)
    if need <= 1.0:
        return shard, 1
    space = op.space
    local = dict(shard.local_dim_sizes)
    candidates = [d for d in space.dims if d not in space.unsplittable and local[d] > 1]
    if not candidates:
        return shard, 1
    dim = max(candidates, key=lambda d: (d not in space.reductions, local[d]))
    n = local[dim]
    factor = next((f for f in range(2, n + 1) if n % f == 0 and f >= need), n)
    return subdivide(op, shard, dim, factor), factor
