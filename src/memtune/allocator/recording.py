"""Recording memtune's own allocators: a call log in trace format, and the
``MEMTUNE_PROFILER_AUTOSTART`` profiler.

* :class:`TraceRecorder` is an allocator listener that logs every malloc, free
  and device (segment) call as trace :class:`~memtune.trace.model.Event` s, so a
  run on memtune's allocators can be saved (``memtune.trace.formats.save_trace``)
  and replayed under any other preset, exactly like a recorded PyTorch run.
  ``rec = record_allocator(alloc)`` attaches one.
* ``MEMTUNE_PROFILER_AUTOSTART=1`` (what MXNet's ``MXNET_PROFILER_AUTOSTART``
  does for MXNet): the engine calls :func:`on_allocator_created` from its
  constructor; every allocator then feeds allocated/reserved counters, and at
  interpreter exit one Chrome/Perfetto trace JSON with a counter track per
  allocator is written to ``MEMTUNE_PROFILER_OUTPUT``.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memtune.allocator.events import AllocatorEvent, EventKind
from memtune.errors import MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event, SegmentState, Trace

#: Trace ``format`` of a memtune allocator call log.
ALLOCATOR_LOG_FORMAT = "memtune-allocator-log"

_SEGMENT_ACTIONS = {
    EventKind.SEGMENT_ALLOC: Action.SEGMENT_ALLOC,
    EventKind.SEGMENT_FREE: Action.SEGMENT_FREE,
    EventKind.SEGMENT_MAP: Action.SEGMENT_MAP,
    EventKind.SEGMENT_UNMAP: Action.SEGMENT_UNMAP,
}
#: What each event kind becomes in the trace (RELEASED: nothing; see TraceRecorder).
_ACTIONS = {
    EventKind.ALLOCATED: Action.ALLOC,
    EventKind.RECYCLED: Action.ALLOC,
    EventKind.FREED: Action.FREE,
    EventKind.ALLOCATION_FAILED: Action.MARKER,
    **_SEGMENT_ACTIONS,
}
_RESERVE_SIGN = {
    EventKind.SEGMENT_ALLOC: 1,
    EventKind.SEGMENT_MAP: 1,
    EventKind.SEGMENT_FREE: -1,
    EventKind.SEGMENT_UNMAP: -1,
}


def _allocator_name(alloc: Any) -> str | None:
    for attr in ("preset", "name", "policy"):
        value = getattr(alloc, attr, None)
        if isinstance(value, str):
            return value
        name = getattr(value, "name", None)  # a PresetSpec
        if isinstance(name, str):
            return name
    return None


def _allocator_settings(alloc: Any, name: str | None) -> dict[str, Any]:
    """The settings ``alloc`` runs with that differ from its preset's defaults.

    For ``pytorch-cuda`` they are written as a ``PYTORCH_CUDA_ALLOC_CONF`` string,
    the form in which a replay under the same preset applies a trace's settings
    (as for a real PyTorch snapshot); other presets keep them by setting name.
    """
    settings = getattr(getattr(alloc, "spec", None), "settings", None)
    if not isinstance(settings, dict) or name is None:
        return {}
    try:
        from memtune.allocator.presets import resolve

        device = getattr(alloc, "device", None)
        defaults = resolve(name, {}, int(getattr(device, "capacity", 1 << 40)))[0].settings
    except Exception:  # an unregistered PresetSpec has no defaults to compare with
        defaults = {}
    changed: dict[str, Any] = {}
    for key, value in settings.items():
        if defaults.get(key) == value:
            continue
        if isinstance(value, tuple) and value and all(v == value[0] for v in value):
            value = value[0]
        if isinstance(value, (str, int, float, bool)):
            changed[str(key)] = value
    if name == "pytorch-cuda" and changed:
        return {"PYTORCH_CUDA_ALLOC_CONF": ",".join(f"{k}:{v}" for k, v in changed.items())}
    return changed


def _allocator_capacity(alloc: Any) -> int | None:
    device = getattr(alloc, "device", None)
    cap = getattr(device, "capacity", None)
    return int(cap) if isinstance(cap, int) else None


class TraceRecorder:
    """Allocator listener that logs every call as trace events.

    ALLOCATED and RECYCLED become ``alloc`` (with the bytes the caller asked for),
    FREED becomes ``free``, the SEGMENT_* kinds become ``segment_*`` (ground truth
    for reserved memory), ALLOCATION_FAILED becomes a ``marker`` named
    "allocation_failed" (the allocator may still succeed after freeing cache).
    Blocks already live when recording starts are captured as the trace's
    initial state (a warm trace), so frees of them replay correctly.
    """

    def __init__(self, allocator: Any = None, *, device: int = 0, clock: Callable[[], int] = time.perf_counter_ns):
        self.device = device
        self.initial_segments: list[SegmentState] = []
        self.framework: str | None = None
        self.settings: dict[str, Any] = {}
        self.capacity: int | None = None
        self.active = True
        self._clock = clock
        self._t0 = clock()
        # (action, address, size, stream, clock, info): plain tuples while recording
        # (a listener runs on every allocator call); Events are built on demand.
        self._raw: list[tuple[Action, int, int, int, int, dict[str, Any] | None]] = []
        self._allocator = allocator
        if allocator is not None:
            self.framework = _allocator_name(allocator)
            self.settings = _allocator_settings(allocator, self.framework)
            self.capacity = _allocator_capacity(allocator)
            segments = getattr(allocator, "segments", None)
            if callable(segments):
                self.initial_segments = list(segments())

    def __call__(self, ev: AllocatorEvent) -> None:
        if not self.active:
            return
        action = _ACTIONS.get(ev.kind)
        if action is None:  # RELEASED duplicates the SEGMENT_FREE/UNMAP that carries the device call
            return
        if action is Action.ALLOC or action is Action.FREE:
            self._raw.append((action, ev.address, ev.requested or ev.size, ev.stream, self._clock(), None))
        elif action is Action.MARKER:
            info: dict[str, Any] = {"name": "allocation_failed", "requested": ev.requested or ev.size}
            if ev.info:
                info.update({k: v for k, v in ev.info.items() if isinstance(v, (str, int, float, bool))})
            self._raw.append((action, ev.address, ev.size, ev.stream, self._clock(), info))
        else:
            self._raw.append((action, ev.address, ev.size, ev.stream, self._clock(), None))

    @property
    def events(self) -> list[Event]:
        """The log so far as trace events (times in microseconds since the recorder started)."""
        t0 = self._t0
        return [Event(a, addr, size, stream, (t - t0) / 1000.0, info) for a, addr, size, stream, t, info in self._raw]

    def mark_empty_cache(self) -> None:
        """Log an ``empty_cache`` call (replayed: the replaying allocator empties its cache too)."""
        if self.active:
            self._raw.append((Action.EMPTY_CACHE, 0, 0, 0, self._clock(), None))

    def close(self) -> None:
        """Stop logging (the listener stays attached but ignores further events)."""
        self.active = False
        remove = getattr(self._allocator, "remove_listener", None)
        if callable(remove):
            try:
                remove(self)
            except Exception:  # an engine without removal support keeps us attached, inactive
                pass

    def device_trace(self) -> DeviceTrace:
        return DeviceTrace(
            device=self.device,
            events=self.events,
            initial_segments=list(self.initial_segments),
            settings=dict(self.settings),
            framework=self.framework,
            capacity=self.capacity,
        )

    @property
    def trace(self) -> Trace:
        source = f"memtune allocator ({self.framework})" if self.framework else "memtune allocator"
        return Trace(source=source, format=ALLOCATOR_LOG_FORMAT, devices=[self.device_trace()],
                     metadata={"recorder": "memtune.allocator.recording.TraceRecorder"})

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the log in memtune's JSON Lines format (``.gz`` compresses)."""
        from memtune.trace.formats import save_trace

        save_trace(self.trace, path)
        return Path(path)


