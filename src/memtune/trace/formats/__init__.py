"""Trace readers and the writer: every supported format becomes the same
:class:`memtune.trace.model.Trace`.

    trace = memtune.load_trace("snapshot.pickle")          # format detected from the content
    trace = load_trace("log.csv.gz", format="rmm-log", lenient=True)
    save_trace(trace, "trace.jsonl.gz")                   # memtune JSON Lines, gzip by suffix
    for device, event in iter_events("trace.jsonl"): ...  # streams memtune JSON Lines

Formats: ``pytorch-snapshot``, ``torch-profiler``, ``rmm-log``, ``lifetimes``,
``memtune-jsonl`` (see :data:`FORMATS` and docs/trace-format.md). gzip is
detected by its magic bytes whatever the file is called. Every error is a
:class:`memtune.TraceError` naming the file and the line or event index.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import PurePath
from types import MappingProxyType
from typing import Callable, Iterator, Mapping

from memtune.errors import TraceError, UnknownNameError
from memtune.trace.formats import csv_formats, jsonl, pytorch_snapshot, torch_profiler
from memtune.trace.formats._common import SKIP_REASONS, PathLike, display, read_head
from memtune.trace.model import Event, Trace

__all__ = ["FORMATS", "SKIP_REASONS", "TraceFormat", "detect_format", "iter_events", "load_trace", "save_trace"]


@dataclass(frozen=True)
class TraceFormat:
    """One supported trace format: how to recognise it and how to read it."""

    name: str
    description: str
    sniff: Callable[[bytes], bool]  # on the first 64 KiB of (decompressed) content
    read: Callable[..., Trace]
    suffixes: tuple[str, ...]  # a fallback hint when the content is not conclusive


#: Supported formats, in detection order (immutable).
FORMATS: Mapping[str, TraceFormat] = MappingProxyType(
    {
        f.name: f
        for f in (
            TraceFormat(
                jsonl.FORMAT, "memtune's JSON Lines trace (docs/trace-format.md)", jsonl.looks_like, jsonl.read, (".jsonl",)
            ),
            TraceFormat(
                pytorch_snapshot.FORMAT,
                "PyTorch CUDA allocator snapshot pickle (torch.cuda.memory._dump_snapshot)",
                pytorch_snapshot.looks_like,
                pytorch_snapshot.read,
                (".pickle", ".pkl"),
            ),
            TraceFormat(
                torch_profiler.FORMAT,
                "torch.profiler Chrome trace JSON with profile_memory=True",
                torch_profiler.looks_like,
                torch_profiler.read,
                (".json",),
            ),
            TraceFormat(
                csv_formats.RMM_FORMAT,
                "RMM logging_resource_adaptor CSV (Thread,Time,Action,Pointer,Size,Stream)",
                csv_formats.looks_like_rmm,
                csv_formats.read_rmm,
                (),
            ),
            TraceFormat(
                csv_formats.LIFETIMES_FORMAT,
                "buffer-lifetime table CSV (id,lower,upper,size)",
                csv_formats.looks_like_lifetimes,
                csv_formats.read_lifetimes,
                (),
            ),
        )
    }
)


def _check_format_name(format: str) -> TraceFormat:
    spec = FORMATS.get(format)
    if spec is None:
        close = difflib.get_close_matches(str(format), list(FORMATS), n=2)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise UnknownNameError(f"unknown trace format {format!r}; accepted: {', '.join(FORMATS)}.{hint}", variable="format")
    return spec


def _suffixes(path: PathLike) -> list[str]:
    sfx = [s.lower() for s in PurePath(os.fspath(path)).suffixes]
    return sfx[:-1] if sfx and sfx[-1] == ".gz" else sfx


def detect_format(path: PathLike) -> str:
    """The name of ``path``'s format, from its content (gzip transparent).

    The suffix is only a fallback when the content matches nothing, so that a
    damaged file of a known kind gets that reader's precise error.
    """
    head = read_head(path)
    if not head.strip():
        raise TraceError("the file is empty", path=display(path))
    for spec in FORMATS.values():
        if spec.sniff(head):
            return spec.name
    sfx = _suffixes(path)
    for spec in FORMATS.values():
        if sfx and sfx[-1] in spec.suffixes:
            return spec.name
    raise TraceError(
        "cannot tell the trace format from the content; supported formats: "
        + "; ".join(f"{f.name} ({f.description})" for f in FORMATS.values())
        + ". Pass format=... (CLI: --format) to force one",
        path=display(path),
        location="line 1",
    )


def load_trace(path: PathLike, *, format: str | None = None, lenient: bool = False) -> Trace:
    """Read any supported trace into the shared model.

    Inconsistent entries (a free of an unknown address, a double free, a
    non-positive size, an allocation at a live address) raise TraceError
    unless ``lenient``; then they are skipped and counted in
    ``DeviceTrace.skipped`` by reason.
    """
    spec = _check_format_name(format) if format is not None else FORMATS[detect_format(path)]
    return spec.read(path, lenient=lenient)


def iter_events(path: PathLike, *, format: str | None = None, lenient: bool = False) -> Iterator[tuple[int, Event]]:
    """(device, event) pairs in file order. memtune JSON Lines are streamed;
    other formats need the whole file (a pickle, a sort by time) and are read first."""
    name = format if format is not None else detect_format(path)
    _check_format_name(name)
    if name == jsonl.FORMAT:
        for dt, ev in jsonl.iter_device_events(path, lenient=lenient):
            yield dt.device, ev
        return
    for dt in load_trace(path, format=name, lenient=lenient).devices:
        for ev in dt.events:
            yield dt.device, ev


def save_trace(trace: Trace, path: PathLike) -> None:
    """Write ``trace`` as memtune JSON Lines (gzip-compressed when ``path`` ends in ``.gz``)."""
    jsonl.write(trace, path)
