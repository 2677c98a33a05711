"""TensorOpt: auto-parallel distributed training with memory/time trade-offs."""

from setuptools import find_packages, setup

setup(
    name="tensoropt",
    version="0.1.0",
    description=(
        "Frontier-Tracking auto-parallelism for TensorFlow 1.x-style scripts: "
        "the whole memory/time Pareto frontier of parallelization plans, run under mpirun."
    ),
    python_requires=">=3.10",
    packages=find_packages(include=["tensoropt", "tensoropt.*", "frontier", "frontier.*",
                                    "reschedule", "reschedule.*"]),
    install_requires=["numpy>=1.26", "numba>=0.60"],
    extras_require={
        "runtime": ["tensorflow-cpu==2.21.0", "mpi4py>=4.0", "horovod==0.28.1"],
        "test": ["pytest>=8"],
    },
    entry_points={"console_scripts": ["tensoropt=tensoropt.cli:main"]},
)
