"""LSTMs: ``nn.rnn_cell.LSTMCell`` with ``nn.static_rnn`` (unrolled primitives) or
``nn.dynamic_rnn`` (one fused ``lstm`` op per layer, as PaSE models an LSTM). GRUs:
``nn.rnn_cell.GRUCell``, unrolled from primitives by either (no fused op).

The kernel is [input + hidden, 4·hidden] as in TensorFlow, but its gate columns are
ordered *unit-major* (column ``4·u + g`` is gate ``g`` of hidden unit ``u``; gates i, j,
f, o). Splitting the hidden units then splits the kernel's columns into contiguous
blocks, so model-parallel LSTMs need no gather of the kernel. The values thus differ
from ``tf.compat.v1.nn.rnn_cell.LSTMCell``'s by a column permutation.

Usage::

    cell = to.nn.rnn_cell.LSTMCell(512)
    outputs, state = to.nn.dynamic_rnn(cell, x, dtype=to.float32)      # x: [b, t, d]
    outputs, state = to.nn.static_rnn(cell, [x0, x1, x2], dtype=to.float32)
"""

from __future__ import annotations

from collections import namedtuple

from tensoropt.dtypes import as_dtype, float32
from tensoropt.graph import Tensor, get_default_graph, variable_scope
from tensoropt.initializers import ones_initializer, zeros_initializer
from tensoropt.ops import array_ops, math_ops
from tensoropt.ops._common import op_error
from tensoropt.ops.registry import OpDef, Signature, register
from tensoropt.ops.source_ops import get_variable
from tensoropt.ops.space import IterationSpace

__all__ = ["LSTMCell", "GRUCell", "LSTMStateTuple", "MultiRNNCell", "static_rnn", "dynamic_rnn", "zeros",
           "ones", "fill"]

LSTMStateTuple = namedtuple("LSTMStateTuple", ["c", "h"])


@register
class FillDef(OpDef):
    """A constant-filled tensor (``zeros``, ``ones``): a source with no inputs."""

    kind = "fill"

    def infer(self, op):
        shape = tuple(int(d) for d in op.attrs["shape"])
        if any(d <= 0 for d in shape):
            raise op_error(op, f"shape {shape}", "positive dimensions")
        dims = {f"d{i}": n for i, n in enumerate(shape)}
        return Signature(((shape, op.attrs["dtype"]),),
                         IterationSpace(dims=dims, inputs=(), outputs=(tuple(dims),)))

    def lower(self, tf, op, inputs, ctx):
        dtype = getattr(tf, op.attrs["dtype"].name)
        return [tf.fill(list(ctx.output_shapes[0]), tf.constant(op.attrs["value"], dtype))]


def fill(dims, value, name=None, dtype=None):
    dtype = as_dtype(dtype) if dtype is not None else float32 if isinstance(value, float) else as_dtype("int32")
    return get_default_graph().create_op("fill", [], {"shape": tuple(dims), "value": value,
                                                      "dtype": dtype}, name=name).outputs[0]


def zeros(shape, dtype=float32, name=None):
    dtype = as_dtype(dtype)
    return get_default_graph().create_op("fill", [], {"shape": tuple(shape), "dtype": dtype,
                                                      "value": 0.0 if dtype.is_floating else 0},
                                         name=name or "zeros").outputs[0]


def ones(shape, dtype=float32, name=None):
    dtype = as_dtype(dtype)
    return get_default_graph().create_op("fill", [], {"shape": tuple(shape), "dtype": dtype,
                                                      "value": 1.0 if dtype.is_floating else 1},
                                         name=name or "ones").outputs[0]


