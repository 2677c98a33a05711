"""The generated models: valid, small, trainable, seeded, and covering the op set.

Recording creates no TensorFlow object, so the coverage checks record 30 models in well
under a second; a few models are also trained on one process.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import tensoropt as to
from tensoropt.models.generated import FEATURES, STEMS, generate_model

SEEDS = range(30)


def _graph_features(graph, loss) -> set[str]:
    """What the recorded graph itself contains (the loss's own mean aside), independently
    of the generator's notes."""
    out = set()
    kinds = {"bias_add", "relu", "tanh", "sigmoid", "concat", "split", "reshape", "transpose",
             "conv2d", "embedding_lookup", "reduce_sum", "reduce_mean", "lstm"}
    for op in graph.operations:
        if op is loss.op:
            continue
        if op.kind in kinds:
            out.add(op.kind)
        if op.kind == "matmul":
            out.add("batch_matmul" if op.inputs[0].shape.rank > 2 else "matmul")
        if op.kind in ("max_pool2d", "avg_pool2d"):
            out.add(op.kind[:3] + "_pool")
        in_layer_norm = op.name.split("/")[0].startswith("ln")
        if op.kind == "add" and "scalar" not in op.attrs and op.inputs[0].shape == op.inputs[1].shape \
                and not in_layer_norm:
            out.add("residual_add")
        if op.kind == "softmax" and any(c.kind == "matmul" for c in op.outputs[0].consumers()):
            out.add("softmax_attention")
        if op.kind == "rsqrt" and in_layer_norm:
            out.add("layer_norm")
        if any(n > 1 and n % 4 for n in op.space.dims.values()):
            out.add("uneven")
    return out


def _record(seed):
    to.reset_default_graph()
    return generate_model(seed)


def test_thirty_seeds_cover_every_feature_and_stem_and_the_notes_are_true():
    seen, stems, start = set(), set(), time.perf_counter()
    for seed in SEEDS:
        model = _record(seed)
        graph = to.get_default_graph()
        found = _graph_features(graph, model.spec.loss)
        assert model.features == found, f"seed {seed}: notes {sorted(model.features ^ found)} differ"
        seen |= found
        stems.add(model.description.split("[")[0])
    assert seen == set(FEATURES), f"never generated: {sorted(set(FEATURES) - seen)}"
    assert stems == {"x", "images", "tokens", "sequence"} and len(STEMS) == 4
    assert time.perf_counter() - start < 10.0


def test_every_model_is_valid_small_and_has_a_scalar_loss_and_a_training_step():
    optimizers, batches = set(), set()
    for seed in SEEDS:
        model = _record(seed)
        graph = to.get_default_graph()
        spec = model.spec
        assert spec.loss.shape == () and graph.train_steps == [spec.train_op]
        assert spec.train_op.var_list, seed
        assert 5 <= len(graph.operations) <= 120, (seed, len(graph.operations))
        params = sum(v.shape.num_elements() for v in graph.trainable_variables)
        assert params < 20_000, (seed, params)
        feed = model.feeds(1)[0]
        assert set(feed) == set(spec.inputs.values())
        for t, value in feed.items():
            assert value.shape == tuple(t.shape)
        optimizers.add(spec.params["optimizer"])
        batches.add(spec.params["batch"])
    assert optimizers == {"sgd", "momentum", "adam"}
    assert 6 in batches and 8 in batches, "batches that divide 4 ranks unevenly and evenly"


def test_a_seed_always_gives_the_same_model_and_seeds_differ():
    def signature(seed):
        model = _record(seed)
        ops = [(op.name, op.kind, tuple(t.shape for t in op.outputs)) for op in to.get_default_graph().operations]
        return model.description, ops

    assert signature(11) == signature(11)
    assert len({signature(s)[0] for s in SEEDS}) == len(SEEDS)
    a, b = _record(5).feeds(2), _record(5).feeds(2)
    for fa, fb in zip(a, b):
        for (ka, va), (kb, vb) in zip(sorted(fa.items(), key=lambda kv: kv[0].op.name),
                                      sorted(fb.items(), key=lambda kv: kv[0].op.name)):
            np.testing.assert_array_equal(va, vb)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])   # one per stem
def test_a_generated_model_trains_on_one_process(seed):
    model = _record(seed)
    to.build_execution_graph(plan=to.find_strategy())
    losses = [to.run([model.spec.loss, model.spec.train_op], feed)[0] for feed in model.feeds(3, data_seed=0)[:1] * 3]
    assert np.all(np.isfinite(losses))
    assert losses[2] < losses[0], f"seed {seed} ({model.description}): losses {losses} on one batch"


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="seed -1"):
        generate_model(-1)
    with pytest.raises(ValueError, match="batch 0"):
        generate_model(0, batch=0)
    with pytest.raises(ValueError, match="optimizer 'rmsprop'"):
        generate_model(0, optimizer="rmsprop")
