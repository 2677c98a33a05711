"""The zoo's registry: names, presets, overrides, describe, and ModelSpec.feed."""

from __future__ import annotations

import numpy as np
import pytest

import tensoropt as to
from tensoropt import models

REQUIRED = {"paper_rnn", "paper_wide_resnet", "paper_transformer", "paper_transformer_s",
            "paper_vgg16", "alexnet", "inception_v3", "resnet101", "rnnlm", "pase_transformer",
            "mlp", "cnn", "transformer", "lstm"}


def test_names_lists_every_required_model_sorted():
    names = models.names()
    assert REQUIRED <= set(names), REQUIRED - set(names)
    assert names == sorted(names)
    assert models.__file__.startswith(to.__file__.rsplit("/", 1)[0])


def test_every_model_has_paper_and_tiny_presets():
    for name in models.names():
        assert {"paper", "tiny"} <= set(models.get_entry(name).presets), name


def test_build_applies_overrides_and_records_params():
    spec = models.build("mlp", size="tiny", batch=3, hidden=(7, 5))
    assert spec.name == "mlp"
    assert spec.params["batch"] == 3 and spec.params["hidden"] == (7, 5)
    assert tuple(spec.inputs["x"].shape) == (3, spec.params["input_dim"])
    kernels = {v.name: tuple(v.shape) for v in to.get_default_graph().trainable_variables}
    assert kernels["fc0/kernel:0"] == (spec.params["input_dim"], 7)
    assert kernels["fc1/kernel:0"] == (7, 5)
    assert spec.loss.shape == () and spec.train_op in to.get_default_graph().train_steps


def test_calling_a_model_function_directly_fills_name_and_params():
    from tensoropt.models.mlp import mlp
    spec = mlp(batch=5, hidden=(4,))
    assert spec.name == "mlp"
    assert spec.params["batch"] == 5 and spec.params["classes"] == 10   # the function's default
    assert "Usage" not in (mlp.__doc__ or "") and "softmax" in mlp.__doc__


def test_tiny_batches_split_over_two_and_four_devices():
    for name in models.names():
        assert models.get_entry(name).presets["tiny"]["batch"] % 4 == 0, name


def test_build_records_into_the_current_default_graph():
    spec = models.build("cnn", size="tiny")
    assert spec.loss.graph is to.get_default_graph()


@pytest.mark.parametrize("call, words", [
    (lambda: models.build("no_such_model"), ["no_such_model", "mlp"]),
    (lambda: models.build("mlp", size="huge"), ["huge", "tiny"]),
    (lambda: models.build("mlp", size="tiny", widht=3), ["widht", "hidden"]),
    (lambda: models.build("mlp", size="tiny", optimizer="rmsprop"), ["rmsprop", "adam"]),
])
def test_bad_requests_raise_value_errors_that_say_what_is_valid(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)


def test_unknown_size_is_also_a_key_error_for_callers_that_skip_missing_presets():
    with pytest.raises(KeyError):
        models.build("alexnet", size="small")
    with pytest.raises(ValueError, match="no size 'small'"):
        models.build("alexnet", size="small")


def test_cli_models_table_lists_every_model(capsys):
    cli = pytest.importorskip("tensoropt.cli.main")
    for size in ("paper", "small"):
        assert cli.main(["models", "--json", "--size", size]) == 0
        import json
        rows = json.loads(capsys.readouterr().out)
        expected = [n for n in models.names() if size in models.get_entry(n).presets]
        assert [r["model"] for r in rows] == expected


def test_describe_states_the_chosen_widths():
    text = models.describe("paper_transformer")
    assert "d_model 2048" in text and "d_ff 8192" in text and "20 encoder" in text
    assert "paper:" in text and "tiny:" in text
    assert "16384" in models.describe("paper_rnn")
    assert "WRN-28-73" in models.describe("paper_wide_resnet")
    for name in models.names():
        assert "GiB" in models.describe(name) or not name.startswith("paper_"), name


def test_feed_gives_valid_data_for_every_input_of_every_tiny_model():
    for name in models.names():
        to.reset_default_graph()
        spec = models.build(name, size="tiny")
        feed = spec.feed(np.random.default_rng(1))
        assert set(feed) == set(spec.inputs.values()), name
        for key, t in spec.inputs.items():
            value = feed[t]
            assert value.shape == tuple(t.shape), (name, key)
            if t.dtype == to.int32:
                assert value.dtype == np.int32
                r = spec.int_ranges[key]
                assert value.min() >= r.low and value.max() < r.high, (name, key)
            else:
                assert value.dtype == np.float32 and np.isfinite(value).all()


def test_feed_is_deterministic_for_a_seed():
    spec = models.build("lstm", size="tiny")
    a, b = spec.feed(5), spec.feed(5)
    for t in spec.inputs.values():
        np.testing.assert_array_equal(a[t], b[t])
    labels = spec.inputs["targets"]
    assert spec.int_ranges["targets"].high == spec.params["vocab"]
    assert not np.array_equal(spec.feed(6)[labels], a[labels])
