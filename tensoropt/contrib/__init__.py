"""``tensoropt.contrib``: the TensorFlow 1.x contrib names that models commonly used."""

from tensoropt.contrib import layers

__all__ = ["layers"]
