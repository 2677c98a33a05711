"""Run under mpirun -np 2: a script with only the three calls (no to.init()) trains as one
two-rank job. Rank 0 prints every rank's world size, plan parallelism and losses."""

import numpy as np

import tensoropt as to

x = to.placeholder(to.float32, [8, 4], name="x")
w = to.get_variable("w", initializer=np.full((4, 2), 0.5, np.float32))
loss = to.reduce_mean(to.square(to.matmul(x, w)))
train = to.train.GradientDescentOptimizer(0.1).minimize(loss)
plan = to.find_strategy(option="mini_time")
to.build_execution_graph(plan=plan)
feed = {x: np.arange(32, dtype=np.float32).reshape(8, 4) / 32}
losses = [float(to.run([loss, train], feed_dict=feed)[0]) for _ in range(3)]
world = to.runtime.world()
from mpi4py import MPI  # noqa: E402

lines = MPI.COMM_WORLD.gather(f"rank={world.rank} size={world.size} parallelism={plan.parallelism} "
                              f"losses={' '.join(f'{v:.6f}' for v in losses)}", root=0)
if world.rank == 0:
    print("\n".join(lines), flush=True)
