"""A script ported from tf.compat.v1 to tensoropt trains to the same losses.

Each pair of scripts under scripts/ differs only in the import and in the three
TensorOpt calls; both train 5 steps from the same initial values. Those are made by
numpy and passed through ``constant_initializer``: TensorOpt draws its own random initial
values shard by shard (``tensoropt.initializers``), so its glorot values are not
TensorFlow's for the same seed.
"""

import difflib
import importlib.util
import pathlib

import numpy as np
import pytest

SCRIPTS = pathlib.Path(__file__).parent / "scripts"
ALLOWED_CHANGES = ("import ", "find_strategy", "build_execution_graph", "tf.run(", "session",
                   '"""')


def _load(name):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _changed_lines(a, b):
    diff = difflib.unified_diff((SCRIPTS / a).read_text().splitlines(),
                                (SCRIPTS / b).read_text().splitlines(), lineterm="", n=0)
    return [line[1:] for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


@pytest.mark.parametrize("model", ["cnn", "transformer", "mlp"])
def test_port_differs_only_in_import_and_three_calls(model):
    changed = _changed_lines(f"{model}_tf.py", f"{model}_to.py")
    assert changed, "the two scripts must differ at least in the import"
    for line in changed:
        assert any(token in line for token in ALLOWED_CHANGES), f"unexpected difference: {line!r}"
    added = [line for line in changed if "tensoropt" in line or "find_strategy" in line
             or "build_execution_graph" in line or "tf.run(" in line]
    assert any("import tensoropt" in line for line in added)
    assert any("find_strategy" in line for line in added)
    assert any("build_execution_graph" in line for line in added)
    assert any("tf.run(" in line for line in added)


def _cnn_batches(rng):
    return [(rng.normal(size=(8, 16, 16, 3)).astype(np.float32),
             rng.integers(0, 5, size=8).astype(np.int32)) for _ in range(5)]


def _transformer_batches(rng):
    return [(rng.integers(0, 11, size=(4, 6)).astype(np.int32),
             rng.integers(0, 11, size=(4, 6)).astype(np.int32)) for _ in range(5)]


@pytest.mark.parametrize("model,batches", [("cnn", _cnn_batches), ("transformer", _transformer_batches)])
def test_port_reaches_the_same_losses(model, batches):
    data = batches(np.random.default_rng(0))
    reference = np.array(_load(f"{model}_tf").train(data))
    ported = np.array(_load(f"{model}_to").train(data))
    assert reference.shape == ported.shape == (5,)
    assert np.all(np.isfinite(reference))
    assert not np.allclose(reference[0], reference[-1]), "training must move the loss"
    np.testing.assert_allclose(ported, reference, rtol=1e-5)


def _mlp_batches(rng):
    return [(rng.normal(size=(16, 14)).astype(np.float32), rng.integers(0, 4, size=16)) for _ in range(5)]


def test_tutorial_style_port_reaches_the_same_losses_accuracies_and_norms():
    """tf.Variable, int64 labels, a regularizer, a collection, a decaying learning rate on
    a global step, gradients clipped by global norm and an accuracy (scripts/mlp_*.py)."""
    data = _mlp_batches(np.random.default_rng(0))
    reference = np.array(_load("mlp_tf").train(data))
    ported = np.array(_load("mlp_to").train(data))
    assert reference.shape == ported.shape == (5, 3)   # loss, accuracy, global norm per step
    assert not np.allclose(reference[0, 0], reference[-1, 0]), "training must move the loss"
    assert reference[:, 2].max() > 1.0, "the clip (1.0) must bite at least once"
    np.testing.assert_allclose(ported, reference, rtol=1e-5)
