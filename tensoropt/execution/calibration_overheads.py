"""What the additive cost model leaves out, measured by ``tensoropt calibrate`` on
micro-benchmarks of its own (never on the plans the estimates are judged on):

- ``collective_s``: one more all-reduce in a chain of tiny ones (each waiting for the one
  before, as a plan's collectives are chained) within one ``session.run``: horovod's
  cycle and negotiation and the collective's latency, without the ``session.run`` a
  standalone calibration call also pays. The cost model prices a collective as this plus
  what the profile's standalone time of its size exceeds a tiny one's
  (``costs.model.WithCycle``).
- ``op_s``: one more tiny op (a scalar add) in a chain within one ``session.run``: the
  executor's per-op launch cost; the cost model adds it to every op's forward and
  backward.
- ``copy_bytes_per_s``: what one more ``tf.transpose`` of a 4-D float32 tensor (moving
  its last dim to second place, as ``horovod_comm`` moves a dim to the front around a
  collective) adds to a chain of them, as bytes written per second: the speed of the
  local copies a conversion makes, which the simulator prices.
- ``transfer_compute_share``: what a transfer costs the compute beside it, as a share of
  the transfer's time: a chain of matmuls (``A`` seconds alone) and a large all-reduce
  (``R`` alone), with no dependency between them, run in one ``session.run`` (``B``);
  the share is ``(B - max(A, R)) / min(A, R)``, clamped to [0, 1] (0: they overlap
  freely; 1: they take turns). The chain is cut to last about as long as the all-reduce,
  so that neither hides the other (with ``A`` 16x ``R``, 8% of noise on ``A`` reads as a
  share of 1.3); the median of ``OVERLAP_TRIES`` estimates. The raw seconds are kept
  beside it (``overlap``). The simulator applies it (``simulator.plan_tasks``).

Every figure is a slope or ratio of medians over ``repeats`` of the slowest rank.

Usage (``calibration_job.Calibrator.calibrate`` calls it)::

    overheads = measure_overheads(calibrator, chain=32, repeats=10)
    # {"collective_s": ..., "op_s": ..., "copy_bytes_per_s": ..., "transfer_compute_share": ...,
    #  "overlap": {"compute_s": [...], "transfer_s": [...], "both_s": [...]}, "chain": 32}
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

__all__ = ["measure_overheads", "slowest_median_s"]


def _session(tf, graph, threads: int):
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=2)
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    return tf.compat.v1.Session(graph=graph, config=config)


def slowest_median_s(comm, run, repeats: int) -> float:
    """Median over ``repeats`` of the slowest rank's seconds for ``run()`` (every rank of
    ``comm`` calls it; each repeat starts at a barrier)."""
    run()  # warm up (and let horovod negotiate each name once)
    run()
    mine = []
    for _ in range(repeats):
        comm.Barrier()
        start = time.perf_counter()
        run()
        mine.append(time.perf_counter() - start)
    slowest = [max(v) for v in zip(*comm.allgather(mine))]
    return statistics.median(slowest)


#: The tensor the copy chain transposes: 8 MiB of float32, and how many transposes.
COPY_SHAPE, COPY_CHAIN = (32, 32, 32, 64), 12
#: more measurements of the copy chain while its slope comes out at or below zero
COPY_RETRIES = 3
#: The longest matmul chain the overlap test may cut, and how many estimates it takes.
MATMUL_CHAIN, OVERLAP_TRIES = 64, 5


def transfer_share(compute_s: float, transfer_s: float, both_s: float) -> float:
    """What the shorter of a compute and a transfer run together cost beyond the longer
    one, as a share of the shorter one's time alone, clamped to [0, 1]."""
    short, long = sorted((compute_s, transfer_s))
    if short <= 0:
        return 0.0
    return min(1.0, max(0.0, (both_s - long) / short))


