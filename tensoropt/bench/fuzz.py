"""Parity fuzz: generated models under many plans, each against one process.

    python -m tensoropt.bench fuzz --models 200 [--ranks 2,4] [--plans 10] [--plan-timeout 180]

For each device count in ``--ranks``, one ``mpirun`` job (``tensoropt.bench.fuzz_worker``)
runs every generated model (``tensoropt.models.generated``) under its plans: frontier
points up to ``--frontier-cap`` (both ends and the turning point), data parallel, and
sampled plans chosen to cover every re-scheduling step kind and reuse choice. Each plan's
initial parameters, losses and final parameters are compared with a single-process run
(rtol 1e-4), and its collective counts with the plan's.

This process watches each job. A plan that makes no progress within ``--plan-timeout``
seconds is a hang: the job is killed, the plan reported as hung, and a new job resumes
after it. A job that dies is reported as an error at the plan it was running, and
resumed likewise. It prints the models, plans, mismatches, hangs, errors and coverage.

Usage from Python (the test suite does this)::

    report = run_fuzz(range(30), ranks=(2, 4), plans=5)
    report.mismatches, report.hangs, report.errors, report.coverage()
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from reschedule import STEP_KINDS

from tensoropt.bench.fuzz_plans import REUSE_CHOICES
from tensoropt.models.generated import FEATURES

__all__ = ["PlanRun", "FuzzReport", "run_fuzz", "main", "PLAN_STEP_KINDS"]

#: The re-scheduling step kinds the fuzz's coverage requires. The two reductions of
#: ``reschedule.STEP_KINDS`` (allreduce, reducescatter) occur only on the out-edges of a
#: ``partial_out`` op (which leaves its partial sum to them), which sampled plans hold
#: less often; the parity harness trains a reduce-scatter plan of each tiny model.
PLAN_STEP_KINDS = tuple(k for k in STEP_KINDS if k not in ("allreduce", "reducescatter"))


@dataclass(frozen=True)
class PlanRun:
    """One plan of one model on one device count, as the worker reported it.

    Attributes:
        status: "ok", "mismatch" (values or collective counts differ), "hang" (no
            progress within the timeout) or "error" (the job died in it).
        record: the worker's result line (differences, losses, timings), or for a hang or
            an error, where and the end of the job's output.
    """

    seed: int
    ranks: int
    index: int
    label: str
    status: str
    record: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class FuzzReport:
    """What a fuzz run found."""

    runs: tuple[PlanRun, ...]
    models: dict          # seed -> {"description", "features"}
    launches: int
    wall_s: float
    failures: tuple[str, ...] = ()   # jobs that could not get going (no plan to blame)

    def _with(self, status: str) -> list[PlanRun]:
        return [r for r in self.runs if r.status == status]

    @property
    def mismatches(self) -> list[PlanRun]:
        return self._with("mismatch")

    @property
    def hangs(self) -> list[PlanRun]:
        return self._with("hang")

    @property
    def errors(self) -> list[PlanRun]:
        return self._with("error")

    def plans_per_model(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for r in self.runs:
            out[r.seed] = out.get(r.seed, 0) + 1
        return out

    def coverage(self) -> dict[str, set]:
        """Step kinds, reuse choices, plan kinds and model features that ran."""
        feats = set().union(*(set(r.record.get("features", ())) for r in self.runs)) if self.runs else set()
        labels = {"frontier" if r.label.startswith("frontier") else r.label for r in self.runs}
        roles = {r.label.split("(")[1].rstrip(")") for r in self.runs if "(" in r.label}
        return {"step_kinds": {f[5:] for f in feats if f.startswith("step:")},
                "reuse": {f[6:] for f in feats if f.startswith("reuse:")},
                "meshes": {f[5:] for f in feats if f.startswith("mesh:")},
                "plan_kinds": labels | roles,
                "model_features": set().union(*(set(m["features"]) for m in self.models.values()))
                if self.models else set()}


def mpirun_prefix(ranks: int) -> list[str]:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise RuntimeError("mpirun is not installed; run `make setup` (it installs Open MPI)")
    root = ["--allow-run-as-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return [mpirun, *root, "--oversubscribe", "-np", str(ranks)]


def _environment() -> dict:
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OMPI_MCA_rmaps_base_oversubscribe="1",
                OMPI_MCA_mpi_yield_when_idle="1", HOROVOD_CYCLE_TIME=os.environ.get("HOROVOD_CYCLE_TIME", "0.2"),
                TENSOROPT_THREADS=os.environ.get("TENSOROPT_THREADS", "1"))


def _kill(proc: subprocess.Popen) -> None:
    """Ends a job this process started: its process group, politely then not."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: str, chars: int = 3000) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()[-chars:]
    except OSError:
        return ""


