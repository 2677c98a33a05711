"""Search progress for people: a bar on a terminal, one line per phase in a log.

Usage::

    from tensoropt.cli.progress import progress_bar

    with progress_bar("mlp on 8 devices") as update:
        frontier_for(graph, cluster, 8, progress=update)   # update(phase, done, total)

On a terminal (stderr is a tty) a tqdm bar redraws as the search goes. Otherwise (a log
file, a pipe, CI) nothing redraws: each phase writes one line when it ends, as
``mlp on 8 devices: tracking 120/120``.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Callable, Iterator, TextIO

__all__ = ["progress_bar"]

Progress = Callable[[str, int, int], None]


@contextlib.contextmanager
def progress_bar(desc: str, stream: TextIO | None = None) -> Iterator[Progress]:
    """The ``progress(phase, done, total)`` callback for one search, drawn on ``stream``
    (default stderr): a tqdm bar on a terminal, else one line per finished phase."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        with _tty_bar(desc, stream) as update:
            yield update
        return
    shown = {"phase": None}

    def line(phase: str, done: int, total: int) -> None:
        if done == total and phase != shown["phase"]:
            shown["phase"] = phase
            print(f"{desc}: {phase} {done}/{total}", file=stream, flush=True)

    yield line


@contextlib.contextmanager
def _tty_bar(desc: str, stream: TextIO) -> Iterator[Progress]:
    from tqdm import tqdm  # noqa: PLC0415 - only on a terminal

    bar = tqdm(desc=desc, file=stream, leave=False, mininterval=0.5, miniters=1)
    shown = {"phase": None}

    def update(phase: str, done: int, total: int) -> None:
        if phase != shown["phase"]:
            shown["phase"] = phase
            bar.reset(total=total)
            bar.set_description(f"{desc}: {phase}", refresh=False)
        bar.update(done - bar.n)
        if done == total:
            bar.refresh()

    with bar:
        yield update
