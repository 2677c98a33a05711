"""The iteration space of an operator: what the parallelization search reasons about.

An op's work is a loop nest over named dims (matmul: ``m, k, n``; conv2d: ``b, oh, ow, co,
ci, kh, kw``). Each axis of each input and output carries one of those dims, or ``None``
when the axis does not correspond to a loop of its own. Splitting a dim over a mesh axis
splits every tensor axis that carries it; splitting a *reduction* dim leaves the output a
partial sum over that mesh axis; a dim in ``unsplittable`` must not be split at all (for
example the normalized axis of a softmax).

Usage::

    space = y.op.space
    space.dims                  # {'m': 8, 'k': 4, 'n': 2}
    space.inputs                # (('m', 'k'), ('k', 'n'))
    space.outputs               # (('m', 'n'),)
    space.reductions            # frozenset({'k'})
    space.splittable_dims()     # ['m', 'k', 'n']
    space.flops                 # forward + backward floating-point operations
    space.saved_inputs          # (0, 1): backward keeps both matmul inputs
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

__all__ = ["IterationSpace", "elementwise_space"]

DimsOfTensor = tuple  # tuple[str | None, ...]


@dataclass(frozen=True)
class IterationSpace:
    """Named loop dims of one op and how its tensors carry them.

    Attributes:
        dims: dim name -> size, in loop order.
        inputs: per input, per axis, the dim it carries (or None).
        outputs: per output, per axis, the dim it carries (or None).
        reductions: dims summed over; split one and the outputs become partial sums.
        unsplittable: dims that no configuration may split.
        flops: forward + backward floating-point operations of the whole op.
        saved_inputs: indices of inputs that backward keeps in memory.
        saved_outputs: indices of outputs that backward keeps in memory.
        saved_internal: tensors internal to the op that backward keeps (e.g. LSTM gates),
            each as the dims it carries, so that their bytes scale with any split.
        notes: why a dim is unsplittable, for people reading a plan.
    """

    dims: Mapping[str, int]
    inputs: tuple[DimsOfTensor, ...]
    outputs: tuple[DimsOfTensor, ...]
    reductions: frozenset[str] = frozenset()
    unsplittable: frozenset[str] = frozenset()
    flops: float = 0.0
    saved_inputs: tuple[int, ...] = ()
    saved_outputs: tuple[int, ...] = ()
    saved_internal: tuple[DimsOfTensor, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", dict(self.dims))
        object.__setattr__(self, "inputs", tuple(tuple(t) for t in self.inputs))
        object.__setattr__(self, "outputs", tuple(tuple(t) for t in self.outputs))
        object.__setattr__(self, "saved_internal", tuple(tuple(t) for t in self.saved_internal))
        object.__setattr__(self, "reductions", frozenset(self.reductions))
        object.__setattr__(self, "unsplittable", frozenset(self.unsplittable))
        known = set(self.dims)
        for group in (self.inputs, self.outputs, self.saved_internal):
            for axes in group:
                for d in axes:
                    assert d is None or d in known, f"dim {d!r} carried but not declared in {known}"
        assert self.reductions <= known and self.unsplittable <= known

    def splittable_dims(self) -> list[str]:
        """Dims a configuration may split (size > 1 and not declared unsplittable)."""
        return [d for d, n in self.dims.items() if d not in self.unsplittable and n > 1]

    def check_shapes(self, input_shapes: Sequence[Sequence[int]],
                     output_shapes: Sequence[Sequence[int]]) -> None:
        """Asserts that every carried dim fits the tensor axis that carries it.

        An axis carries a dim either exactly (same size) or as its *outer factor*: a
        merged axis of size ``n * r`` whose index is ``i * r + j`` carries a dim of size
        ``n`` (e.g. the ``4h`` gate axis of an LSTM kernel, ordered unit-major, carries
        the hidden dim ``h``). Splitting the dim into ``k`` blocks then splits the axis
        into ``k`` contiguous blocks.
        """
        for axes_group, shapes in ((self.inputs, input_shapes), (self.outputs, output_shapes)):
            for axes, shape in zip(axes_group, shapes):
                assert len(axes) == len(shape), (axes, shape)
                for d, n in zip(axes, shape):
                    assert d is None or n % self.dims[d] == 0, (d, self.dims[d], n)


def elementwise_space(shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                      flops_per_element: float, saved_inputs=(), saved_outputs=()) -> IterationSpace:
    """The space of a broadcasting elementwise op: one dim per output axis.

    Input axes aligned to the right of the output; a broadcast axis (size 1 against a
    larger output axis) carries no dim.
    """
    rank = len(out_shape)
    dims = {f"d{i}": int(n) for i, n in enumerate(out_shape)}
    inputs = []
    for shape in shapes:
        offset = rank - len(shape)
        inputs.append(tuple(
            (f"d{offset + i}" if n == out_shape[offset + i] else None) for i, n in enumerate(shape)))
    n_out = 1
    for n in out_shape:
        n_out *= n
    return IterationSpace(
        dims=dims,
        inputs=tuple(inputs),
        outputs=(tuple(dims),),
        flops=flops_per_element * n_out,
        saved_inputs=tuple(saved_inputs),
        saved_outputs=tuple(saved_outputs),
    )


def whole_axes_space(shape: Sequence[int], whole: Iterable[int], *, inputs: int = 1, outputs: int = 1,
                     flops: float = 0.0) -> IterationSpace:
    """The space of an op whose axes in ``whole`` are never split (they carry no dim: each
    rank holds them entire, as a concat's or a cumsum's axis) and whose other axes split
    alike in each of ``inputs`` inputs and ``outputs`` outputs; ``shape`` gives the sizes
    of those other axes."""
    whole = set(whole)
    axes = tuple(None if i in whole else f"d{i}" for i in range(len(shape)))
    dims = {f"d{i}": int(n) for i, n in enumerate(shape) if i not in whole}
    return IterationSpace(dims=dims, inputs=tuple(axes for _ in range(inputs)),
                          outputs=tuple(axes for _ in range(outputs)), flops=flops)
