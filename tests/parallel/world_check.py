"""Run under mpirun: rank 0 prints what horovod and mpi4py each see, one line per rank."""

import tensoropt as to

world = to.init()
import horovod.tensorflow as hvd  # noqa: E402
from mpi4py import MPI  # noqa: E402

comm = MPI.COMM_WORLD
line = (f"rank={world.rank} hvd_rank={hvd.rank()} hvd_size={hvd.size()} "
        f"mpi_rank={comm.Get_rank()} mpi_size={comm.Get_size()} machines={world.machines}")
lines = comm.gather(line, root=0)
if comm.Get_rank() == 0:
    print("\n".join(lines), flush=True)
comm.Barrier()
