"""Printing quantities in units that fit them (pure; imports nothing).

Usage::

    format_bytes(3277)         # '3.2 KiB'
    format_bytes(1.5 * 2**30)  # '1.50 GiB'
    format_seconds(0.0123)     # '12.30 ms'
    format_seconds(2.1e-6)     # '2.10 us'
"""

from __future__ import annotations

__all__ = ["format_bytes", "format_seconds"]


def format_bytes(nbytes: float) -> str:
    """Bytes in the unit that fits: ``512 B``, ``3.2 KiB``, ``41.0 MiB``, ``1.50 GiB``."""
    value = float(nbytes)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            digits = 2 if unit == "GiB" else 1
            return f"{sign}{value / scale:.{digits}f} {unit}"
    return f"{sign}{value:.0f} B"


def format_seconds(seconds: float) -> str:
    """Seconds in the unit that fits, three significant digits or more: ``1.80 s``,
    ``12.30 ms``, ``2.10 us`` (a tiny model's step is microseconds; ``0.00 ms`` says nothing)."""
    value = float(seconds)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for unit, scale in (("s", 1.0), ("ms", 1e-3)):
        if value >= scale:
            return f"{sign}{value / scale:.2f} {unit}"
    return f"{sign}{value / 1e-6:.2f} us"
