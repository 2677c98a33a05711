"""Each op's output shapes, iteration space and FLOPs, worked out by hand."""

import pytest

import tensoropt as to
from tensoropt.stats import saved_bytes


def f32(*shape, name=None):
    return to.placeholder(to.float32, list(shape), name=name)


def test_matmul_rank2():
    y = to.matmul(f32(8, 4), f32(4, 3))
    s = y.op.space
    assert tuple(y.shape) == (8, 3)
    assert s.dims == {"m": 8, "k": 4, "n": 3}
    assert s.inputs == (("m", "k"), ("k", "n")) and s.outputs == (("m", "n"),)
    assert s.reductions == {"k"}
    assert s.flops == 3 * 2 * 8 * 4 * 3
    assert s.saved_inputs == (0, 1)


def test_matmul_transposes_and_batches():
    y = to.matmul(f32(2, 5, 4, 8), f32(2, 5, 6, 4), transpose_a=True, transpose_b=True)
    s = y.op.space
    assert tuple(y.shape) == (2, 5, 8, 6)
    assert s.inputs == (("b0", "b1", "k", "m"), ("b0", "b1", "n", "k"))
    assert s.dims == {"b0": 2, "b1": 5, "m": 8, "k": 4, "n": 6}
    assert s.flops == 3 * 2 * 10 * 8 * 4 * 6


def test_matmul_batched_against_rank2():
    y = to.matmul(f32(3, 5, 4), f32(4, 2))
    assert tuple(y.shape) == (3, 5, 2)
    assert y.op.space.inputs == (("b0", "m", "k"), ("k", "n"))


def test_matmul_mismatch_names_op_shapes_and_expectation():
    with pytest.raises(ValueError) as e:
        to.matmul(f32(8, 4, name="a"), f32(5, 3, name="b"), name="proj")
    msg = str(e.value)
    assert "matmul 'proj'" in msg and "(8, 4)" in msg and "(5, 3)" in msg
    assert "inner dimensions differ: 4" in msg and "expected" in msg


def test_broadcasting_add_space():
    y = to.placeholder(to.float32, [4, 1, 6]) + f32(5, 6)
    s = y.op.space
    assert tuple(y.shape) == (4, 5, 6)
    assert s.inputs == (("d0", None, "d2"), ("d1", "d2"))
    assert s.flops == 4 * 5 * 6
    with pytest.raises(ValueError, match=r"shapes \(4, 3\) and \(5,\) do not broadcast"):
        f32(4, 3) + f32(5)


def test_multiply_keeps_inputs_add_keeps_nothing():
    a, b = f32(3, 4), f32(3, 4)
    assert (a * b).op.space.saved_inputs == (0, 1)
    assert (a + b).op.space.saved_inputs == ()
    assert saved_bytes((a * b).op) == 2 * 3 * 4 * 4


def test_unary_ops_and_what_backward_keeps():
    x = f32(2, 3)
    assert to.nn.relu(x).op.space.saved_outputs == (0,)
    assert to.nn.gelu(x).op.space.saved_inputs == (0,)
    assert to.tanh(x).op.space.flops == 6 * 6
    with pytest.raises(ValueError, match="not floating"):
        to.tanh(to.placeholder(to.int32, [3]))


def test_reductions_make_reduction_dims():
    x = f32(4, 5, 6)
    y = to.reduce_sum(x, axis=[0, 2])
    assert tuple(y.shape) == (5,)
    assert y.op.space.reductions == {"d0", "d2"} and y.op.space.outputs == (("d1",),)
    z = to.reduce_mean(x, axis=-1, keepdims=True)
    assert tuple(z.shape) == (4, 5, 1) and z.op.space.outputs == (("d0", "d1", None),)
    assert tuple(to.reduce_mean(x).shape) == ()
    with pytest.raises(ValueError, match=r"axis 3 is out of range for rank 3"):
        to.reduce_sum(x, axis=3)


