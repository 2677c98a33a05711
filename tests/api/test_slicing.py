"""``x[...]`` and ``to.slice`` give TensorFlow's values and gradients (one process), keep
the axes they cut whole, and refuse what they do not support by name. Under plans: the
parity driver's ``activations`` model slices a split tensor."""

import numpy as np
import pytest

import tensoropt as to

X = np.arange(120, dtype=np.float32).reshape(4, 5, 6) / 10.0

CASES = {
    "last step": lambda m, x: x[:, -1],
    "range on the middle axis": lambda m, x: x[:, 1:4, :],
    "index then range": lambda m, x: x[2, :, 1:3],
    "ellipsis": lambda m, x: x[..., 2:],
    "index after ellipsis": lambda m, x: x[..., 0],
    "first row": lambda m, x: x[0],
    "open ranges": lambda m, x: x[:2, 3:],
    "tf.slice": lambda m, x: m.slice(x, [1, 0, 2], [2, -1, 3]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_slices_give_tensorflows_values_and_gradients(case):
    tf = pytest.importorskip("tensorflow")
    w = to.get_variable("w", X.shape, initializer=to.constant_initializer(X))
    out = CASES[case](to, w)
    loss = to.reduce_sum(out * out)
    step = to.train.GradientDescentOptimizer(1.0).minimize(loss)
    to.build_execution_graph(plan=to.find_strategy())
    value = to.run(out)
    to.run(step)
    grad = X - to.run(w)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        expected = CASES[case](tf, x)
        tf_loss = tf.reduce_sum(expected * expected)
    np.testing.assert_allclose(value, expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad, tape.gradient(tf_loss, x).numpy(), rtol=1e-5, atol=1e-5)


def test_axes_taken_whole_keep_their_dim_and_cut_axes_are_kept_whole():
    x = to.placeholder(to.float32, [4, 5, 6], name="x")
    y = x[:, -1]
    assert tuple(y.shape) == (4, 6)
    assert y.op.space.inputs == (("d0", "s1", "d2"),) and y.op.space.outputs == (("d0", "d2"),)
    assert y.op.space.unsplittable == {"s1"}
    z = x[:, 1:3]
    assert z.op.space.outputs == (("d0", None, "d2"),) and tuple(z.shape) == (4, 2, 6)


@pytest.mark.parametrize("key, named", [
    ((slice(None), slice(0, 4, 2)), "step 2 on axis 1; TensorOpt slices with step 1 only"),
    ((0, 0, 0, 0), "4 indices for a tensor of rank 3"),
    ((slice(None), 7), "index 7 is out of range for axis 1 of size 5"),
    ((slice(3, 1),), "axis 0 of size 4 sliced to nothing"),
    ((None,), "None on axis 0 is not an int, a slice or ...; tensors, lists and tf.newaxis"),
    ((Ellipsis, 0, Ellipsis), "at most one ..."),
])
def test_unsupported_indices_are_refused_by_name(key, named):
    x = to.placeholder(to.float32, [4, 5, 6], name="x")
    with pytest.raises(ValueError, match=named):
        x[key]
