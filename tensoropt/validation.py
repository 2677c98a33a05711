"""Checks of the user's arguments at the public boundary, and writes that leave nothing half-done.

Pure Python, imports nothing of tensoropt: the API (``runtime``, ``train``, ``ops``),
the plan, the cluster files and the ``tensoropt`` command all check their inputs here,
before any work, so a mistake is named (the argument and the value) with how to fix it.

Usage::

    n = check_int("find_strategy", "parallelism", parallelism, minimum=1)
    limit = check_positive("find_strategy", "memory_limit", memory_limit, unit="bytes",
                           example="16 * 2**30")
    counts = parse_int_list("--devices", "1,2,4")          # [1, 2, 4]
    check_writable("--plot", "frontier.png")                # before a search of hours
    atomic_write_text("plan.json", text)                    # a temp file, then os.replace
"""

from __future__ import annotations

import argparse
import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

__all__ = ["check_int", "check_positive", "check_finite", "check_flag", "check_choice", "check_mapping", "check_learning_rate", "parse_int_list",
           "check_search_arguments", "check_plan_argument", "CommandParser", "UsageError",
           "positive_int", "positive_float", "int_list", "env_whole_number",
           "check_writable", "check_writable_dir", "atomic_write_text", "atomic_write"]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(where: str, name: str, value: Any, minimum: int = 1, allow_none: bool = False) -> int | None:
    """``value`` as an int >= ``minimum``; a bool, a float or text is refused, not truncated.

    Raises:
        ValueError: ``"<where>: <name>=<value!r> ..."`` saying what is expected.
    """
    if value is None and allow_none:
        return None
    if not _is_int(value):
        hint = f" (int({value!r}) would give {int(value)})" if isinstance(value, float) and \
            math.isfinite(value) else ""
        raise ValueError(f"{where}: {name}={value!r} is a {type(value).__name__}{hint}; "
                         f"give an int >= {minimum}")
    if value < minimum:
        raise ValueError(f"{where}: {name}={value!r} is below {minimum}; give an int >= {minimum}")
    return int(value)


def check_positive(where: str, name: str, value: Any, unit: str = "", example: str = "",
                   allow_none: bool = False) -> float | None:
    """``value`` as a finite float > 0 (a number, not text such as ``"16GB"``).

    Raises:
        ValueError: naming ``name`` and the value, with ``example`` of a good one.
    """
    if value is None and allow_none:
        return None
    how = f"give a number of {unit} > 0" if unit else "give a number > 0"
    how += f", e.g. {example}" if example else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{where}: {name}={value!r} is a {type(value).__name__}, not a number; {how}")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{where}: {name}={value!r} must be finite and > 0; {how}")
    return float(value)


def check_finite(where: str, name: str, value: Any, bound: str = "") -> float:
    """``value`` as a float: a finite Python number (not a bool), ``>= 0`` or ``> 0`` when
    ``bound`` says so.

    Raises:
        ValueError: ``"<where>: <name>=<value!r>; give a finite number[ <bound>]"``.
    """
    if bound not in ("", ">= 0", "> 0"):
        raise ValueError(f"check_finite: bound={bound!r}; give '', '>= 0' or '> 0'")
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or (bound == ">= 0" and value < 0) or (bound == "> 0" and value <= 0)):
        raise ValueError(f"{where}: {name}={value!r}; give a finite number{' ' + bound if bound else ''}")
    return float(value)


def check_flag(where: str, name: str, value: Any) -> bool:
    """``value`` if it is True or False (not 1, 0 or text).

    Raises:
        ValueError: ``"<where>: <name>=<value!r>; give True or False"``.
    """
    if not isinstance(value, bool):
        raise ValueError(f"{where}: {name}={value!r}; give True or False")
    return value


def check_mapping(where: str, name: str, value: Any, example: str) -> Mapping:
    """``value`` if it is a mapping, ``{}`` for None.

    Raises:
        ValueError: naming ``name`` and the type given, with ``example`` of the form.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: {name} is a {type(value).__name__}, not a dict; give {name}={example}")
    return value


def check_choice(where: str, name: str, value: Any, choices) -> Any:
    """``value`` if it is one of ``choices``.

    Raises:
        ValueError: naming ``name``, the value and the choices.
    """
    if value not in choices:
        raise ValueError(f"{where}: unknown {name} {value!r}; choose one of {', '.join(map(str, choices))}")
    return value


def check_learning_rate(where: str, value: Any) -> float:
    """A learning rate: a finite number > 0 (or a positive float's text, as YAML may give,
    refused with the conversion to use).

    Raises:
        ValueError: naming ``learning_rate`` and the value.
    """
    if isinstance(value, str):
        try:
            hint = f"; convert it first: learning_rate=float({value!r})"
            float(value)
        except ValueError:
            hint = "; give a number such as 1e-3"
        raise ValueError(f"{where}: learning_rate={value!r} is text, not a number{hint}")
    return check_positive(where, "learning_rate", value, example="1e-3")


def parse_int_list(name: str, text: str, minimum: int = 1) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``; each item an int >= ``minimum``.

    Raises:
        ValueError: naming ``name`` and the item that is not.
    """
    items = [s.strip() for s in str(text).split(",")]
    out = []
    for item in items:
        try:
            n = int(item)
        except ValueError:
            raise ValueError(f"{name} {text!r}: {item!r} is not an int; give comma-separated device "
                             "counts, e.g. 1,2,4,8") from None
        if n < minimum:
            raise ValueError(f"{name} {text!r}: {n} is below {minimum}; give counts >= {minimum}")
        out.append(n)
    return out


