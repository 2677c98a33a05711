"""Saver on one process: round trip, names a TF 1.x script sees, index and max_to_keep,
bad checkpoints refused before anything changes, export to a plain TF checkpoint."""

import importlib.util
import json
import os
import re
import pathlib

import numpy as np
import pytest

import tensoropt as to
from tensoropt.checkpoint import CheckpointError, export_tensorflow
from tensoropt.checkpoint.manifest import Manifest

_DRIVER = pathlib.Path(__file__).resolve().parents[1] / "parallel" / "parity_driver.py"
_spec = importlib.util.spec_from_file_location("parity_driver_ckpt", _DRIVER)
PARITY = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PARITY)


@pytest.fixture
def trained():
    """A small Transformer with Adam (no dropout: its masks are drawn anew each step),
    built on one process, after 2 steps: (loss, train_op, feeds, variables)."""
    to.reset_default_graph()
    loss, make_feed = PARITY.transformer()
    train_op = to.train.AdamOptimizer(0.01).minimize(loss)
    graph = to.get_default_graph()
    to.build_execution_graph(plan=to.find_strategy(option="mini_time", parallelism=1), graph=graph)
    rng = np.random.default_rng(0)
    feeds = [make_feed(rng) for _ in range(4)]
    for feed in feeds[:2]:
        to.run([loss, train_op], feed)
    return loss, train_op, feeds, graph.trainable_variables


def _values(variables):
    return to.run({v.op.name: v for v in variables})


def test_restore_brings_back_variables_slots_and_the_step(trained, tmp_path):
    loss, train_op, feeds, variables = trained
    saver = to.train.Saver()
    path = saver.save(str(tmp_path / "model"), global_step=2)
    assert path == str(tmp_path / "model-2") and os.path.isdir(path)
    saved = _values(variables)
    after_save = [to.run([loss, train_op], f)[0] for f in feeds[2:]]
    assert any(not np.array_equal(saved[k], v) for k, v in _values(variables).items())
    assert saver.restore(to.train.latest_checkpoint(str(tmp_path))) == 2
    for k, v in _values(variables).items():
        np.testing.assert_array_equal(v, saved[k])
    # the slots and beta powers came back too: the same steps give the same losses
    again = [to.run([loss, train_op], f)[0] for f in feeds[2:]]
    np.testing.assert_allclose(again, after_save, rtol=1e-6)
    names = {t.name for t in Manifest.read(path).tensors}
    assert {"qkv/w", "qkv/w/Adam", "qkv/w/Adam_1", "beta1_power", "beta2_power", "global_step"} <= names


def test_max_to_keep_and_the_index(trained, tmp_path):
    saver = to.train.Saver(max_to_keep=2)
    for step in (1, 2, 3):
        saver.save(str(tmp_path / "m"), global_step=step)
    kept = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert kept == ["m-2", "m-3"]
    assert to.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "m-3")
    assert json.loads((tmp_path / "checkpoint.json").read_text())["all"] == ["m-2", "m-3"]
    assert to.train.latest_checkpoint(str(tmp_path / "nowhere")) is None


def _corrupt(path, how):
    manifest = path / "manifest.json"
    shard = path / "shards-00000.npz"
    if how == "no manifest":
        manifest.unlink()
        return "manifest.json"
    if how == "truncated shard":
        data = shard.read_bytes()
        shard.write_bytes(data[: len(data) // 2])
        return "shards-00000.npz"
    if how == "missing shard":
        shard.unlink()
        return "shards-00000.npz"
    data = json.loads(manifest.read_text())
    entry = next(t for t in data["tensors"] if t["name"] == "qkv/w")
    if how == "other shape":
        entry["shape"] = [8, 25]
        entry["blocks"][0]["stop"] = [8, 25]
    elif how == "other model":
        entry["name"] = "encoder/w"
    manifest.write_text(json.dumps(data))
    return "qkv/w"


@pytest.mark.parametrize("how", ["no manifest", "truncated shard", "missing shard", "other shape",
                                 "other model"])
def test_a_bad_checkpoint_is_named_and_changes_nothing(trained, tmp_path, how):
    _, _, _, variables = trained
    path = pathlib.Path(to.train.Saver().save(str(tmp_path / "bad"), global_step=7))
    named = _corrupt(path, how)
    before = _values(variables)
    with pytest.raises(CheckpointError, match=named.replace(".", r"\.")) as err:
        to.train.Saver().restore(str(path))
    if how in ("other shape", "other model", "truncated shard", "missing shard"):
        assert "qkv/w" in str(err.value) or "shards-00000" in str(err.value)
    for k, v in _values(variables).items():
        np.testing.assert_array_equal(v, before[k])


def test_restore_of_nothing_says_what_to_do(trained, tmp_path):
    with pytest.raises(CheckpointError, match="save one first"):
        to.train.Saver().restore(to.train.latest_checkpoint(str(tmp_path)))
    with pytest.raises(CheckpointError, match="does not exist"):
        to.train.Saver().restore(str(tmp_path / "model-9"))


def test_export_is_a_plain_tensorflow_checkpoint(trained, tmp_path):
    _, _, _, variables = trained
    path = to.train.Saver().save(str(tmp_path / "model"), global_step=2)
    export_tensorflow(path, str(tmp_path / "tf" / "model"))
    from tensoropt._tf import import_tensorflow
    reader = import_tensorflow().train.load_checkpoint(str(tmp_path / "tf" / "model"))
    for name, value in _values(variables).items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    assert reader.get_tensor("global_step") == 2
    assert reader.get_variable_to_shape_map()["qkv/w/Adam"] == [8, 24]


def test_export_checkpoint_command(trained, tmp_path, capsys):
    from tensoropt import cli

    path = to.train.Saver().save(str(tmp_path / "model"), global_step=2)
    assert cli.main(["export-checkpoint", path, str(tmp_path / "tf" / "model")]) == 0
    assert "tensors written" in capsys.readouterr().out
    assert cli.main(["export-checkpoint", str(tmp_path / "model-9"), str(tmp_path / "tf2" / "m")]) == 2
    assert re.search(r"export-checkpoint: .*model-9.*does not exist", capsys.readouterr().err)
    assert not (tmp_path / "tf2").exists()   # nothing half-written


def test_tensorflows_session_first_signatures_are_taken(trained, tmp_path):
    """``saver.save(sess, path, global_step)`` and ``saver.restore(sess, path)``, as a TF 1.x
    script calls them: TensorOpt runs its own session, so the first argument is passed over."""
    loss, train_op, feeds, variables = trained
    saver = to.train.Saver()
    sess = object()                                  # whatever the script had
    path = saver.save(sess, str(tmp_path / "model"), 7)
    assert path == str(tmp_path / "model-7")
    saved = _values(variables)
    to.run([loss, train_op], feeds[2])
    assert saver.restore(sess, path) == 7
    for k, v in _values(variables).items():
        np.testing.assert_array_equal(v, saved[k])
    assert saver.save(None, str(tmp_path / "plain")) == str(tmp_path / "plain")
    with pytest.raises(ValueError, match=r"Saver.save: expected \(save_path, global_step\), or TensorFlow's"):
        saver.save(sess, 3)
