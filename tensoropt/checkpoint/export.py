"""Leaving TensorOpt with your weights: a TensorOpt checkpoint as a plain TensorFlow one.

Every tensor is assembled whole from its blocks and written under its TensorFlow 1.x name
with TensorFlow's own ``SaveV2``, so ``tf.train.load_checkpoint(prefix)`` (and a
``tf.compat.v1.train.Saver`` of variables with those names) reads it.

Usage::

    export_tensorflow("ckpt/model-300", "exported/model")       # or:
    tensoropt export-checkpoint ckpt/model-300 exported/model
    reader = tf.train.load_checkpoint("exported/model")
    reader.get_tensor("fc0/w")                                   # the whole kernel
"""

from __future__ import annotations

import os

from tensoropt._tf import import_tensorflow
from tensoropt.checkpoint.manifest import CheckpointError, Manifest, ShardFiles, read_region

__all__ = ["export_tensorflow"]


def export_tensorflow(checkpoint: str, prefix: str) -> list[str]:
    """Writes ``checkpoint``'s tensors, whole, as the TensorFlow checkpoint ``prefix``;
    returns the names written.

    Raises:
        CheckpointError: the TensorOpt checkpoint is missing or damaged (named).
        ValueError: ``prefix``'s directory cannot be written (checked before writing).
    """
    manifest = Manifest.read(checkpoint)
    directory = os.path.dirname(os.path.abspath(prefix))
    existing = directory
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK):
        raise ValueError(f"export-checkpoint: cannot write into {directory!r} ({existing!r} is not a "
                         "writable directory); choose another prefix")
    files = ShardFiles(checkpoint)
    try:
        values = {t.name: read_region(t, tuple(slice(0, n) for n in t.shape), files)
                  for t in manifest.tensors}
    finally:
        files.close()
    if not values:
        raise CheckpointError(f"{checkpoint}: holds no tensor")
    tf = import_tensorflow()
    os.makedirs(directory, exist_ok=True)
    names = sorted(values)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        save = tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                                 tensors=[tf.constant(values[n]) for n in names])
        session.run(save)
    return names