def test_reshape_keeps_splittable_outer_dims():
    x = f32(8, 6, 4)
    y = to.reshape(x, [8, 24])
    s = y.op.space
    assert tuple(y.shape) == (8, 24)
    # batch carried through; the merged axis carries 6 as its outer factor
    assert s.inputs[0][0] == s.outputs[0][0] and s.dims[s.inputs[0][0]] == 8
    assert s.inputs[0][1] == s.outputs[0][1] and s.dims[s.inputs[0][1]] == 6
    assert tuple(to.reshape(x, [-1, 4]).shape) == (48, 4)
    with pytest.raises(ValueError, match="has 10 elements, input has 192"):
        to.reshape(x, [2, 5])
    with pytest.raises(ValueError, match="more than one -1"):
        to.reshape(x, [-1, -1])


def test_reshape_splitting_an_axis_maps_outer_factor():
    y = to.reshape(f32(4, 12), [4, 3, 4])
    s = y.op.space
    assert s.inputs[0][1] == s.outputs[0][1] and s.dims[s.outputs[0][1]] == 3
    assert s.outputs[0][2] is None


def test_transpose_concat_split():
    x = f32(2, 3, 4)
    t = to.transpose(x, [2, 0, 1])
    assert tuple(t.shape) == (4, 2, 3) and t.op.space.outputs == (("d2", "d0", "d1"),)
    c = to.concat([x, f32(2, 5, 4)], axis=1)
    assert tuple(c.shape) == (2, 8, 4) and c.op.space.outputs == (("d0", None, "d2"),)
    parts = to.split(f32(2, 9), 3, axis=1)
    assert [tuple(p.shape) for p in parts] == [(2, 3)] * 3
    assert [tuple(p.shape) for p in to.split(f32(2, 9), [2, 7], axis=1)] == [(2, 2), (2, 7)]
    with pytest.raises(ValueError, match="does not split into 2 equal parts"):
        to.split(f32(2, 9), 2, axis=1)
    with pytest.raises(ValueError, match="all values equal to"):
        to.concat([x, f32(3, 3, 4)], axis=1)
    with pytest.raises(ValueError, match="not a permutation"):
        to.transpose(x, [0, 0, 1])


def test_softmax_axis_is_unsplittable():
    y = to.nn.softmax(f32(4, 10))
    assert y.op.space.unsplittable == {"d1"}
    assert "d1" not in y.op.space.splittable_dims()


def test_conv2d_same_and_valid():
    x, w = f32(2, 9, 9, 3), f32(3, 3, 3, 8)
    y = to.nn.conv2d(x, w, strides=2, padding="SAME")
    assert tuple(y.shape) == (2, 5, 5, 8)
    s = y.op.space
    assert s.reductions == {"ci", "kh", "kw"}
    assert set(s.splittable_dims()) == {"b", "ci", "co"}
    assert s.flops == 3 * 2 * 2 * 5 * 5 * 3 * 3 * 3 * 8
    v = to.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="VALID")
    assert tuple(v.shape) == (2, 4, 4, 8)
    with pytest.raises(ValueError, match=r"input channels 3 vs filter in-channels 4.*expected filters"):
        to.nn.conv2d(x, f32(3, 3, 4, 8), strides=1, padding="SAME")
    with pytest.raises(ValueError, match="padding 'SAME' or 'VALID'"):
        to.nn.conv2d(x, w, strides=1, padding="FULL")


def test_pools():
    x = f32(2, 8, 8, 4)
    assert tuple(to.nn.max_pool2d(x, 2, 2, "VALID").shape) == (2, 4, 4, 4)
    assert tuple(to.nn.avg_pool2d(x, [1, 3, 3, 1], [1, 1, 1, 1], "SAME").shape) == (2, 8, 8, 4)
    assert to.nn.avg_pool2d(x, 2, 2, "VALID").op.space.saved_inputs == ()


def test_embedding_lookup_vocab_is_a_reduction():
    ids = to.placeholder(to.int32, [4, 7])
    y = to.nn.embedding_lookup(f32(100, 16), ids)
    assert tuple(y.shape) == (4, 7, 16)
    assert y.op.space.reductions == {"v"}
    with pytest.raises(ValueError, match="int32 or int64 ids"):
        to.nn.embedding_lookup(f32(100, 16), f32(4))


