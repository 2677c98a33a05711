"""Parallelization configurations of one op: a device mesh and which mesh axis splits
which of the op's iteration dims.

A configuration assigns each mesh axis to at most one splittable iteration dim (an
injective map), or to none. An unassigned axis computes the op redundantly along it; an
axis on a reduction dim leaves partial sums that the op itself all-reduces. From a
configuration follow the layouts of the op's inputs and outputs: a tensor axis that
carries a split dim is split over that mesh axis, every other mesh axis replicates it.

Usage::

    configs = enumerate_configs(op, num_devices=8)
    c = configs[3]
    str(c)                         # '[2,4] m:0,n:1'
    input_layout(op, c, 0)         # reschedule.Layout of input 0 under c
    output_layout(op, c, 0)        # the output's layout (after the op's own all-reduce)

Placeholders are loaded data-parallel (the paper's data loading): their only
configuration splits the batch dim over all devices, or replicates when it does not
divide.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from reschedule import Layout

from tensoropt import process_sets

__all__ = ["Config", "device_meshes", "enumerate_configs", "input_layout", "output_layout",
           "tensor_layout", "local_dim_sizes"]


@dataclass(frozen=True)
class Config:
    """One configuration of one op.

    Attributes:
        mesh: device mesh, e.g. ``(2, 4)``.
        axis_dims: per mesh axis, the iteration dim it splits, or None (redundant).
    """

    mesh: tuple[int, ...]
    axis_dims: tuple[str | None, ...]

    def dim_axes(self) -> dict[str, int]:
        """Iteration dim -> the mesh axis splitting it."""
        return {d: a for a, d in enumerate(self.axis_dims) if d is not None}

    def split_factor(self) -> int:
        """How many ways the op's work is divided (redundant axes do not divide it)."""
        f = 1
        for size, d in zip(self.mesh, self.axis_dims):
            if d is not None:
                f *= size
        return f

    def __str__(self) -> str:
        mesh = "[" + ",".join(map(str, self.mesh)) + "]"
        split = ",".join(f"{d}:{a}" for a, d in enumerate(self.axis_dims) if d is not None)
        return f"{mesh} {split or 'replicated'}"


@lru_cache(maxsize=None)
def device_meshes(num_devices: int, max_axes: int = 3) -> tuple[tuple[int, ...], ...]:
    """Every ordered factorization of ``num_devices`` into 1..max_axes factors > 1, fewest
    axes first; one device has the single mesh ``(1,)`` (a layout needs one axis)."""
    if num_devices == 1:
        return ((1,),)
    return tuple(sorted(process_sets.device_meshes(num_devices, max_axes), key=lambda m: (len(m), m)))


def local_dim_sizes(space, config: Config) -> dict[str, int]:
    """The op's dim sizes on one device under ``config``."""
    sizes = dict(space.dims)
    for size, d in zip(config.mesh, config.axis_dims):
        if d is not None:
            sizes[d] //= size
    return sizes


def _assignments(mesh: tuple[int, ...], dims: dict[str, int], splittable: Iterable[str]):
    choices = []
    for size in mesh:
        choices.append([None] + [d for d in splittable if dims[d] % size == 0 and dims[d] >= size])
    for combo in itertools.product(*choices):
        used = [d for d in combo if d is not None]
        if len(used) == len(set(used)):
            yield combo


def enumerate_configs(op, num_devices: int, max_axes: int = 3) -> list[Config]:
    """Every valid configuration of ``op`` on ``num_devices`` devices, in a stable order.

    Fully redundant configurations (no axis splits anything) are the same on every mesh,
    so only one is kept.
    """
    space = op.space
    if op.kind == "placeholder":
        batch = space.dims.get("d0", 1)
        if num_devices > 1 and batch % num_devices == 0:
            return [Config((num_devices,), ("d0",))]
        return [Config((num_devices,), (None,))]
    if num_devices == 1:
        return [Config((1,), (None,))]
    splittable = space.splittable_dims()
    configs: list[Config] = []
    seen_replicated = False
    for mesh in device_meshes(num_devices, max_axes):
        for combo in _assignments(mesh, space.dims, splittable):
            if all(d is None for d in combo):
                if seen_replicated:
                    continue
                seen_replicated = True
                combo = (None,)
                mesh = (num_devices,)
            configs.append(Config(mesh, tuple(combo)))
    return configs


def tensor_layout(carried: tuple[str | None, ...], config: Config) -> Layout:
    """The layout of a tensor whose axes carry ``carried`` dims, under ``config``."""
    dim_axes = config.dim_axes()
    tensor_map = tuple(dim_axes.get(d, -1) if d is not None else -1 for d in carried)
    return Layout(mesh=config.mesh, tensor_map=tensor_map)


def input_layout(op, config: Config, index: int) -> Layout:
    """The layout ``op`` needs its input ``index`` in, under ``config``."""
    return tensor_layout(op.space.inputs[index], config)


def output_layout(op, config: Config, index: int) -> Layout:
    """The layout of ``op``'s output ``index`` under ``config``.

    Axes that split a reduction dim are all-reduced inside the op, so the output is
    replicated (not partial) along them.
    """
    return tensor_layout(op.space.outputs[index], config)