def check_writable(name: str, path: str | os.PathLike, create_parents: bool = False) -> Path:
    """Checks, before any work, that a file can be written at ``path``: it is not a
    directory, its directory exists (or, with ``create_parents``, can be made) and is
    writable, and an existing file is writable.

    Raises:
        ValueError: naming ``name`` and the path, saying what to change.
    """
    p = Path(os.path.expanduser(os.fspath(path)))
    shown = f"cannot write {name} to {os.fspath(path)!r}"
    if p.is_dir():
        raise ValueError(f"{shown}: it is a directory; give a file path inside it, "
                         f"e.g. {os.path.join(os.fspath(path), 'FILE')}")
    parent = p.parent if str(p.parent) else Path(".")
    if create_parents:
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise ValueError(f"{shown}: {str(parent)!r} is a file, not a directory; give another path")
    if not parent.is_dir():
        raise ValueError(f"{shown}: the directory {str(parent)!r} does not exist; create it first "
                         f"(mkdir -p {parent}) or give a path in an existing, writable directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"{shown}: permission denied; give a path in an existing, writable directory")
    return p


def check_writable_dir(name: str, path: str | os.PathLike) -> Path:
    """Checks that ``path`` is a writable directory, or can be made in a writable one.

    Raises:
        ValueError: naming ``name`` and the path.
    """
    p = Path(os.path.expanduser(os.fspath(path)))
    if p.exists() and not p.is_dir():
        raise ValueError(f"{name} {os.fspath(path)!r} is a file, not a directory; give a directory")
    target = p if p.exists() else p.parent if str(p.parent) else Path(".")
    if not target.is_dir() or not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {os.fspath(path)!r} cannot be written (its parent must be an existing, "
                         "writable directory); give another directory")
    return p


def _file_mode(path: Path) -> int:
    """An existing file's permissions, else what ``open`` would give (0o666 less the umask)."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "w") -> None:
    """Writes ``path`` through ``write(file)`` into a temporary file of the same directory,
    then ``os.replace``: ``path`` is either untouched or whole, and no temporary file
    stays behind when ``write`` or the rename fails.

    Raises:
        OSError: as the write or the rename raised it (the temporary file removed).
    """
    path = Path(os.path.expanduser(os.fspath(path)))
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())          # on disk before the rename publishes it
        os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """``atomic_write`` of ``text``."""
    atomic_write(path, lambda f: f.write(text))


def check_search_arguments(where: str, options, option: Any, memory_limit: Any, parallelism: Any,
                           parallelisms: Any, check_peak: Any) -> tuple:
    """``find_strategy``'s arguments checked: ``(memory_limit, parallelism, parallelisms)``
    as float or None, int or None, tuple of ints or None.

    Raises:
        ValueError: naming the argument and its value.
    """
    check_choice(where, "option", option, options)
    memory_limit = check_positive(where, "memory_limit", memory_limit, unit="bytes per device",
                                  example="16 * 2**30 for 16 GiB", allow_none=True)
    parallelism = check_int(where, "parallelism", parallelism, minimum=1, allow_none=True)
    if parallelisms is not None:
        if isinstance(parallelisms, (str, bytes)) or not hasattr(parallelisms, "__iter__"):
            raise ValueError(f"{where}: parallelisms={parallelisms!r} is not a list of device counts; "
                             "give e.g. [1, 2, 4, 8]")
        parallelisms = tuple(check_int(where, f"parallelisms[{i}]", n) for i, n in enumerate(parallelisms))
        if not parallelisms:
            raise ValueError(f"{where}: parallelisms=[] is empty; give device counts, e.g. [1, 2, 4, 8], "
                             "or None for 1, 2, 4, ... up to the cluster")
    if not isinstance(check_peak, bool):
        raise ValueError(f"{where}: check_peak={check_peak!r} is not True or False")
    return memory_limit, parallelism, parallelisms


def check_plan_argument(where: str, plan: Any, plan_type: type) -> Any:
    """``plan`` if it is a ``plan_type`` (or None); a path is refused with ``Plan.load``.

    Raises:
        ValueError: naming ``plan`` and what was given.
    """
    if plan is None or isinstance(plan, plan_type):
        return plan
    if isinstance(plan, (str, os.PathLike)):
        raise ValueError(f"{where}: plan={os.fspath(plan)!r} is a path, not a Plan; read it first: "
                         f"plan=tensoropt.Plan.load({os.fspath(plan)!r})")
    raise ValueError(f"{where}: plan is a {type(plan).__name__}, not a Plan; give find_strategy(...)'s "
                     "result or tensoropt.Plan.load(path)")


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors raise ``UsageError`` (one line, naming the
    option, with ``--help`` as the fix) instead of printing the usage and exiting; the
    ``tensoropt`` command prints it as ``tensoropt <command>: <what> (<how to fix>)``."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


class UsageError(ValueError):
    """A bad command line; its message is the whole line to print (exit status 2)."""


def env_whole_number(name: str, text: str, minimum: int, fix: str) -> int:
    """Environment variable ``name``'s value ``text`` as a whole number >= ``minimum``.

    Raises:
        ValueError: ``"{name}={text!r}: {fix}"`` when it is not one.
    """
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ValueError(f"{name}={text!r}: {fix}")
    return value


def positive_int(text: str) -> int:
    """argparse ``type``: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int; give an int >= 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is below 1; give an int >= 1")
    return value


def positive_float(text: str) -> float:
    """argparse ``type``: a finite number > 0 (``1e9``, ``16e9``; no units)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a number > 0 "
                                         "(bytes as a plain number, e.g. 16e9)") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be finite and > 0")
    return value


def int_list(text: str) -> list[int]:
    """argparse ``type``: comma-separated ints >= 1 (``1,2,4``)."""
    try:
        return parse_int_list("", text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).lstrip()) from None
