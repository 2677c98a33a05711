"""Benchmarks that print their figures: ``python -m tensoropt.bench horovod`` (under mpirun)."""
