"""Parsing and printing byte sizes (``3GiB``, ``512MB``, ``4096``)."""

from __future__ import annotations

import math
import re

from opsched.errors import ProblemError

__all__ = ["format_bytes", "parse_bytes"]

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_bytes(text: str | int) -> int:
    """Parse a size such as ``"3GiB"``, ``"1.5 GB"`` or ``"4096"`` into bytes.

    Examples
    --------
    >>> parse_bytes("3GiB"), parse_bytes("1.5kB"), parse_bytes(12), parse_bytes(4096.0)
    (3221225472, 1500, 12, 4096)
    >>> parse_bytes("9007199254740993")  # past 2^53: exact
    9007199254740993
    >>> parse_bytes(0.8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    opsched.errors.ProblemError: size 0.8: bytes must be a whole number (a share of ...
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ProblemError(f"size must be >= 0, got {text}")
        if text > 2**62:
            raise ProblemError(f"size {text} is too large (max 2^62 bytes)")
        return text
    m = _SIZE.match(str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ProblemError(f"cannot read size {text!r} (examples: 4096, 512MiB, 3GiB, 2GB)")
    unit = _UNITS[m.group(2).lower()]
    if unit == 1 and m.group(1).isdigit():  # whole bytes: exact, not through a float
        if int(m.group(1)) > 2**62:
            raise ProblemError(f"size {text!r} is too large (max 2^62 bytes)")
        return int(m.group(1))
    value = float(m.group(1)) * unit
    if not math.isfinite(value) or value > 2**62:
        raise ProblemError(f"size {text!r} is too large (max 2^62 bytes)")
    if _UNITS[m.group(2).lower()] == 1 and value != int(value):
        # 0.8 would round to 1 byte: more likely meant as a share of the peak
        raise ProblemError(
            f"size {text!r}: bytes must be a whole number (a share of the peak is "
            "memory_cap = 0.8 in an experiment file)"
        )
    return round(value)


def format_bytes(n: float) -> str:
    """Human-readable binary size.

    >>> format_bytes(4096), format_bytes(3 * 2**30), format_bytes(100)
    ('4.0KiB', '3.0GiB', '100B')
    """
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{int(n)}B"
