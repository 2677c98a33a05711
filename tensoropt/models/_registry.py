"""The model registry: named model functions, their size presets, and what a build returns.

A model is a plain function of size parameters that records a model into the current
default graph and returns a :class:`ModelSpec`. ``register`` attaches named presets
("paper", "tiny", "small"); ``build`` merges a preset with keyword overrides and calls
the function.

Usage::

    @register("mlp", presets={"paper": dict(batch=256), "tiny": dict(batch=8)})
    def mlp(batch: int = 64, ...) -> ModelSpec:
        ...

    spec = build("mlp", size="tiny", batch=4)
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from tensoropt.graph import Tensor

__all__ = ["ModelSpec", "ModelEntry", "register", "build", "names", "describe", "get_entry",
           "IntRange", "UnknownModelError"]


class UnknownModelError(ValueError, KeyError):
    """An unknown model name, preset or size parameter. A ValueError (bad user input), and
    also a KeyError, so that callers that look presets up as keys can catch it."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class IntRange:
    """Valid values of an int32 input: ``low <= x < high`` (class labels, token ids)."""

    low: int
    high: int


@dataclass
class ModelSpec:
    """What building a model returns.

    Attributes:
        name: the registered model name.
        params: the size parameters the model was built with.
        inputs: input name -> placeholder tensor.
        loss: the scalar loss tensor.
        train_op: the recorded training step (``Optimizer.minimize``).
        logits: the model's output before the loss, when it has one.
        int_ranges: input name -> valid range, for int32 inputs (labels, token ids).
    """

    name: str
    params: dict[str, Any]
    inputs: dict[str, Tensor]
    loss: Tensor
    train_op: Any
    logits: Tensor | None = None
    int_ranges: dict[str, IntRange] = field(default_factory=dict)

    def feed(self, rng: np.random.Generator | int | None = None) -> dict[Tensor, np.ndarray]:
        """A feed_dict of random but valid data for every input.

        float32 inputs get standard normal values; int32 inputs (labels, token ids) get
        uniform integers in their range.

        Args:
            rng: a numpy Generator, or a seed for one.

        Returns:
            placeholder tensor -> numpy array of its shape and dtype.
        """
        if not isinstance(rng, np.random.Generator):
            rng = np.random.default_rng(rng)
        feed = {}
        for name, t in self.inputs.items():
            shape = tuple(t.shape)
            if t.dtype.is_floating:
                feed[t] = rng.standard_normal(shape).astype(np.float32)
            else:
                r = self.int_ranges.get(name)
                if r is None:
                    raise ValueError(f"ModelSpec.feed: int input {name!r} of model {self.name!r} "
                                     "has no declared range; declare it in int_ranges")
                feed[t] = rng.integers(r.low, r.high, size=shape).astype(np.int32)
        return feed


@dataclass(frozen=True)
class ModelEntry:
    """A registered model: its function and named presets of its size parameters."""

    name: str
    fn: Callable[..., ModelSpec]
    presets: Mapping[str, Mapping[str, Any]]

    def parameters(self) -> dict[str, Any]:
        """The function's size parameters and their defaults."""
        return {p.name: p.default for p in inspect.signature(self.fn).parameters.values()}

    def resolve(self, size: str, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The full parameter set for ``size`` with ``overrides`` applied.

        Raises:
            UnknownModelError: (a ValueError) for an unknown preset or parameter name.
        """
        if size not in self.presets:
            raise UnknownModelError(f"model {self.name!r} has no size {size!r}; "
                             f"choose one of {sorted(self.presets)}")
        params = self.parameters()
        unknown = sorted(set(overrides) - set(params))
        if unknown:
            raise UnknownModelError(f"model {self.name!r} has no size parameter(s) {unknown}; "
                             f"its parameters are {sorted(params)}")
        params.update(self.presets[size])
        params.update(overrides)
        return params


_REGISTRY: dict[str, ModelEntry] = {}


def register(name: str, presets: Mapping[str, Mapping[str, Any]]):
    """Decorator: registers a model function under ``name`` with its presets.

    Every preset key must be a parameter of the function.
    """

    def wrap(fn: Callable[..., ModelSpec]) -> Callable[..., ModelSpec]:
        if name in _REGISTRY:
            raise ValueError(f"model {name!r} is registered twice")
        signature = inspect.signature(fn)
        for preset, values in presets.items():
            bad = sorted(set(values) - set(signature.parameters))
            assert not bad, f"{name}: preset {preset!r} sets unknown parameters {bad}"

        @functools.wraps(fn)
        def model(*args: Any, **kwargs: Any) -> ModelSpec:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            spec = fn(*bound.args, **bound.kwargs)
            spec.name, spec.params = name, dict(bound.arguments)
            return spec

        _REGISTRY[name] = ModelEntry(name, model, {k: dict(v) for k, v in presets.items()})
        return model

    return wrap


def get_entry(name: str) -> ModelEntry:
    """The registry entry for ``name``.

    Raises:
        UnknownModelError: (a ValueError) for an unknown model name; the message lists the
            known ones.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownModelError(f"unknown model {name!r}; known models: {', '.join(names())}") from None


def names() -> list[str]:
    """The registered model names, sorted."""
    return sorted(_REGISTRY)


def build(name: str, size: str = "tiny", **overrides: Any) -> ModelSpec:
    """Records model ``name`` at preset ``size`` into the current default graph.

    The caller resets the graph (``tensoropt.reset_default_graph()``) beforehand.

    Args:
        name: a registered model name (see ``names()``).
        size: a preset name: "paper" (paper or PaSE scale), "tiny", and for some "small".
        **overrides: values for any size parameter, replacing the preset's.

    Returns:
        The model's ModelSpec; ``spec.params`` holds the parameters used.

    Raises:
        UnknownModelError: (a ValueError and a KeyError) for an unknown name, size or
            parameter.
    """
    entry = get_entry(name)
    return entry.fn(**entry.resolve(size, overrides))


def describe(name: str) -> str:
    """The model's docstring, followed by its presets."""
    entry = get_entry(name)
    doc = inspect.cleandoc(entry.fn.__doc__ or "")
    lines = [f"{name}: {doc}", "", "Presets:"]
    for preset, values in entry.presets.items():
        shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
        lines.append(f"    {preset}: {shown}")
    return "\n".join(lines)
