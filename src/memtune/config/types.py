"""One strict parser per configuration type.

Every type turns a raw string (from the environment, ``--set k=v``, a config
key) or a Python value (from ``override``/``set_value``/keyword arguments) into
one typed value, or raises :class:`InvalidValue` saying why. The registry turns
that into a :class:`memtune.ConfigError` naming the variable, the value, the
accepted forms and the source, so the types never need to know where a value
came from.

No type guesses: ``"0"`` is false, ``"maybe"`` is an error (never truthy), and
a bad value never falls back to the default.
"""

from __future__ import annotations

import difflib
import math
import pathlib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from memtune.units import ACCEPTED_BYTES, format_bytes, parse_bytes


class InvalidValue(ValueError):
    """Raised by a type's parser. ``key`` names the option-list key at fault (if any)."""

    def __init__(
        self,
        reason: str,
        *,
        key: str | None = None,
        accepted: str | None = None,
        value: Any = None,
        errors: list[InvalidValue] | None = None,
    ):
        super().__init__(reason)
        self.reason = reason
        self.key = key
        self.accepted = accepted
        self.value = value  # the offending part of the input (an option-list key's value)
        self.errors = errors or []  # several independent errors (every bad key of an option list)


class VarType:
    """Base class. Subclasses implement :meth:`parse` (strings) and may override
    :meth:`convert` (Python values), :meth:`format` and :meth:`accepted`."""

    name = "value"

    def parse(self, raw: str) -> Any:
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        """Validate a Python value (not a string). Default: format it and parse."""
        if isinstance(value, str):
            return self.parse(value)
        return self.parse(self.format(value))

    def format(self, value: Any) -> str:
        """Render a value the way a user would write it in the environment."""
        return "" if value is None else str(value)

    def accepted(self) -> str:
        """The accepted forms, for error messages and docs."""
        return self.name

    def describe(self) -> str:
        """Short type description for docs (type column)."""
        return self.name


