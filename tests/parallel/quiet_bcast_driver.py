"""Rank 0 busy for ``--work-s`` seconds, then broadcasts; every other rank reports the
CPU seconds it used while waiting, with ``quiet_bcast`` or (``--blocking``) with mpi4py's
blocking ``bcast``. Prints ``rank=R value=V cpu_s=C wall_s=W``."""

import argparse
import time

from mpi4py import MPI

from tensoropt.execution.quiet_bcast import quiet_bcast

parser = argparse.ArgumentParser()
parser.add_argument("--work-s", type=float, default=1.0)
parser.add_argument("--blocking", action="store_true")
args = parser.parse_args()
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
comm.Barrier()
cpu0, wall0 = time.process_time(), time.perf_counter()
value = None
if rank == 0:
    time.sleep(args.work_s)              # rank 0's work (sleeping: it leaves the CPU to the waiters)
    value = {"plan": [1, 2, 3]}
value = comm.bcast(value, root=0) if args.blocking else quiet_bcast(comm, value)
print(f"rank={rank} value={value['plan']} cpu_s={time.process_time() - cpu0:.3f} "
      f"wall_s={time.perf_counter() - wall0:.3f}", flush=True)