def _launch_once(cmd: list[str], out_path: str, log_path: str, plan_timeout_s: float,
                 startup_timeout_s: float, on_line: Callable[[dict], None]) -> tuple[int | None, bool]:
    """Runs one job until it ends or stalls; feeds each new result line to ``on_line``.

    Returns (exit code or None if killed, whether it was killed for a stall).
    """
    offset = os.path.getsize(out_path) if os.path.exists(out_path) else 0
    with open(log_path, "a") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=_environment(),
                                start_new_session=True)
    last_progress, started = time.monotonic(), False
    try:
        while True:
            code = proc.poll()
            if os.path.exists(out_path):
                with open(out_path) as f:
                    f.seek(offset)
                    chunk = f.read()
                complete = chunk[:chunk.rfind("\n") + 1]
                offset += len(complete.encode())
                for line in complete.splitlines():
                    record = json.loads(line)
                    started = started or record["event"] != "launched"
                    last_progress = time.monotonic()
                    on_line(record)
            if code is not None:
                return code, False
            limit = plan_timeout_s if started else plan_timeout_s + startup_timeout_s
            if time.monotonic() - last_progress > limit:
                _kill(proc)
                return None, True
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            _kill(proc)


def _run_ranks(ranks: int, seeds: Sequence[int], args: dict, workdir: str, plan_timeout_s: float,
               progress: Callable[[str], None], runs: list, models: dict) -> tuple[int, list[str]]:
    """All models on one device count, relaunching after hangs and errors."""
    out_path = os.path.join(workdir, f"results_{ranks}.jsonl")
    log_path = os.path.join(workdir, f"job_{ranks}.log")
    after, launches, failures = None, 0, []
    state = {"current": None, "done": False, "progress": False}

    def on_line(record: dict) -> None:
        event = record["event"]
        if event == "model":
            models.setdefault(record["seed"], {"description": record["description"],
                                               "features": record["features"]})
            progress(f"  {ranks} ranks, model {record['seed']}: {record['description']}")
        elif event == "start":
            state["current"] = record
        elif event == "result":
            state["current"], state["progress"] = None, True
            runs.append(PlanRun(record["seed"], ranks, record["index"], record["label"], record["status"], record))
            if record["status"] != "ok":
                progress(f"    MISMATCH plan {record['index']} ({record['label']}): init {record['init_rel']:.2e}, "
                         f"losses {record['loss_rel']:.2e}, params {record['param_rel']:.2e}, "
                         f"collectives match: {record['counts_match']}")
        elif event == "done":
            state["done"] = True

    while True:
        cmd = [*mpirun_prefix(ranks), sys.executable, "-m", "tensoropt.bench.fuzz_worker",
               "--seeds", f"{seeds[0]}:{seeds[-1] + 1}", "--plans", str(args["plans"]),
               "--frontier-cap", str(args["frontier_cap"]), "--steps", str(args["steps"]), "--out", out_path]
        if after is not None:
            cmd += ["--after", after]
        if args.get("stall_at"):
            cmd += ["--stall-at", args["stall_at"]]
        launches += 1
        state.update(current=None, done=False, progress=False)
        code, stalled = _launch_once(cmd, out_path, log_path, plan_timeout_s, args["startup_timeout_s"], on_line)
        if state["done"] and code == 0:
            return launches, failures
        current = state["current"]
        if current is None:
            failures.append(f"{ranks} ranks: the job {'stalled' if stalled else f'exited {code}'} outside any "
                            f"plan; output:\n{_tail(log_path)}")
            if not state["progress"]:
                return launches, failures   # no plan to skip and nothing gained: stop
            after = f"{runs[-1].seed}:{runs[-1].index}"
            continue
        status = "hang" if stalled else "error"
        detail = {"stalled_after_s": plan_timeout_s} if stalled else {"exit_code": code}
        runs.append(PlanRun(current["seed"], ranks, current["index"], current["label"], status,
                            {**current, **detail, "output": _tail(log_path)}))
        progress(f"    {status.upper()} plan {current['index']} ({current['label']}) of model "
                 f"{current['seed']} on {ranks} ranks; resuming after it")
        after = f"{current['seed']}:{current['index']}"


