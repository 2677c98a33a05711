"""TensorFlow 1.x's older argument names (``keep_dims``, ``reduction_indices``, ``dim``),
which ``tf.compat.v1`` still accepts and 1.x scripts still use, give what TensorFlow gives."""

import numpy as np
import pytest

import tensoropt as to

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0


def _run(build):
    """``build(module, x)`` recorded by tensoropt and trained by nothing: its values on one process."""
    x = to.placeholder(to.float32, X.shape, name="x")
    outs = build(to, x)
    w = to.get_variable("w", [1])             # something to plan and run
    to.build_execution_graph(plan=to.find_strategy())
    return to.run(list(outs) + [w], {x: X})[:-1]


CASES = {
    "reduce_mean keep_dims": lambda m, x: (m.reduce_mean(x, axis=1, keep_dims=True),),
    "reduce_sum reduction_indices": lambda m, x: (m.reduce_sum(x, reduction_indices=[0, 2]),),
    "reduce_mean reduction_indices keep_dims": lambda m, x: (m.reduce_mean(x, reduction_indices=2, keep_dims=True),),
    "moments keep_dims": lambda m, x: m.nn.moments(x, axes=[2], keep_dims=True),
    "moments positional name": lambda m, x: m.nn.moments(x, [1], None, "mom"),
    "softmax dim": lambda m, x: (m.nn.softmax(x, dim=1),),
    "log_softmax dim": lambda m, x: (m.nn.log_softmax(x, dim=1),),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_old_argument_names_give_tensorflows_values(case):
    tf = pytest.importorskip("tensorflow")
    expected = CASES[case](tf.compat.v1, tf.constant(X))
    got = _run(CASES[case])
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert np.asarray(g).shape == tuple(e.shape)
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, named", [
    (lambda x: to.reduce_mean(x, axis=1, reduction_indices=2), "axis=1 and reduction_indices=2"),
    (lambda x: to.reduce_sum(x, keepdims=True, keep_dims=False), "keepdims=True and keep_dims=False"),
    (lambda x: to.nn.moments(x, [1], keepdims=False, keep_dims=True), "keepdims=False and keep_dims=True"),
    (lambda x: to.nn.softmax(x, axis=0, dim=1), "axis=0 and dim=1"),
])
def test_both_names_with_different_values_are_refused_naming_both(call, named):
    x = to.placeholder(to.float32, X.shape, name="x")
    with pytest.raises(ValueError, match=named):
        call(x)


def test_both_names_with_one_value_are_accepted():
    x = to.placeholder(to.float32, X.shape, name="x")
    assert to.reduce_mean(x, axis=1, reduction_indices=1, keepdims=True, keep_dims=True).shape.as_list() == [2, 1, 4]