def record_allocator(alloc: Any, *, device: int = 0) -> TraceRecorder:
    """Attach a :class:`TraceRecorder` to ``alloc`` and return it.

    ``empty_cache()`` calls made through ``alloc`` are logged too (the engine
    emits no event for an ``empty_cache`` that finds nothing to release, but a
    replay under another policy must still see the call).
    """
    rec = TraceRecorder(alloc, device=device)
    alloc.add_listener(rec)
    original = alloc.empty_cache

    def empty_cache(*args: Any, **kwargs: Any) -> Any:
        rec.mark_empty_cache()
        return original(*args, **kwargs)

    try:
        alloc.empty_cache = empty_cache  # instance attribute shadows the method
    except AttributeError:  # a slotted allocator: empty_cache calls go unlogged
        pass
    return rec


# ------------------------------------------------------------------------------------------
# MEMTUNE_PROFILER_AUTOSTART


@dataclass
class CounterTrack:
    """Allocated and reserved bytes of one allocator over time (one listener)."""

    label: str
    t0_ns: int
    allocated: int = 0
    reserved: int = 0
    samples: list[tuple[int, int, int]] = field(default_factory=list)  # (perf_counter_ns, allocated, reserved)

    def __call__(self, ev: AllocatorEvent) -> None:
        kind = ev.kind
        if kind is EventKind.ALLOCATED or kind is EventKind.RECYCLED:
            self.allocated += ev.size
        elif kind is EventKind.FREED:
            self.allocated -= ev.size
        elif kind in _RESERVE_SIGN:
            self.reserved += _RESERVE_SIGN[kind] * ev.size
        else:
            return
        self.samples.append((time.perf_counter_ns(), self.allocated, self.reserved))


