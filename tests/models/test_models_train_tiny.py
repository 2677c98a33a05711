"""Every tiny model lowers and trains two steps on one process with a finite, changing loss."""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to
from tensoropt import models


@pytest.mark.parametrize("name", models.names())
def test_tiny_model_trains_two_steps(name):
    to.reset_default_graph()
    spec = models.build(name, size="tiny")
    plan = to.find_strategy()
    to.build_execution_graph(plan=plan)
    feed = spec.feed(0)
    first, _ = to.run([spec.loss, spec.train_op], feed_dict=feed)
    second, _ = to.run([spec.loss, spec.train_op], feed_dict=feed)
    assert np.isfinite(first) and np.isfinite(second), (first, second)
    assert first != second, f"{name}: the loss did not change after one step ({first})"
    assert second < first + 1.0, f"{name}: loss jumped from {first} to {second}"
