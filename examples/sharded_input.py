"""Per-rank input: each rank loads only its slice of every batch, through tf.data.

    mpirun --allow-run-as-root --oversubscribe -np 4 .venv/bin/python examples/sharded_input.py DATA_DIR

Rank 0 writes a small dataset (one .npy file per input per batch) into DATA_DIR. Every
rank then builds the plan, asks ``to.input_slice`` which slice of each input it is fed,
and reads batches with a ``tf.data`` pipeline that memory-maps each file and copies out
that slice only. The losses are printed, with the number of elements each rank loaded
against the whole batches'. With ``--check``, the same plan is built again and trained on
whole batches, and the largest relative difference of the losses is printed.
"""

import argparse
import json
import os

import numpy as np

import tensoropt as to
from tensoropt import models
from tensoropt._tf import import_tensorflow


def write_dataset(spec, directory: str, batches: int) -> None:
    rng = np.random.default_rng(0)
    os.makedirs(directory, exist_ok=True)
    for b in range(batches):
        for placeholder, value in spec.feed(rng).items():
            np.save(os.path.join(directory, f"{placeholder.op.name}-{b}.npy"), value)


def rank_dataset(tf, spec, directory: str, batches: int, loaded: dict):
    """A tf.data pipeline of this rank's slices: one element per batch, a tuple with one
    array per placeholder."""
    placeholders = list(spec.feed(0))
    slices = [to.input_slice(p) for p in placeholders]

    def load(b):
        out = []
        for p, s in zip(placeholders, slices):
            whole = np.load(os.path.join(directory, f"{p.op.name}-{int(b)}.npy"), mmap_mode="r")
            part = np.ascontiguousarray(whole[s])        # only this slice is read
            loaded["slice"] += part.size
            loaded["whole"] += whole.size
            out.append(part)
        return out

    dtypes = [p.dtype.name for p in placeholders]
    data = tf.data.Dataset.range(batches).map(
        lambda b: tf.numpy_function(load, [b], [tf.as_dtype(d) for d in dtypes]))
    return placeholders, data


def train(spec, plan, feeds_of):
    to.build_execution_graph(plan=plan)
    return [float(to.run([spec.loss, spec.train_op], feed)[0]) for feed in feeds_of()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir")
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="also train on whole batches and compare")
    parser.add_argument("--json", help="rank 0 writes the figures here")
    args = parser.parse_args()

    world = to.init()
    spec = models.build(args.model, size="tiny")
    if world.rank == 0:
        write_dataset(spec, args.data_dir, args.batches)
    from mpi4py import MPI
    MPI.COMM_WORLD.Barrier()
    plan = to.find_strategy(option="mini_time")
    tf = import_tensorflow()
    loaded = {"slice": 0, "whole": 0}

    def sliced_feeds():
        placeholders, data = rank_dataset(tf, spec, args.data_dir, args.batches, loaded)
        for arrays in data.as_numpy_iterator():
            yield dict(zip(placeholders, arrays))

    losses = train(spec, plan, sliced_feeds)
    counts = MPI.COMM_WORLD.gather(loaded, root=0)
    result = {"losses": losses, "loaded": counts}
    if args.check:
        whole = [dict(zip(list(spec.feed(0)), [np.load(os.path.join(args.data_dir, f"{p.op.name}-{b}.npy"))
                                              for p in spec.feed(0)])) for b in range(args.batches)]
        result["whole_batch_losses"] = train(spec, plan, lambda: iter(whole))
    if world.rank == 0:
        for step, loss in enumerate(losses):
            print(f"step {step}  loss {loss:.5f}")
        for rank, c in enumerate(counts):
            print(f"rank {rank} loaded {c['slice']:,} of {c['whole']:,} elements")
        if args.check:
            diff = max(abs(a - b) / max(abs(b), 1e-3) for a, b in zip(losses, result["whole_batch_losses"]))
            print(f"largest relative difference from whole-batch feeding: {diff:.2e}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f)


if __name__ == "__main__":
    main()
