"""CSV traces: RMM logging-adaptor logs and buffer-lifetime tables.

RMM (``rmm::mr::logging_resource_adaptor``): header
``Thread,Time,Action,Pointer,Size,Stream``; each row is written with the
pattern ``%t,%H:%M:%S.%f,<action>,<pointer>,<size>,<stream>``, e.g.
``140573312345856,14:03:27.123456,allocate,0x7f8a40000000,1024,0x0``.
Actions: ``allocate``, ``free`` (older releases and docs: ``deallocate``) and
``allocate failure`` (pointer ``0x0`` or ``(nil)``), kept as an ``oom`` event
that replays ignore. Time of day becomes microseconds since the first midnight
(a log that runs past midnight keeps counting up); a plain number of seconds
(``1634567890.123456``, the form in RMM's docs) is accepted too.

Lifetime tables (``id,lower,upper,size``; the buffer is live on [lower, upper)):
alloc at ``lower``, free at ``upper``; at equal times frees come first. The id
is the address; ``time_us`` carries the table's logical time.
"""

from __future__ import annotations

import csv
import re
from typing import IO, Callable, Iterator

from memtune.errors import TraceError
from memtune.trace.formats._common import DECODE_ERRORS, PathLike, StreamChecker, count, describe, display, open_text
from memtune.trace.model import Action, DeviceTrace, Event, Trace

RMM_FORMAT = "rmm-log"
LIFETIMES_FORMAT = "lifetimes"
RMM_COLUMNS = ("thread", "time", "action", "pointer", "size", "stream")
LIFETIME_COLUMNS = ("id", "lower", "upper", "size")

_TIME_OF_DAY = re.compile(r"^\s*(\d{1,2}):(\d{2}):(\d{2})(?:[.:](\d{1,9}))?\s*$")
_DAY_US = 86_400_000_000


def _header(head: bytes) -> list[str]:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    first = text.split("\n", 1)[0].strip().strip("\r")
    return [c.strip().lower() for c in first.split(",")]


def looks_like_rmm(head: bytes) -> bool:
    return sorted(_header(head)) == sorted(RMM_COLUMNS)


def looks_like_lifetimes(head: bytes) -> bool:
    return sorted(_header(head)) == sorted(LIFETIME_COLUMNS)