@register
class LSTMDef(OpDef):
    """One whole LSTM layer over a sequence: x [b, t, d], kernel [d+h, 4h], bias [4h]
    -> outputs [b, t, h], final c [b, h], final h [b, h].

    Dims: ``b`` (splittable), ``t`` (sequential), ``d`` and ``i`` (the contraction, kept
    whole: a partial sum cannot pass through the gate nonlinearities), ``h`` (splittable:
    each step after the first then all-gathers h, which the cost model counts as the op's
    own communication). Backward keeps x, the kernel (each step's input gradient is the
    gates' gradient times its transpose: a kernel the op received converted, e.g.
    all-gathered from shards, is held until then), the outputs, and the gates and cell
    states of every step.
    """

    kind = "lstm"

    def infer(self, op):
        x, kernel, bias = op.inputs
        if x.shape.rank != 3:
            raise op_error(op, f"input of rank {x.shape.rank}", "inputs of shape [batch, time, depth]")
        b, t, d = x.shape
        if kernel.shape.rank != 2 or kernel.shape[1] % 4 or kernel.shape[0] != d + kernel.shape[1] // 4:
            raise op_error(op, f"kernel {tuple(kernel.shape)}", f"a kernel [depth + units, 4 * units] "
                               f"with depth {d}")
        h = kernel.shape[1] // 4
        if tuple(bias.shape) != (4 * h,):
            raise op_error(op, f"bias {tuple(bias.shape)}", f"a bias of shape ({4 * h},)")
        dims = {"b": b, "t": t, "d": d, "i": d + h, "h": h}
        step_flops = 2.0 * b * (d + h) * 4 * h + 12.0 * b * h
        space = IterationSpace(
            dims=dims, inputs=(("b", "t", "d"), ("i", "h"), ("h",)),
            outputs=(("b", "t", "h"), ("b", "h"), ("b", "h")),
            unsplittable={"t", "d", "i"}, flops=3 * t * step_flops,
            saved_inputs=(0, 1), saved_outputs=(0,),
            # per step, what the gradient reads: the gates' activations (i, j, f, o: each
            # computed in place over its slice), c and tanh(c), each [b, h], and the
            # [x_t, h] concatenation the kernel's gradient reads, [b, d + h] (traced, TF 2.21)
            saved_internal=tuple(("b", "t", "h") for _ in range(6)) + (("b", "t", "i"),),
            notes="t is sequential; d and i feed gate nonlinearities; splitting h all-gathers h per step")
        return Signature((((b, t, h), float32), ((b, h), float32), ((b, h), float32)), space)

    def lower(self, tf, op, inputs, ctx):
        x, kernel, bias = inputs
        forget_bias = op.attrs["forget_bias"]
        b, t, _ = ctx.output_shapes[0]
        units = ctx.output_shapes[0][2]
        gather_h = ctx.extra.get("allgather_hidden")  # set when h is split across ranks
        full_units = ctx.dim_sizes["h"]
        c = tf.zeros([b, units], x.dtype)
        h = tf.zeros([b, units], x.dtype)
        outputs = []
        for step in range(t):
            if step == 0:  # the zero state: nothing to gather
                h_full = tf.zeros([b, full_units], x.dtype)
            else:
                h_full = h if units == full_units else gather_h(h)
            z = tf.linalg.matmul(tf.concat([x[:, step, :], h_full], axis=1), kernel) + bias
            gates = tf.reshape(z, [b, units, 4])
            i, j, f, o = (gates[:, :, g] for g in range(4))
            c = tf.sigmoid(f + forget_bias) * c + tf.sigmoid(i) * tf.tanh(j)
            h = tf.sigmoid(o) * tf.tanh(c)
            outputs.append(h)
        return [tf.stack(outputs, axis=1), c, h]


