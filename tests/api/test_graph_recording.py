"""Recording: names, scopes, variables, operators on tensors, and the bad inputs that
must raise at once."""

import pytest

import tensoropt as to


def test_names_are_deterministic_and_unique():
    x = to.placeholder(to.float32, [2, 3], name="x")
    a = to.nn.relu(x)
    b = to.nn.relu(x)
    with to.name_scope("block"):
        c = to.nn.relu(x)
        d = to.tanh(c, name="act")
    assert [t.op.name for t in (a, b, c, d)] == ["relu", "relu_1", "block/relu", "block/act"]
    assert a.name == "relu:0"


def test_recording_twice_gives_the_same_names():
    def build():
        to.reset_default_graph()
        x = to.placeholder(to.float32, [4, 8])
        with to.variable_scope("layer"):
            w = to.get_variable("w", [8, 2])
        to.reduce_sum(to.matmul(x, w) * 2.0 + 1.0)
        return [op.name for op in to.get_default_graph().operations]

    assert build() == build()


def test_variable_scope_and_reuse():
    with to.variable_scope("enc"):
        w = to.get_variable("w", [3, 3])
    assert w.op.name == "enc/w"
    with to.variable_scope("enc", reuse=True):
        assert to.get_variable("w", [3, 3]) is w
    with to.variable_scope("enc", reuse=to.AUTO_REUSE):
        assert to.get_variable("w") is w
        v = to.get_variable("v", [2])
    assert v.op.name == "enc/v"


def test_duplicate_variable_raises_with_the_fix():
    to.get_variable("w", [2])
    with pytest.raises(ValueError, match=r"w already exists.*reuse=True"):
        to.get_variable("w", [2])


def test_reused_variable_with_another_shape_raises():
    to.get_variable("w", [2])
    with to.variable_scope("", reuse=True):
        with pytest.raises(ValueError, match=r"specified shape \(3,\) and found shape \(2,\)"):
            to.get_variable("w", [3])


def test_unknown_dtype_raises():
    with pytest.raises(ValueError, match=r"unsupported dtype 'float64'.*float32"):
        to.placeholder("float64", [2])


def test_unknown_shape_raises():
    with pytest.raises(ValueError, match=r"shape is None.*batch size"):
        to.placeholder(to.float32, None, name="x")
    with pytest.raises(ValueError, match=r"dimension <= 0; every dimension must be positive"):
        to.placeholder(to.float32, [0, 3], name="x")
    with pytest.raises(ValueError, match=r"\[None, 32, 3\] leaves dimension 0 unknown \(None\).*give its size, "
                                         r"e.g. \[256, 32, 3\] \(the batch size"):
        to.placeholder(to.float32, [None, 32, 3], name="images")


def test_unknown_op_kind_raises_listing_known_kinds():
    with pytest.raises(ValueError, match=r"unknown op kind 'fft'.*matmul"):
        to.get_default_graph().create_op("fft", [], {})


def test_python_operators_record_ops():
    x = to.placeholder(to.float32, [2, 3])
    y = to.placeholder(to.float32, [3])
    kinds = [t.op.kind for t in (x + y, x - 1.0, 2.0 * x, x / y, -x, 1.0 - x)]
    assert kinds == ["add", "subtract", "multiply", "divide", "negative", "subtract"]
    assert (1.0 - x).op.attrs == {"scalar": 1.0, "scalar_first": True}


def test_tensor_has_no_truth_value():
    x = to.placeholder(to.float32, [2])
    with pytest.raises(TypeError, match="truth value"):
        bool(x)


def test_minimize_rejects_a_non_scalar_loss():
    x = to.placeholder(to.float32, [4, 3])
    w = to.get_variable("w", [3, 2])
    per_example = to.reduce_sum(to.matmul(x, w), axis=1)
    with pytest.raises(ValueError, match=r"has shape \(4,\); expected a scalar.*reduce_mean"):
        to.train.GradientDescentOptimizer(0.1).minimize(per_example)


def test_minimize_without_variables_raises():
    x = to.placeholder(to.float32, [4])
    with pytest.raises(ValueError, match="no trainable variable reaches the loss"):
        to.train.AdamOptimizer().minimize(to.reduce_sum(x))


def test_minimize_records_the_step_and_slots():
    x = to.placeholder(to.float32, [4, 3])
    w = to.get_variable("w", [3, 2])
    to.get_variable("unused", [5])
    step = to.train.MomentumOptimizer(0.1, momentum=0.9).minimize(to.reduce_mean(to.matmul(x, w)))
    assert step.var_list == (w,)
    assert step.optimizer.slots_per_variable == 1
    assert to.train.AdamOptimizer().slots_per_variable == 2
    assert to.get_default_graph().train_steps == [step]


def test_inputs_from_another_graph_raise():
    x = to.placeholder(to.float32, [2])
    to.reset_default_graph()
    with pytest.raises(ValueError, match="belongs to another graph"):
        to.nn.relu(x)
