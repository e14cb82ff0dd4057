"""Byte sizes: strict parsing (``2MB``, ``1.5GiB``) and human formatting.

Decimal units (kB, MB, GB, TB) are powers of 1000 and binary units (KiB, MiB,
GiB, TiB) powers of 1024, as their names say. ``K``/``M``/``G`` alone are
ambiguous and rejected rather than guessed.
"""

from __future__ import annotations

import re
from fractions import Fraction

UNITS: dict[str, int] = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "pb": 1000**5,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "pib": 1024**5,
}

ACCEPTED_BYTES = "an integer number of bytes or a number with a unit: B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 4096, 2MB, 1.5GiB, 512KiB"

_SIZE_RE = re.compile(r"^\s*(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exp>[+-]?[0-9]+))?\s*(?P<unit>[a-zA-Z]*)\s*$")


def parse_bytes(text: str | int) -> int:
    """Parse a byte size. Raises ``ValueError`` with the accepted forms."""
    if isinstance(text, bool):
        raise ValueError(f"expected {ACCEPTED_BYTES}; got a boolean {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"a size cannot be negative; got {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"expected {ACCEPTED_BYTES}; got {text!r}")
    unit = m.group("unit").lower() or "b"  # a bare number is bytes
    if unit not in UNITS:
        raise ValueError(f"unknown unit {m.group('unit')!r} in {text!r}; expected {ACCEPTED_BYTES}")
    # exact arithmetic: a float would round sizes above 2**53 bytes
    number = Fraction(m.group("num")) * Fraction(10) ** int(m.group("exp") or 0)
    value = number * UNITS[unit]
    if value.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return int(value)


def format_bytes(n: int | float, precision: int = 2) -> str:
    """Format bytes with binary units (``1.50 GiB``); exact bytes below 1 KiB."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024
        if n < 1024 or unit == "PiB":
            return f"{sign}{n:.{precision}f} {unit}"
    raise AssertionError("unreachable")
