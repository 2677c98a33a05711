"""A versioned JSON file of measured compute times: key -> seconds.

The file is plain data::

    {"format": "tensoropt.compute_profile", "version": 1,
     "entries": {"<machine key>|<shard key>": 0.00123, ...}}

Keys name the machine (TensorFlow version, CPU model, thread count) and the shard (op
kind, local shapes, split dims, attributes), so one file can hold several machines'
profiles. A shard's key suffixed ``|forward_transient_bytes`` or
``|backward_transient_bytes`` holds bytes instead (its passes' workspace; files written
before these existed lack them, and the profiler measures them on first request). Writes are atomic (a temporary file, then ``os.replace``) and merge with what
another process wrote meanwhile. New entries are written at most every ``autosave_s``
seconds (the first at once), on ``save()``, when the cache is dropped, and when the
interpreter exits.

Usage::

    cache = ProfileCache("~/.cache/tensoropt/compute-profile.json")
    cache.get(key)            # seconds, or None
    cache.put(key, 0.0012)    # kept in memory; written to the file (see above)
    cache.save()              # write now
    ProfileCache(None)        # in memory only
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import time
import weakref
from pathlib import Path

__all__ = ["ProfileCache", "FORMAT", "VERSION", "default_cache_path"]

FORMAT = "tensoropt.compute_profile"
VERSION = 1


def default_cache_path() -> Path:
    """``$TENSOROPT_CACHE_DIR/compute-profile.json``, else ``~/.cache/tensoropt/compute-profile.json``."""
    root = os.environ.get("TENSOROPT_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "tensoropt"
    return base / "compute-profile.json"


def _bad(path: Path, problem: str) -> ValueError:
    return ValueError(f"compute profile cache {path}: {problem}. Delete the file (or pass another "
                      f"cache_path) and re-run to measure again.")


def _read(path: Path) -> dict[str, float]:
    """The entries of the file at ``path`` ({} when it does not exist).

    Raises:
        ValueError: for a file that is not a valid profile of this format and version.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _bad(path, f"not valid JSON ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(path, f"not a compute profile (expected \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise _bad(path, f"version {data.get('version')!r}, this TensorOpt reads version {VERSION}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        raise _bad(path, "\"entries\" is not an object of key -> seconds")
    out = {}
    for key, value in entries.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise _bad(path, f"entry {key!r} is {value!r}, expected seconds >= 0")
        out[key] = float(value)
    return out


class ProfileCache:
    """Measured seconds by key, in memory and (unless ``path`` is None) on disk.

    Args:
        path: the JSON file; None keeps the cache in memory only. ``~`` is expanded.
        autosave_s: write new entries at most this often (0: after every ``put``).

    Raises:
        ValueError: if the file exists but is corrupt or of another format or version.
    """

    def __init__(self, path: str | os.PathLike | None, autosave_s: float = 5.0):
        self.path = None if path is None else Path(path).expanduser()
        self.autosave_s = float(autosave_s)
        self._entries: dict[str, float] = {} if self.path is None else _read(self.path)
        self._dirty = False
        self._saved_at = -float("inf")
        if self.path is not None:
            atexit.register(_save_if_alive, weakref.ref(self))

    def __del__(self) -> None:
        # entries put within autosave_s of the last write go with a cache dropped before
        # exit (a cost model per model in one process); atexit saves only live caches
        if getattr(self, "_dirty", False):
            _save_quietly(self)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> float | None:
        return self._entries.get(key)

    def put(self, key: str, seconds: float) -> None:
        """Records ``seconds`` for ``key`` and writes the file."""
        if not seconds >= 0:
            raise ValueError(f"seconds={seconds!r} for {key!r}: a compute time must be >= 0")
        self._entries[key] = float(seconds)
        self._dirty = True
        if time.monotonic() - self._saved_at >= self.autosave_s:
            self.save()

    def entries(self) -> dict[str, float]:
        return dict(self._entries)

    def save(self) -> None:
        """Writes every entry (merged over the file's current ones) atomically."""
        if self.path is None or not self._dirty:
            return
        merged = _read(self.path)
        merged.update(self._entries)
        self._entries = merged
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "version": VERSION, "entries": dict(sorted(merged.items()))}
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=0)
                f.write("\n")
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self._dirty = False
        self._saved_at = time.monotonic()


def _save_quietly(cache: ProfileCache) -> None:
    try:
        cache.save()
    except (OSError, ValueError):  # pragma: no cover - best effort when dropped or at exit
        pass


def _save_if_alive(ref: "weakref.ref[ProfileCache]") -> None:
    cache = ref()
    if cache is not None:
        _save_quietly(cache)
