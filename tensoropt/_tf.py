"""Lazy, quiet import of TensorFlow: recording and search never pay for it."""

from __future__ import annotations

import os

__all__ = ["import_tensorflow"]


def import_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # noqa: PLC0415

    return tf
