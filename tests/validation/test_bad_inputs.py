"""Bad inputs, one table: every mistake is stopped at the door, named, in one line (issue 20).

Each case is one plausible user mistake, across the API, the files TensorOpt reads and
writes, and the ``tensoropt`` command. Every case asserts the error type, that the
message names the offending thing (the argument or option, its value, the file), and
that the user's directory is byte for byte as it was: no file changed, none left
half-written, no temporary file behind. CLI cases run ``cli.main(argv)`` in-process,
with every search and measurement replaced by a tripwire (a bad input must be refused
before any of them); two run the real command in a subprocess for the one line on
stderr and exit status 2.

``python tests/validation/test_bad_inputs.py`` prints the table of cases.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

import tensoropt as to
from tensoropt import cli, models
from tensoropt.cluster import get_cluster
from tensoropt.cluster.calibration import CalibrationProfile
from tensoropt.cluster.devices import Cluster
from tensoropt.costs.profiler._cache import ProfileCache
from tensoropt.plan import Plan
from tensoropt.checkpoint import CheckpointError
from tensoropt.validation import UsageError

ROOT = Path(__file__).resolve().parents[2]
MLP = ["--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16"]


@dataclass(frozen=True)
class Case:
    """One mistake: ``call(d)`` (``d``: the user's directory) must raise ``error`` whose
    message contains every string of ``names``."""

    id: str
    what: str
    call: Callable[[Path], Any]
    error: type
    names: tuple[str, ...]


@dataclass(frozen=True)
class CliCase:
    """One mistake on the command line: ``argv(d)`` must exit 2 with one line on stderr,
    ``tensoropt <command>: ...``, containing every string of ``names``."""

    id: str
    what: str
    argv: Callable[[Path], list[str]]
    names: tuple[str, ...]


# -- the user's directory ----------------------------------------------------------------------

def _mlp() -> Any:
    to.reset_default_graph()
    models.build("mlp", size="tiny")
    return to.get_default_graph()


@pytest.fixture(scope="module")
def plans() -> dict[int, dict]:
    """The mlp's plans (JSON form) for 1 and 4 devices, searched once."""
    out = {}
    for n in (1, 4):
        _mlp()
        out[n] = to.find_strategy(cluster="paper-v100x16", parallelism=n).to_dict()
    to.reset_default_graph()
    return out


def _edited(plan: dict, edit: Callable[[dict], None]) -> dict:
    d = json.loads(json.dumps(plan))
    edit(d)
    return d


def _set_mesh(op: str, mesh: list[int]) -> Callable[[dict], None]:
    def edit(d: dict) -> None:
        d["ops"][op]["mesh"] = mesh
    return edit


def _ghost_op(d: dict) -> None:
    d["ops"]["ghost/MatMul"] = {"mesh": [1], "dim_axes": {}}


def _ghost_edge(d: dict) -> None:
    d["edges"].append(dict(d["edges"][0], input=7))


@pytest.fixture
def user_dir(tmp_path: Path, plans: dict[int, dict]) -> Path:
    """A directory of the user's files, good and bad, which no failed call may change."""
    d = tmp_path / "user"
    d.mkdir()
    files = {
        "plan4.json": plans[4], "plan1.json": plans[1],
        "plan_mesh.json": _edited(plans[4], _set_mesh("fc0/kernel", [2])),
        "plan_mesh22.json": _edited(plans[4], _set_mesh("x", [2, 2])),
        "plan_parallelism.json": _edited(plans[4], lambda p: p.update(parallelism=2)),
        "plan_field.json": _edited(plans[4], lambda p: p.update(device_count=4)),
        "plan_version.json": _edited(plans[4], lambda p: p.update(format_version=7)),
        "plan_ghost_op.json": _edited(plans[1], _ghost_op),
        "plan_ghost_edge.json": _edited(plans[1], _ghost_edge),
        "cluster_bad.json": dict(get_cluster("paper-v100x16").to_dict(), machines="two"),
        "profile_version.json": {"format_version": 99},
        "cache_bad.json": {"format": "tensoropt.compute_profile", "version": 1, "entries": {"k": -1}},
    }
    for name, data in files.items():
        (d / name).write_text(json.dumps(data))
    (d / "plan_truncated.json").write_text(json.dumps(plans[4])[:100])
    (d / "cluster_broken.json").write_text("{name: ")
    (d / "existing.png").write_bytes(b"the user's picture")
    (d / "outdir").mkdir()
    (d / "a_file").write_text("not a directory")
    (d / "broken_ckpt").mkdir()
    (d / "broken_ckpt" / "manifest.json").write_text("{broken")
    return d


def _snapshot(d: Path) -> dict[str, str]:
    """Every path under ``d`` -> its content's hash ("dir" for a directory)."""
    return {str(p.relative_to(d)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*"))}


# -- the API -----------------------------------------------------------------------------------

def _with_mlp(call: Callable[[], Any]) -> Callable[[Path], Any]:
    def run(d: Path) -> Any:
        _mlp()
        return call()
    return run


def _find(**kwargs) -> Callable[[Path], Any]:
    return _with_mlp(lambda: to.find_strategy(cluster=kwargs.pop("cluster", "paper-v100x16"), **kwargs))


def _build_with_file(name: str, graph: str = "mlp") -> Callable[[Path], Any]:
    """Loads the plan file ``name``, records ``graph`` (tiny) and builds it."""
    def run(d: Path) -> Any:
        plan = Plan.load(str(d / name))
        to.reset_default_graph()
        models.build(graph, size="tiny")
        return to.build_execution_graph(plan=plan)
    return run


def _placeholder(shape) -> Callable[[Path], Any]:
    return lambda d: to.placeholder(to.float32, shape, name="x")


def _run_before_build(d: Path) -> Any:
    from tensoropt import runtime  # noqa: PLC0415

    _mlp()
    built, runtime._runtime.session = runtime._runtime.session, None   # as in a fresh process
    try:
        return to.run(to.get_default_graph().operations[-1].outputs[0])
    finally:
        runtime._runtime.session = built


def _run_with_feed_list(d: Path) -> Any:
    _build_with_file("plan1.json")(d)
    return to.run(to.get_default_graph().operations[-1].outputs[0], feed_dict=[1, 2])


def _built(call: Callable[..., Any]) -> Callable[[Path], Any]:
    """Builds the tiny MLP on one process (plan1.json), then ``call()`` or ``call(d)``."""
    def run(d: Path) -> Any:
        _build_with_file("plan1.json")(d)
        return call(d) if call.__code__.co_argcount else call()
    return run


def _non_scalar_loss(d: Path) -> Any:
    x = to.placeholder(to.float32, [8, 4], name="x")
    w = to.get_variable("w", [4, 2])
    return to.train.GradientDescentOptimizer(0.1).minimize(to.matmul(x, w))


API_CASES = [
    Case("placeholder-float-dim", "a placeholder dimension 2.5 (TF rejects it; it was truncated to 2)",
         _placeholder([2.5, 4]), ValueError, ("'x'", "2.5", "int")),
    Case("placeholder-str-dim", "a placeholder dimension given as text",
         _placeholder(["8", 4]), ValueError, ("'x'", "'8'")),
    Case("placeholder-float-integral-dim", "a placeholder dimension 8.0 (a float, as TF refuses)",
         _placeholder([8.0, 4]), ValueError, ("'x'", "8.0")),
    Case("placeholder-no-shape", "a placeholder without a shape", _placeholder(None), ValueError,
         ("'x'", "shape is None")),
    Case("placeholder-zero-dim", "a placeholder dimension 0", _placeholder([0, 4]), ValueError,
         ("'x'", "<= 0")),
    Case("variable-float-dim", "a variable dimension 4.5",
         lambda d: to.get_variable("w", [4.5, 2]), ValueError, ("'w'", "4.5")),
    Case("lr-text", "a learning rate '1e-3' as PyYAML reads it",
         lambda d: to.train.AdamOptimizer("1e-3"), ValueError, ("learning_rate='1e-3'", "float(")),
    Case("lr-negative", "a negative learning rate",
         lambda d: to.train.GradientDescentOptimizer(-0.1), ValueError, ("learning_rate=-0.1",)),
    Case("lr-nan", "a NaN learning rate",
         lambda d: to.train.MomentumOptimizer(math.nan), ValueError, ("learning_rate=nan",)),
    Case("lr-none", "no learning rate",
         lambda d: to.train.GradientDescentOptimizer(None), ValueError, ("learning_rate=None",)),
    Case("minimize-non-scalar", "minimize a loss that is not a scalar", _non_scalar_loss, ValueError,
         ("shape (8, 2)", "reduce_mean")),
    Case("parallelism-zero", "find_strategy(parallelism=0) (planned for one device)",
         _find(parallelism=0), ValueError, ("find_strategy", "parallelism=0")),
    Case("parallelism-float", "find_strategy(parallelism=2.5)", _find(parallelism=2.5), ValueError,
         ("parallelism=2.5",)),
    Case("parallelism-text", "find_strategy(parallelism='4')", _find(parallelism="4"), ValueError,
         ("parallelism='4'",)),
    Case("memory-limit-text", "find_strategy(memory_limit='16GB') (failed in float())",
         _find(memory_limit="16GB"), ValueError, ("memory_limit='16GB'", "2**30")),
    Case("memory-limit-negative", "find_strategy(memory_limit=-1)", _find(memory_limit=-1), ValueError,
         ("memory_limit=-1",)),
    Case("memory-limit-inf", "find_strategy(memory_limit=inf)", _find(memory_limit=math.inf), ValueError,
         ("memory_limit=inf",)),
    Case("option-unknown", "find_strategy(option='fastest')", _find(option="fastest"), ValueError,
         ("option 'fastest'", "mini_time")),
    Case("parallelisms-zero", "profiling over device counts [1, 0]",
         _find(option="profiling", parallelisms=[1, 0]), ValueError, ("parallelisms[1]=0",)),
    Case("parallelisms-text", "profiling over device counts '1,2' (text)",
         _find(option="profiling", parallelisms="1,2"), ValueError, ("parallelisms='1,2'",)),
    Case("threads-zero", "find_strategy(threads=0)", _find(threads=0), ValueError, ("threads", "0")),
    Case("epsilon-above-one", "find_strategy(epsilon=1.5)", _find(epsilon=1.5), ValueError,
         ("epsilon", "1.5")),
    Case("relative-without-epsilon", "find_strategy(relative=True) with no epsilon",
         _find(relative=True), ValueError, ("relative=True", "epsilon")),
    Case("relative-text", "find_strategy(epsilon=0.05, relative='yes')",
         _find(epsilon=0.05, relative="yes"), ValueError, ("relative", "'yes'")),
    Case("cost-model-unknown", "find_strategy(cost_model='fast')", _find(cost_model="fast"), ValueError,
         ("cost_model='fast'", "analytical")),
    Case("cluster-unknown", "find_strategy(cluster='v100')", _find(cluster="v100"), ValueError,
         ("'v100'", "paper-v100x16")),
    Case("check-peak-text", "find_strategy(check_peak='yes')", _find(check_peak="yes"), ValueError,
         ("check_peak='yes'",)),
    Case("empty-graph", "find_strategy before building a model",
         lambda d: to.find_strategy(cluster="paper-v100x16"), ValueError, ("empty",)),
    Case("build-plan-path", "build_execution_graph(plan='plan.json') (was AttributeError)",
         lambda d: to.build_execution_graph(plan=str(d / "plan1.json")), ValueError,
         ("plan=", "plan1.json", "Plan.load")),
    Case("build-plan-dict", "build_execution_graph(plan=<the JSON's dict>)",
         lambda d: to.build_execution_graph(plan=json.loads((d / "plan1.json").read_text())), ValueError,
         ("dict", "Plan.load")),
    Case("build-engine", "build_execution_graph(engine='pytorch')",
         lambda d: to.build_execution_graph(engine="pytorch"), ValueError, ("'pytorch'", "tensorflow")),
    Case("build-other-graph", "a plan of the mlp built on the cnn",
         _build_with_file("plan1.json", graph="cnn"), ValueError, ("does not configure",)),
    Case("build-wrong-size", "a 4-device plan in a 1-process job",
         _build_with_file("plan4.json"), ValueError, ("4 device(s)", "mpirun")),
    Case("build-ghost-op", "a hand-edited plan configuring an op the graph lacks",
         _build_with_file("plan_ghost_op.json"), ValueError, ("ghost/MatMul",)),
    Case("build-ghost-edge", "a hand-edited plan with an edge into an input the graph lacks",
         _build_with_file("plan_ghost_edge.json"), ValueError, ("edge", "no input 7")),
    Case("run-before-build", "to.run before build_execution_graph", _run_before_build, RuntimeError,
         ("build_execution_graph",)),
    Case("run-feed-list", "to.run(..., feed_dict=[...]) (a list, not a dict)", _run_with_feed_list, ValueError,
         ("feed_dict", "list")),
    Case("seed-float", "set_random_seed(4.7) (was truncated to 4)", lambda d: to.set_random_seed(4.7), ValueError,
         ("seed=4.7",)),
    Case("seed-text", "set_random_seed('42')", lambda d: to.set_random_seed("42"), ValueError, ("seed='42'",)),
    Case("matmul-shapes", "matmul of [2, 3] by [4, 5]", lambda d: to.matmul(
        to.placeholder(to.float32, [2, 3], name="a"), to.placeholder(to.float32, [4, 5], name="b")),
         ValueError, ("3", "4")),
    Case("conv2d-padding", "conv2d with padding='FOO'", lambda d: to.nn.conv2d(
        to.placeholder(to.float32, [2, 8, 8, 3], name="im"), to.get_variable("k", [3, 3, 3, 4]), strides=1,
        padding="FOO"), ValueError, ("FOO",)),
    Case("momentum-nan", "MomentumOptimizer(momentum=nan)",
         lambda d: to.train.MomentumOptimizer(0.1, momentum=float("nan")), ValueError, ("momentum",)),
    Case("nesterov-text", "MomentumOptimizer(use_nesterov='yes')",
         lambda d: to.train.MomentumOptimizer(0.1, use_nesterov="yes"), ValueError, ("use_nesterov",)),
    Case("input-slice-not-placeholder", "to.input_slice of the loss, not a placeholder",
         _built(lambda: to.input_slice(to.get_default_graph().operations[-1].outputs[0])), ValueError,
         ("input_slice", "placeholder")),
    Case("saver-max-to-keep", "Saver(max_to_keep=-1)", lambda d: to.train.Saver(max_to_keep=-1), ValueError,
         ("max_to_keep", "-1")),
    Case("saver-step-text", "Saver.save(global_step='7')",
         _built(lambda d: to.train.Saver().save(str(d / "ckpt" / "m"), global_step="7")), ValueError,
         ("global_step", "'7'")),
    Case("restore-missing", "Saver.restore of a checkpoint that does not exist",
         _built(lambda d: to.train.Saver().restore(str(d / "ckpt-9"))), CheckpointError, ("ckpt-9", "does not exist")),
    Case("restore-corrupt", "Saver.restore of a checkpoint whose manifest is not JSON",
         _built(lambda d: to.train.Saver().restore(str(d / "broken_ckpt"))), CheckpointError,
         ("manifest.json",)),
]

# -- files -------------------------------------------------------------------------------------

def _load(name: str) -> Callable[[Path], Any]:
    return lambda d: Plan.load(str(d / name))


def _profile() -> CalibrationProfile:
    return CalibrationProfile(world_size=1, hostnames=["h"], machines=1, devices_per_machine=1,
                              measurements=[], peak_flops=1e9, memory_bytes_per_device=2.0**30)


FILE_CASES = [
    Case("plan-mesh-mismatch", "a hand-edited plan: an op's mesh [2] in a 4-device plan",
         _load("plan_mesh.json"), ValueError, ("plan_mesh.json", "fc0/kernel", "mesh [2]", "parallelism is 4")),
    Case("plan-mesh-reshaped", "a hand-edited plan: an op's mesh [2, 2] where its edges say [4]",
         _load("plan_mesh22.json"), ValueError, ("plan_mesh22.json", "'x'", "[2, 2]")),
    Case("plan-parallelism-edited", "a hand-edited plan: parallelism 2, meshes of 4",
         _load("plan_parallelism.json"), ValueError, ("plan_parallelism.json", "parallelism is 2")),
    Case("plan-unknown-field", "a plan with a field TensorOpt does not know",
         _load("plan_field.json"), ValueError, ("plan_field.json", "device_count")),
    Case("plan-version", "a plan of another format version", _load("plan_version.json"), ValueError,
         ("plan_version.json", "format_version 7")),
    Case("plan-truncated", "a truncated plan file", _load("plan_truncated.json"), ValueError,
         ("plan_truncated.json", "not valid JSON")),
    Case("plan-missing", "a plan file that does not exist", _load("nope.json"), ValueError,
         ("nope.json", "cannot be read")),
    Case("plan-is-dir", "Plan.load of a directory", _load("outdir"), ValueError, ("outdir", "cannot be read")),
    Case("plan-save-to-dir", "Plan.save onto a directory (nothing written, no temp file left)",
         lambda d: Plan.from_dict(json.loads((d / "plan4.json").read_text())).save(str(d / "outdir")),
         IsADirectoryError, ("outdir",)),
    Case("cluster-bad-field", "a cluster file whose machines is 'two'",
         lambda d: Cluster.from_file(d / "cluster_bad.json"), ValueError, ("cluster_bad.json", "machines")),
    Case("cluster-not-json", "a cluster file that is not JSON",
         lambda d: get_cluster(str(d / "cluster_broken.json")), ValueError, ("cluster_broken.json",)),
    Case("profile-version", "a calibration profile of another version",
         lambda d: CalibrationProfile.load(d / "profile_version.json"), ValueError,
         ("profile_version.json", "99", "tensoropt calibrate")),
    Case("profile-missing-for-local", "cluster 'local' without a calibration profile",
         lambda d: get_cluster("local", profile=d / "none.json"), ValueError, ("none.json", "calibrate")),
    Case("profile-save-to-dir", "a calibration profile saved onto a directory (left a stray .tmp)",
         lambda d: _profile().save(d / "outdir"), IsADirectoryError, ("outdir",)),
    Case("cache-negative-time", "a compute-time cache with a negative entry",
         lambda d: ProfileCache(d / "cache_bad.json"), ValueError, ("cache_bad.json", "'k'")),
]

# -- the command line --------------------------------------------------------------------------

CLI_CASES = [
    CliCase("cli-models-size", "tensoropt models --size large (printed [])",
            lambda d: ["models", "--size", "large"], ("tensoropt models:", "--size", "'large'", "tiny")),
    CliCase("cli-profile-memory-negative", "tensoropt profile --memory-limit -1 (a table of OOM rows)",
            lambda d: ["profile", *MLP, "--devices", "1", "--memory-limit", "-1"],
            ("tensoropt profile:", "--memory-limit", "'-1'")),
    CliCase("cli-profile-devices-x", "tensoropt profile --devices 1,x (a traceback about int())",
            lambda d: ["profile", *MLP, "--devices", "1,x"], ("tensoropt profile:", "--devices", "'x'")),
    CliCase("cli-profile-devices-zero", "tensoropt profile --devices 0,2",
            lambda d: ["profile", *MLP, "--devices", "0,2"], ("--devices", "0")),
    CliCase("cli-frontier-plot-missing-dir", "--plot into a missing directory (found after the search)",
            lambda d: ["frontier", *MLP, "--plot", str(d / "no" / "f.png")],
            ("tensoropt frontier:", "--plot", "f.png", "does not exist")),
    CliCase("cli-frontier-plot-dir", "--plot naming a directory",
            lambda d: ["frontier", *MLP, "--plot", str(d / "outdir")], ("--plot", "outdir", "directory")),
    CliCase("cli-compare-plot-missing-dir", "compare --plot into a missing directory",
            lambda d: ["compare", *MLP, "--devices", "4", "--plot", str(d / "no" / "c.png")],
            ("tensoropt compare:", "--plot", "c.png")),
    CliCase("cli-plan-out-dir", "tensoropt plan --out naming a directory",
            lambda d: ["plan", *MLP, "--devices", "4", "--out", str(d / "outdir")],
            ("tensoropt plan:", "--out", "outdir")),
    CliCase("cli-plan-out-missing-dir", "tensoropt plan --out into a missing directory",
            lambda d: ["plan", *MLP, "--devices", "4", "--out", str(d / "no" / "p.json")],
            ("--out", "p.json", "does not exist")),
    CliCase("cli-plan-memory-text", "tensoropt plan --memory-limit 16GB",
            lambda d: ["plan", *MLP, "--devices", "4", "--out", str(d / "p.json"), "--memory-limit", "16GB"],
            ("--memory-limit", "'16GB'", "16e9")),
    CliCase("cli-simulate-trace-missing-dir", "simulate --trace into a missing directory",
            lambda d: ["simulate", *MLP, "--plan", str(d / "plan4.json"), "--trace", str(d / "no" / "t.json")],
            ("--trace", "t.json")),
    CliCase("cli-frontier-trace-dir-file", "frontier --trace-dir naming a file",
            lambda d: ["frontier", *MLP, "--simulate", "2", "--trace-dir", str(d / "a_file")],
            ("--trace-dir", "a_file", "not a directory")),
    CliCase("cli-calibrate-out-dir", "calibrate --out naming a directory (failed after measuring, left a temp file)",
            lambda d: ["calibrate", "--out", str(d / "outdir")], ("tensoropt calibrate:", "--out", "outdir")),
    CliCase("cli-calibrate-repeats-zero", "calibrate --repeats 0",
            lambda d: ["calibrate", "--out", str(d / "p.json"), "--repeats", "0"], ("--repeats", "'0'")),
    CliCase("cli-model-unknown", "frontier --model resnet (not in the zoo)",
            lambda d: ["frontier", "--model", "resnet", "--cluster", "paper-v100x16"],
            ("--model", "'resnet'", "resnet101")),
    CliCase("cli-cluster-unknown", "frontier --cluster v100",
            lambda d: ["frontier", "--model", "mlp", "--size", "tiny", "--cluster", "v100"],
            ("tensoropt frontier:", "'v100'", "paper-v100x16")),
    CliCase("cli-cluster-file-broken", "frontier --cluster with a broken cluster file",
            lambda d: ["frontier", "--model", "mlp", "--size", "tiny", "--cluster", str(d / "cluster_broken.json")],
            ("cluster_broken.json",)),
    CliCase("cli-devices-zero", "frontier --devices 0", lambda d: ["frontier", *MLP, "--devices", "0"],
            ("--devices", "'0'")),
    CliCase("cli-devices-text", "frontier --devices four", lambda d: ["frontier", *MLP, "--devices", "four"],
            ("--devices", "'four'")),
    CliCase("cli-epsilon-two", "frontier --epsilon 2", lambda d: ["frontier", *MLP, "--epsilon", "2"],
            ("tensoropt frontier:", "epsilon", "2")),
    CliCase("cli-threads-zero", "frontier --threads 0", lambda d: ["frontier", *MLP, "--threads", "0"],
            ("--threads", "'0'")),
    CliCase("cli-simulate-budget-zero", "frontier --simulate 0", lambda d: ["frontier", *MLP, "--simulate", "0"],
            ("--simulate", "'0'")),
    CliCase("cli-compare-budget-negative", "compare --budget-s -5",
            lambda d: ["compare", *MLP, "--devices", "4", "--budget-s", "-5"], ("--budget-s", "'-5'")),
    CliCase("cli-simulate-plan-missing", "simulate --plan of a missing file",
            lambda d: ["simulate", *MLP, "--plan", str(d / "nope.json")], ("tensoropt simulate:", "nope.json")),
    CliCase("cli-simulate-plan-mesh", "simulate a hand-edited plan whose op mesh does not match",
            lambda d: ["simulate", *MLP, "--plan", str(d / "plan_mesh.json")],
            ("plan_mesh.json", "fc0/kernel", "mesh [2]")),
    CliCase("cli-simulate-devices", "simulate a 4-device plan on 2 devices",
            lambda d: ["simulate", *MLP, "--devices", "2", "--plan", str(d / "plan4.json")], ("--devices 4",)),
    CliCase("cli-simulate-order", "simulate --collective-order fastest",
            lambda d: ["simulate", *MLP, "--plan", str(d / "plan4.json"), "--collective-order", "fastest"],
            ("'fastest'", "chained")),
    CliCase("cli-export-missing", "export-checkpoint of a missing checkpoint",
            lambda d: ["export-checkpoint", str(d / "ckpt-9"), str(d / "tf" / "m")],
            ("tensoropt export-checkpoint:", "ckpt-9")),
    CliCase("cli-command-unknown", "tensoropt frobnicate", lambda d: ["frobnicate"], ("tensoropt:", "'frobnicate'")),
    CliCase("cli-missing-required", "frontier without --cluster", lambda d: ["frontier", "--model", "mlp"],
            ("tensoropt frontier:", "--cluster")),
]


# -- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", API_CASES + FILE_CASES, ids=lambda c: c.id)
def test_bad_input_is_refused_and_named(case: Case, user_dir: Path):
    before = _snapshot(user_dir)
    with pytest.raises(case.error) as info:
        case.call(user_dir)
    message = str(info.value)
    for name in case.names:
        assert name in message, f"{case.id}: {name!r} not in the message {message!r}"
    assert _snapshot(user_dir) == before, f"{case.id} changed or left files in the user's directory"


@pytest.fixture
def no_search(monkeypatch):
    """Every search, simulation and measurement the commands start fails loudly: a bad
    input must be refused before any of them."""
    def tripwire(*args, **kwargs):
        raise AssertionError("the command started its work before checking its inputs")

    import tensoropt.execution.calibration_job as calibration_job  # noqa: PLC0415
    import tensoropt.simulator.commands as commands  # noqa: PLC0415

    cli_main = sys.modules["tensoropt.cli.main"]   # the module; tensoropt.cli.main is the function

    for module, name in ((cli_main, "frontier_for"), (cli_main, "compare"), (cli_main, "profile_parallelisms"),
                         (commands, "choose_plan"), (commands, "simulate_plan"), (calibration_job, "calibrate")):
        monkeypatch.setattr(module, name, tripwire)


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli.main(argv)
    return status, err.getvalue()


@pytest.mark.parametrize("case", CLI_CASES, ids=lambda c: c.id)
def test_bad_command_line_is_one_line_and_exit_2(case: CliCase, user_dir: Path, no_search):
    before = _snapshot(user_dir)
    argv = case.argv(user_dir)
    status, err = _cli(argv)
    assert status == 2, f"{case.id}: exit {status}, stderr {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tensoropt"), f"{case.id}: not one line: {err!r}"
    command = argv[0] if argv[0] in cli.build_parser()._subparsers._group_actions[0].choices else None
    assert lines[0].startswith(f"tensoropt {command}:" if command else "tensoropt:"), lines[0]
    for name in case.names:
        assert name in lines[0], f"{case.id}: {name!r} not in {lines[0]!r}"
    assert _snapshot(user_dir) == before, f"{case.id} changed or left files in the user's directory"


def test_debug_shows_the_error_itself(user_dir: Path, no_search):
    with pytest.raises(ValueError, match="cannot write --plot"):
        cli.main(["frontier", *MLP, "--plot", str(user_dir / "no" / "f.png"), "--debug"])
    with pytest.raises(UsageError, match="--size"):
        cli.main(["--debug", "models", "--size", "large"])


def test_an_unexpected_error_is_one_line_exit_1(no_search):
    status, err = _cli(["frontier", *MLP])   # the tripwire plays an internal error
    assert status == 1 and len(err.splitlines()) == 1
    assert err.startswith("tensoropt frontier: internal error AssertionError") and "--debug" in err


def test_a_failed_write_keeps_the_users_file(user_dir: Path, plans: dict[int, dict], monkeypatch):
    """Plan.save over an existing file: a failure mid-write leaves the old file whole, and no temp file."""
    target = user_dir / "plan4.json"
    old = target.read_bytes()
    plan = Plan.from_dict(plans[1])
    monkeypatch.setattr(Plan, "to_json", lambda self: (_ for _ in ()).throw(OSError(28, "No space left")))
    before = _snapshot(user_dir)
    with pytest.raises(OSError, match="No space left"):
        plan.save(str(target))
    assert target.read_bytes() == old and _snapshot(user_dir) == before


def _subprocess(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, "-m", "tensoropt", *argv], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def test_the_command_prints_one_line_and_exits_2(tmp_path: Path):
    out = _subprocess("models", "--size", "large")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        "tensoropt models: argument --size: invalid choice: 'large' (choose from 'paper', 'small', 'tiny') "
        "(see tensoropt models --help)"]
    out = _subprocess("plan", *MLP, "--devices", "4", "--out", str(tmp_path / "no" / "p.json"))
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1
    assert out.stderr.startswith("tensoropt plan: cannot write --out") and "Traceback" not in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_debug_in_a_subprocess_shows_the_traceback(tmp_path: Path):
    out = _subprocess("plan", *MLP, "--devices", "4", "--out", str(tmp_path / "no" / "p.json"), "--debug")
    assert out.returncode == 1 and "Traceback (most recent call last)" in out.stderr
    assert "ValueError: cannot write --out" in out.stderr


def test_the_table_has_at_least_40_distinct_cases():
    ids = [c.id for c in API_CASES + FILE_CASES + CLI_CASES]
    assert len(ids) >= 40 and len(set(ids)) == len(ids)


def cases_table() -> str:
    """The cases, one per line: id, where, what."""
    rows = [(c.id, "API", c.what) for c in API_CASES] + [(c.id, "file", c.what) for c in FILE_CASES] + \
        [(c.id, "CLI", c.what) for c in CLI_CASES]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{i:>3}  {k:<4}  {id_:<{width}}  {what}" for i, (id_, k, what) in enumerate(rows, 1))


if __name__ == "__main__":
    print(cases_table())


@pytest.mark.parametrize("value, bound, message", [
    (float("inf"), "", "x=inf; give a finite number$"),
    (-1.0, ">= 0", "x=-1.0; give a finite number >= 0$"),
    (0, "> 0", "x=0; give a finite number > 0$"),
    (True, "", "x=True; give a finite number$"),
    ("1e-3", ">= 0", "x='1e-3'; give a finite number >= 0$"),
])
def test_check_finite_names_the_value_and_the_bound(value, bound, message):
    from tensoropt.validation import check_finite
    with pytest.raises(ValueError, match="^f: " + message.replace("(", r"\(")):
        check_finite("f", "x", value, bound)


def test_check_finite_and_check_flag_pass_good_values():
    from tensoropt.validation import check_finite, check_flag
    assert check_finite("f", "x", -2, "") == -2.0 and check_finite("f", "x", 0, ">= 0") == 0.0
    assert check_flag("f", "x", False) is False
    with pytest.raises(ValueError, match="^f: x=1; give True or False$"):
        check_flag("f", "x", 1)
