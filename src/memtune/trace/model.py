"""The in-memory trace model every reader produces and every consumer reads.

A trace is a list of per-device event streams. Addresses in events are the
*trace's* identifiers of blocks (the real program's pointers); a replay maps
them onto whatever addresses the replaying allocator hands out.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Iterable, Iterator, Mapping


class Action(StrEnum):
    ALLOC = "alloc"                  # size = requested bytes
    FREE = "free"                    # size = requested bytes of the block (0 if the format lacks it)
    SEGMENT_ALLOC = "segment_alloc"  # the real allocator's device malloc (ground truth, not replayed)
    SEGMENT_FREE = "segment_free"
    SEGMENT_MAP = "segment_map"      # expandable segments: pages mapped / unmapped
    SEGMENT_UNMAP = "segment_unmap"
    OOM = "oom"                      # the real program hit OOM here; info["device_free"] when known
    EMPTY_CACHE = "empty_cache"      # replayed: the program called empty_cache()
    MARKER = "marker"                # a step boundary or annotation; info["name"]


#: Actions a replay feeds to an allocator; the rest are ground truth or annotations.
REPLAYED_ACTIONS = frozenset({Action.ALLOC, Action.FREE, Action.EMPTY_CACHE})


@dataclass(frozen=True, slots=True)
class Event:
    action: Action
    address: int = 0
    size: int = 0
    stream: int = 0
    time_us: float | None = None
    info: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class BlockState:
    """A block inside a segment at trace start (warm snapshots)."""

    address: int
    size: int              # bytes the block occupies in the segment (rounded)
    requested_size: int    # bytes the program asked for (0 for free blocks)
    allocated: bool        # live (handed to the program) or cached


@dataclass(frozen=True, slots=True)
class SegmentState:
    """A device allocation that existed at trace start (warm snapshots)."""

    address: int
    total_size: int
    stream: int
    pool: str                      # "small" or "large"
    blocks: tuple[BlockState, ...]
    is_expandable: bool = False


@dataclass
class DeviceTrace:
    device: int
    events: list[Event]
    #: Allocator state when recording began; empty for a cold trace.
    initial_segments: list[SegmentState] = field(default_factory=list)
    #: Settings of the allocator that produced the trace, as recorded (for
    #: PyTorch: {"PYTORCH_CUDA_ALLOC_CONF": "...", ...}).
    settings: dict[str, Any] = field(default_factory=dict)
    #: Which allocator produced the trace ("pytorch-cuda", "cpu", "rmm", ...), if known.
    framework: str | None = None
    #: Device capacity in bytes, when the trace reveals it (e.g. from an oom record).
    capacity: int | None = None
    #: Counts of entries a reader skipped or tolerated, by reason.
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def is_warm(self) -> bool:
        return bool(self.initial_segments)

    def initial_live(self) -> list[tuple[int, int, int]]:
        """(address, requested_size, stream) of blocks live at trace start."""
        return [
            (b.address, b.requested_size, s.stream)
            for s in self.initial_segments
            for b in s.blocks
            if b.allocated
        ]

    def initial_reserved_bytes(self) -> int:
        return sum(s.total_size for s in self.initial_segments)

    def peak_requested_bytes(self) -> int:
        """Peak of live requested bytes: the lower bound for any non-moving allocator."""
        return requested_timeline_peak(self.events, self.initial_live())


@dataclass
class Trace:
    source: str
    format: str
    devices: list[DeviceTrace]
    metadata: dict[str, Any] = field(default_factory=dict)

    def device(self, index: int) -> DeviceTrace:
        for d in self.devices:
            if d.device == index:
                return d
        known = ", ".join(str(d.device) for d in self.devices) or "none"
        from memtune.errors import TraceError

        raise TraceError(f"no device {index} in this trace; devices with events: {known}", path=self.source)

    def __iter__(self) -> Iterator[DeviceTrace]:
        return iter(self.devices)


def requested_timeline_peak(events: Iterable[Event], initial_live: Iterable[tuple[int, int, int]] = ()) -> int:
    """Peak of live requested bytes over ``events``, starting from ``initial_live``.

    Frees of unknown addresses are ignored here (readers decide whether those are
    errors); the size of a free is taken from its matching alloc.
    """
    return requested_peak_at(events, initial_live)[0]


def requested_peak_at(events: Iterable[Event],
                      initial_live: Iterable[tuple[int, int, int]] = ()) -> tuple[int, int | None]:
    """(peak of live requested bytes, position among the alloc/free events where it is
    first reached; None if the starting state is the peak). See :func:`requested_timeline_peak`."""
    live: dict[int, int] = {}
    current = 0
    for address, size, _stream in initial_live:
        live[address] = size
        current += size
    peak = current
    at = None
    i = -1
    for ev in events:
        if ev.action is Action.ALLOC:
            i += 1
            if ev.address in live:  # re-use of a live address: treat as implicit free
                current -= live[ev.address]
            live[ev.address] = ev.size
            current += ev.size
            if current > peak:
                peak = current
                at = i
        elif ev.action is Action.FREE:
            i += 1
            size = live.pop(ev.address, None)
            if size is not None:
                current -= size
    return peak, at


def device_name(device: int) -> str:
    """How reports name a device stream: ``device 0`` for accelerators, ``CPU``
    for -1 (the id torch.profiler gives CPU memory events)."""
    return "CPU" if device == -1 else f"device {device}"


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused (as it was, after): for code that makes
    millions of events, which hold no reference cycles.

    Why: making millions of objects runs the collector over all of them again and again
    (a third of the time of repeat_step's copies, a quarter of a trace's load)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
