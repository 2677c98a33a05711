"""An embedding table trains as under TensorFlow: Momentum moves the looked-up rows only.

Every plan hands the optimizer the rows where the table's gradient is non-zero (see
``tensoropt.execution.lowering``), one process included; the rows a batch does not look up keep
their values, as TensorFlow's sparse Momentum leaves them.
"""

import numpy as np
import pytest

import tensoropt as to

tf = pytest.importorskip("tensorflow")

BATCHES = [np.arange(8, dtype=np.int32).reshape(4, 2),                      # rows 0..7
           np.array([[8, 9], [10, 11], [8, 10], [9, 11]], np.int32)]        # rows 8..11 only
TABLE = np.random.default_rng(0).normal(0, 0.5, (12, 4)).astype(np.float32)


def _train(module, session_run):
    tokens = module.placeholder(module.int32, [4, 2], name="tokens")
    table = module.get_variable("embedding", [12, 4], initializer=module.constant_initializer(TABLE))
    loss = module.reduce_sum(module.square(module.nn.embedding_lookup(table, tokens) - 1.0))
    step = module.train.MomentumOptimizer(0.1, momentum=0.9).minimize(loss)
    return session_run(tokens, table, step)


def test_momentum_moves_only_the_rows_a_batch_looks_up_as_tensorflow_does():
    def run_to(tokens, table, step):
        to.build_execution_graph(plan=to.find_strategy())
        for ids in BATCHES:
            to.run(step, {tokens: ids})
        return to.run(table)

    def run_tf(tokens, table, step):
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            for ids in BATCHES:
                session.run(step, {tokens: ids})
            return session.run(table)

    ours = _train(to, run_to)
    with tf.Graph().as_default():
        theirs = _train(tf.compat.v1, run_tf)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert not np.allclose(ours[:8], TABLE[:8]) and not np.allclose(ours[8:], TABLE[8:])
