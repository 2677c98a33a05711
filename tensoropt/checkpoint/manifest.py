"""The checkpoint format: a directory per save, a manifest, one shard file per rank.

A checkpoint is independent of the plan that wrote it::

    model.ckpt-300/
      manifest.json        every tensor: name, logical shape, dtype, and its stored blocks
      shards-00000.npz     rank 0's blocks (only the blocks it is the first holder of)
      shards-00002.npz     ...

Each block records the file, the key inside it, and where it sits in the logical tensor
(``start``/``stop`` per dim). Restoring reads, for each tensor, the blocks that overlap the
region the new layout needs, for any plan and any number of ranks. Names are those a
TensorFlow 1.x script sees: ``fc0/w``, ``fc0/w/Adam``, ``beta1_power``, ``global_step``.

Usage::

    manifest = Manifest.read(directory)                 # CheckpointError if bad
    record = manifest.tensor("fc0/w")
    value = read_region(directory, record, (slice(0, 4), slice(0, 16)), ShardFiles(directory))
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["FORMAT", "MANIFEST", "CheckpointError", "BlockRecord", "TensorRecord", "Manifest",
           "ShardFiles", "read_region", "shard_file"]

FORMAT = "tensoropt-checkpoint-1"
MANIFEST = "manifest.json"


class CheckpointError(ValueError):
    """A missing, truncated or mismatched checkpoint (the message names the file and the
    tensor)."""


def shard_file(rank: int) -> str:
    return f"shards-{rank:05d}.npz"


@dataclass(frozen=True)
class BlockRecord:
    """One stored block: ``file``'s array ``key`` holds ``tensor[start:stop]`` (per dim)."""

    file: str
    key: str
    start: tuple[int, ...]
    stop: tuple[int, ...]


@dataclass(frozen=True)
class TensorRecord:
    """A logical tensor and the blocks that tile it."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    blocks: tuple[BlockRecord, ...]


@dataclass(frozen=True)
class Manifest:
    """What a checkpoint holds: its step, the plan's device count, and every tensor."""

    step: int | None
    parallelism: int
    tensors: tuple[TensorRecord, ...]

    def tensor(self, name: str) -> TensorRecord:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT, "step": self.step, "parallelism": self.parallelism,
            "tensors": [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype,
                         "blocks": [{"file": b.file, "key": b.key, "start": list(b.start),
                                     "stop": list(b.stop)} for b in t.blocks]}
                        for t in self.tensors]}, indent=1)

    @classmethod
    def read(cls, directory: str) -> "Manifest":
        """Reads and checks ``directory``'s manifest.

        Raises:
            CheckpointError: the directory or manifest is missing, not JSON, of another
                format, or a tensor's blocks do not tile its shape (named).
        """
        path = os.path.join(directory, MANIFEST)
        if not os.path.isdir(directory):
            raise CheckpointError(f"checkpoint {directory!r} does not exist (pass a path that "
                                  "Saver.save returned, or to.train.latest_checkpoint(dir))")
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            raise CheckpointError(f"{path}: missing; {directory!r} is not a finished TensorOpt "
                                  "checkpoint (a save that was cut off leaves none)") from None
        except (OSError, ValueError) as e:
            raise CheckpointError(f"{path}: not a readable manifest ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CheckpointError(f"{path}: format {data.get('format') if isinstance(data, dict) else None!r}, "
                                  f"expected {FORMAT!r}")
        try:
            tensors = tuple(TensorRecord(t["name"], tuple(int(n) for n in t["shape"]), str(t["dtype"]),
                                         tuple(BlockRecord(b["file"], b["key"], tuple(b["start"]),
                                                           tuple(b["stop"])) for b in t["blocks"]))
                            for t in data["tensors"])
            manifest = cls(data["step"], int(data["parallelism"]), tensors)
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"{path}: malformed manifest ({type(e).__name__}: {e})") from None
        for t in manifest.tensors:
            covered = sum(int(np.prod(np.subtract(b.stop, b.start))) for b in t.blocks)
            if covered != int(np.prod(t.shape)):
                raise CheckpointError(f"{path}: tensor {t.name!r}'s blocks hold {covered} elements, "
                                      f"its shape {list(t.shape)} has {int(np.prod(t.shape))}")
        return manifest


class ShardFiles:
    """The shard files of one checkpoint, each opened once."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._open: dict[str, object] = {}

    def block(self, record: TensorRecord, block: BlockRecord) -> np.ndarray:
        """The stored block, checked against its record.

        Raises:
            CheckpointError: the file is missing or truncated, or the block has another
                shape or dtype (naming the file and the tensor).
        """
        path = os.path.join(self.directory, block.file)
        try:
            if block.file not in self._open:
                self._open[block.file] = np.load(path, allow_pickle=False)
            value = self._open[block.file][block.key]
        except FileNotFoundError:
            raise CheckpointError(f"{path}: missing (tensor {record.name!r} has a block there)") from None
        except KeyError:
            raise CheckpointError(f"{path}: has no block {block.key!r} of tensor {record.name!r}") from None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise CheckpointError(f"{path}: unreadable, truncated? ({type(e).__name__}: {e}); "
                                  f"reading tensor {record.name!r}") from None
        want = tuple(int(b - a) for a, b in zip(block.start, block.stop))
        if value.shape != want or value.dtype != np.dtype(record.dtype):
            raise CheckpointError(f"{path}: tensor {record.name!r}'s block {block.key!r} is "
                                  f"{value.dtype}{list(value.shape)}, the manifest says "
                                  f"{record.dtype}{list(want)}")
        return value

    def close(self) -> None:
        for f in self._open.values():
            f.close()
        self._open.clear()


def read_region(record: TensorRecord, region: Sequence[slice], files: ShardFiles) -> np.ndarray:
    """``tensor[region]`` assembled from the stored blocks that overlap it."""
    lo = [s.start for s in region]
    hi = [s.stop for s in region]
    out = np.empty([b - a for a, b in zip(lo, hi)], dtype=np.dtype(record.dtype))
    filled = 0
    for block in record.blocks:
        a = [max(x, y) for x, y in zip(lo, block.start)]
        b = [min(x, y) for x, y in zip(hi, block.stop)]
        if any(x >= y for x, y in zip(a, b)) and out.ndim:
            continue
        value = files.block(record, block)
        src = tuple(slice(x - s, y - s) for x, y, s in zip(a, b, block.start))
        dst = tuple(slice(x - s, y - s) for x, y, s in zip(a, b, lo))
        out[dst] = value[src]
        filled += int(np.prod([y - x for x, y in zip(a, b)]))
        if not out.ndim:
            break
    if filled != out.size:
        raise CheckpointError(f"{files.directory}: tensor {record.name!r}: the stored blocks cover "
                              f"{filled} of the {out.size} elements of region {lo}..{hi}")
    return out