class AutostartProfiler:
    """Collects a :class:`CounterTrack` per allocator and writes the Chrome trace."""

    def __init__(self, output: str | os.PathLike[str] | None = None):
        #: None: read MEMTUNE_PROFILER_OUTPUT when writing (it may change until exit).
        self.output = Path(output) if output is not None else None
        self.pid = os.getpid()
        self.t0_ns = time.perf_counter_ns()
        self.tracks: list[CounterTrack] = []
        self._lock = threading.Lock()

    def attach(self, alloc: Any) -> CounterTrack:
        with self._lock:
            index = len(self.tracks)
            name = _allocator_name(alloc) or type(alloc).__name__
            track = CounterTrack(label=f"allocator {index} ({name})", t0_ns=self.t0_ns)
            self.tracks.append(track)
        alloc.add_listener(track)
        return track

    def chrome_trace(self) -> dict[str, Any]:
        """``traceEvents``: one process per allocator with a "memory" counter
        (``args`` allocated and reserved bytes; microsecond timestamps), the same
        shape as ``memtune replay --chrome-trace``."""
        events: list[dict[str, Any]] = []
        for pid, track in enumerate(list(self.tracks), 1):
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"name": f"{track.label} [pid {self.pid}]"}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"sort_index": pid}})
            events.append({"name": "memory", "cat": "memtune", "ph": "C", "ts": 0.0, "pid": pid, "tid": 0,
                           "args": {"allocated": 0, "reserved": 0}})
            for t_ns, allocated, reserved in list(track.samples):
                ts = (t_ns - self.t0_ns) / 1000.0
                events.append({"name": "memory", "cat": "memtune", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                               "args": {"allocated": allocated, "reserved": reserved}})
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {"generator": "memtune MEMTUNE_PROFILER_AUTOSTART", "pid": self.pid,
                          "allocators": [t.label for t in self.tracks]},
        }

    def output_path(self) -> Path:
        """``MEMTUNE_PROFILER_OUTPUT`` (read now, relative to the current directory);
        a forked child writes ``NAME.<pid>.json`` instead of clobbering its parent's file."""
        if self.output is not None:
            out = self.output
        else:
            from memtune import config

            out = Path(config.get("MEMTUNE_PROFILER_OUTPUT"))
        if os.getpid() == self.pid:
            return out
        return out.with_name(f"{out.stem}.{os.getpid()}{out.suffix or '.json'}")

    def write(self) -> Path | None:
        if not self.tracks:
            return None
        path = self.output_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(self.chrome_trace()))
        os.replace(tmp, path)
        return path


# The process-wide autostart session: like MXNet's profiler singleton, one per
# process by nature (it is flushed by an atexit hook). Created on first use.
_SESSION_LOCK = threading.Lock()
_SESSION: list[AutostartProfiler] = []


def autostart_session() -> AutostartProfiler | None:
    """The running autostart profiler, if MEMTUNE_PROFILER_AUTOSTART started one."""
    return _SESSION[0] if _SESSION else None


def _write_at_exit() -> None:
    session = autostart_session()
    if session is None:
        return
    try:
        path = session.write()
    except (OSError, MemtuneError) as e:
        import sys

        print(f"memtune: could not write the MEMTUNE_PROFILER_OUTPUT trace: {e}", file=sys.stderr)
        return
    if path is not None:
        import sys

        print(f"memtune: wrote allocator profile {path} (open in https://ui.perfetto.dev)", file=sys.stderr)


def on_allocator_created(alloc: Any) -> None:
    """Hook the engine calls at the end of every allocator's constructor.

    With ``MEMTUNE_PROFILER_AUTOSTART`` on, attaches the counter listener and (once
    per process) registers the exit hook that writes ``MEMTUNE_PROFILER_OUTPUT``.
    """
    from memtune import config

    if not config.get("MEMTUNE_PROFILER_AUTOSTART"):
        return
    with _SESSION_LOCK:
        if not _SESSION:
            _SESSION.append(AutostartProfiler())
            atexit.register(_write_at_exit)
        session = _SESSION[0]
    session.attach(alloc)