def run_fuzz(seeds: Sequence[int], *, ranks: Sequence[int] = (2, 4), plans: int = 10, frontier_cap: int = 4,
             steps: int = 2, plan_timeout_s: float = 180.0, startup_timeout_s: float = 600.0,
             workdir: str | None = None, progress: Callable[[str], None] = lambda line: None,
             stall_at: str | None = None) -> FuzzReport:
    """Runs the fuzz (one ``mpirun`` job per device count, more only after a hang or error).

    Args:
        seeds: consecutive generated-model seeds, e.g. ``range(30)``.
        ranks: device counts; each model runs under ``plans`` plans on each.
        startup_timeout_s: extra time for a job's start and its first phase (references
            and plan choice for every model), before any plan runs.
        workdir: where the jobs' result lines and output go (default a new temporary dir).
        stall_at: "SEED:INDEX": the worker's last rank stops before that plan, so that the
            watchdog's hang handling can be tested.

    Raises:
        ValueError: for empty or non-consecutive seeds, or a device count < 2.
    """
    seeds = list(seeds)
    if not seeds or seeds != list(range(seeds[0], seeds[0] + len(seeds))) or seeds[0] < 0:
        raise ValueError(f"run_fuzz: seeds must be consecutive non-negative ints, e.g. range(30); got {seeds[:5]}...")
    if any(n < 2 for n in ranks):
        raise ValueError(f"run_fuzz: device counts {tuple(ranks)} must be >= 2")
    workdir = workdir or tempfile.mkdtemp(prefix="tensoropt-fuzz-")
    os.makedirs(workdir, exist_ok=True)
    args = {"plans": plans, "frontier_cap": frontier_cap, "steps": steps, "startup_timeout_s": startup_timeout_s,
            "stall_at": stall_at}
    start = time.monotonic()
    runs: list[PlanRun] = []
    models: dict = {}
    launches, failures = 0, []
    for n in ranks:
        progress(f"{n} ranks: {len(seeds)} models, up to {plans} plans each (results in {workdir})")
        count, failed = _run_ranks(n, seeds, args, workdir, plan_timeout_s, progress, runs, models)
        launches += count
        failures += failed
    return FuzzReport(tuple(runs), models, launches, time.monotonic() - start, tuple(failures))


def _print_report(report: FuzzReport, seeds: Sequence[int], ranks: Sequence[int]) -> None:
    runs = report.runs
    print(f"\nmodels: {len(report.models)} of {len(seeds)} (seeds {seeds[0]}..{seeds[-1]}), "
          f"ranks {', '.join(map(str, ranks))}")
    print(f"plans run: {len(runs)} ({', '.join(f'{n} ranks: {sum(r.ranks == n for r in runs)}' for n in ranks)}), "
          f"ok {sum(r.status == 'ok' for r in runs)}")
    print(f"mismatches: {len(report.mismatches)}")
    for r in report.mismatches:
        print(f"  model {r.seed}, {r.ranks} ranks, plan {r.index} ({r.label}): init {r.record['init_rel']:.2e}, "
              f"losses {r.record['loss_rel']:.2e}, params {r.record['param_rel']:.2e}, "
              f"collectives {r.record['collectives']} vs plan {r.record['expected_collectives']}")
    print(f"hangs: {len(report.hangs)}")
    for r in report.hangs:
        print(f"  model {r.seed}, {r.ranks} ranks, plan {r.index} ({r.label})")
    print(f"errors: {len(report.errors)}")
    for r in report.errors:
        print(f"  model {r.seed}, {r.ranks} ranks, plan {r.index} ({r.label}): exit {r.record.get('exit_code')}\n"
              + "\n".join("    " + line for line in r.record.get("output", "").splitlines()[-15:]))
    for failure in report.failures:
        print(f"job failure: {failure}")
    cov = report.coverage()
    print(f"step kinds: {sorted(cov['step_kinds'])} (missing: {sorted(set(PLAN_STEP_KINDS) - cov['step_kinds'])}; "
          f"{', '.join(sorted(set(STEP_KINDS) - set(PLAN_STEP_KINDS)))} not required)")
    issued = set().union(*(set(k for k, n in r.record.get("collectives", {}).items() if n) for r in runs)) \
        if runs else set()
    print(f"collectives issued: {sorted(issued)}")
    print(f"reuse choices: {sorted(cov['reuse'])} (missing: {sorted(set(REUSE_CHOICES) - cov['reuse'])})")
    print(f"plan kinds: {sorted(cov['plan_kinds'])}; meshes: {sorted(cov['meshes'])}")
    print(f"model features missing: {sorted(set(FEATURES) - cov['model_features'])}")
    rate = len(runs) / report.wall_s * 60 if report.wall_s else 0.0
    print(f"wall {report.wall_s:.0f} s in {report.launches} mpirun launch(es): {rate:.1f} plans/min, "
          f"{len(report.models) / report.wall_s * 60:.2f} models/min")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tensoropt.bench fuzz",
                                     description="generated models x plans against one process (not under mpirun)")
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--plans", type=int, default=10, help="plans per model per device count")
    parser.add_argument("--frontier-cap", type=int, default=4)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--plan-timeout", type=float, default=180.0, help="seconds without progress = hang")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        print("fuzz starts its own mpirun jobs: run it without mpirun", file=sys.stderr)
        return 2
    # A terminated bench still ends its mpirun job (the finally in _launch_once).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    seeds = list(range(args.first_seed, args.first_seed + args.models))
    ranks = [int(n) for n in args.ranks.split(",")]
    report = run_fuzz(seeds, ranks=ranks, plans=args.plans, frontier_cap=args.frontier_cap, steps=args.steps,
                      plan_timeout_s=args.plan_timeout, workdir=args.workdir, progress=lambda line: print(line, flush=True))
    _print_report(report, seeds, ranks)
    return 1 if report.mismatches or report.hangs or report.errors or report.failures else 0
