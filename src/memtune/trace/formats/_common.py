"""Helpers every reader shares: transparent gzip, error wrapping, and the
alloc/free consistency check that turns a bad trace into one clear TraceError.

Readers never let a json/csv/pickle/gzip/zlib exception escape: a user handing
memtune a broken file gets ``memtune.TraceError`` naming the file and where.
"""

from __future__ import annotations

import contextlib
import math
import gzip
import io
import os
import zlib
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator, Mapping

from memtune.errors import TraceError
from memtune.trace.model import Action, Event

GZIP_MAGIC = b"\x1f\x8b"

#: Exceptions that mean "the bytes are broken" (not a bug in memtune).
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # gzip.BadGzipFile is an OSError
    EOFError,  # truncated gzip stream
    zlib.error,
    UnicodeDecodeError,
    ValueError,
    RecursionError,
    MemoryError,
    OverflowError,
)

PathLike = str | os.PathLike[str]


def display(path: PathLike) -> str:
    return str(path)


def is_gzip(path: PathLike) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its suffix)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == GZIP_MAGIC
    except FileNotFoundError:
        raise TraceError("no such file", path=display(path)) from None
    except IsADirectoryError:
        raise TraceError("is a directory, not a trace file", path=display(path)) from None
    except OSError as e:
        raise TraceError(f"cannot read the file: {e.strerror or e}", path=display(path)) from None


@contextlib.contextmanager
def open_binary(path: PathLike) -> Iterator[IO[bytes]]:
    """Open ``path`` for reading bytes, decompressing gzip transparently (by magic bytes)."""
    gz = is_gzip(path)
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise TraceError(f"cannot open the file: {e.strerror or e}", path=display(path)) from None
    try:
        if gz:
            with gzip.GzipFile(fileobj=raw, mode="rb") as g:
                yield g  # type: ignore[misc]
        else:
            yield raw
    finally:
        raw.close()


@contextlib.contextmanager
def open_text(path: PathLike) -> Iterator[IO[str]]:
    """Open ``path`` as UTF-8 text (BOM tolerated), gzip transparent; newlines kept as-is."""
    with open_binary(path) as b:
        yield io.TextIOWrapper(b, encoding="utf-8-sig", newline="")  # type: ignore[arg-type]


def read_head(path: PathLike, n: int = 65536) -> bytes:
    """The first ``n`` decompressed bytes (for content sniffing). Corrupt gzip -> TraceError."""
    with open_binary(path) as f:
        try:
            return f.read(n)
        except DECODE_ERRORS as e:
            raise TraceError(f"cannot decompress the start of the file: {describe(e)}", path=display(path)) from None


def describe(e: BaseException) -> str:
    """A one-line description of a low-level decode error."""
    if isinstance(e, RecursionError):
        return "data nested too deeply"
    if isinstance(e, MemoryError):
        return "data too large to decode"
    if isinstance(e, EOFError):
        return f"file ends unexpectedly (truncated?){': ' + str(e) if str(e) else ''}"
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if not isinstance(e, (ValueError, OSError)) else text


# ---------------------------------------------------------------------------
# Consistency of an alloc/free stream


#: Every reason a reader counts in DeviceTrace.skipped, with what it means
#: (for reports). All but free_before_start are skipped only when lenient.
SKIP_REASONS = {
    "bad_size": "an allocation (or segment event, or lifetime row) of zero or negative size",
    "alloc_of_live_address": "an allocation at an address that is already live",
    "double_free": "a second free of an address already freed",
    "free_of_unknown_address": "a free of an address that was never allocated",
    "free_size_mismatch": "a free whose size differs from its allocation's",
    "unknown_action": "an action the format does not define",
    "empty_lifetime": "a lifetime-table row with upper <= lower",
    "malformed_event": "a profiler [memory] event with missing or non-integer fields",
    "inconsistent_segment_state": "a snapshot event that cannot be undone on the final allocator state",
    "free_before_start": "a free of memory allocated before profiling began (profiler traces; expected)",
}


@dataclass
class StreamChecker:
    """Validates one device's alloc/free stream as events are appended.

    By default the first inconsistency raises TraceError naming the file and the
    location; with ``lenient`` the event is dropped and counted by reason.
    ``free_before_start`` (profiler traces) turns frees of unknown addresses
    into an expected, counted case instead of an error.
    """

    path: str
    lenient: bool = False
    free_before_start: bool = False
    events: list[Event] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    live: dict[int, int] = field(default_factory=dict)
    freed: set[int] = field(default_factory=set)

    def seed(self, live: list[tuple[int, int, int]]) -> None:
        for address, size, _stream in live:
            self.live[address] = size

    def problem(self, reason: str, message: str, location: str) -> None:
        if self.lenient:
            self.skipped[reason] = self.skipped.get(reason, 0) + 1
            return
        raise TraceError(
            f"{message} (inconsistent trace; load with lenient=True / --lenient to skip such entries)",
            path=self.path,
            location=location,
        )

    def add(self, ev: Event, location: str | Callable[[], str] = "") -> None:
        """Append ``ev`` if it is consistent. ``location`` may be a string or a
        zero-argument callable (built only when an error is reported)."""
        action = ev.action
        if action is Action.ALLOC:
            if ev.size <= 0:
                return self.problem("bad_size", f"allocation of {ev.size} bytes at address {ev.address:#x}; sizes must be positive", _loc(location))
            if ev.address in self.live:
                return self.problem(
                    "alloc_of_live_address",
                    f"allocation at address {ev.address:#x}, which is still live (allocated {self.live[ev.address]} bytes, never freed)",
                    _loc(location),
                )
            self.live[ev.address] = ev.size
            self.freed.discard(ev.address)
        elif action is Action.FREE:
            size = self.live.get(ev.address)
            if size is None:
                if ev.address in self.freed:
                    return self.problem("double_free", f"double free of address {ev.address:#x}", _loc(location))
                if self.free_before_start:
                    self.skipped["free_before_start"] = self.skipped.get("free_before_start", 0) + 1
                    self.freed.add(ev.address)
                    return None
                return self.problem("free_of_unknown_address", f"free of address {ev.address:#x}, which was never allocated", _loc(location))
            if ev.size < 0 or (ev.size and ev.size != size):
                return self.problem(
                    "free_size_mismatch",
                    f"free of address {ev.address:#x} with size {ev.size}, but it was allocated with size {size}",
                    _loc(location),
                )
            del self.live[ev.address]
            self.freed.add(ev.address)
        self.events.append(ev)
        return None


def _loc(location: str | Callable[[], str]) -> str:
    return location() if callable(location) else location


def count(skipped: dict[str, int], reason: str, n: int = 1) -> None:
    skipped[reason] = skipped.get(reason, 0) + n


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data (tuples -> lists, NaN/inf -> strings), so
    whatever a reader keeps round-trips through memtune JSON Lines identically."""
    if depth > 32:
        raise ValueError("data nested too deeply")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, depth + 1) for v in value]
    return repr(value)
