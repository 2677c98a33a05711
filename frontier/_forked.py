"""One Frontier-Tracking run in a forked process of its own, beside the caller's.

``track`` with several heuristic rules and two or more threads tracks the rules at
once: the first in the calling process, each other one in a child forked from it
(copy-on-write: the cost graph is shared, not copied). A rule's run is mostly Python
between short compiled kernels, so two runs on two cores take about as long as the
slower one, where two threads in one run overlap little (PaSE's InceptionV3 at 16
devices: 16.8 s and 28.9 s one after another with two threads each; 20.0 s and 30.4 s
at once with one thread each). A child is the out-of-memory killer's first choice
(``OOM_SCORE_ADJ``): when the runs together do not fit, a child goes, not the search.
The child hands its ``TrackResult`` back through a file in a private temporary
directory (a paper-scale frontier's configurations take about a gigabyte, more than a
pipe should hold), read once the child has exited.

Usage::

    child = ForkedRun(lambda: _track_once(...))
    mine = _track_once(...)
    theirs = child.result()        # or child.stop() when it is not needed
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import shutil
import tempfile
import traceback
from typing import Any, Callable

__all__ = ["ForkedRun", "ForkedRunFailed", "can_fork", "OOM_SCORE_ADJ"]

#: The children's ``oom_score_adj`` (-1000 to 1000): under memory pressure the kernel
#: kills a child before the search's own process, which then tracks that rule itself.
OOM_SCORE_ADJ = 1000


class ForkedRunFailed(RuntimeError):
    """The child raised, or died without a result (a signal: on Linux usually the kernel's
    out-of-memory killer)."""


def can_fork() -> bool:
    """Whether this platform forks (``fork`` start method: Linux, the BSDs)."""
    return "fork" in mp.get_all_start_methods()


def _first_to_go_for_memory() -> None:
    """Asks the kernel's out-of-memory killer to take this process before others: the
    caller tracks a killed child's rule again itself, but a killed caller loses the
    whole search (Linux; ignored where ``/proc/self/oom_score_adj`` cannot be set)."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(OOM_SCORE_ADJ))
    except OSError:
        pass


def _child(run: Callable[[], Any], path: str) -> None:
    _first_to_go_for_memory()
    try:
        out: Any = ("result", run())
    except BaseException as err:   # noqa: BLE001 - handed to the parent, which re-raises
        out = ("error", f"{type(err).__name__}: {err}\n{traceback.format_exc()}")
    with open(path + ".part", "wb") as f:
        pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".part", path)


class ForkedRun:
    """``run()`` in a forked child, started at once; ``result()`` waits for it."""

    def __init__(self, run: Callable[[], Any], label: str = "run"):
        self.label = label
        self._dir = tempfile.mkdtemp(prefix="frontier-run-")
        self._path = os.path.join(self._dir, "result.pickle")
        self._proc = mp.get_context("fork").Process(target=_child, args=(run, self._path),
                                                    name=f"frontier {label}", daemon=True)
        self._proc.start()

    def result(self) -> Any:
        """What ``run()`` returned in the child.

        Raises:
            ForkedRunFailed: the child raised (its error and traceback are in the message)
                or died without a result (its signal or exit code).
        """
        try:
            self._proc.join()
            code = self._proc.exitcode
            if not os.path.exists(self._path):
                how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                raise ForkedRunFailed(f"{self.label}: the forked process ended with {how} and "
                                      "no result (signal 9 is usually the out-of-memory killer)")
            with open(self._path, "rb") as f:
                kind, value = pickle.load(f)
            if kind == "error":
                raise ForkedRunFailed(f"{self.label}: {value}")
            return value
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def stop(self) -> None:
        """Kills the child (its result is not needed) and removes its directory."""
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()
        shutil.rmtree(self._dir, ignore_errors=True)
