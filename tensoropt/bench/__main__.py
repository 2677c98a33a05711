"""Benchmarks that print their figures.

    mpirun -np 2 python -m tensoropt.bench horovod [--model mlp --size small --steps 20]
    python -m tensoropt.bench frontiers [--models ...] [--devices 16]
    mpirun -np 4 python -m tensoropt.bench accuracy [--models mlp,cnn] [--plans 20]
    python -m tensoropt.bench approximation [--model paper_vgg16] [--devices 8]
    mpirun -np 2 python -m tensoropt.bench plans_memory [--model transformer] [--plans 50]
    python -m tensoropt.bench summary_size [--model paper_vgg16] [--devices 8] [--epsilon 0.05]
    python -m tensoropt.bench fuzz [--models 200] [--ranks 2,4] [--plans 10]   # starts its own mpirun
    mpirun -np 4 python -m tensoropt.bench shard_memory [--param-gib 2]
    python -m tensoropt.bench simulator [--changes 1]
    python -m tensoropt.bench compare [--models paper_vgg16] [--devices 16] [--budget-s 10]
    python -m tensoropt.bench pase [--models inception_v3,resnet101,pase_transformer] [--devices 16,32,64]
    python -m tensoropt.bench mutants [--only NAME ...] [--list]   # one-line library mutations vs the tests
    python -m tensoropt.bench timings [--skip-recording] [--skip-profiler]   # recording and profiler timings
    python -m tensoropt.bench calibration [--ranks 4] [--repeats 30]   # profiled collectives at unmeasured sizes
    mpirun -np 2 python -m tensoropt.bench horovod_cycle [--links 32] [--sizes 100,400]   # the simulator's cycle vs a chain
"""

import sys

BENCHES = {"horovod": "tensoropt.bench.horovod", "frontiers": "tensoropt.bench.frontiers",
           "accuracy": "tensoropt.bench.accuracy", "approximation": "tensoropt.bench.approximation",
           "plans_memory": "tensoropt.bench.plans_memory", "summary_size": "tensoropt.bench.summary_size",
           "fuzz": "tensoropt.bench.fuzz", "shard_memory": "tensoropt.bench.shard_memory",
           "simulator": "tensoropt.simulator.bench", "pase": "tensoropt.bench.pase",
           "mutants": "tensoropt.bench.mutants", "timings": "tensoropt.bench.timings",
           "compare": "tensoropt.search.baselines.bench",
           "calibration": "tensoropt.bench.calibration", "horovod_cycle": "tensoropt.bench.horovod_cycle"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHES:
        print(f"usage: python -m tensoropt.bench {{{','.join(BENCHES)}}} [options] (see each module's docstring)",
              file=sys.stderr)
        return 2
    import importlib

    return importlib.import_module(BENCHES[argv[0]]).main(argv[1:])


sys.exit(main(sys.argv[1:]))
