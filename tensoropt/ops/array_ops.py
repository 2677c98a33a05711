"""Array ops: reshape, transpose, concat, split.

Usage::

    y = to.reshape(x, [batch, -1])
    q, k, v = to.split(qkv, 3, axis=-1)
"""

from __future__ import annotations

from tensoropt.graph import get_default_graph
from tensoropt.ops._common import as_tensor, normalize_axis, op_error, prod
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.space import IterationSpace, whole_axes_space

__all__ = ["reshape", "transpose", "concat", "split"]


def _reshape_groups(src: tuple[int, ...], dst: tuple[int, ...]):
    """Pairs runs of axes whose products agree: [([i..], [j..]), ...] covering both shapes."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        gi, gj = [i] if i < len(src) else [], [j] if j < len(dst) else []
        pi = src[i] if i < len(src) else 1
        pj = dst[j] if j < len(dst) else 1
        i, j = i + bool(gi), j + bool(gj)
        while pi != pj:
            if pi < pj and i < len(src):
                pi *= src[i]; gi.append(i); i += 1  # noqa: E702
            elif j < len(dst):
                pj *= dst[j]; gj.append(j); j += 1  # noqa: E702
            else:
                break
        groups.append((gi, gj))
    return groups


@register
class ReshapeDef(OpDef):
    """Reshape. Axes kept as they are carry a shared dim; where one axis splits into
    several (or several merge into one), the merged axis carries the outer axis's dim as
    its outer factor, so splitting it stays a contiguous split on both sides. Other axes
    carry no dim (they cannot be split without data movement)."""

    kind = "reshape"
    default_name = "Reshape"

    def infer(self, op):
        x = op.inputs[0]
        shape = list(op.attrs["shape"])
        if shape.count(-1) > 1:
            raise op_error(op, f"target shape {shape} has more than one -1", "at most one -1")
        known = prod(d for d in shape if d != -1)
        total = x.shape.num_elements()
        if -1 in shape:
            if known == 0 or total % known:
                raise op_error(op, f"cannot infer -1 in {shape} for {total} elements",
                               f"a shape whose known dims divide {total}")
            shape[shape.index(-1)] = total // known
        if prod(shape) != total or any(d <= 0 for d in shape):
            raise op_error(op, f"target shape {shape} has {prod(shape)} elements, input has {total}",
                           "a target shape with the same number of elements")
        src, dst = tuple(x.shape), tuple(shape)
        in_axes: list = [None] * len(src)
        out_axes: list = [None] * len(dst)
        dims: dict[str, int] = {}
        for gi, gj in _reshape_groups(src, dst):
            if not gi or not gj:
                continue
            # The outer axis of the group on each side: shareable when one side is a
            # single axis, or the outer sizes agree.
            if len(gi) == 1 or len(gj) == 1 or src[gi[0]] == dst[gj[0]]:
                outer = min(src[gi[0]], dst[gj[0]]) if len(gi) > 1 and len(gj) > 1 else (
                    dst[gj[0]] if len(gi) == 1 else src[gi[0]])
                name = f"r{len(dims)}"
                dims[name] = outer
                in_axes[gi[0]] = name
                out_axes[gj[0]] = name
        for a, n in enumerate(src):  # remaining input axes: own, unsplittable dims
            if in_axes[a] is None:
                in_axes[a] = f"i{a}"
                dims[f"i{a}"] = n
        space = IterationSpace(dims=dims, inputs=(tuple(in_axes),), outputs=(tuple(out_axes),),
                               unsplittable={d for d in dims if d.startswith("i")},
                               notes="axes that reshape regroups carry no dim")
        return Signature(((dst, x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        return [tf.reshape(inputs[0], list(ctx.output_shapes[0]))]


@register
class TransposeDef(OpDef):
    kind = "transpose"

    def infer(self, op):
        x = op.inputs[0]
        perm = op.attrs["perm"]
        rank = x.shape.rank
        if perm is None:
            perm = tuple(reversed(range(rank)))
        perm = tuple(int(p) for p in perm)
        if sorted(perm) != list(range(rank)):
            raise op_error(op, f"perm {perm} is not a permutation of {rank} axes",
                           f"a permutation of range({rank})")
        op.attrs["perm"] = perm
        dims = {f"d{i}": n for i, n in enumerate(x.shape)}
        space = IterationSpace(dims=dims, inputs=(tuple(dims),),
                               outputs=(tuple(f"d{p}" for p in perm),))
        return Signature(((tuple(x.shape[p] for p in perm), x.dtype),), space)

    def lower(self, tf, op, inputs, ctx):
        return [tf.transpose(inputs[0], perm=list(op.attrs["perm"]))]


@register
class ConcatDef(OpDef):
    kind = "concat"

    def infer(self, op):
        ins = op.inputs
        if not ins:
            raise op_error(op, "no values", "a non-empty list of tensors")
        rank = ins[0].shape.rank
        axis = normalize_axis(op, op.attrs["axis"], rank)
        op.attrs["axis"] = axis
        for t in ins:
            if t.shape.rank != rank or any(t.shape[i] != ins[0].shape[i] for i in range(rank) if i != axis):
                raise op_error(op, f"{t.name} has shape {tuple(t.shape)}",
                               f"all values equal to {tuple(ins[0].shape)} except in axis {axis}")
            if t.dtype != ins[0].dtype:
                raise op_error(op, "dtypes differ", "one dtype for all values")
        out = list(ins[0].shape)
        out[axis] = sum(t.shape[axis] for t in ins)
        return Signature(((tuple(out), ins[0].dtype),), whole_axes_space(out, {axis}, inputs=len(ins)))

    def lower(self, tf, op, inputs, ctx):
        return [tf.concat(list(inputs), axis=op.attrs["axis"])]


@register
class SplitDef(OpDef):
    kind = "split"

    def infer(self, op):
        x = op.inputs[0]
        axis = normalize_axis(op, op.attrs["axis"], x.shape.rank)
        op.attrs["axis"] = axis
        sizes = op.attrs["num_or_size_splits"]
        n = x.shape[axis]
        if isinstance(sizes, int):
            if sizes <= 0 or n % sizes:
                raise op_error(op, f"{n} along axis {axis} does not split into {sizes} equal parts",
                               f"a number of splits that divides {n}")
            sizes = [n // sizes] * sizes
        sizes = [int(s) for s in sizes]
        if sum(sizes) != n or any(s <= 0 for s in sizes):
            raise op_error(op, f"sizes {sizes} sum to {sum(sizes)} along axis {axis} of size {n}",
                           f"positive sizes summing to {n}")
        op.attrs["sizes"] = tuple(sizes)
        outs = []
        for s in sizes:
            shape = list(x.shape)
            shape[axis] = s
            outs.append((tuple(shape), x.dtype))
        return Signature(tuple(outs), whole_axes_space(x.shape, {axis}, outputs=len(sizes)))

    def lower(self, tf, op, inputs, ctx):
        return list(tf.split(inputs[0], list(op.attrs["sizes"]), axis=op.attrs["axis"]))


def reshape(tensor, shape, name=None):
    return get_default_graph().create_op("reshape", [as_tensor("reshape", tensor)],
                                         {"shape": tuple(int(d) for d in shape)}, name=name).outputs[0]


def transpose(a, perm=None, name="transpose"):
    return get_default_graph().create_op("transpose", [as_tensor("transpose", a)], {"perm": perm},
                                         name=name).outputs[0]


def concat(values, axis, name="concat"):
    return get_default_graph().create_op("concat", [as_tensor("concat", v) for v in values],
                                         {"axis": int(axis)}, name=name).outputs[0]


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    sizes = num_or_size_splits if isinstance(num_or_size_splits, int) else tuple(num_or_size_splits)
    op = get_default_graph().create_op("split", [as_tensor("split", value)],
                                       {"num_or_size_splits": sizes, "axis": int(axis)}, name=name)
    return list(op.outputs)
