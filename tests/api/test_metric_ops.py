"""The ops of a script's metrics (``argmax``/``argmin``, comparisons, ``cast``) give
TensorFlow's values, carry no gradient, and keep an argmax's axis whole (one process;
under plans they are in the parity driver's ``activations`` model, including a mesh change
of a bool tensor)."""

import numpy as np
import pytest

import tensoropt as to

X = np.array([[0.5, -1.0, 2.0, 0.0], [3.0, 1.0, -2.0, 3.5], [-0.5, -0.25, -1.0, 0.75]], np.float32)
L = np.array([2, 0, 3], np.int64)

CASES = {
    "argmax": lambda m, x, l: (m.argmax(x, 1),),
    "argmax int32 dimension": lambda m, x, l: (m.argmax(x, dimension=0, output_type=m.int32),),
    "argmin": lambda m, x, l: (m.argmin(x, axis=-1),),
    "accuracy": lambda m, x, l: (m.reduce_mean(m.cast(m.equal(m.argmax(x, 1), l), m.float32)),),
    "comparisons": lambda m, x, l: (m.greater(x, 0.0), m.greater_equal(x, 0.5), m.less(x, -0.5),
                                    m.less_equal(x, 1.0), m.not_equal(x, 3.0), m.equal(x, x * 1.0)),
    "scalar first": lambda m, x, l: (m.greater(1.0, x),),
    "cast": lambda m, x, l: (m.cast(x, m.int32), m.cast(m.cast(x, m.int64), m.float32), m.cast(l, m.float32)),
    "one_hot": lambda m, x, l: (m.one_hot(l, 4), m.one_hot(l, 3, on_value=5.0, off_value=-1.0),
                                m.one_hot(m.argmax(x, 1, output_type=m.int32), 6)),
}


def _tensoropt(case):
    x = to.placeholder(to.float32, X.shape, name="x")
    labels = to.placeholder(to.int64, L.shape, name="labels")
    outs = CASES[case](to, x, labels)
    to.get_variable("something_to_plan", [1])
    to.build_execution_graph(plan=to.find_strategy())
    return to.run(list(outs), {x: X, labels: L}), outs


@pytest.mark.parametrize("case", sorted(CASES))
def test_metric_ops_give_tensorflows_values_and_dtypes(case):
    tf = pytest.importorskip("tensorflow")
    expected = CASES[case](tf.compat.v1, tf.constant(X), tf.constant(L))
    got, outs = _tensoropt(case)
    for g, e, t in zip(got, expected, outs):
        assert t.dtype.name == e.dtype.name
        assert np.asarray(g).dtype == e.numpy().dtype
        np.testing.assert_array_equal(g, e.numpy())


def test_one_hot_may_split_its_new_axis_and_shape_is_static():
    labels = to.placeholder(to.int32, [8], name="labels")
    y = to.one_hot(labels, 10)
    assert y.op.space.outputs == (("d0", "c"),) and y.op.space.unsplittable == frozenset()
    assert tuple(y.shape) == (8, 10) and y.dtype == to.float32
    x = to.placeholder(to.float32, [8, 3, 4], name="x")
    assert to.shape(x) == [8, 3, 4] and tuple(to.reshape(x, [to.shape(x)[0], -1]).shape) == (8, 12)


def test_an_accuracy_carries_no_gradient_and_keeps_the_argmax_axis_whole():
    from tensoropt.configs import gradient_tensors

    x = to.placeholder(to.float32, [8, 5], name="x")
    w = to.get_variable("w", [5, 4])
    logits = to.matmul(x, w)
    index = to.argmax(logits, 1)
    hits = to.cast(to.equal(index, to.placeholder(to.int64, [8], name="y")), to.float32)
    loss = to.reduce_mean(logits) + to.reduce_mean(hits)
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    grads = gradient_tensors(to.get_default_graph())
    assert logits in grads and index not in grads and hits not in grads
    assert index.op.space.unsplittable == {"d1"} and index.dtype == to.int64 and tuple(index.shape) == (8,)


@pytest.mark.parametrize("call, named", [
    (lambda x: to.equal(to.argmax(x, 1), to.placeholder(to.int32, [3])), "dtypes int64 and int32 differ"),
    (lambda x: to.argmax(x, 1, output_type=to.float32), "output_type=float32; give to.int32 or to.int64"),
    (lambda x: to.argmax(x, axis=1, dimension=0), "axis=1 and dimension=0"),
    (lambda x: to.less(1.0, 2.0), "both operands are Python numbers"),
    (lambda x: to.one_hot(x, 3), "indices of dtype float32"),
    (lambda x: to.one_hot(to.argmax(x, 1), 3, axis=0), "axis=0; TensorOpt adds the new axis last"),
])
def test_misuse_is_refused_by_name(call, named):
    x = to.placeholder(to.float32, X.shape, name="x")
    with pytest.raises(ValueError, match=named):
        call(x)
