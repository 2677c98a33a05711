"""Checks at the public boundary: arguments are rejected before any work, by name and value.

API functions call ``check_number`` and friends (a ``ValueError`` naming the argument,
the value and what is expected); the CLI uses the ``arg_*`` converters as argparse
types (argparse then prints one usage line and exits 2), and ``check_output_path``
before a search, so that an unwritable ``--out`` or ``--plot`` is found in a second,
not after hours.

Usage::

    limit = check_number("find_strategy", "memory_limit", memory_limit, minimum=0,
                         inclusive=False, none_ok=True, unit="bytes, e.g. 16e9")
    p.add_argument("--devices", type=arg_device_counts)
    check_output_path("frontier", "--plot", args.plot)
"""

from __future__ import annotations

import argparse
import math
import operator
import os
from typing import Any, Iterable, Optional

__all__ = ["check_number", "check_int", "check_choice", "check_output_path", "arg_positive_int",
           "arg_positive_float", "arg_device_counts"]


def check_number(where: str, name: str, value: Any, *, minimum: Optional[float] = None,
                 inclusive: bool = True, none_ok: bool = False, unit: str = "") -> Optional[float]:
    """``value`` as a float, or ValueError naming ``where``'s argument ``name``.

    Rejects text (``"16GB"``, ``"1e-3"`` as YAML reads it), bools, NaN, infinities and
    values under ``minimum`` (or equal to it, unless ``inclusive``)."""
    if value is None and none_ok:
        return None
    hint = f" ({unit})" if unit else ""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ValueError(f"{where}: {name} must be a number{hint}, got {value!r} "
                         f"({type(value).__name__})" + (f"; write {name}=float({value!r}) if you read it as text"
                                                        if isinstance(value, str) else ""))
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{where}: {name} must be finite, got {value!r}")
    if minimum is not None and (number < minimum or (number == minimum and not inclusive)):
        bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
        raise ValueError(f"{where}: {name} must be {bound}{hint}, got {value!r}")
    return number


def check_int(where: str, name: str, value: Any, *, minimum: int = 1, none_ok: bool = False) -> Optional[int]:
    """``value`` as an int >= ``minimum``, or ValueError naming it (2.5 and "4" are refused,
    not truncated or parsed)."""
    if value is None and none_ok:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{where}: {name} must be an int, got {value!r} ({type(value).__name__})") from None
    if number < minimum:
        raise ValueError(f"{where}: {name} must be >= {minimum}, got {number}")
    return number


def check_choice(where: str, name: str, value: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{where}: {name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_output_path(where: str, option: str, path: Optional[str]) -> None:
    """Checks, before any work, that ``path`` can be written as a file: its directory
    exists and is writable, and it is not a directory.

    Raises:
        ValueError: naming the option and the path, and what to do.
    """
    if path is None:
        return
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise ValueError(f"{where}: {option} {path!r} is a directory; give a file name inside it")
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        raise ValueError(f"{where}: {option} {path!r}: directory {parent!r} does not exist; create it "
                         "or choose another path")
    if not os.access(parent, os.W_OK) or (os.path.exists(full) and not os.access(full, os.W_OK)):
        raise ValueError(f"{where}: {option} {path!r} cannot be written; choose another path")


def arg_positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def arg_positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (bytes, seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a finite number > 0")
    return value


def arg_device_counts(text: str) -> list[int]:
    """argparse type: comma-separated device counts, each >= 1 (``1,2,4``)."""
    counts = []
    for part in text.split(","):
        try:
            counts.append(arg_positive_int(part.strip()))
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"device counts {text!r}: {e}; write e.g. 1,2,4,8") from None
    return counts