def test_cross_entropy_losses():
    logits = f32(4, 10)
    sparse = to.nn.sparse_softmax_cross_entropy_with_logits(labels=to.placeholder(to.int32, [4]), logits=logits)
    dense = to.nn.softmax_cross_entropy_with_logits(labels=f32(4, 10), logits=logits)
    assert tuple(sparse.shape) == tuple(dense.shape) == (4,)
    assert sparse.op.space.unsplittable == {"c"}
    with pytest.raises(ValueError, match=r"int32 or int64 labels of shape \(4,\)"):
        to.nn.sparse_softmax_cross_entropy_with_logits(labels=to.placeholder(to.int32, [5]), logits=logits)
    with pytest.raises(ValueError, match="labels of the same shape as logits"):
        to.nn.softmax_cross_entropy_with_logits(labels=f32(4, 9), logits=logits)


def test_bias_add_and_dropout():
    y = to.nn.bias_add(f32(4, 6), f32(6))
    assert y.op.space.inputs == (("d0", "d1"), ("d1",))
    with pytest.raises(ValueError, match="rank-1 bias of size value.shape"):
        to.nn.bias_add(f32(4, 6), f32(5))
    d = to.nn.dropout(f32(4, 6), rate=0.1)
    assert d.op.attrs["rate"] == 0.1
    with pytest.raises(ValueError, match=r"rate in \[0, 1\)"):
        to.nn.dropout(f32(4, 6), rate=1.5)


def test_fused_lstm_space():
    cell = to.nn.rnn_cell.LSTMCell(16)
    outputs, state = to.nn.dynamic_rnn(cell, f32(4, 5, 8), dtype=to.float32)
    assert tuple(outputs.shape) == (4, 5, 16) and tuple(state.h.shape) == (4, 16)
    op = outputs.op
    assert op.kind == "lstm"
    assert set(op.space.splittable_dims()) == {"b", "h"}
    kernel = to.get_default_graph().variables["rnn/lstm_cell/kernel"]
    assert tuple(kernel.shape) == (8 + 16, 64)
    step_flops = 2 * 4 * 24 * 64 + 12 * 4 * 16
    assert op.space.flops == 3 * 5 * step_flops
    # backward keeps x, the kernel (each step's input gradient reads it), the outputs and
    # per step six [b, h] internals and the [x_t, h] concatenation; a whole-graph total
    # leaves the variable itself out
    activations = 4 * (4 * 5 * 8 + 4 * 5 * 16 + 6 * 4 * 5 * 16 + 4 * 5 * 24)
    assert saved_bytes(op) == activations + 4 * 24 * 64
    assert saved_bytes(op, count_parameters=False) == activations


def test_static_rnn_unrolls_primitives_and_shares_variables():
    cell = to.nn.rnn_cell.MultiRNNCell([to.nn.rnn_cell.LSTMCell(6), to.nn.rnn_cell.LSTMCell(6)])
    outputs, states = to.nn.static_rnn(cell, [f32(2, 3) for _ in range(4)], dtype=to.float32)
    assert len(outputs) == 4 and tuple(outputs[-1].shape) == (2, 6) and len(states) == 2
    names = sorted(to.get_default_graph().variables)
    assert names == ["rnn/cell_0/lstm_cell/bias", "rnn/cell_0/lstm_cell/kernel",
                     "rnn/cell_1/lstm_cell/bias", "rnn/cell_1/lstm_cell/kernel"]
    kinds = {op.kind for op in to.get_default_graph().operations}
    assert "lstm" not in kinds and {"matmul", "sigmoid", "tanh", "split"} <= kinds


def test_layer_norm_composes_primitives_with_variables():
    y = to.contrib.layers.layer_norm(f32(4, 8))
    g = to.get_default_graph()
    assert tuple(y.shape) == (4, 8)
    assert sorted(g.variables) == ["LayerNorm/beta", "LayerNorm/gamma"]
    assert {"reduce_mean", "rsqrt"} <= {op.kind for op in g.operations}


