"""``to.train.Saver``: checkpoints that any plan, on any number of ranks, can restore.

As ``tf.compat.v1.train.Saver``, without the session argument::

    saver = to.train.Saver(max_to_keep=3)
    path = saver.save("ckpt/model", global_step=300)     # 'ckpt/model-300' (a directory)
    ...                                                  # later, any plan, any rank count:
    to.build_execution_graph(plan=other_plan)
    step = saver.restore(to.train.latest_checkpoint("ckpt"))   # 300

Saving (every rank calls it, as every rank runs the step):

1. every rank writes the blocks it is the first holder of into ``<path>.tmp-<id>/``
   (``manifest.py`` describes the files);
2. the ranks agree that every write succeeded (one allgather); if one failed, the
   temporary directory goes and every rank raises;
3. rank 0 writes the manifest, renames the directory to ``<path>`` in one step, updates
   ``checkpoint.json`` beside it (written aside, then replaced) and drops checkpoints
   beyond ``max_to_keep`` and temporary directories of saves that were cut off;
4. every rank returns once the checkpoint is visible.

A job killed during a save leaves the previous checkpoint, and the index naming it,
untouched. Restoring reads every tensor this rank needs, checks names, shapes and
dtypes, and agrees with the other ranks before assigning anything: a missing, truncated
or mismatched checkpoint raises ``CheckpointError`` (naming the file and the tensor) on
every rank, and changes no variable. Several machines need a shared file system.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from typing import Optional

import numpy as np

from tensoropt import session
from tensoropt.checkpoint.held import held_tensors
from tensoropt.schedules import GlobalStep
from tensoropt.validation import atomic_write_text
from tensoropt.checkpoint.manifest import (MANIFEST, BlockRecord, CheckpointError, Manifest, ShardFiles,
                                           TensorRecord, read_region, shard_file)

__all__ = ["Saver", "latest_checkpoint", "INDEX"]

INDEX = "checkpoint.json"
GLOBAL_STEP = "global_step"


def _saves_step(held) -> bool:
    """Whether the graph's own global step (a variable named ``global_step``) is among the
    tensors saved: then it is the checkpoint's ``global_step`` record."""
    return any(h.name == GLOBAL_STEP for h in held)


class _Solo:
    """The communicator of a process alone."""

    def allgather(self, value):
        return [value]

    def bcast(self, value, root=0):
        return value


def _index_path(save_path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(save_path)), INDEX)


def latest_checkpoint(checkpoint_dir: str) -> Optional[str]:
    """The newest finished checkpoint saved into ``checkpoint_dir``, or None.

    Raises:
        CheckpointError: the index file is there but unreadable.
    """
    path = os.path.join(checkpoint_dir, INDEX)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            latest = json.load(f)["latest"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"{path}: unreadable checkpoint index ({e}); delete it and pass a "
                              "checkpoint directory to Saver.restore") from None
    return os.path.join(checkpoint_dir, latest)