def measure_overheads(cal: Any, chain: int = 32, repeats: int = 10, matmul_n: int = 512,
                      allreduce_bytes: int = 2**24) -> dict[str, float]:
    """The four figures of the module doc, the same on every rank of ``cal``'s job.

    Raises:
        ValueError: ``chain`` < 2 or ``repeats`` < 1.
    """
    if chain < 2 or repeats < 1:
        raise ValueError(f"calibrate: the overhead chain needs >= 2 links and >= 1 repeat, got {chain}, {repeats}")
    tf, hvd = cal.tf, cal.hvd
    op_chain = max(chain, 512)
    graph = tf.Graph()
    fetches = {}
    with graph.as_default():
        one = tf.ones([1], tf.float32)
        for n in (1, op_chain):         # tiny ops cost ~1 us: a long chain rises above noise
            x = one
            for _ in range(n):
                x = x + 1.0
            fetches[("op", n)] = x
        for n in (1, chain):
            if cal.size > 1:
                y = one
                for k in range(n):
                    y = hvd.allreduce(y, op=hvd.Sum, name=f"tensoropt_overheads/ar{n}/{k}") * (1.0 / cal.size)
                fetches[("collective", n)] = y
        for n in (1, COPY_CHAIN):
            c = tf.random.uniform(COPY_SHAPE)          # not a constant: nothing folds
            for _ in range(n):
                c = tf.transpose(c, [0, 3, 1, 2])
            fetches[("copy", n)] = c[:1, :1, :1, :1]
        a = tf.ones([matmul_n, matmul_n], tf.float32) * 0.001
        m = a
        for depth in range(1, MATMUL_CHAIN + 1):
            m = tf.linalg.matmul(m, a)
            fetches[("matmul", depth)] = tf.reduce_sum(m[:1, :1])
        if cal.size > 1:
            big = tf.ones([allreduce_bytes // 4], tf.float32)
            fetches["allreduce"] = tf.reduce_sum(hvd.allreduce(big, op=hvd.Sum, name="tensoropt_overheads/big")[:1])
    session = _session(tf, graph, cal.intra_threads)
    try:
        def slope(kind: str, n: int) -> float:
            t1 = slowest_median_s(cal.comm, lambda: session.run(fetches[(kind, 1)]), repeats)
            tn = slowest_median_s(cal.comm, lambda: session.run(fetches[(kind, n)]), repeats)
            return max(0.0, (tn - t1) / (n - 1))

        out = {"op_s": slope("op", op_chain), "chain": chain, "op_chain": op_chain}
        # a busy moment can make the 12-transpose chain time no slower than one transpose
        # (seen once in a full test run, 2026-11-28); as calibration_job does for sizes,
        # measure again before giving up on the figure
        per_copy = 0.0
        for _ in range(1 + COPY_RETRIES):
            per_copy = slope("copy", COPY_CHAIN)
            if per_copy > 0:
                break
        if per_copy > 0:
            out["copy_bytes_per_s"] = 4 * math.prod(COPY_SHAPE) / per_copy
        if cal.size > 1:
            out["collective_s"] = slope("collective", chain)
            out.update(_overlap(cal.comm, session, fetches, repeats))
        return out
    finally:
        session.close()


def _overlap(comm, session, fetches, repeats: int) -> dict[str, Any]:
    """``transfer_compute_share`` (module doc) and the seconds it was computed from."""
    def timed(*names) -> float:
        return slowest_median_s(comm, lambda: session.run([fetches[n] for n in names]), repeats)

    per_link = timed(("matmul", 8)) / 8
    seen: dict[str, list[float]] = {"compute_s": [], "transfer_s": [], "both_s": []}
    shares = []
    for _ in range(OVERLAP_TRIES):
        transfer = timed("allreduce")
        depth = min(MATMUL_CHAIN, max(1, round(transfer / per_link))) if per_link > 0 else MATMUL_CHAIN
        compute = timed(("matmul", depth))
        both = timed(("matmul", depth), "allreduce")
        for key, value in zip(seen, (compute, transfer, both)):
            seen[key].append(value)
        shares.append(transfer_share(compute, transfer, both))
    return {"transfer_compute_share": statistics.median(shares), "overlap": seen}
