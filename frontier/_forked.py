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

``frontier.bench.run_in_child`` runs each benchmark row the same way, with a time limit
(``result(timeout)``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import shutil
import tempfile
import traceback
from typing import Any, Callable, Optional

__all__ = ["ForkedRun", "ForkedRunFailed", "can_fork", "OOM_SCORE_ADJ"]

#: The children's ``oom_score_adj`` (-1000 to 1000): under memory pressure the kernel
#: kills a child before the search's own process, which then tracks that rule itself.
OOM_SCORE_ADJ = 1000


class ForkedRunFailed(RuntimeError):
    """The child raised, died without a result (a signal: on Linux usually the kernel's
    out-of-memory killer) or ran past its time.

    Attributes:
        ended: how a child that gave no result ended (``"signal 9"``, ``"exit 3"``,
            ``">120 s"``: stopped at its time limit); None when it raised.
        child_traceback: the traceback of what the child raised ("" otherwise).
    """

    def __init__(self, message: str, ended: Optional[str] = None, child_traceback: str = ""):
        super().__init__(message)
        self.ended = ended
        self.child_traceback = child_traceback


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
        out = ("error", (f"{type(err).__name__}: {err}", traceback.format_exc()))
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

    def result(self, timeout: Optional[float] = None) -> Any:
        """What ``run()`` returned in the child, waiting at most ``timeout`` seconds
        (None: as long as it takes; past it the child is killed).

        Raises:
            ForkedRunFailed: the child raised (its error in the message, its traceback in
                ``child_traceback``), died without a result or ran past ``timeout``
                (``ended`` says how).
        """
        try:
            self._proc.join(timeout)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
                raise ForkedRunFailed(f"{self.label}: stopped after {timeout:g} s",
                                      ended=f">{timeout:g} s")
            code = self._proc.exitcode
            if not os.path.exists(self._path):
                ended = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
                raise ForkedRunFailed(f"{self.label}: the forked process ended with {ended} "
                                      "and no result (signal 9 is usually the out-of-memory "
                                      "killer)", ended=ended)
            with open(self._path, "rb") as f:
                kind, value = pickle.load(f)
            if kind == "error":
                error, child_traceback = value
                raise ForkedRunFailed(f"{self.label}: {error}", child_traceback=child_traceback)
            return value
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)

    def stop(self) -> None:
        """Kills the child (its result is not needed) and removes its directory."""
        if self._proc.is_alive():
            self._proc.kill()
        self._proc.join()
        shutil.rmtree(self._dir, ignore_errors=True)
