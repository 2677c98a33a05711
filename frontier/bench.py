"""Benchmark: FT-LDP vs FT-Elimination on model-shaped synthetic graphs.

Usage::

    python -m frontier.bench                         # n in 50,100,200,400; K in 16,64,256
    python -m frontier.bench --quick                 # n in 50,100; K in 16,64
    python -m frontier.bench --shape residual --n 400 --k 256 --methods ldp
    python -m frontier.bench --threads 1,2 --shape chain --n 200 --k 64
    python -m frontier.bench --synthetic-hard --epsilon 0.05   # issue 14's random graphs
    python -m frontier.bench --synthetic-hard --epsilon 0.05 --relative --threads 2
    python -m frontier.bench --graph model.npz --max-candidates 1000000   # a saved graph
    python -m frontier.bench --graph model.npz --epsilon 0.01 --steps  # + slowest steps

Each run happens in a child process with a wall-clock limit (``--timeout``); a run that
exceeds it is reported as ``>T``, and larger n for the same shape, K and method are then
skipped (``skip``). Graphs come from ``frontier.synthetic.model_graph`` (see its doc:
integer costs in bytes and microseconds, repeated blocks, layouts that must match or pay
a re-sharding time). Seconds are wall time; ``cpu`` is the process CPU time, which is
less sensitive to other jobs on the machine. When both methods finish, their frontiers
are checked to be equal.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from typing import Any, Callable, Optional

from frontier._bench_graphs import HARD_GRAPHS, print_rows
from frontier._forked import ForkedRun, ForkedRunFailed

__all__ = ["main", "run_one", "run_in_child", "cpu_seconds", "peak_resident_gib"]


def run_one(shape: str, n: int, k: int, method: str, threads: int, seed: int,
            alternatives: int) -> dict[str, Any]:
    """Builds one graph and tracks its frontier; returns timings and sizes."""
    from frontier import track
    from frontier.synthetic import model_graph

    g = model_graph(shape, n, k, seed=seed, alternatives=alternatives)
    c0, w0 = time.process_time(), time.perf_counter()
    res = track(g, method=method, threads=threads)
    c1, w1 = time.process_time(), time.perf_counter()
    s = res.stats
    return {"wall": w1 - w0, "cpu": c1 - c0, "points": len(res.points),
            "max_cell": s.max_cell_points, "heuristic": s.heuristic_eliminations,
            "first": res.points[0], "last": res.points[-1],
            "hash": hash(tuple(res.points))}


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have been waited for: a
    search that tracks its heuristic rules at once (``track`` with threads >= 2) runs
    all but the first in forked children, whose seconds ``time.process_time`` omits."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_resident_gib() -> float:
    """This process's peak resident memory plus the largest peak of its waited-for
    children (GiB): with rules tracked at once in forked children, an upper bound on
    what the search held at one time (its own peak alone leaves the children out)."""
    own, children = (resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF,
                                                                  resource.RUSAGE_CHILDREN))
    return (own + children) / 2**20   # KiB on Linux


def run_in_child(fn: Callable[..., dict], args: tuple, timeout: float,
                 label: str = "run") -> dict[str, Any]:
    """``fn(*args)`` in a forked child process with a wall-clock limit.

    Returns:
        ``fn``'s dict; or ``{"stopped": text}`` when the child took more than ``timeout``
        seconds (``">120 s"``) or died without an answer (``"signal 9"``: on Linux
        usually the kernel's out-of-memory killer; ``"exit 1"``).

    Raises:
        RuntimeError: ``fn`` raised in the child; the message is ``label``, then its error.
    """
    try:
        return ForkedRun(lambda: fn(*args), label=label).result(timeout)
    except ForkedRunFailed as err:
        if err.ended is None:            # fn raised
            raise RuntimeError(str(err)) from None
        return {"stopped": err.ended}


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m frontier.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="chain,residual,transformer",
                    help="comma list of chain, residual, transformer")
    ap.add_argument("--n", default="50,100,200,400", help="comma list of node counts")
    ap.add_argument("--k", default="16,64,256", help="comma list of configuration counts")
    ap.add_argument("--methods", default="ldp,elimination")
    ap.add_argument("--threads", default="1", help="comma list; each LDP run per value")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--alternatives", type=int, default=1,
                    help="alternatives per edge whose tensor has several consumers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="n in 50,100 and K in 16,64")
    ap.add_argument("--synthetic-hard", action="store_true",
                    help="instead, the two random-cost graphs of issue 14 (400 nodes: a "
                         "chain with K=256, a shortcut every 4 nodes with K=128)")
    ap.add_argument("--graph", default="",
                    help="instead, comma list of CostGraph.save files or hard:SHAPE:N:K")
    ap.add_argument("--epsilon", type=float, default=None,
                    help="with --synthetic-hard / --graph: track's epsilon")
    ap.add_argument("--relative", action="store_true",
                    help="with --epsilon: each point's error relative to its own time")
    ap.add_argument("--max-candidates", type=int, default=None,
                    help="with --synthetic-hard / --graph: track's max_candidates")
    ap.add_argument("--steps", action="store_true",
                    help="with --synthetic-hard / --graph: also print the seconds per kind "
                         "of elimination and the slowest eliminations")
    a = ap.parse_args(argv)
    if a.synthetic_hard or a.graph:
        sources = list(HARD_GRAPHS) if a.synthetic_hard else []
        sources += [s for s in a.graph.split(",") if s]
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"# frontier.bench  cpus={os.cpu_count()}  load={load:.1f}  "
              f"timeout={a.timeout:g}s")
        method = a.methods.split(",")[0]
        print_rows(sources, method, _ints(a.threads)[0], a.epsilon, a.max_candidates,
                   a.timeout, steps=a.steps, relative=a.relative)
        return 0
    if a.quick:
        a.n, a.k = "50,100", "16,64"
    shapes = [s for s in a.shape.split(",") if s]
    methods = [m for m in a.methods.split(",") if m]
    threads = _ints(a.threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# frontier.bench  cpus={os.cpu_count()}  load={load:.1f}  timeout={a.timeout:g}s "
          f" alternatives={a.alternatives}  seed={a.seed}")
    cols = ["shape", "n", "K"] + [f"ldp_s(t={t})" for t in threads if "ldp" in methods]
    cols += ["ldp_cpu"] if "ldp" in methods else []
    cols += ["elim_s", "elim/ldp"] if "elimination" in methods else []
    cols += ["points", "max_cell", "heur", "check"]
    print(" ".join(f"{c:>12}" for c in cols))
    timed_out: set[tuple] = set()
    for shape in shapes:
        for k in _ints(a.k):
            for n in _ints(a.n):
                row: list[str] = [shape, str(n), str(k)]
                res: dict[str, Any] = {}
                for method in methods:
                    for t in (threads if method == "ldp" else [1]):
                        key = (shape, k, method, t)
                        if key in timed_out:
                            res[(method, t)] = "skip"
                            continue
                        args = (shape, n, k, method, t, a.seed, a.alternatives)
                        out = run_in_child(run_one, args, a.timeout, label=f"run {args}")
                        if "stopped" in out:
                            timed_out.add(key)
                            res[(method, t)] = out["stopped"].replace(" s", "")
                        else:
                            res[(method, t)] = out
                done = [v for v in res.values() if isinstance(v, dict)]
                if "ldp" in methods:
                    for t in threads:
                        v = res[("ldp", t)]
                        row.append(f"{v['wall']:.2f}" if isinstance(v, dict) else v)
                    v = res[("ldp", threads[0])]
                    row.append(f"{v['cpu']:.2f}" if isinstance(v, dict) else "-")
                if "elimination" in methods:
                    e = res[("elimination", 1)]
                    row.append(f"{e['wall']:.2f}" if isinstance(e, dict) else e)
                    lv = res.get(("ldp", threads[0])) if "ldp" in methods else None
                    if isinstance(e, dict) and isinstance(lv, dict):
                        row.append(f"{e['wall'] / lv['wall']:.1f}")
                    elif isinstance(lv, dict) and not isinstance(e, dict):
                        row.append(f">{a.timeout / lv['wall']:.1f}" if e != "skip" else "-")
                    else:
                        row.append("-")
                if done:
                    row += [str(done[0]["points"]), str(done[0]["max_cell"]),
                            str(done[0]["heuristic"])]
                    same = len({d["hash"] for d in done}) == 1
                    heur = any(d["heuristic"] for d in done)
                    row.append("same" if len(done) > 1 and same else
                               "-" if same else "differ(h)" if heur else "DIFFER")
                else:
                    row += ["-", "-", "-", "-"]
                print(" ".join(f"{c:>12}" for c in row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
