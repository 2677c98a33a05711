"""The ``tensoropt`` command: ``main`` (sub-commands), ``report`` (tables, plots), ``progress``.

Usage::

    tensoropt frontier --model mlp --cluster paper-v100x16
    python -m tensoropt profile --model alexnet
"""

from tensoropt.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