@pytest.mark.parametrize("make, saved_inputs, saved_outputs, flops", [
    # what TensorFlow's registered gradient reads is what the op keeps for its backward
    (lambda x: to.nn.relu6(x), (), (0,), 2 * 12),
    (lambda x: to.nn.elu(x), (), (0,), 6 * 12),
    (lambda x: to.nn.selu(x), (), (0,), 7 * 12),
    (lambda x: to.nn.leaky_relu(x, alpha=0.3), (0,), (), 3 * 12),
    (lambda x: to.nn.softplus(x), (0,), (), 10 * 12),
    (lambda x: to.nn.silu(x), (0,), (), 12 * 12),
    (lambda x: to.abs(x), (0,), (), 2 * 12),
    (lambda x: to.minimum(x, f32(3, 4)), (0, 1), (), 2 * 12),
    (lambda x: to.pow(x, 2.0), (0,), (), 12 * 12),
    (lambda x: to.squared_difference(x, f32(4)), (0, 1), (), 4 * 12),
    (lambda x: to.log1p(x), (0,), (), 3 * 12),
    (lambda x: to.reciprocal(x), (), (0,), 3 * 12),
    (lambda x: to.erf(x), (0,), (), 12 * 12),
    (lambda x: to.sin(x), (0,), (), 8 * 12),
    (lambda x: to.cos(x), (0,), (), 8 * 12),
    (lambda x: to.nn.softsign(x), (0,), (), 6 * 12),
    (lambda x: to.floor(x), (), (), 12),
    (lambda x: to.stop_gradient(x), (), (), 0),
])
def test_more_elementwise_ops_keep_what_their_gradient_reads(make, saved_inputs, saved_outputs, flops):
    y = make(f32(3, 4))
    s = y.op.space
    assert tuple(y.shape) == (3, 4) and s.outputs == (("d0", "d1"),)
    assert s.saved_inputs == saved_inputs and s.saved_outputs == saved_outputs
    assert s.flops == flops


def test_leaky_relu_and_silu_carry_their_constant_to_the_lowering():
    x = f32(3, 4)
    assert to.nn.leaky_relu(x, alpha=0.05).op.attrs == {"alpha": 0.05}
    assert to.nn.silu(x, beta=2).op.attrs == {"beta": 2.0}
    assert to.nn.swish is to.nn.silu


def test_reduce_max_keeps_its_reduced_dims_whole_and_where_broadcasts():
    x = f32(6, 5)
    m = to.reduce_max(x, axis=1, keepdims=True)
    assert tuple(m.shape) == (6, 1) and m.op.space.unsplittable == {"d1"} and m.op.space.reductions == frozenset()
    assert m.op.space.saved_inputs == (0,) and m.op.space.saved_outputs == (0,)
    assert to.reduce_min(x).op.space.unsplittable == {"d0", "d1"}
    w = to.where(to.greater(f32(5), 0.0), x, to.zeros_like(x))
    assert w.op.space.inputs == (("d1",), ("d0", "d1"), ("d0", "d1")) and w.op.space.saved_inputs == (0,)
    g = to.gather(x, to.placeholder(to.int32, [3]))
    assert g.op.kind == "embedding_lookup" and tuple(g.shape) == (3, 5)


def test_metric_ops_spaces():
    x = f32(6, 5)
    arg = to.argmax(x, 1)
    assert arg.op.space.outputs == (("d0",),) and arg.op.space.unsplittable == {"d1"}
    assert to.argmin(x, 0).op.space.unsplittable == {"d0"}
    for compare in (to.equal, to.not_equal, to.greater, to.greater_equal, to.less, to.less_equal):
        y = compare(x, f32(5))
        assert y.dtype == to.bool and y.op.space.inputs == (("d0", "d1"), ("d1",))
        assert y.op.space.saved_inputs == () and y.op.space.reductions == frozenset()
    c = to.cast(x, to.int64)
    assert c.dtype.itemsize == 8 and c.op.space.outputs == (("d0", "d1"),)


def test_ops_without_a_gradient_say_so():
    assert {k for k in to.ops.registered_kinds() if not to.ops.get_op_def(k).passes_gradient} == \
        {"floor", "ceil", "round", "sign", "stop_gradient", "argmax", "argmin", "equal", "not_equal", "greater",
         "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
         "sequence_mask"}


