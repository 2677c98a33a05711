"""Dropout on one process: inverted scaling, its rate, a mask fixed by the op's seed (or
by its name when no seed is given) and not by how many ops the graph holds. That every
rank applies its slice of this same mask under any plan is checked under mpirun by
``tests/parallel/parity_driver.py`` (its MLP has a dropout layer)."""

from __future__ import annotations

import numpy as np

import tensoropt as to

RATE = 0.25


def _dropout_output(seed, extra_ops: int = 0, name="drop"):
    to.reset_default_graph()
    for i in range(extra_ops):     # ops before the dropout shift TensorFlow's op ids
        to.placeholder(to.float32, [2], name=f"unused{i}")
    x = to.placeholder(to.float32, [64, 32], name="x")
    w = to.get_variable("w", [32, 32], initializer=to.ones_initializer())
    y = to.nn.dropout(to.matmul(x, w), rate=RATE, seed=seed, name=name)
    to.build_execution_graph(plan=to.find_strategy())
    value = np.ones((64, 32), np.float32)
    return to.run(y, {x: value}), to.run(y, {x: value})


def test_dropout_scales_kept_values_and_drops_about_its_rate():
    (first, second) = _dropout_output(seed=5)
    kept = first != 0
    np.testing.assert_allclose(first[kept], 32.0 / (1.0 - RATE), rtol=1e-6)
    assert abs((~kept).mean() - RATE) < 0.05, (~kept).mean()
    assert (first != second).any(), "each step draws a new mask"


def test_the_mask_depends_on_the_seed_or_name_not_on_the_graph():
    seeded = _dropout_output(seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(seeded, _dropout_output(seed=5, extra_ops=3)))
    assert not np.array_equal(seeded[0], _dropout_output(seed=6)[0])
    unseeded = _dropout_output(seed=None)
    assert all(np.array_equal(a, b) for a, b in zip(unseeded, _dropout_output(seed=None, extra_ops=3)))
    assert not np.array_equal(unseeded[0], _dropout_output(seed=None, name="other")[0])