# ---------------------------------------------------------------- scalars

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class Bool(VarType):
    """Only 1/0/true/false/yes/no/on/off, in any case. Nothing else is truthy."""

    def format(self, value: Any) -> str:
        return "" if value is None else ("true" if value else "false")

    name = "bool"

    def parse(self, raw: str) -> bool:
        text = raw.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise InvalidValue("not a boolean", accepted=self.accepted())

    def convert(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected a boolean, got {type(value).__name__}", accepted=self.accepted())

    def accepted(self) -> str:
        return "one of 1, 0, true, false, yes, no, on, off (any case)"


def _number_text(raw: str) -> str:
    return raw.strip()


def _num(x: object) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _range_text(lo: object, hi: object, lo_open: bool = False, hi_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f"{'>' if lo_open else '>='} {_num(lo)} and {'<' if hi_open else '<='} {_num(hi)}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_num(lo)}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {_num(hi)}"
    return ""


@dataclass(frozen=True)
class Int(VarType):
    """An integer, optionally bounded and/or required to be a power of two."""

    min: int | None = None
    max: int | None = None
    power_of_two: bool = False

    name = "int"

    def parse(self, raw: str) -> int:
        text = _number_text(raw)
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise InvalidValue("not an integer", accepted=self.accepted())
        return self._check(int(text))

    def convert(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            if isinstance(value, float) and value.is_integer():
                return self._check(int(value))
            raise InvalidValue(f"expected an integer, got {type(value).__name__}", accepted=self.accepted())
        return self.parse(value) if isinstance(value, str) else self._check(value)

    def _check(self, n: int) -> int:
        if (self.min is not None and n < self.min) or (self.max is not None and n > self.max):
            raise InvalidValue(f"out of range (must be {_range_text(self.min, self.max)})", accepted=self.accepted())
        if self.power_of_two and (n <= 0 or n & (n - 1)):
            raise InvalidValue("not a power of two", accepted=self.accepted())
        return n

    def accepted(self) -> str:
        parts = ["a power of two" if self.power_of_two else "an integer"]
        rng = _range_text(self.min, self.max)
        if rng:
            parts.append(rng)
        return " ".join(parts)

    def describe(self) -> str:
        return self.accepted().replace("an integer", "int").replace("a power of two", "int (power of two)")


@dataclass(frozen=True)
class Float(VarType):
    """A finite real number, optionally bounded (inclusive or exclusive)."""

    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    max_exclusive: bool = False

    name = "float"

    def parse(self, raw: str) -> float:
        text = _number_text(raw)
        if not re.fullmatch(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", text):
            raise InvalidValue("not a number", accepted=self.accepted())
        return self._check(float(text))

    def convert(self, value: Any) -> float:
        if isinstance(value, bool):
            raise InvalidValue("expected a number, got bool", accepted=self.accepted())
        if isinstance(value, (int, float)):
            return self._check(float(value))
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected a number, got {type(value).__name__}", accepted=self.accepted())

    def _check(self, x: float) -> float:
        if not math.isfinite(x):
            raise InvalidValue("not a finite number", accepted=self.accepted())
        lo, hi = self.min, self.max
        if lo is not None and (x < lo or (self.min_exclusive and x == lo)):
            raise InvalidValue(f"out of range (must be {self._rng()})", accepted=self.accepted())
        if hi is not None and (x > hi or (self.max_exclusive and x == hi)):
            raise InvalidValue(f"out of range (must be {self._rng()})", accepted=self.accepted())
        return x

    def _rng(self) -> str:
        return _range_text(self.min, self.max, self.min_exclusive, self.max_exclusive)

    def format(self, value: Any) -> str:
        return "" if value is None else repr(float(value))

    def accepted(self) -> str:
        rng = self._rng()
        return f"a number {rng}" if rng else "a number"

    def describe(self) -> str:
        rng = self._rng()
        return f"{self.name} {rng}" if rng else self.name


@dataclass(frozen=True)
class Ratio(Float):
    """A non-negative multiplier (``1.7`` = 170 %). Bounded below by 0 unless told."""

    min: float | None = 0.0
    name = "ratio"


# ------------------------------------------------------------------ sizes


@dataclass(frozen=True)
class Bytes(VarType):
    """A byte size: ``4096``, ``2MB`` (10^6), ``1.5GiB`` (2^30), ``512KiB``."""

    min: int | None = None
    max: int | None = None

    name = "bytes"

    def parse(self, raw: str) -> int:
        try:
            n = parse_bytes(raw)
        except ValueError as e:
            raise InvalidValue(_strip_expected(str(e)) or "not a byte size", accepted=self.accepted()) from None
        return self._check(n)

    def convert(self, value: Any) -> int:
        if isinstance(value, bool):
            raise InvalidValue("expected a byte size, got bool", accepted=self.accepted())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            if value < 0:
                raise InvalidValue("a size cannot be negative", accepted=self.accepted())
            return self._check(value)
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected a byte size, got {type(value).__name__}", accepted=self.accepted())

    def _check(self, n: int) -> int:
        if (self.min is not None and n < self.min) or (self.max is not None and n > self.max):
            lo = format_bytes(self.min) if self.min is not None else None
            hi = format_bytes(self.max) if self.max is not None else None
            raise InvalidValue(f"out of range (must be {_range_text(lo, hi)})", accepted=self.accepted())  # type: ignore[arg-type]
        return n

    def format(self, value: Any) -> str:
        return "" if value is None else str(int(value))

    def accepted(self) -> str:
        return ACCEPTED_BYTES


def _strip_expected(message: str) -> str:
    """parse_bytes messages end with 'expected <forms>'; keep only the reason."""
    head = message.split("; expected", 1)[0]
    if head.startswith("expected "):
        return "not a byte size"
    return head


@dataclass(frozen=True)
class SizeSpec:
    """A size given either in bytes or as a fraction of some total (``90%``).

    ``resolve(total)`` turns it into bytes once the total (device capacity,
    physical RAM) is known. Zero means "no limit" / "off" for every variable
    memtune declares with this type.
    """

    bytes: int | None = None
    fraction: float | None = None

    def resolve(self, total_bytes: int) -> int:
        if self.fraction is not None:
            return int(self.fraction * total_bytes)
        return int(self.bytes or 0)

    @property
    def is_zero(self) -> bool:
        return not self.bytes and not self.fraction

    def __bool__(self) -> bool:
        return not self.is_zero

    def __str__(self) -> str:
        if self.fraction is not None:
            pct = self.fraction * 100
            return f"{pct:g}%"
        return str(self.bytes)


@dataclass(frozen=True)
class SizeOrFraction(VarType):
    """``90%`` or ``0.9`` (a share of a total), or a byte size (``4GiB``, ``4096``).

    A bare integer is bytes (as CuPy reads ``CUPY_GPU_MEMORY_LIMIT``); a bare
    number with a decimal point is a fraction and must lie in [0, 1].
    """

    allow_bytes: bool = True
    name = "size or fraction"

    def parse(self, raw: str) -> SizeSpec:
        text = raw.strip()
        if text.endswith("%"):
            num = text[:-1].strip()
            if not re.fullmatch(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)", num):
                raise InvalidValue("not a percentage", accepted=self.accepted())
            pct = float(num)
            if pct > 100:
                raise InvalidValue("a percentage must be between 0% and 100%", accepted=self.accepted())
            return SizeSpec(fraction=pct / 100)
        if re.fullmatch(r"(?:[0-9]*\.[0-9]*)", text) and text != ".":
            frac = float(text)
            if frac > 1:
                raise InvalidValue("a fraction must be between 0 and 1", accepted=self.accepted())
            return SizeSpec(fraction=frac)
        if not self.allow_bytes:
            if re.fullmatch(r"[0-9]+", text) and int(text) in (0, 1):
                return SizeSpec(fraction=float(text))
            raise InvalidValue("not a percentage or fraction", accepted=self.accepted())
        try:
            n = parse_bytes(text)
        except ValueError:
            raise InvalidValue("not a percentage, fraction or byte size", accepted=self.accepted()) from None
        return SizeSpec(bytes=n)

    def convert(self, value: Any) -> SizeSpec:
        if isinstance(value, SizeSpec):
            return value
        if isinstance(value, bool):
            raise InvalidValue("expected a size or fraction, got bool", accepted=self.accepted())
        if isinstance(value, float):
            if not 0 <= value <= 1:
                raise InvalidValue("a fraction must be between 0 and 1", accepted=self.accepted())
            return SizeSpec(fraction=value)
        if isinstance(value, int):
            if value < 0:
                raise InvalidValue("a size cannot be negative", accepted=self.accepted())
            return self.parse(str(value))
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected a size or fraction, got {type(value).__name__}", accepted=self.accepted())

    def format(self, value: Any) -> str:
        return "" if value is None else str(value)

    def accepted(self) -> str:
        frac = "a percentage (90%) or a fraction with a decimal point (0.9)"
        if not self.allow_bytes:
            return frac
        return f"{frac}, or a byte size: {ACCEPTED_BYTES}"

    def describe(self) -> str:
        return "size or fraction" if self.allow_bytes else "fraction"


@dataclass(frozen=True)
class Percent(VarType):
    """A percentage in [0, 100], written ``5`` or ``5%`` (as MXNet reads its reserve).

    Returns the number of percent (``5`` -> 5); ``integer=True`` requires a
    whole number, as MXNet's ``int`` environment reads do.
    """

    integer: bool = False
    name = "percent"

    def parse(self, raw: str) -> float | int:
        text = raw.strip()
        if text.endswith("%"):
            text = text[:-1].strip()
        pattern = r"[0-9]+" if self.integer else r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
        if not re.fullmatch(pattern, text):
            raise InvalidValue("not a whole percentage" if self.integer else "not a percentage", accepted=self.accepted())
        value: float | int = int(text) if self.integer else float(text)
        if value > 100:
            raise InvalidValue("a percentage must be between 0 and 100", accepted=self.accepted())
        return value

    def convert(self, value: Any) -> float | int:
        if isinstance(value, bool):
            raise InvalidValue("expected a percentage, got bool", accepted=self.accepted())
        if isinstance(value, (int, float)):
            return self.parse(str(int(value) if self.integer and float(value).is_integer() else value))
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected a percentage, got {type(value).__name__}", accepted=self.accepted())

    def accepted(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        return f"{kind} of percent between 0 and 100, with or without '%' (e.g. 5 or 5%)"

    def describe(self) -> str:
        return "percent (0-100)"


# ---------------------------------------------------------- choices, text


class Enum(VarType):
    """One of fixed choices, matched case-insensitively; returns the canonical spelling."""

    name = "enum"

    def __init__(self, *choices: str):
        if not choices:
            raise ValueError("Enum needs at least one choice")
        self.choices: tuple[str, ...] = tuple(choices)
        self._lookup = {c.lower(): c for c in choices}

    def parse(self, raw: str) -> str:
        text = raw.strip()
        hit = self._lookup.get(text.lower())
        if hit is None:
            close = difflib.get_close_matches(text.lower(), list(self._lookup), n=1, cutoff=0.5)
            hint = f" (did you mean {self._lookup[close[0]]!r}?)" if close else ""
            raise InvalidValue(f"not a known choice{hint}", accepted=self.accepted())
        return hit

    def convert(self, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidValue(f"expected one of the choices, got {type(value).__name__}", accepted=self.accepted())
        return self.parse(value)

    def accepted(self) -> str:
        return "one of " + ", ".join(self.choices) + " (any case)"

    def describe(self) -> str:
        return " | ".join(self.choices)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Enum) and other.choices == self.choices

    def __hash__(self) -> int:
        return hash(self.choices)

    def __repr__(self) -> str:
        return f"Enum{self.choices!r}"


@dataclass(frozen=True)
class Str(VarType):
    """Any text (surrounding whitespace removed); ``allow_empty=False`` rejects ''."""

    allow_empty: bool = True
    name = "str"

    def parse(self, raw: str) -> str:
        text = raw.strip()
        if not text and not self.allow_empty:
            raise InvalidValue("empty", accepted=self.accepted())
        return text

    def convert(self, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidValue(f"expected text, got {type(value).__name__}", accepted=self.accepted())
        return self.parse(value)

    def accepted(self) -> str:
        return "any text" if self.allow_empty else "non-empty text"


@dataclass(frozen=True)
class Path(VarType):
    """A file-system path (``~`` expanded). Not required to exist."""

    name = "path"

    def parse(self, raw: str) -> pathlib.Path:
        text = raw.strip()
        if not text:
            raise InvalidValue("empty path", accepted=self.accepted())
        if "\x00" in text:
            raise InvalidValue("a path cannot contain NUL", accepted=self.accepted())
        return pathlib.Path(text).expanduser()

    def convert(self, value: Any) -> pathlib.Path:
        if isinstance(value, pathlib.PurePath):
            return self.parse(str(value))
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected a path, got {type(value).__name__}", accepted=self.accepted())

    def accepted(self) -> str:
        return "a file path"


class BitFlags(VarType):
    """Named bits joined by ``|`` or ``,`` (``ALLOCATIONS|RECYCLES``, any case),
    or an integer (decimal or ``0x`` hex) using only the known bits. Returns an int."""

    name = "flags"

    def __init__(self, **bits: int):
        if not bits:
            raise ValueError("BitFlags needs at least one named bit")
        self.bits: dict[str, int] = dict(bits)
        self._lookup = {k.lower(): v for k, v in bits.items()}
        self.mask = 0
        for v in bits.values():
            self.mask |= v

    def parse(self, raw: str) -> int:
        text = raw.strip()
        if re.fullmatch(r"[0-9]+|0[xX][0-9a-fA-F]+", text):
            return self._check(int(text, 0) if text.lower().startswith("0x") else int(text))
        if not text:
            raise InvalidValue("empty", accepted=self.accepted())
        value = 0
        for part in re.split(r"[|,+]", text):
            name = part.strip().lower()
            if name not in self._lookup:
                close = difflib.get_close_matches(name, list(self._lookup), n=1, cutoff=0.5)
                hint = f" (did you mean {close[0].upper()}?)" if close else ""
                raise InvalidValue(f"unknown flag {part.strip()!r}{hint}", accepted=self.accepted())
            value |= self._lookup[name]
        return value

    def convert(self, value: Any) -> int:
        if isinstance(value, bool):
            raise InvalidValue("expected flags, got bool", accepted=self.accepted())
        if isinstance(value, int):
            return self._check(value)
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected flags, got {type(value).__name__}", accepted=self.accepted())

    def _check(self, n: int) -> int:
        if n < 0:
            raise InvalidValue("flags cannot be negative", accepted=self.accepted())
        if n & ~self.mask:
            raise InvalidValue(f"unknown bits 0x{n & ~self.mask:x}", accepted=self.accepted())
        return n

    def names(self, value: int) -> list[str]:
        return [k for k, v in self.bits.items() if value & v == v and v]

    def format(self, value: Any) -> str:
        if value is None:
            return ""
        names = self.names(int(value))
        return "|".join(names) if names else str(int(value))

    def accepted(self) -> str:
        bits = ", ".join(f"{k}={v}" for k, v in self.bits.items())
        return f"flag names joined by '|' ({bits}) or an integer made of those bits"

    def describe(self) -> str:
        return "flags: " + "|".join(self.bits)

    def __repr__(self) -> str:
        return f"BitFlags({self.bits!r})"


# ------------------------------------------------------------ option list


@dataclass
class Option:
    """One key of an :class:`OptionList`: its type, default, unit and meaning.

    ``effect=False`` marks a key memtune accepts (because the framework does)
    but does not model; the docs say so.
    """

    type: VarType
    default: Any
    doc: str
    unit: str = ""
    effect: bool = True
    default_doc: str | None = None  # replaces the rendered default in docs

    def format_default(self) -> str:
        if self.default_doc is not None:
            return self.default_doc
        return "unset" if self.default is None else self.type.format(self.default)


def split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets: ``a:1,b:[2,3]`` -> ``["a:1", "b:[2,3]"]``.

    The one splitter for option lists (``PYTORCH_CUDA_ALLOC_CONF``), ``--set``
    values and ``--grid`` value lists. Raises ValueError on unbalanced brackets.
    """
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced ']'")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError("unbalanced '['")
    items.append(text[start:])
    return items


class OptionList(VarType):
    """``key:value,key:value`` with typed keys (as ``PYTORCH_CUDA_ALLOC_CONF``).

    Values may be bracketed lists containing commas (``[256:1,>:8]``); a key's
    type receives the text between the brackets, brackets included. Returns a
    dict with every key, defaults filled in. An unknown key is an error with a
    suggestion; a repeated key takes its last value, as PyTorch's parser does.
    """

    name = "option list"

    def __init__(self, options: Mapping[str, Option]):
        self.options: dict[str, Option] = dict(options)

    def defaults(self) -> dict[str, Any]:
        return {k: o.default for k, o in self.options.items()}

    def split(self, raw: str) -> list[tuple[str, str]]:
        """Split ``raw`` into (key, value-text) pairs; brackets nest commas."""
        pairs: list[tuple[str, str]] = []
        try:
            items = split_top_level(raw)
        except ValueError as e:
            raise InvalidValue(str(e), accepted=self.accepted()) from None
        for item in items:
            if not item.strip():
                continue
            key, sep, value = item.partition(":")
            key = key.strip()
            if not sep:
                raise InvalidValue(f"{item.strip()!r} is not key:value", key=key or None, accepted=self.accepted())
            if not value.strip():
                raise InvalidValue("missing value", key=key, accepted=self.accepted())
            pairs.append((key, value.strip()))
        return pairs

    def option(self, key: str) -> Option:
        opt = self.options.get(key)
        if opt is None:
            close = difflib.get_close_matches(key, list(self.options), n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise InvalidValue(f"unknown key {key!r}{hint}", key=key, accepted="keys: " + ", ".join(self.options))
        return opt

    def parse_key(self, key: str, raw: Any) -> Any:
        try:
            opt = self.option(key)
        except InvalidValue as e:
            e.value = raw
            raise
        try:
            return opt.type.convert(raw)
        except InvalidValue as e:
            raise InvalidValue(e.reason, key=key, accepted=e.accepted or opt.type.accepted(), value=raw) from None

    def _parse_pairs(self, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
        result = self.defaults()
        errors: list[InvalidValue] = []
        for key, value in pairs:
            try:
                result[key] = self.parse_key(key, value)
            except InvalidValue as e:
                errors.append(e)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise InvalidValue("; ".join(e.reason for e in errors), key=errors[0].key, errors=errors)
        return result

    def parse(self, raw: str) -> dict[str, Any]:
        return self._parse_pairs(self.split(raw))

    def convert(self, value: Any) -> dict[str, Any]:
        if isinstance(value, str):
            return self.parse(value)
        if isinstance(value, Mapping):
            return self._parse_pairs((str(k), v) for k, v in value.items())
        raise InvalidValue(f"expected key:value text or a dict, got {type(value).__name__}", accepted=self.accepted())

    def format(self, value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        parts = []
        for k, v in value.items():
            opt = self.options.get(k)
            if opt is None or v == opt.default:
                continue
            parts.append(f"{k}:{opt.type.format(v)}")
        return ",".join(parts)

    def accepted(self) -> str:
        return "comma-separated key:value pairs with keys " + ", ".join(self.options)

    def describe(self) -> str:
        return "option list"

    def __repr__(self) -> str:
        return f"OptionList({list(self.options)!r})"


def all_types() -> Iterable[type[VarType]]:
    """Every concrete type in this module (for docs and tests)."""
    return (Bool, Int, Float, Ratio, Bytes, SizeOrFraction, Percent, Enum, Str, Path, BitFlags, OptionList)