class LSTMCell:
    """``tf.compat.v1.nn.rnn_cell.LSTMCell(num_units, forget_bias=1.0)``."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, name: str | None = None, **unused):
        if unused.get("use_peepholes") or unused.get("num_proj"):
            raise ValueError("LSTMCell: peepholes and projections are not supported")
        self.num_units = int(num_units)
        self.forget_bias = float(forget_bias)
        self.name = name or "lstm_cell"

    @property
    def state_size(self):
        return LSTMStateTuple(self.num_units, self.num_units)

    @property
    def output_size(self) -> int:
        return self.num_units

    def zero_state(self, batch_size: int, dtype=float32) -> LSTMStateTuple:
        return LSTMStateTuple(zeros([batch_size, self.num_units], dtype, name="zero_c"),
                              zeros([batch_size, self.num_units], dtype, name="zero_h"))

    def variables(self, depth: int):
        """The kernel and bias, created once in the current variable scope."""
        with variable_scope(self.name, reuse="auto_reuse"):
            kernel = get_variable("kernel", [depth + self.num_units, 4 * self.num_units])
            bias = get_variable("bias", [4 * self.num_units], initializer=zeros_initializer())
        return kernel, bias

    def __call__(self, inputs: Tensor, state: LSTMStateTuple):
        """One step from primitives: returns (h, LSTMStateTuple(c, h))."""
        kernel, bias = self.variables(inputs.shape[1])
        b, u = inputs.shape[0], self.num_units
        z = math_ops.add(math_ops.matmul(array_ops.concat([inputs, state.h], axis=1), kernel), bias)
        gates = array_ops.split(array_ops.reshape(z, [b, u, 4]), 4, axis=2)
        i, j, f, o = (array_ops.reshape(g, [b, u]) for g in gates)
        c = math_ops.add(math_ops.multiply(math_ops.sigmoid(math_ops.add(f, self.forget_bias)), state.c),
                         math_ops.multiply(math_ops.sigmoid(i), math_ops.tanh(j)))
        h = math_ops.multiply(math_ops.sigmoid(o), math_ops.tanh(c))
        return h, LSTMStateTuple(c, h)


class GRUCell:
    """``tf.compat.v1.nn.rnn_cell.GRUCell(num_units)``, TensorFlow's variables and math:
    ``gates/kernel`` [depth + units, 2·units] and ``gates/bias`` (ones) give the reset and
    update gates r, u; ``candidate/kernel`` [depth + units, units] and ``candidate/bias``
    (zeros) the candidate c from the input and r·h; the new h is u·h + (1 - u)·c. Its
    state is h alone, [batch, units]."""

    def __init__(self, num_units: int, activation=None, name: str | None = None, **unused):
        if activation is not None and activation is not math_ops.tanh:
            raise ValueError(f"GRUCell: activation={activation!r} is not supported; leave it out (tanh)")
        self.num_units = int(num_units)
        self.name = name or "gru_cell"

    @property
    def state_size(self) -> int:
        return self.num_units

    @property
    def output_size(self) -> int:
        return self.num_units

    def zero_state(self, batch_size: int, dtype=float32) -> Tensor:
        return zeros([batch_size, self.num_units], dtype, name="zero_h")

    def __call__(self, inputs: Tensor, state: Tensor):
        """One step from primitives: returns (h, h)."""
        depth, u = inputs.shape[1], self.num_units
        with variable_scope(self.name, reuse="auto_reuse"):
            with variable_scope("gates"):
                gate_kernel = get_variable("kernel", [depth + u, 2 * u])
                gate_bias = get_variable("bias", [2 * u], initializer=ones_initializer())
            with variable_scope("candidate"):
                cand_kernel = get_variable("kernel", [depth + u, u])
                cand_bias = get_variable("bias", [u], initializer=zeros_initializer())
        gates = math_ops.sigmoid(math_ops.add(
            math_ops.matmul(array_ops.concat([inputs, state], axis=1), gate_kernel), gate_bias))
        r, z = array_ops.split(gates, 2, axis=1)
        candidate = math_ops.tanh(math_ops.add(math_ops.matmul(
            array_ops.concat([inputs, math_ops.multiply(r, state)], axis=1), cand_kernel), cand_bias))
        h = math_ops.add(math_ops.multiply(z, state), math_ops.multiply(math_ops.subtract(1.0, z), candidate))
        return h, h


class MultiRNNCell:
    """``tf.compat.v1.nn.rnn_cell.MultiRNNCell(cells)``: layers applied in order."""

    def __init__(self, cells, state_is_tuple: bool = True):
        self.cells = list(cells)

    def zero_state(self, batch_size: int, dtype=float32):
        return tuple(c.zero_state(batch_size, dtype) for c in self.cells)


def _layers(cell):
    return cell.cells if isinstance(cell, MultiRNNCell) else [cell]


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Unrolls ``cell`` over a list of [b, d] inputs; returns (outputs, final state)."""
    if sequence_length is not None:
        raise ValueError("static_rnn: sequence_length is not supported; pad sequences instead")
    if not inputs:
        raise ValueError("static_rnn: inputs is an empty list; pass one [batch, depth] tensor per step")
    batch = inputs[0].shape[0]
    states = []
    with variable_scope(scope or "rnn"):
        layer_inputs = list(inputs)
        for n, layer in enumerate(_layers(cell)):
            scope_name = f"cell_{n}" if isinstance(cell, MultiRNNCell) else ""
            with variable_scope(scope_name) if scope_name else _null():
                state = (initial_state[n] if isinstance(cell, MultiRNNCell) else initial_state) \
                    if initial_state is not None else layer.zero_state(batch, dtype or float32)
                outs = []
                for x in layer_inputs:
                    out, state = layer(x, state)
                    outs.append(out)
            states.append(state)
            layer_inputs = outs
    final = tuple(states) if isinstance(cell, MultiRNNCell) else states[0]
    return layer_inputs, final


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                time_major=False, scope=None):
    """Runs ``cell`` over ``inputs`` [b, t, d]: one fused ``lstm`` op per LSTM layer, a
    GRU layer unrolled from primitives."""
    if time_major or sequence_length is not None or initial_state is not None:
        raise ValueError("dynamic_rnn: time_major, sequence_length and initial_state are not "
                         "supported; pass batch-major inputs [batch, time, depth] and no state, "
                         "or use static_rnn")
    if not isinstance(inputs, Tensor) or inputs.shape.rank != 3:
        raise ValueError(f"dynamic_rnn: inputs must be a [batch, time, depth] tensor, got {inputs!r}")
    graph = get_default_graph()
    states = []
    x = inputs
    with variable_scope(scope or "rnn"):
        for n, layer in enumerate(_layers(cell)):
            if not isinstance(layer, (LSTMCell, GRUCell)):
                raise ValueError(f"dynamic_rnn: cell {layer!r} is not an LSTMCell or a GRUCell")
            scope_name = f"cell_{n}" if isinstance(cell, MultiRNNCell) else ""
            with variable_scope(scope_name) if scope_name else _null():
                if isinstance(layer, GRUCell):
                    x, state = _unrolled(layer, x)
                    states.append(state)
                    continue
                kernel, bias = layer.variables(x.shape[2])
                op = graph.create_op("lstm", [x, kernel, bias], {"forget_bias": layer.forget_bias},
                                     name="lstm")
            x, c, h = op.outputs
            states.append(LSTMStateTuple(c, h))
    final = tuple(states) if isinstance(cell, MultiRNNCell) else states[0]
    return x, final


def _unrolled(cell, x: Tensor):
    """``cell`` over x [b, t, d], step by step from primitives: outputs [b, t, units] and
    the final state."""
    b, t, d = x.shape
    state = cell.zero_state(b, x.dtype)
    outputs = []
    steps = array_ops.split(x, t, axis=1) if t > 1 else [x]
    for step in steps:
        out, state = cell(array_ops.reshape(step, [b, d]), state)
        outputs.append(array_ops.reshape(out, [b, 1, cell.output_size]))
    return (array_ops.concat(outputs, axis=1) if t > 1 else outputs[0]), state


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