def test_logical_ops_take_bool_tensors_and_split_as_elementwise_ones():
    a, b = to.greater(f32(3, 4), 0.0), to.less(f32(4), 1.0)
    for fn in (to.logical_and, to.logical_or, to.logical_xor):
        y = fn(a, b)
        assert y.dtype == to.bool and y.op.space.inputs == (("d0", "d1"), ("d1",))
    assert to.logical_not(a).op.space.outputs == (("d0", "d1"),)
    with pytest.raises(ValueError, match=r"logical_and .*:0 is float32; .*expected bool tensors"):
        to.logical_and(f32(3, 4), a)
    with pytest.raises(ValueError, match="expected a tensoropt Tensor"):
        to.logical_or(a, True)


def test_sequence_ops_keep_their_time_axis_whole_and_split_the_batch():
    mask = to.sequence_mask(to.placeholder(to.int32, [6]), maxlen=5, dtype=to.float32)
    assert tuple(mask.shape) == (6, 5) and mask.dtype == to.float32
    assert mask.op.space.inputs == (("d0",),) and mask.op.space.outputs == (("d0", None),)
    r = to.range(2, 11, 3)
    assert tuple(r.shape) == (3,) and r.dtype == to.int32 and r.op.space.unsplittable == {"d0"}
    c = to.cumsum(f32(4, 7), axis=-1)
    assert c.op.attrs["axis"] == 1 and c.op.space.inputs == (("d0", None),) and set(c.op.space.dims) == {"d0"}
    assert c.op.space.saved_inputs == ()


def test_lrn_keeps_its_channels_whole_and_its_input_and_output_for_backward():
    y = to.nn.lrn(f32(2, 5, 5, 8), depth_radius=2, alpha=1e-3, beta=0.75)
    s = y.op.space
    assert s.unsplittable == {"d3"} and s.outputs == (("d0", "d1", "d2", "d3"),)
    assert s.saved_inputs == (0,) and s.saved_outputs == (0,) and s.flops == 3 * (2 * 5 + 12) * 400
    assert y.op.attrs == {"depth_radius": 2, "bias": 1.0, "alpha": 1e-3, "beta": 0.75}


def test_tile_and_pad_split_only_the_axes_they_leave_alone():
    x = f32(4, 6, 3)
    t = to.tile(x, [1, 2, 1])
    assert tuple(t.shape) == (4, 12, 3) and t.op.space.inputs == (("d0", None, "d2"),)
    assert t.op.space.outputs == (("d0", None, "d2"),) and set(t.op.space.dims) == {"d0", "d2"}
    p = to.pad(x, [[0, 0], [1, 2], [0, 0]])
    assert tuple(p.shape) == (4, 9, 3) and p.op.space.inputs == (("d0", None, "d2"),)
    assert p.op.space.flops == 0 and p.op.space.saved_inputs == ()


def test_every_registered_kind_has_a_test_here():
    tested = {"range", "sequence_mask", "cumsum", "logical_and", "logical_or", "logical_xor", "logical_not", "lrn", "tile", "pad", "log1p", "reciprocal", "erf", "sin", "cos", "softsign", "floor", "ceil",
              "round", "sign", "stop_gradient", "reduce_max", "reduce_min", "where", "one_hot", "strided_slice", "argmax", "argmin", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
              "cast", "relu6", "elu", "selu", "leaky_relu", "softplus", "silu", "abs", "minimum", "pow",
              "squared_difference",
              "matmul", "add", "subtract", "multiply", "divide", "negative", "relu", "gelu", "tanh",
              "reduce_sum", "reduce_mean", "reshape", "transpose", "concat", "split", "softmax",
              "conv2d", "max_pool2d", "avg_pool2d", "embedding_lookup", "bias_add", "dropout",
              "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
              "lstm", "placeholder", "variable", "fill", "sigmoid", "rsqrt"}
    untested = set(to.ops.registered_kinds()) - tested
    # These are one-line wrappers of TensorFlow's own elementwise functions, exercised
    # by test_lowering_matches_numpy instead.
    assert untested <= {"sqrt", "exp", "log", "square", "identity", "maximum", "log_softmax"}
