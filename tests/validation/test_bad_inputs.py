"""Every bad input is stopped at the door, named, in one line (issue 20).

One table: the API, the files a user hands us, and the CLI. Each case asserts the error's
type, that its message names the offending thing, and that the user's files are
unchanged (a hash of the user's directory before and after). ``python -m pytest
tests/validation -q --collect-only`` lists the cases by id.
"""

import hashlib
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tensoropt as to
from tensoropt import cli, models, runtime
from tensoropt.checkpoint import CheckpointError
from tensoropt.cluster import get_cluster
from tensoropt.cluster.calibration import CalibrationProfile
from tensoropt.search.strategy import NoPlanFitsError


# -- the user's files ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A directory of the user's files: a good plan (tiny MLP, 4 devices), hand-edited and
    damaged copies, a damaged cluster file, profile and checkpoint, an existing output."""
    d = tmp_path_factory.mktemp("user")
    to.reset_default_graph()
    models.build("mlp", size="tiny")
    plan = to.find_strategy(option="mini_time", parallelism=4, cluster="paper-v100x16")
    plan.save(str(d / "plan.json"))
    to.find_strategy(option="mini_time", parallelism=1, cluster="paper-v100x16").save(str(d / "plan1.json"))
    data = json.loads((d / "plan.json").read_text())
    first = next(iter(data["ops"]))
    data["ops"][first]["mesh"] = [2]
    (d / "plan_bad_mesh.json").write_text(json.dumps(data))
    data = json.loads((d / "plan.json").read_text())
    data["format_version"] = 99
    (d / "plan_old.json").write_text(json.dumps(data))
    (d / "plan_not_json.json").write_text("{this is not json")
    (d / "cluster_bad.json").write_text(json.dumps({"name": "x", "machines": "two"}))
    (d / "profile_bad.json").write_text("[1, 2, 3]")
    (d / "ckpt").mkdir()
    (d / "ckpt" / "manifest.json").write_text("{broken")
    (d / "results.png").write_bytes(b"the user's old plot")
    (d / "outdir").mkdir()
    return d


def _hash(directory: pathlib.Path) -> str:
    h = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        h.update(str(path.relative_to(directory)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def _mlp():
    to.reset_default_graph()
    return models.build("mlp", size="tiny")


def _built_mlp():
    spec = _mlp()
    to.build_execution_graph(plan=to.find_strategy(option="mini_time", parallelism=1))
    return spec


def _cli(*argv):
    """Runs the CLI in-process; a usage error raises SystemExit(2) (argparse) or returns 2."""
    try:
        code = cli.main(list(argv))
    except SystemExit as e:
        code = e.code
    if code != 2:
        raise AssertionError(f"tensoropt {' '.join(argv)} exited {code}, expected 2")
    raise _CliError()


class _CliError(Exception):
    """The CLI refused its input (exit 2); the message is on stderr."""


TINY = ["--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16"]

# (id, action(files), error type, words the message must contain)
CASES = [
    # -- recording ------------------------------------------------------------------------
    ("placeholder_float_dim", lambda f: to.placeholder(to.float32, [2.5, 3], name="x"), ValueError, ["'x'", "2.5"]),
    ("placeholder_zero_dim", lambda f: to.placeholder(to.float32, [0, 3], name="x"), ValueError, ["'x'", "<= 0"]),
    ("placeholder_no_shape", lambda f: to.placeholder(to.float32, None, name="x"), ValueError, ["'x'", "None"]),
    ("variable_text_dim", lambda f: to.get_variable("w", ["4", 3]), ValueError, ["'w'", "'4'"]),
    ("matmul_shapes", lambda f: to.matmul(to.placeholder(to.float32, [2, 3], name="a"),
                                          to.placeholder(to.float32, [4, 5], name="b")), ValueError, ["3", "4"]),
    ("conv2d_padding", lambda f: to.nn.conv2d(to.placeholder(to.float32, [2, 8, 8, 3], name="im"),
                                              to.get_variable("k", [3, 3, 3, 4]), strides=1, padding="FOO"),
     ValueError, ["FOO"]),
    ("adam_learning_rate_text", lambda f: to.train.AdamOptimizer("1e-3"), ValueError, ["learning_rate", "'1e-3'"]),
    ("sgd_learning_rate_negative", lambda f: to.train.GradientDescentOptimizer(-0.1), ValueError,
     ["learning_rate", "-0.1"]),
    ("momentum_nan", lambda f: to.train.MomentumOptimizer(0.1, momentum=float("nan")), ValueError, ["momentum"]),
    ("nesterov_text", lambda f: to.train.MomentumOptimizer(0.1, use_nesterov="yes"), ValueError, ["use_nesterov"]),
    ("minimize_non_scalar", lambda f: to.train.AdamOptimizer().minimize(
        to.get_variable("v", [3]) * 2.0), ValueError, ["scalar"]),
    # -- find_strategy --------------------------------------------------------------------
    ("option_unknown", lambda f: (_mlp(), to.find_strategy(option="fastest")), ValueError, ["fastest"]),
    ("parallelism_zero", lambda f: (_mlp(), to.find_strategy(parallelism=0)), ValueError, ["parallelism", "0"]),
    ("parallelism_float", lambda f: (_mlp(), to.find_strategy(parallelism=2.5)), ValueError, ["parallelism", "2.5"]),
    ("parallelisms_empty", lambda f: (_mlp(), to.find_strategy(option="profiling", parallelisms=[])), ValueError,
     ["parallelisms"]),
    ("memory_limit_text", lambda f: (_mlp(), to.find_strategy(memory_limit="16GB")), ValueError,
     ["memory_limit", "16GB"]),
    ("memory_limit_negative", lambda f: (_mlp(), to.find_strategy(memory_limit=-1)), ValueError,
     ["memory_limit", "-1"]),
    ("cost_model_unknown", lambda f: (_mlp(), to.find_strategy(cost_model="magic")), ValueError,
     ["cost_model", "magic"]),
    ("epsilon_out_of_range", lambda f: (_mlp(), to.find_strategy(epsilon=2.0)), ValueError, ["epsilon"]),
    ("threads_zero", lambda f: (_mlp(), to.find_strategy(threads=0)), ValueError, ["threads"]),
    ("cluster_unknown", lambda f: (_mlp(), to.find_strategy(cluster="no-such-cluster")), ValueError,
     ["no-such-cluster"]),
    ("graph_empty", lambda f: (to.reset_default_graph(), to.find_strategy()), ValueError, ["empty"]),
    ("memory_no_plan_fits", lambda f: (_mlp(), to.find_strategy(memory_limit=1.0, cluster="paper-v100x16",
                                                                parallelism=4)), NoPlanFitsError, ["memory"]),
    # -- build and run --------------------------------------------------------------------
    ("plan_as_path", lambda f: (_mlp(), to.build_execution_graph(plan=str(f / "plan.json"))), ValueError,
     ["Plan.load", "plan.json"]),
    ("engine_unknown", lambda f: (_mlp(), to.build_execution_graph(engine="xla")), ValueError, ["xla"]),
    ("plan_for_4_on_1", lambda f: (_mlp(), to.build_execution_graph(plan=to.Plan.load(str(f / "plan.json")))),
     ValueError, ["4 device", "mpirun", "-np 4"]),
    ("plan_for_other_graph", lambda f: (to.reset_default_graph(), models.build("cnn", size="tiny"),
                                        to.build_execution_graph(plan=to.Plan.load(str(f / "plan1.json")))),
     ValueError, ["does not configure"]),
    ("feed_wrong_shape", lambda f: (lambda s: to.run(s.loss, {next(iter(s.feed(0))): np.zeros((3, 3))}))(
        _built_mlp()), ValueError, ["shape (3, 3)"]),
    ("feed_key_not_tensor", lambda f: (lambda s: to.run(s.loss, {"x": np.zeros(3)}))(_built_mlp()), ValueError,
     ["feed key", "'x'"]),
    ("fetch_not_tensor", lambda f: (_built_mlp(), to.run("loss")), ValueError, ["'loss'"]),
    ("input_slice_not_placeholder", lambda f: (lambda s: to.input_slice(s.loss))(_built_mlp()), ValueError,
     ["input_slice"]),
    ("saver_max_to_keep", lambda f: to.train.Saver(max_to_keep=-1), ValueError, ["max_to_keep", "-1"]),
    ("saver_global_step_text", lambda f: (_built_mlp(), to.train.Saver().save(str(f / "outdir" / "m"),
                                                                              global_step="7")),
     ValueError, ["global_step", "'7'"]),
    # -- files ----------------------------------------------------------------------------
    ("plan_file_not_json", lambda f: to.Plan.load(str(f / "plan_not_json.json")), ValueError,
     ["plan_not_json.json"]),
    ("plan_file_mesh_edited", lambda f: to.Plan.load(str(f / "plan_bad_mesh.json")), ValueError,
     ["mesh", "parallelism"]),
    ("plan_file_version", lambda f: to.Plan.load(str(f / "plan_old.json")), ValueError, ["format_version", "99"]),
    ("plan_file_missing", lambda f: to.Plan.load(str(f / "nowhere.json")), (ValueError, OSError), ["nowhere.json"]),
    ("cluster_file_corrupt", lambda f: get_cluster(str(f / "cluster_bad.json")), ValueError, ["cluster_bad.json"]),
    ("profile_file_corrupt", lambda f: CalibrationProfile.load(f / "profile_bad.json"), ValueError,
     ["profile_bad.json"]),
    ("checkpoint_corrupt", lambda f: (_built_mlp(), to.train.Saver().restore(str(f / "ckpt"))), CheckpointError,
     ["manifest.json"]),
    ("checkpoint_missing", lambda f: (_built_mlp(), to.train.Saver().restore(str(f / "ckpt-9"))), CheckpointError,
     ["ckpt-9", "does not exist"]),
    # -- the CLI (one line on stderr, exit 2) ----------------------------------------------
    ("cli_models_size", lambda f: _cli("models", "--size", "large"), _CliError, ["--size", "large"]),
    ("cli_profile_memory_negative", lambda f: _cli("profile", *TINY, "--memory-limit", "-1"), _CliError,
     ["--memory-limit"]),
    ("cli_profile_devices_text", lambda f: _cli("profile", *TINY, "--devices", "1,x"), _CliError, ["1,x"]),
    ("cli_frontier_devices_zero", lambda f: _cli("frontier", *TINY, "--devices", "0"), _CliError, ["--devices"]),
    ("cli_frontier_model_unknown", lambda f: _cli("frontier", "--model", "nosuch", "--cluster", "paper-v100x16"),
     _CliError, ["nosuch"]),
    ("cli_frontier_cluster_unknown", lambda f: _cli("frontier", "--model", "mlp", "--size", "tiny", "--cluster",
                                                    "nosuchcluster"), _CliError, ["nosuchcluster"]),
    ("cli_frontier_plot_nowhere", lambda f: _cli("frontier", *TINY, "--plot", str(f / "no" / "f.png")), _CliError,
     ["--plot", "does not exist"]),
    ("cli_frontier_epsilon", lambda f: _cli("frontier", *TINY, "--epsilon", "2"), _CliError, ["epsilon"]),
    ("cli_frontier_threads_zero", lambda f: _cli("frontier", *TINY, "--threads", "0"), _CliError, ["--threads"]),
    ("cli_plan_out_directory", lambda f: _cli("plan", *TINY, "--devices", "4", "--out", str(f / "outdir")),
     _CliError, ["--out", "is a directory"]),
    ("cli_simulate_plan_missing", lambda f: _cli("simulate", *TINY, "--devices", "4", "--plan",
                                                 str(f / "nowhere.json")), _CliError, ["nowhere.json"]),
    ("cli_simulate_plan_not_json", lambda f: _cli("simulate", *TINY, "--devices", "4", "--plan",
                                                  str(f / "plan_not_json.json")), _CliError, ["plan_not_json.json"]),
    ("cli_simulate_devices_differ", lambda f: _cli("simulate", *TINY, "--devices", "2", "--plan",
                                                   str(f / "plan.json")), _CliError, ["--devices 4"]),
    ("cli_compare_budget_zero", lambda f: _cli("compare", *TINY, "--devices", "4", "--budget-s", "0"), _CliError,
     ["--budget-s"]),
    ("cli_export_missing", lambda f: _cli("export-checkpoint", str(f / "ckpt-9"), str(f / "outdir" / "tf")),
     _CliError, ["ckpt-9", "does not exist"]),
    ("cli_calibrate_out_directory", lambda f: _cli("calibrate", "--out", str(f / "outdir")), _CliError,
     ["--out", "is a directory"]),
]


@pytest.mark.parametrize("action, error, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_input_is_refused_by_name_and_changes_no_file(files, capsys, monkeypatch, action, error, words):
    monkeypatch.setattr(runtime._runtime, "session", None)     # each case starts unbuilt
    before = _hash(files)
    with pytest.raises(error) as raised:
        action(files)
    message = capsys.readouterr().err if raised.type is _CliError else str(raised.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    if raised.type is _CliError:
        lines = [ln for ln in message.strip().splitlines() if not ln.startswith(("usage:", " "))]
        assert len(lines) == 1, f"not one line: {message!r}"
        assert "Traceback" not in message
    assert _hash(files) == before, "a user's file changed"
    assert not [p for p in files.rglob("*") if ".tmp" in p.name], "a temporary file was left"


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("debug", [False, True])
def test_the_command_prints_one_line_and_exits_2_or_a_traceback_with_debug(debug):
    argv = [sys.executable, "-m", "tensoropt", "frontier", "--model", "nosuch", "--cluster", "paper-v100x16"]
    proc = subprocess.run(argv + (["--debug"] if debug else []), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == (1 if debug else 2)
    lines = proc.stderr.strip().splitlines()
    if debug:
        assert "Traceback" in proc.stderr
    else:
        assert len(lines) == 1 and lines[0].startswith("tensoropt frontier: ") and "nosuch" in lines[0]
