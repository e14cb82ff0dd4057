"""memtune's own trace format: versioned JSON Lines (schema in docs/trace-format.md).

Line 1 is a header object ``{"format": "memtune-trace", "version": 1, ...}``
with per-device metadata (settings, capacity, skipped counts, initial
segments of warm traces, event count). Every further line is one event with
compact keys; keys at their default value are omitted. Files ending in ``.gz``
are gzip-compressed. :func:`read` decodes a file as memtune writes it (one event
object a line) in one go, and reads anything else line by line, naming the line of
an error; :func:`iter_device_events` streams line by line.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from typing import IO, Any, Iterator, Mapping

from memtune.errors import TraceError
from memtune.trace.formats._common import DECODE_ERRORS, PathLike, StreamChecker, describe, display, open_text
from memtune.trace.model import Action, BlockState, DeviceTrace, Event, SegmentState, Trace, paused_gc

FORMAT = "memtune-jsonl"
MAGIC = "memtune-trace"
VERSION = 1

_ACTIONS = {a.value: a for a in Action}


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (memtune traces hold finite numbers only)")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def looks_like(head: bytes) -> bool:
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"' + MAGIC.encode() + b'"' in first


# ---------------------------------------------------------------------------
# Writing


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def encode_event(ev: Event, device: int) -> str:
    """One event line (without the newline). Defaults are omitted."""
    parts = [f'{{"a":"{ev.action.value}"']
    if device:
        parts.append(f',"d":{int(device)}')
    if ev.address:
        parts.append(f',"p":{int(ev.address)}')
    if ev.size:
        parts.append(f',"s":{int(ev.size)}')
    if ev.stream:
        parts.append(f',"st":{int(ev.stream)}')
    if ev.time_us is not None:
        t = ev.time_us
        if isinstance(t, float) and not math.isfinite(t):
            raise ValueError(f"time_us {t} is not finite")
        parts.append(f',"t":{t!r}' if isinstance(t, float) else f',"t":{int(t)}')
    if ev.info is not None:
        parts.append(f',"i":{_dump(dict(ev.info))}')
    parts.append("}")
    return "".join(parts)


def _segment(s: SegmentState) -> dict[str, Any]:
    return {
        "address": s.address,
        "total_size": s.total_size,
        "stream": s.stream,
        "pool": s.pool,
        "is_expandable": s.is_expandable,
        "blocks": [[b.address, b.size, b.requested_size, b.allocated] for b in s.blocks],
    }


def header(trace: Trace) -> dict[str, Any]:
    return {
        "format": MAGIC,
        "version": VERSION,
        "source": trace.source,
        "source_format": trace.format,
        "metadata": trace.metadata,
        "devices": [
            {
                "device": d.device,
                "events": len(d.events),
                "framework": d.framework,
                "capacity": d.capacity,
                "settings": d.settings,
                "skipped": d.skipped,
                "initial_segments": [_segment(s) for s in d.initial_segments],
            }
            for d in trace.devices
        ],
    }


def write(trace: Trace, path: PathLike) -> None:
    """Write ``trace`` as memtune JSON Lines; gzip when the name ends in ``.gz``."""
    target = os.fspath(path)
    try:
        head = _dump(header(trace))
    except (TypeError, ValueError) as e:
        raise TraceError(f"cannot save: trace metadata or settings are not JSON data ({e})", path=target) from None
    # Write beside the target and rename at the end: a failed save never leaves half a trace.
    tmp = f"{target}.tmp-{os.getpid()}"
    opener = (lambda: gzip.open(tmp, "wt", encoding="utf-8", newline="\n")) if target.endswith(".gz") else (
        lambda: open(tmp, "w", encoding="utf-8", newline="\n")
    )
    try:
        with opener() as f:
            f.write(head + "\n")
            for d in trace.devices:
                buf: list[str] = []
                for i, ev in enumerate(d.events):
                    try:
                        buf.append(encode_event(ev, d.device))
                    except (TypeError, ValueError) as e:
                        raise TraceError(f"cannot save event {i} of device {d.device}: {e}", path=target) from None
                    if len(buf) >= 4096:
                        f.write("\n".join(buf) + "\n")
                        buf.clear()
                if buf:
                    f.write("\n".join(buf) + "\n")
        os.replace(tmp, target)
    except OSError as e:
        raise TraceError(f"cannot write the file: {e.strerror or e}", path=target) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# ---------------------------------------------------------------------------
# Reading


def _req_int(obj: Mapping[str, Any], key: str, path: str, where: str, default: int | None = None) -> int:
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise TraceError(f"field {key!r} should be an integer, got {str(v)[:40]!r}", path=path, location=where)
    return v


def _parse_header(line: str, path: str) -> dict[str, Any]:
    try:
        head = _DECODER.decode(line)
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise TraceError(f"the header is not valid JSON: {describe(e)}", path=path, location="line 1") from None
    if not isinstance(head, dict) or head.get("format") != MAGIC:
        raise TraceError(f"line 1 is not a memtune trace header (expected {{\"format\": \"{MAGIC}\", ...}})", path=path, location="line 1")
    version = head.get("version")
    if version != VERSION:
        raise TraceError(
            f"memtune trace version {str(version)[:20]!r} is not supported; this memtune reads version {VERSION}",
            path=path,
            location="line 1",
        )
    if not isinstance(head.get("devices"), list):
        raise TraceError("the header has no 'devices' list", path=path, location="line 1")
    meta = head.get("metadata", {})
    if not isinstance(meta, dict):
        raise TraceError("the header's 'metadata' should be an object", path=path, location="line 1")
    return head


def _device_from_header(d: Any, i: int, path: str) -> tuple[DeviceTrace, int | None]:
    where = f"line 1, devices[{i}]"
    if not isinstance(d, dict):
        raise TraceError("a device entry should be an object", path=path, location=where)
    dev = _req_int(d, "device", path, where)
    n = d.get("events")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise TraceError("'events' should be a non-negative integer", path=path, location=where)
    cap = d.get("capacity")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
        raise TraceError("'capacity' should be a non-negative integer or null", path=path, location=where)
    framework = d.get("framework")
    if framework is not None and not isinstance(framework, str):
        raise TraceError("'framework' should be a string or null", path=path, location=where)
    settings = d.get("settings", {})
    skipped = d.get("skipped", {})
    if not isinstance(settings, dict) or not isinstance(skipped, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in skipped.values()
    ):
        raise TraceError("'settings' should be an object and 'skipped' an object of counts", path=path, location=where)
    segs_raw = d.get("initial_segments", [])
    if not isinstance(segs_raw, list):
        raise TraceError("'initial_segments' should be a list", path=path, location=where)
    segments: list[SegmentState] = []
    for j, s in enumerate(segs_raw):
        swhere = f"{where}.initial_segments[{j}]"
        if not isinstance(s, dict):
            raise TraceError("a segment should be an object", path=path, location=swhere)
        blocks_raw = s.get("blocks", [])
        pool = s.get("pool", "large")
        if not isinstance(blocks_raw, list) or pool not in ("small", "large"):
            raise TraceError("a segment needs a 'blocks' list and 'pool' small or large", path=path, location=swhere)
        blocks = []
        for k, b in enumerate(blocks_raw):
            if (
                not isinstance(b, list)
                or len(b) != 4
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in b[:3])
                or not isinstance(b[3], bool)
            ):
                raise TraceError(
                    "a block is [address, size, requested_size, allocated]", path=path, location=f"{swhere}.blocks[{k}]"
                )
            blocks.append(BlockState(b[0], b[1], b[2], b[3]))
        segments.append(
            SegmentState(
                _req_int(s, "address", path, swhere),
                _req_int(s, "total_size", path, swhere),
                _req_int(s, "stream", path, swhere, 0),
                pool,
                tuple(blocks),
                bool(s.get("is_expandable", False)),
            )
        )
    return (
        DeviceTrace(
            device=dev,
            events=[],
            initial_segments=segments,
            settings=settings,
            framework=framework,
            capacity=cap,
            skipped=dict(skipped),
        ),
        n,
    )


def _event(obj: Any, path: str, where: str) -> tuple[int, Event]:
    if not isinstance(obj, dict):
        raise TraceError("an event line should be a JSON object", path=path, location=where)
    name = obj.get("a")
    action = _ACTIONS.get(name) if isinstance(name, str) else None
    if action is None:
        known = ", ".join(_ACTIONS)
        raise TraceError(f"unknown action {str(obj.get('a'))[:40]!r}; known: {known}", path=path, location=where)
    t = obj.get("t")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t)):
        raise TraceError("'t' should be a finite number", path=path, location=where)
    info = obj.get("i")
    if info is not None and not isinstance(info, dict):
        raise TraceError("'i' should be an object", path=path, location=where)
    return (
        _req_int(obj, "d", path, where, 0),
        Event(
            action,
            _req_int(obj, "p", path, where, 0),
            _req_int(obj, "s", path, where, 0),
            _req_int(obj, "st", path, where, 0),
            t,
            info,
        ),
    )


def _lines(f: IO[str], path: str) -> Iterator[tuple[int, str]]:
    n = 0
    while True:
        try:
            line = f.readline()
        except DECODE_ERRORS as e:
            raise TraceError(f"cannot read the file: {describe(e)}", path=path, location=f"line {n + 1}") from None
        if not line:
            return
        n += 1
        if line.strip():
            yield n, line


def _header_devices(head: Mapping[str, Any], source: str,
                    lenient: bool) -> dict[int, tuple[DeviceTrace, int | None, StreamChecker]]:
    """{device: (its DeviceTrace, the events the header promises, its stream checker)}."""
    devices: dict[int, tuple[DeviceTrace, int | None, StreamChecker]] = {}
    for i, d in enumerate(head["devices"]):
        dt, n = _device_from_header(d, i, source)
        if dt.device in devices:
            raise TraceError(f"device {dt.device} appears twice in the header", path=source, location="line 1")
        checker = StreamChecker(source, lenient=lenient)
        checker.skipped = dt.skipped
        checker.seed(dt.initial_live())
        devices[dt.device] = (dt, n, checker)
    return devices


def iter_device_events(
    path: PathLike, *, lenient: bool = False, header_out: dict[str, Any] | None = None
) -> Iterator[tuple[DeviceTrace, Event]]:
    """Stream (device, event) pairs, validating as they come. The DeviceTrace
    objects come from the header (events left empty; skipped counts updated);
    ``header_out`` receives the header and the devices in header order."""
    source = display(path)
    with open_text(path) as f:
        lines = _lines(f, source)
        first = next(lines, None)
        if first is None:
            raise TraceError("the file is empty", path=source)
        head = _parse_header(first[1], source)
        devices = _header_devices(head, source, lenient)
        if header_out is not None:
            header_out["header"] = head
            header_out["devices"] = [v[0] for v in devices.values()]
        seen = {k: 0 for k in devices}
        last_line = first[0]
        for lineno, line in lines:
            last_line = lineno
            where = f"line {lineno}"
            try:
                obj = _DECODER.decode(line)
            except (json.JSONDecodeError, RecursionError, ValueError) as e:
                raise TraceError(f"not a JSON event (truncated or corrupt line?): {describe(e)}", path=source, location=where) from None
            dev, ev = _event(obj, source, where)
            entry = devices.get(dev)
            if entry is None:
                raise TraceError(f"event for device {dev}, which the header does not list", path=source, location=where)
            seen[dev] += 1
            checker = entry[2]
            before = len(checker.events)
            checker.add(ev, where)
            if len(checker.events) > before:
                checker.events.clear()  # streaming: the caller keeps what it needs
                yield entry[0], ev
        for dev, (dt, n, _c) in devices.items():
            if n is not None and seen[dev] != n:
                raise TraceError(
                    f"the header promises {n} events for device {dev} but the file has {seen[dev]} (truncated?)",
                    path=source,
                    location=f"end of file (line {last_line})",
                )


def read(path: PathLike, *, lenient: bool = False) -> Trace:
    source = display(path)
    if not lenient:
        fast = _read_regular(path, source)
        if fast is not None:
            return fast
    out: dict[str, Any] = {}
    for dt, ev in iter_device_events(path, lenient=lenient, header_out=out):
        dt.events.append(ev)
    head = out["header"]
    return Trace(source=source, format=FORMAT, devices=out["devices"], metadata=dict(head.get("metadata") or {}))


def _read_regular(path: PathLike, source: str) -> Trace | None:
    """:func:`_read_at_once` with the garbage collector paused (:func:`paused_gc`)."""
    with paused_gc():
        return _read_at_once(path, source)


def _read_at_once(path: PathLike, source: str) -> Trace | None:
    """:func:`read` (strict) of a file as memtune writes it, decoding its events a few MiB
    of lines at a time; None when the file is anything else -- a line that is not exactly
    one event object, a field of another type, an inconsistent stream, an error of any
    kind -- so that the line-by-line reader reads it and names the line.

    Why: decoding line by line is most of the time a large trace takes to load, and
    the tests and sweeps load hundreds of them."""
    try:
        with open_text(path) as f:
            first = f.readline()
            head = _parse_header(first, source)
            devices = _header_devices(head, source, lenient=False)
            adds = {dev: entry[2].add for dev, entry in devices.items()}
            while True:
                chunk = f.readlines(_CHUNK_BYTES)
                if not chunk:
                    break
                body = [line[:-1] if line[-1:] == "\n" else line for line in chunk]
                # one object per line: a value over two lines, or two on one line, starts or
                # ends a line with something else (strings hold no raw newline)
                if not all(line[:1] == "{" and line[-1:] == "}" for line in body):
                    return None
                objs = _DECODER.decode("[" + ",".join(body) + "]")
                if len(objs) != len(body) or not _add_events(objs, adds):
                    return None
    except (*DECODE_ERRORS, TraceError, ValueError, RecursionError, MemoryError, KeyError, TypeError,
            AttributeError):  # (anything else: the line-by-line reader names it)
        return None
    for dt, n, checker in devices.values():
        if n is not None and len(checker.events) != n:
            return None
        dt.events.extend(checker.events)
    return Trace(source=source, format=FORMAT, devices=[v[0] for v in devices.values()],
                 metadata=dict(head.get("metadata") or {}))


#: lines :func:`_read_at_once` decodes at once: about this many bytes of them
_CHUNK_BYTES = 1 << 22


def _add_events(objs: list, adds: Mapping[int, Any]) -> bool:
    """Append the event of each decoded line to its device's stream checker (which raises
    TraceError on an inconsistent stream); False at the first line that is not a regular
    event (a field missing its type, an unknown action or device)."""
    actions, finite = _ACTIONS, math.isfinite
    for obj in objs:
        name = obj.get("a")
        action = actions.get(name) if type(name) is str else None
        dev, address, size, stream = obj.get("d", 0), obj.get("p", 0), obj.get("s", 0), obj.get("st", 0)
        t, info = obj.get("t"), obj.get("i")
        if (action is None or type(dev) is not int or type(address) is not int or type(size) is not int
                or type(stream) is not int or not (t is None or (type(t) in (int, float) and finite(t)))
                or not (info is None or type(info) is dict)):
            return False
        add = adds.get(dev)
        if add is None:
            return False
        add(Event(action, address, size, stream, t, info))
    return True
