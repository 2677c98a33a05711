"""Mutation check: does the test suite fail when the library is wrong?

Each mutation is one line of library code changed (an exact text replaced, found exactly
once in its file). For each, a temporary copy of the repository gets the change and runs
the tests named for it (non-MPI tests only, to stay fast); the mutation is ``caught`` when
they fail, ``SURVIVED`` when they pass. The unmutated copy runs every named test first:
if that fails, nothing is measured. The five mutations of issue 19 come first.

Usage::

    python -m tensoropt.bench mutants [--only NAME ...] [--list]

Prints one row per mutation: name, file, tests, caught|SURVIVED, seconds; exits 1 when
a mutation survives or the baseline fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Mutation", "MUTATIONS", "apply_mutation", "run_tests", "main"]

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutation:
    """One line of library code changed.

    Attributes:
        name: a short name for the table.
        path: the file, relative to the repository root.
        old: text found exactly once in the file.
        new: what replaces it.
        tests: pytest arguments (files, ``-k`` filters) that must fail on it.
    """

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


_EDGES = ("tests/search/test_edge_costs_by_hand.py",)
_COSTS = ("tests/search/test_search_costs.py",)
_LIMIT = ("tests/search/test_memory_limit_default.py",)
_LSTM = ("tests/models/test_models_reference_rnn.py", "-k", "cell")
_OPT = ("tests/api/test_optimizers_match_tf.py",)
_DROPOUT = ("tests/api/test_dropout.py",)

MUTATIONS: tuple[Mutation, ...] = (
    # the five of issue 19
    Mutation("edge cost drops backward", "tensoropt/costs/_edge_tables.py",
             "time = forward + np.asarray(backward, dtype=np.float64).reshape(nv, nu).T if grad else forward",
             "time = forward", _EDGES),
    Mutation("plan JSON loses its edges", "tensoropt/plan.py",
             "edges=tuple(edges), notes=d.get", "edges=(), notes=d.get", ("tests/api/test_plan_and_runtime.py",)),
    Mutation("LSTM forget_bias 0 by default", "tensoropt/ops/rnn_ops.py",
             "forget_bias: float = 1.0, name", "forget_bias: float = 0.0, name", _LSTM),
    Mutation("memory limit = memory / 1.0", "tensoropt/search/strategy.py",
             "SAFETY_MARGIN = 1.1", "SAFETY_MARGIN = 1.0", _LIMIT),
    Mutation("Momentum is Nesterov by default", "tensoropt/train.py",
             "use_nesterov: bool = False", "use_nesterov: bool = True", _OPT),
    # costs
    Mutation("shared copy saves no memory", "tensoropt/costs/_edge_tables.py",
             "memory[:, :, 0] = np.where(shared, src_free, 0.0)", "memory[:, :, 0] = 0.0", _EDGES),
    Mutation("reuse re-run costs nothing", "tensoropt/costs/_edge_tables.py",
             "times[:, :, 1] = (time + forward) + rerun_s[None, :]", "times[:, :, 1] = time", _EDGES),
    Mutation("pinned producer may drop its copy", "tensoropt/costs/model.py",
             "keep_consumer=not no_keep_consumer)", "keep_consumer=True)", _EDGES),
    Mutation("no optimizer slots", "tensoropt/costs/model.py",
             "self.slots = max((s.optimizer.slots_per_variable", "self.slots = 0 * max((s.optimizer.slots_per_variable",
             _COSTS),
    Mutation("allreduce priced as one ring pass", "tensoropt/costs/collective_times.py",
             '(2 if collective == "allreduce" else 1) * (group_size - 1)', "1 * (group_size - 1)", _COSTS),
    Mutation("keep_producer frees the producer's bytes", "reschedule/_reuse.py",
             'ReuseOption("keep_producer", -dst_bytes, fwd_time)', 'ReuseOption("keep_producer", -src_bytes, fwd_time)',
             _EDGES),
    Mutation("keep_consumer frees the consumer's bytes", "reschedule/_reuse.py",
             'ReuseOption("keep_consumer", -src_bytes, rev_time)', 'ReuseOption("keep_consumer", -dst_bytes, rev_time)',
             _EDGES),
    Mutation("profiler CLI prints measured as cached", "tensoropt/costs/profiler/__main__.py",
             "{summary.cached} from the cache", "{summary.measured} from the cache",
             ("tests/costs/test_profiler_cli.py",)),
    # search
    Mutation("plan pricing drops edge memory", "tensoropt/search/driver.py",
             "memory += alt.memory_bytes", "memory += 0.0", _COSTS),
    Mutation("data parallel replicates everything", "tensoropt/search/driver.py",
             "wanted = Config((n,), (dim,)) if dim is not None else None", "wanted = None", _COSTS),
    Mutation("a plan at the limit does not fit", "tensoropt/search/strategy.py",
             "fits = sum(1 for m, _ in plans.points if m <= limit)", "fits = sum(1 for m, _ in plans.points if m < limit)",
             _LIMIT),
    Mutation("profiling rows ignore the limit", "tensoropt/search/strategy.py",
             "fastest_fitting(frontier, limit, checked), frontier",
             'fastest_fitting(frontier, float("inf"), checked), frontier', _LIMIT),
    # execution
    Mutation("fused LSTM: sigmoid for tanh(j)", "tensoropt/ops/rnn_ops.py",
             "tf.sigmoid(i) * tf.tanh(j)", "tf.sigmoid(i) * tf.sigmoid(j)", _LSTM),
    Mutation("LSTMCell: h = sigmoid(o) * c", "tensoropt/ops/rnn_ops.py",
             "h = math_ops.multiply(math_ops.sigmoid(o), math_ops.tanh(c))", "h = math_ops.multiply(math_ops.sigmoid(o), c)",
             _LSTM),
    Mutation("dropout scales by 1 / (1 + rate)", "tensoropt/ops/nn_ops.py",
             "tf.cast(keep, x.dtype) / (1.0 - rate)", "tf.cast(keep, x.dtype) / (1.0 + rate)", _DROPOUT),
    Mutation("dropout seed from TensorFlow's op count", "tensoropt/ops/nn_ops.py",
             'else zlib.crc32(op.name.encode()) % (2 ** 31)', "else None", _DROPOUT),
    # API
    Mutation("Momentum's default momentum 0.5", "tensoropt/train.py",
             "momentum: float = 0.9", "momentum: float = 0.5", ("tests/api/test_optimizers_match_tf.py",)),
    Mutation("CLI outputs checked after work", "tensoropt/cli/main.py",
             "        check_outputs(args)\n", "", ("tests/validation/test_bad_inputs.py", "-k", "cli")),
    Mutation("placeholder dims truncated by int()", "tensoropt/ops/source_ops.py",
             "if d is not None and not (isinstance(d, numbers.Integral)", "if False and not (isinstance(d, numbers.Integral)",
             ("tests/validation/test_bad_inputs.py", "-k", "placeholder or variable")),
)


def apply_mutation(root: Path, mutation: Mutation) -> None:
    """Changes ``mutation.old`` to ``mutation.new`` in ``root / mutation.path``.

    Raises:
        ValueError: when the text is not found exactly once (the library changed: update
            the mutation).
    """
    path = root / mutation.path
    text = path.read_text()
    count = text.count(mutation.old)
    if count != 1:
        raise ValueError(f"mutation {mutation.name!r}: {mutation.old!r} occurs {count} times in {mutation.path}, "
                         "not once; update tensoropt/bench/mutants.py to the library's current text")
    path.write_text(text.replace(mutation.old, mutation.new))


def _copy_repo(dest: Path) -> None:
    """The repository's tracked and untracked (not ignored) files, with a link to .venv."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def run_tests(root: Path, tests: tuple[str, ...], timeout_s: float = 900) -> tuple[bool, float]:
    """Runs ``pytest tests`` in ``root`` with ``root`` first on the path; (passed, seconds)."""
    env = dict(os.environ, PYTHONPATH=str(root), TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("CI", None)
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not mpi", *tests]
    try:
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s)
        passed = proc.returncode == 0
    except subprocess.TimeoutExpired:
        passed = False
    return passed, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench mutants", description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="mutation names to run (default all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.only and len(chosen) != len(args.only):
        known = ", ".join(repr(m.name) for m in MUTATIONS)
        raise ValueError(f"--only: unknown mutation name(s) among {args.only}; known: {known}")
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.path}: {m.old!r} -> {m.new!r}")
        return 0
    with tempfile.TemporaryDirectory(prefix="tensoropt-mutants-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        _copy_repo(root)
        all_tests = tuple(dict.fromkeys(t for m in chosen for t in _files(m.tests)))
        ok, seconds = run_tests(root, all_tests)
        print(f"baseline (no mutation): {len(all_tests)} test files {'pass' if ok else 'FAIL'} in {seconds:.0f} s")
        if not ok:
            return 1
        print(f"{'mutation':<42}{'file':<38}{'tests':<48}{'result':<10}{'s':>6}")
        survived = 0
        for m in chosen:
            original = (root / m.path).read_text()
            apply_mutation(root, m)
            try:
                passed, seconds = run_tests(root, m.tests)
            finally:
                (root / m.path).write_text(original)
            survived += passed
            print(f"{m.name:<42}{m.path:<38}{' '.join(m.tests)[-47:]:<48}{'SURVIVED' if passed else 'caught':<10}"
                  f"{seconds:>6.0f}", flush=True)
        print(f"\n{len(chosen)} mutations: {len(chosen) - survived} caught, {survived} survived")
        return 1 if survived else 0


def _files(tests: tuple[str, ...]) -> list[str]:
    """The test files among pytest arguments (``-k`` filters dropped)."""
    out, skip = [], False
    for t in tests:
        if skip:
            skip = False
        elif t == "-k":
            skip = True
        else:
            out.append(t)
    return out
