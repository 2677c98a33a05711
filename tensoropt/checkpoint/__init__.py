"""Checkpoints independent of the plan: save under one plan, restore under any other, on
any number of ranks (``manifest``: the format; ``held``: what a rank holds; ``saver``:
``Saver`` and ``latest_checkpoint``, also ``to.train.Saver``; ``export``: a plain
TensorFlow checkpoint).

Usage::

    saver = to.train.Saver(max_to_keep=3)
    saver.save("ckpt/model", global_step=step)
    saver.restore(to.train.latest_checkpoint("ckpt"))
    export_tensorflow("ckpt/model-300", "tf/model")    # tf.train.load_checkpoint("tf/model")
"""

from tensoropt.checkpoint.export import export_tensorflow
from tensoropt.checkpoint.manifest import CheckpointError, Manifest
from tensoropt.checkpoint.saver import Saver, latest_checkpoint

__all__ = ["Saver", "latest_checkpoint", "CheckpointError", "Manifest", "export_tensorflow"]
