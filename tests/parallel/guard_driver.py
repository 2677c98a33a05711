"""Run under mpirun: a job that would hang, to show it ends in an error instead.

Usage: guard_driver.py MODE

* ``mismatch``: every rank takes the same search result, but rank 1 builds the
  frontier's last plan while the others build its first. Each rank writes the error
  ``build_execution_graph`` raised (``rank R: ErrorType: message``) to ``rank<R>.txt`` in
  the folder ``GUARD_OUT`` names, waits for the others (so that mpirun's abort on the first
  non-zero exit loses no rank's report), and exits 3.
* ``stall``: every rank trains one step of the data-parallel plan; then rank 1 skips the
  second step (it sleeps, issuing no collective) while the others run it. Rank 0 prints
  ``rank 0: step 2 starts at <unix time>`` first. Run with TENSOROPT_COLLECTIVE_TIMEOUT_S
  set to a few seconds.
"""

import os
import pathlib
import sys
import time

import numpy as np

import tensoropt as to


def model():
    x = to.placeholder(to.float32, [8, 12], name="x")
    y = to.placeholder(to.int32, [8], name="y")
    w = to.get_variable("w", [12, 16], initializer=to.glorot_uniform_initializer(seed=1))
    v = to.get_variable("v", [16, 4], initializer=to.glorot_uniform_initializer(seed=2))
    logits = to.matmul(to.nn.relu(to.matmul(x, w)), v)
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    rng = np.random.default_rng(0)
    feed = {x: rng.normal(size=(8, 12)).astype(np.float32), y: rng.integers(0, 4, 8).astype(np.int32)}
    return loss, to.train.AdamOptimizer(0.01).minimize(loss), feed


def main(mode: str) -> None:
    world = to.init()
    loss, train_op, feed = model()
    result = to.search_strategy(option="mini_time", cluster="paper-v100x16")
    if mode == "mismatch":
        plan = result.frontier[-1] if world.rank == 1 else result.frontier[0]
        try:
            to.build_execution_graph(plan=plan)
        except Exception as e:  # noqa: BLE001 - written for the test, which checks every rank's
            report = pathlib.Path(os.environ["GUARD_OUT"]) / f"rank{world.rank}.txt"
            report.write_text(f"rank {world.rank}: {type(e).__name__}: {e}")
            from mpi4py import MPI  # noqa: PLC0415
            MPI.COMM_WORLD.Barrier()
            sys.exit(3)
        print(f"rank {world.rank}: built", flush=True)
        return
    to.build_execution_graph(plan=result.data_parallel)
    to.run([loss, train_op], feed)
    if world.rank == 1:
        time.sleep(120)   # stops issuing collectives; the job must not wait for it
        return
    if world.rank == 0:
        print(f"rank 0: step 2 starts at {time.time()}", flush=True)
    to.run([loss, train_op], feed)
    print(f"rank {world.rank}: step 2 finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