class Saver:
    """Saves and restores every variable, optimizer slot and the global step.

    Args:
        var_list: recorded variables to save (with their slots); None: all variables
            and the optimizers' own variables.
        max_to_keep: the newest checkpoints kept in the directory (0 or None: all).

    Raises:
        ValueError: a bad ``max_to_keep``.
    """

    def __init__(self, var_list=None, max_to_keep: Optional[int] = 5) -> None:
        if max_to_keep is not None and (isinstance(max_to_keep, bool) or not isinstance(max_to_keep, int)
                                        or max_to_keep < 0):
            raise ValueError(f"Saver: max_to_keep must be an int >= 0 or None, got {max_to_keep!r}")
        self.var_list = None if var_list is None else list(var_list)
        self.max_to_keep = max_to_keep or None

    # -- state ---------------------------------------------------------------------------
    def _state(self, what: str):
        state = session.execution_state()
        if state is None:
            raise RuntimeError(f"Saver.{what}: no execution graph; call "
                               "tensoropt.build_execution_graph(plan=...) first")
        comm = state.comm if state.size > 1 else _Solo()
        return state, comm, held_tensors(state.graph, state.lowered, state.sharding, self.var_list)

    # -- save ----------------------------------------------------------------------------
    def save(self, save_path, global_step=None, *tf1_rest) -> str:
        """Writes a checkpoint; returns its path (``save_path-global_step``).

        ``global_step`` names the checkpoint: an int, or the graph's global step
        (``to.train.get_or_create_global_step()``), whose value is read. The graph's global
        step is saved and restored with the variables either way. TensorFlow 1.x's
        ``saver.save(sess, save_path, global_step)`` is taken too: TensorOpt runs its own
        session, so a first argument that is not a path is passed over.

        Raises:
            CheckpointError: a rank could not write (every rank raises; nothing changed).
        """
        args = _without_session("save", (save_path, global_step, *tf1_rest))
        save_path, global_step = args[0], (args[1] if len(args) > 1 else None)
        state, comm, held = self._state("save")
        if isinstance(global_step, GlobalStep):
            global_step = int(session.run(global_step))
        if global_step is not None and (isinstance(global_step, bool) or
                                        not isinstance(global_step, (int, np.integer))):
            raise ValueError(f"Saver.save: global_step must be an int or to.train.get_or_create_global_step(), "
                             f"got {global_step!r}")
        final = save_path if global_step is None else f"{save_path}-{int(global_step)}"
        tmp = comm.bcast(f"{final}.tmp-{uuid.uuid4().hex[:12]}" if state.rank == 0 else None)
        mine = [h for h in held if h.first_holder(state.rank, state.size)]
        error = None
        try:
            os.makedirs(tmp, exist_ok=True)
            values = state.session.run([h.variable for h in mine])
            blocks = {f"t{i}": v for i, v in enumerate(values)}
            if state.rank == 0 and global_step is not None and not _saves_step(held):
                blocks[GLOBAL_STEP] = np.array(int(global_step), dtype=np.int64)
            self._write_shard(os.path.join(tmp, shard_file(state.rank)), blocks)
        except OSError as e:
            error = f"rank {state.rank}: {e}"
        errors = [e for e in comm.allgather(error) if e]
        if not errors and state.rank == 0:
            try:
                self._publish(tmp, final, held, state.size, global_step)
            except OSError as e:
                errors = [f"rank 0: {e}"]
        if errors and state.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        errors = comm.bcast(errors)
        if errors:
            raise CheckpointError(f"Saver.save({final!r}) failed, nothing was changed: {errors[0]}")
        return final

    @staticmethod
    def _write_shard(path: str, blocks: dict) -> None:
        with open(path, "wb") as f:
            np.savez(f, **blocks)
            f.flush()
            os.fsync(f.fileno())

    def _publish(self, tmp, final, held, size, global_step) -> None:
        """Rank 0: the manifest, the rename, the index, and pruning."""
        records = []
        keys = {}   # (rank, id of tensor) -> its key in that rank's file, as the rank wrote it
        for r in range(size):
            for i, h in enumerate(h for h in held if h.first_holder(r, size)):
                keys[r, id(h)] = f"t{i}"
        for h in held:
            blocks = []
            for r in range(size):
                if (r, id(h)) in keys:
                    region = h.region(r)
                    blocks.append(BlockRecord(shard_file(r), keys[r, id(h)], tuple(s.start for s in region),
                                              tuple(s.stop for s in region)))
            records.append(TensorRecord(h.name, h.shape, h.dtype, tuple(blocks)))
        if global_step is not None and not _saves_step(held):
            records.append(TensorRecord(GLOBAL_STEP, (), "int64",
                                        (BlockRecord(shard_file(0), GLOBAL_STEP, (), ()),)))
        manifest = Manifest(None if global_step is None else int(global_step), size, tuple(records))
        atomic_write_text(os.path.join(tmp, MANIFEST), manifest.to_json())
        old = None
        if os.path.exists(final):
            old = f"{final}.old-{uuid.uuid4().hex[:8]}"
            os.rename(final, old)
        os.rename(tmp, final)
        if old:
            shutil.rmtree(old, ignore_errors=True)
        self._update_index(final)

    def _update_index(self, final: str) -> None:
        directory = os.path.dirname(os.path.abspath(final))
        index = os.path.join(directory, INDEX)
        kept = []
        if os.path.exists(index):
            try:
                with open(index) as f:
                    kept = [p for p in json.load(f)["all"] if isinstance(p, str)]
            except (OSError, ValueError, KeyError, TypeError):
                kept = []
        name = os.path.basename(final)
        kept = [p for p in kept if p != name and os.path.isdir(os.path.join(directory, p))] + [name]
        dropped = []
        if self.max_to_keep is not None and len(kept) > self.max_to_keep:
            dropped, kept = kept[:-self.max_to_keep], kept[-self.max_to_keep:]
        atomic_write_text(index, json.dumps({"latest": name, "all": kept}, indent=1))
        for p in dropped:
            shutil.rmtree(os.path.join(directory, p), ignore_errors=True)
        stem = os.path.basename(final).rsplit("-", 1)[0]
        for p in os.listdir(directory):   # saves that were cut off before their rename
            if p.startswith(stem) and ".tmp-" in p and os.path.isdir(os.path.join(directory, p)):
                shutil.rmtree(os.path.join(directory, p), ignore_errors=True)

    # -- restore -------------------------------------------------------------------------
    def restore(self, save_path, *tf1_rest) -> Optional[int]:
        """Loads every tensor this rank holds from ``save_path``; returns the saved
        global step (None if it was saved without one). TensorFlow 1.x's
        ``saver.restore(sess, save_path)`` is taken too (see ``save``).

        Raises:
            CheckpointError: on every rank, before any variable changes: the checkpoint
                is missing or truncated, lacks a tensor, or has one of another shape or
                dtype (the message names the file and the tensor).
        """
        save_path, = _without_session("restore", (save_path, *tf1_rest))
        if save_path is None:
            raise CheckpointError("Saver.restore: no checkpoint (latest_checkpoint found none in "
                                  "that directory); save one first or pass its path")
        state, comm, held = self._state("restore")
        values, error, step = [], None, None
        files = ShardFiles(save_path)
        try:
            manifest = Manifest.read(save_path)
            step = manifest.step
            for h in held:
                try:
                    record = manifest.tensor(h.name)
                except KeyError:
                    raise CheckpointError(f"{os.path.join(save_path, MANIFEST)}: no tensor {h.name!r} "
                                          "(a checkpoint of another model?)") from None
                if record.shape != h.shape or record.dtype != h.dtype:
                    raise CheckpointError(f"{os.path.join(save_path, MANIFEST)}: tensor {h.name!r} is "
                                          f"{record.dtype}{list(record.shape)}, this model's is "
                                          f"{h.dtype}{list(h.shape)}")
                values.append(read_region(record, h.region(state.rank), files))
        except CheckpointError as e:
            error = str(e)
        finally:
            files.close()
        errors = [e for e in comm.allgather(error) if e]
        if errors:
            raise CheckpointError(errors[0])
        # Each variable's initializer, fed the restored value: one run, no new ops.
        state.session.run([h.variable.initializer for h in held],
                          {h.variable.initializer.inputs[1]: value for h, value in zip(held, values)})
        return step


def _without_session(where: str, args: tuple) -> tuple:
    """``Saver.save``'s ``(save_path[, global_step])`` or ``restore``'s ``(save_path,)``
    from their positional arguments, TensorFlow 1.x's leading session dropped when the
    first is not a path and the second is.

    Raises:
        ValueError: more arguments than that, or a first one that is not a path.
    """
    path = (str, os.PathLike)
    if len(args) > 1 and not isinstance(args[0], path) and isinstance(args[1], path):
        args = args[1:]                 # tf.compat.v1: saver.save(sess, path, global_step)
    most = 2 if where == "save" else 1
    if len(args) > most or (args[0] is not None and not isinstance(args[0], path)):
        raise ValueError(f"Saver.{where}: expected ({'save_path, global_step' if where == 'save' else 'save_path'}),"
                         f" or TensorFlow's (sess, save_path{', global_step' if where == 'save' else ''}); got "
                         f"{len(args)} arguments starting with {args[0]!r}")
    return args
