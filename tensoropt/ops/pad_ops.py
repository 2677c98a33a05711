"""``tile`` and ``pad``: copies and borders along some axes.

Usage::

    mask = to.tile(to.expand_dims(row, 0), [batch, 1])          # one row per example
    padded = to.pad(images, [[0, 0], [2, 2], [2, 2], [0, 0]])    # a 2-pixel border

An axis that is tiled (multiple above 1) or padded is not split: a shard would need
every copy, or its neighbours' border. The other axes split as elementwise ones.
Backward needs no saved tensor (TensorFlow sums the copies, or slices the border off).
"""

from __future__ import annotations

import numbers

from tensoropt.graph import get_default_graph
from tensoropt.ops._common import as_tensor, op_error
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import whole_axes_space

__all__ = ["tile", "pad"]

_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


@register
class TileDef(OpDef):
    kind = "tile"

    def infer(self, op):
        x = op.inputs[0]
        multiples = op.attrs["multiples"]
        if len(multiples) != x.shape.rank:
            raise op_error(op, f"{len(multiples)} multiples for a rank-{x.shape.rank} input",
                           f"one multiple per axis, e.g. {[1] * x.shape.rank}")
        out = tuple(n * m for n, m in zip(x.shape, multiples))
        tiled = [i for i, m in enumerate(multiples) if m != 1]
        return Signature(((out, x.dtype),), whole_axes_space(out, tiled))

    def lower(self, tf, op, inputs, ctx):
        return [tf.tile(inputs[0], op.attrs["multiples"])]


@register
class PadDef(OpDef):
    kind = "pad"

    def infer(self, op):
        x = op.inputs[0]
        paddings = op.attrs["paddings"]
        if len(paddings) != x.shape.rank:
            raise op_error(op, f"{len(paddings)} rows of paddings for a rank-{x.shape.rank} input",
                           "one [before, after] pair per axis")
        mode = op.attrs["mode"]
        for i, (before, after) in enumerate(paddings):
            if mode != "CONSTANT" and max(before, after) > x.shape[i] - (mode == "REFLECT"):
                raise op_error(op, f"padding {[before, after]} on axis {i} of size {x.shape[i]} in mode {mode}",
                               f"at most {x.shape[i] - (mode == 'REFLECT')} on each side")
        out = tuple(n + before + after for n, (before, after) in zip(x.shape, paddings))
        padded = [i for i, p in enumerate(paddings) if p != (0, 0)]
        return Signature(((out, x.dtype),), whole_axes_space(out, padded))

    def lower(self, tf, op, inputs, ctx):
        a = op.attrs
        return [tf.pad(inputs[0], [list(p) for p in a["paddings"]], mode=a["mode"],
                       constant_values=a["constant_values"])]


def _ints(where: str, what: str, values, minimum: int) -> list[int]:
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        out = None
    if out is None or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in values) \
            or any(v < minimum for v in out):
        raise ValueError(f"{where}: {what}={values!r}; give a list of Python ints >= {minimum} (static, "
                         "as TensorOpt plans need every shape known)")
    return out


def tile(input, multiples, name=None):  # noqa: A002 - TensorFlow's argument name
    """``tf.tile``: ``input`` repeated ``multiples[i]`` times along axis i."""
    multiples = _ints("tile", "multiples", multiples, 1)
    return get_default_graph().create_op("tile", [as_tensor("tile", input)], {"multiples": multiples},
                                         name=name).outputs[0]


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """``tf.pad``: ``paddings[i] = [before, after]`` elements added on axis i, of
    ``constant_values`` (mode CONSTANT) or mirrored (REFLECT, SYMMETRIC)."""
    rows = [tuple(_ints("pad", "paddings", row, 0)) for row in paddings]
    if any(len(r) != 2 for r in rows):
        raise ValueError(f"pad: paddings={paddings!r}; give one [before, after] pair per axis")
    mode = str(mode).upper()
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode={mode!r}; use one of {list(_PAD_MODES)}")
    if isinstance(constant_values, bool) or not isinstance(constant_values, numbers.Real):
        raise ValueError(f"pad: constant_values={constant_values!r}; give a Python number")
    attrs = {"paddings": rows, "mode": mode, "constant_values": constant_values}
    return get_default_graph().create_op("pad", [as_tensor("pad", tensor)], attrs, name=name).outputs[0]