def _rows(
    f: IO[str], path: str, expected: tuple[str, ...], what: str, columns_out: list[str] | None = None
) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) per row; ``columns_out`` receives the lower-case
    column names in file order. TraceError on a wrong header or row."""
    reader = csv.reader(f)
    try:
        header = next(reader, None)
    except (csv.Error, *DECODE_ERRORS) as e:
        raise TraceError(f"cannot read the CSV header: {describe(e)}", path=path, location="line 1") from None
    if header is None:
        raise TraceError(f"the file is empty (a {what} starts with the header {','.join(expected)})", path=path)
    names = [h.strip().lower() for h in header]
    if sorted(names) != sorted(expected):
        raise TraceError(
            f"unexpected CSV header {','.join(header)[:120]!r}; a {what} has the columns {','.join(expected)}",
            path=path,
            location="line 1",
        )
    if columns_out is not None:
        columns_out[:] = names
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except (csv.Error, *DECODE_ERRORS) as e:
            raise TraceError(f"cannot read the CSV row: {describe(e)}", path=path, location=f"line {reader.line_num}") from None
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(names):
            raise TraceError(
                f"expected {len(names)} fields ({','.join(expected)}), found {len(row)} (truncated or corrupt line?)",
                path=path,
                location=f"line {reader.line_num}",
            )
        yield reader.line_num, row


def _int(text: str, column: str, path: str, where: Callable[[], str], *, base: int = 10) -> int:
    t = text.strip()
    try:
        if base == 16 or t.lower().startswith(("0x", "-0x")):
            return int(t, 16)
        return int(t)
    except ValueError:
        kind = "a hexadecimal" if base == 16 else "an integer"
        raise TraceError(f"column {column} should be {kind} number, got {t[:40]!r}", path=path, location=where()) from None


def _pointer(text: str, path: str, where: Callable[[], str]) -> int:
    t = text.strip().lower()
    if t in ("(nil)", "nil", "null", "nullptr", "0", "0x0", ""):
        return 0
    return _int(t, "Pointer", path, where, base=16 if not t.isdigit() else 10)


# ---------------------------------------------------------------------------
# RMM


def _rmm_time(text: str, path: str, where: Callable[[], str]) -> float:
    m = _TIME_OF_DAY.match(text)
    if m:
        h, mi, s, frac = m.groups()
        if int(h) > 23 or int(mi) > 59 or int(s) > 60:
            raise TraceError(f"column Time has an impossible time of day {text.strip()!r}", path=path, location=where())
        us = (int(h) * 3600 + int(mi) * 60 + int(s)) * 1_000_000
        if frac:
            us += int((frac + "000000")[:6])
        return float(us)
    try:
        seconds = float(text)
    except ValueError:
        raise TraceError(
            f"column Time should be HH:MM:SS.ffffff (as RMM writes it) or seconds, got {text.strip()[:40]!r}",
            path=path,
            location=where(),
        ) from None
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise TraceError(f"column Time is not a finite number: {text.strip()!r}", path=path, location=where())
    return seconds * 1e6


def read_rmm(path: PathLike, *, lenient: bool = False) -> Trace:
    source = display(path)
    checker = StreamChecker(source, lenient=lenient)
    day_offset = 0.0
    last = None
    names: list[str] = []
    with open_text(path) as f:
        for line, fields in _rows(f, source, RMM_COLUMNS, "RMM logging-adaptor log", names):
            row = dict(zip(names, fields))
            where = lambda line=line: f"line {line}"  # noqa: E731
            action = row["action"].strip().lower()
            size = _int(row["size"], "Size", source, where)
            stream = _pointer(row["stream"], source, where)
            t = _rmm_time(row["time"], source, where)
            if ":" in row["time"]:
                if last is not None and t + day_offset < last - _DAY_US / 2:
                    day_offset += _DAY_US  # the log ran past midnight
                t += day_offset
            last = t
            if action == "allocate":
                ev = Event(Action.ALLOC, _pointer(row["pointer"], source, where), size, stream, t)
            elif action in ("free", "deallocate"):
                ev = Event(Action.FREE, _pointer(row["pointer"], source, where), size, stream, t)
            elif action == "allocate failure":
                ev = Event(Action.OOM, 0, size, stream, t)
            else:
                if lenient:
                    count(checker.skipped, "unknown_action")
                    continue
                raise TraceError(
                    f"unknown Action {row['action'].strip()[:40]!r}; RMM logs use allocate, free (or deallocate) and 'allocate failure'",
                    path=source,
                    location=where(),
                )
            checker.add(ev, where)
    if not checker.events:
        raise TraceError("the RMM log has a header but no events", path=source)
    device = DeviceTrace(device=0, events=checker.events, framework="rmm", skipped=checker.skipped)
    return Trace(source=source, format=RMM_FORMAT, devices=[device])


# ---------------------------------------------------------------------------
# Lifetime tables


def read_lifetimes(path: PathLike, *, lenient: bool = False) -> Trace:
    source = display(path)
    skipped: dict[str, int] = {}
    # (time, 0 = free / 1 = alloc, order in file, id, size, line)
    points: list[tuple[int, int, int, int, int, int]] = []
    names: list[str] = []
    with open_text(path) as f:
        for n, (line, fields) in enumerate(_rows(f, source, LIFETIME_COLUMNS, "lifetime table", names)):
            if n == 0:
                cols = [names.index(c) for c in LIFETIME_COLUMNS]
            where = lambda line=line: f"line {line}"  # noqa: E731
            try:  # fast path; the slow one names the bad column
                ident, lower, upper, size = (int(fields[c]) for c in cols)
            except ValueError:
                ident, lower, upper, size = (
                    _int(fields[c], name, source, where) for c, name in zip(cols, LIFETIME_COLUMNS)
                )
            if size <= 0:
                if lenient:
                    count(skipped, "bad_size")
                    continue
                raise TraceError(f"buffer {ident} has size {size}; sizes must be positive", path=source, location=where())
            if upper <= lower:
                if lenient:
                    count(skipped, "empty_lifetime")
                    continue
                raise TraceError(
                    f"buffer {ident} has upper {upper} <= lower {lower}; a buffer is live on [lower, upper), so upper must be larger",
                    path=source,
                    location=where(),
                )
            points.append((lower, 1, n, ident, size, line))
            points.append((upper, 0, n, ident, size, line))
    if not points:
        raise TraceError("the lifetime table has a header but no rows", path=source)
    points.sort()
    checker = StreamChecker(source, lenient=lenient)
    checker.skipped = skipped
    for time, is_alloc, _n, ident, size, line in points:
        action = Action.ALLOC if is_alloc else Action.FREE
        checker.add(Event(action, ident, size, 0, float(time)), lambda line=line: f"line {line}")
    device = DeviceTrace(device=0, events=checker.events, framework=None, skipped=checker.skipped)
    return Trace(source=source, format=LIFETIMES_FORMAT, devices=[device], metadata={"time_unit": "step"})
