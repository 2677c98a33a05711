"""Which tensors carry gradients: the builder, the accounting and the cost model agree on
it, and TensorFlow builds no gradient for a branch the loss does not use."""

import tensoropt as to
from tensoropt.costs.model import requires_grad


def _model(train: bool):
    x = to.placeholder(to.float32, [4, 3], name="x")
    w = to.get_variable("w", [3, 2])
    gate = to.sigmoid(x)                       # before any variable: no gradient
    used = to.matmul(x * gate, w)
    unused = to.tanh(to.matmul(x, w))          # depends on w, but the loss ignores it
    loss = to.reduce_mean(used)
    if train:
        to.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, w, gate, used, unused, loss


def test_a_branch_the_loss_does_not_use_carries_no_gradient():
    x, w, gate, used, unused, loss = _model(train=True)
    grad = requires_grad(to.get_default_graph())
    assert {w, used, loss} <= grad
    assert unused not in grad and unused.op.inputs[0] not in grad
    assert x not in grad and gate not in grad


def test_without_a_training_step_no_tensor_carries_one():
    # an inference graph: nothing calls tf.gradients, so the cost model prices no backward
    _model(train=False)
    assert requires_grad(to.get_default_graph()) == frozenset()
