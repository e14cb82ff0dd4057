"""Replay a recorded trace against any allocator preset on a simulated device.

A replay answers "what would this workload have reserved under allocator X with
settings Y on a device of size Z?". Each device stream of a trace is replayed on
its own :class:`~memtune.devices.simulated.SimulatedDevice`; trace addresses (the
real program's pointers) are mapped onto the addresses the replaying allocator
hands out. Out-of-memory failures are recorded and the replay carries on, as the
real program did (its later frees of the failed block are skipped).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from memtune.errors import MemtuneError, OutOfMemoryError, TraceError
from memtune.trace.model import Action, DeviceTrace, Trace

#: Capacity used when neither the caller nor the trace gives one: 1 PiB, i.e.
#: "unlimited" for any real workload while keeping the simulated address space finite.
UNLIMITED_CAPACITY = 1 << 50

#: Default number of points kept in a downsampled timeline (enough for a plot).
DEFAULT_TIMELINE_POINTS = 1000

#: Settings keys a PyTorch snapshot records that memtune's pytorch-cuda preset
#: takes as explicit settings, when the raw PYTORCH_CUDA_ALLOC_CONF string is absent.
_PYTORCH_CONF_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


@dataclass
class Timeline:
    """A downsampled memory timeline: one point per bucket of replayed events.

    Each point holds the *maximum* within its bucket, so peaks survive downsampling.
    ``time_s`` is seconds since the first timed event, or ``None`` when the trace
    carries no timestamps.
    """

    event_index: list[int] = field(default_factory=list)
    time_s: list[float | None] = field(default_factory=list)
    requested: list[int] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    reserved: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.event_index)

    @property
    def has_time(self) -> bool:
        return bool(self.time_s) and all(t is not None for t in self.time_s)

    def to_json(self) -> dict[str, list]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, list]) -> "Timeline":
        return cls(**{k: list(data.get(k, [])) for k in ("event_index", "time_s", "requested", "allocated", "reserved")})


@dataclass(frozen=True)
class Checkpoint:
    """The allocator's counts once every event before ``event_index`` was replayed.

    Why: whether device calls or reserved memory still grow late in a long run shows
    in one replay, read at two points, rather than in two replays of different lengths.
    """

    event_index: int
    device_allocs: int
    device_frees: int
    peak_reserved_bytes: int
    reserved_bytes: int

    @property
    def device_calls(self) -> int:
        return self.device_allocs + self.device_frees


@dataclass(frozen=True)
class ReplayState:
    """What a replay holds at a checkpoint, for ``replay_device(until=...)`` to look at.

    Why: a replay of a longer run can stop once the allocator's state repeats
    (:func:`memtune.trace.extend.replay_longer_run`); that needs the allocator and
    which trace address each live block has there. Read it, do not change it.
    """

    event_index: int
    #: the counts recorded there
    checkpoint: Checkpoint
    allocator: Any
    #: trace address -> the allocator's address, for every live block the allocator holds
    addresses: Mapping[int, int]
    #: trace address -> requested bytes, for every block live in the trace (one whose
    #: allocation failed here too)
    requested: Mapping[int, int]
    ooms: int


@dataclass
class ReplayResult:
    """What one allocator configuration did on one device stream of a trace."""

    trace: str
    device: int
    policy: str
    settings: dict[str, Any]
    events: int
    peak_requested_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    initial_reserved_bytes: int
    device_allocs: int
    device_frees: int
    ooms: list[dict[str, Any]]
    fragmentation: float
    seconds: float
    events_per_second: float
    capacity: int | None = None
    #: The explicit settings the caller gave (``settings`` minus the trace's own).
    overrides: dict[str, Any] = field(default_factory=dict)
    framework: str | None = None
    trace_format: str | None = None
    final_reserved_bytes: int = 0
    device_maps: int = 0
    device_unmaps: int = 0
    modeled_device_seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)
    #: empty_cache() calls inferred from the trace's segment frees (see infer_empty_cache)
    inferred_empty_cache: int = 0
    #: device allocations placed at the real run's address (see guided_device)
    guided_device_allocs: int = 0
    #: OOMs of the real run (``oom`` entries) whose request this replay could satisfy
    recorded_ooms_survived: int = 0
    timeline: Timeline | None = None
    #: the counts at the event indices asked for (``replay_device(checkpoints=...)``), in order
    checkpoints: list[Checkpoint] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``policy`` plus its explicit settings, e.g. ``pytorch-cuda[expandable_segments=True]``."""
        return config_label(self.policy, self.settings)

    @property
    def first_oom(self) -> dict[str, Any] | None:
        return self.ooms[0] if self.ooms else None

    def to_json(self, *, timeline: bool = False) -> dict[str, Any]:
        """A JSON-safe dict (the keys of issue 3 first); the timeline only on request."""
        out: dict[str, Any] = {
            "trace": self.trace,
            "device": self.device,
            "policy": self.policy,
            "settings": {k: _json_safe(v) for k, v in self.settings.items()},
            "events": self.events,
            "peak_requested_bytes": self.peak_requested_bytes,
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "device_allocs": self.device_allocs,
            "device_frees": self.device_frees,
            "ooms": [dict(o) for o in self.ooms],
            "fragmentation": self.fragmentation,
            "seconds": self.seconds,
            "events_per_second": self.events_per_second,
            "initial_reserved_bytes": self.initial_reserved_bytes,
            "final_reserved_bytes": self.final_reserved_bytes,
            "capacity": self.capacity,
            "overrides": {k: _json_safe(v) for k, v in self.overrides.items()},
            "framework": self.framework,
            "trace_format": self.trace_format,
            "device_maps": self.device_maps,
            "device_unmaps": self.device_unmaps,
            "modeled_device_seconds": self.modeled_device_seconds,
            "skipped": dict(self.skipped),
            "inferred_empty_cache": self.inferred_empty_cache,
            "guided_device_allocs": self.guided_device_allocs,
            "recorded_ooms_survived": self.recorded_ooms_survived,
        }
        if self.checkpoints:
            out["checkpoints"] = [asdict(c) for c in self.checkpoints]
        if timeline and self.timeline is not None:
            out["timeline"] = self.timeline.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "ReplayResult":
        """Inverse of :meth:`to_json` (reports re-read ``results.json``)."""
        kwargs = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k not in ("timeline", "checkpoints")}
        tl = data.get("timeline")
        cps = [Checkpoint(**c) for c in data.get("checkpoints", [])]
        return cls(**kwargs, timeline=Timeline.from_json(tl) if tl else None, checkpoints=cps)


def config_label(policy: str, settings: Mapping[str, Any]) -> str:
    if not settings:
        return policy
    return policy + "[" + ",".join(f"{k}={_json_safe(v)}" for k, v in settings.items()) + "]"


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    return str(value)


# --------------------------------------------------------------------------- settings


def split_option_list(text: str) -> list[tuple[str, str]]:
    """Split ``key:value,key:value`` (PyTorch's option-list syntax) into pairs.

    Commas inside brackets belong to the value (``roundup_power2_divisions:[256:1,>:8]``).
    """
    from memtune.config.types import split_top_level

    pairs: list[tuple[str, str]] = []
    try:
        items = split_top_level(text)
    except ValueError as e:
        raise TraceError(f"allocator settings {text!r}: {e}", location="settings") from None
    for item in items:
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition(":")
        if not sep:
            raise TraceError(
                f"allocator setting {item!r} in {text!r} is not of the form key:value",
                location="settings",
            )
        pairs.append((key.strip(), value.strip()))
    return pairs


def trace_settings_for(dt: DeviceTrace, policy: str) -> dict[str, Any]:
    """The settings the traced program's allocator ran with, as explicit settings for
    ``policy`` -- but only when ``policy`` is the allocator that recorded the trace.

    For PyTorch snapshots that is the raw ``PYTORCH_CUDA_ALLOC_CONF`` string; when a
    snapshot lacks it, the parsed fields the snapshot records (``expandable_segments``,
    ``max_split_size``, ``garbage_collection_threshold``) are used instead.
    """
    settings = dt.settings or {}
    if not settings or dt.framework != policy:
        return {}
    if policy.startswith("pytorch-cuda"):
        for var in _PYTORCH_CONF_VARS:
            raw = settings.get(var)
            if isinstance(raw, str) and raw.strip():
                return dict(split_option_list(raw))
        out: dict[str, Any] = {}
        if settings.get("expandable_segments") is True:
            out["expandable_segments"] = True
        mss = settings.get("max_split_size")
        if isinstance(mss, int) and 0 < mss < (1 << 62):
            out["max_split_size_mb"] = mss // (1024 * 1024)
        gct = settings.get("garbage_collection_threshold")
        if isinstance(gct, (int, float)) and not isinstance(gct, bool) and 0 < gct < 1:
            out["garbage_collection_threshold"] = gct
        return out
    return {}


def presets() -> list[str]:
    """Every allocator preset name (what ``policy="all"`` expands to)."""
    from memtune.allocator import presets as engine_presets

    return list(engine_presets())


def resolve_policies(policy: str | Sequence[str]) -> list[str]:
    """``"all"``, one name, a comma-separated list or a sequence -> preset names."""
    names = [policy] if isinstance(policy, str) else list(policy)
    out: list[str] = []
    for name in names:
        for part in str(name).split(","):
            part = part.strip()
            if not part:
                continue
            if part == "all":
                out.extend(p for p in presets() if p not in out)
            elif part not in out:
                out.append(part)
    if not out:
        raise MemtuneError(f"no policy given; accepted: a preset name, a comma-separated list, or 'all' ({', '.join(presets())})")
    return out


# --------------------------------------------------------------------------- replay


def load(trace_or_path: Trace | str | os.PathLike, *, lenient: bool = False) -> Trace:
    if isinstance(trace_or_path, Trace):
        return trace_or_path
    from memtune.trace.formats import load_trace

    return load_trace(trace_or_path, lenient=lenient)


def replay(
    trace_or_path: Trace | str | os.PathLike,
    policy: str | Sequence[str] = "pytorch-cuda",
    *,
    settings: Mapping[str, Any] | None = None,
    capacity: int | str | None = None,
    device: int | None = None,
    timeline: bool = False,
    lenient: bool = False,
    timeline_points: int = DEFAULT_TIMELINE_POINTS,
    infer_empty_cache: bool = True,
    guide_addresses: bool = False,
    settings_source: str = "replay(settings=...)",
) -> list[ReplayResult]:
    """Replay every device stream of a trace (or only ``device``) under ``policy``.

    ``policy`` is a preset name, ``"all"`` (every preset) or a list. ``settings`` are
    explicit allocator settings that override the trace's own; each applies to the
    presets that have it (an error names ``settings_source`` when none does, or when a
    value is invalid). ``capacity`` (bytes or
    a string like ``"80GiB"``) overrides the capacity the trace reveals; without
    either, the device is effectively unlimited. ``infer_empty_cache`` replays the
    program's empty_cache() calls that a trace shows only through segment frees
    (see :func:`infer_empty_cache`); ``guide_addresses`` (off by default: a pure simulation already
    reproduces the shared snapshots exactly) gives the allocator that
    recorded the trace the real driver's addresses (see :func:`guided_device`).
    Returns one result per device and policy, in that order.
    """
    trace = load(trace_or_path, lenient=lenient)
    cap = parse_capacity(capacity)
    devices = [trace.device(device)] if device is not None else list(trace.devices)
    if not devices:
        raise TraceError("the trace has no device with replayable events", path=trace.source)
    policies = resolve_policies(policy)
    per_policy = settings_per_policy(policies, settings or {}, settings_source)
    results: list[ReplayResult] = []
    for dt in devices:
        for name in policies:
            results.append(
                replay_device(
                    trace, dt, name, settings=per_policy[name] or None, capacity=cap, timeline=timeline,
                    lenient=lenient, timeline_points=timeline_points, infer_empty_cache=infer_empty_cache,
                    guide_addresses=guide_addresses,
                )
            )
    return results


def parse_capacity(capacity: int | str | None) -> int | None:
    if capacity is None:
        return None
    from memtune.units import parse_bytes

    try:
        value = parse_bytes(capacity)
    except ValueError as e:
        raise MemtuneError(f"capacity {capacity!r} is invalid: {e}") from None
    if value <= 0:
        raise MemtuneError(f"capacity must be positive; got {capacity!r}")
    return value


def settings_per_policy(policies: Sequence[str], settings: Mapping[str, Any], source: str) -> dict[str, dict[str, Any]]:
    """Give each preset the explicit settings it has, validated with ``source`` in
    errors; a setting no selected preset has is an error with suggestions."""
    import importlib

    presets = importlib.import_module("memtune.allocator.presets")
    out: dict[str, dict[str, Any]] = {p: {} for p in policies}
    for key, value in settings.items():
        takers = [p for p in policies if str(key).lower() in presets.get(p).lookup]
        if not takers:
            presets.parse_setting(presets.get(policies[0]), key, value, source)  # raises, naming the key
        for p in takers:
            presets.parse_setting(presets.get(p), key, value, source)
            out[p][key] = value
    return out


def effective_settings(dt: DeviceTrace, policy: str, settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The trace's own settings for this policy, overridden key by key by ``settings``."""
    merged = trace_settings_for(dt, policy)
    if settings:
        merged.update(settings)
    return merged


def make_allocator(policy: str, capacity: int, settings: Mapping[str, Any],
                   placements: Sequence[tuple[int, int]] | None = None):
    """The allocator a replay runs: ``policy`` on a fresh simulated device.

    ``placements`` are the (address, size) device allocations of the real run, in
    order; see :func:`guided_device`.
    """
    from memtune.allocator import allocator as build

    dev = guided_device(capacity, placements or ())
    return build(policy, device=dev, **dict(settings)), dev


def guided_device(capacity: int, placements: Sequence[tuple[int, int]]):
    """A simulated device that, where it can, puts each device allocation at the
    address the real driver returned for the same size in the traced run.

    Real caching allocators break best-fit ties between equal-sized free blocks by
    address, so the addresses the driver happened to hand out steer later choices.
    Giving the replay the driver's choices (a property of the environment, not of
    the allocator policy) lets the recording allocator's replay follow the real
    run. Requests with no matching recorded allocation, or whose recorded range
    is taken, get an ordinary address.
    """
    from collections import deque

    from memtune.devices.simulated import SimulatedDevice

    if not placements:
        return SimulatedDevice(capacity)
    queues: dict[int, deque[int]] = {}
    for address, size in placements:
        queues.setdefault(size, deque()).append(address)

    class GuidedDevice(SimulatedDevice):
        guided = 0

        def malloc(self, size: int) -> int:
            q = queues.get(size)
            while q:
                address = q.popleft()
                try:
                    out = self.malloc_at(address, size)
                except ValueError:
                    continue  # taken, misaligned or out of range: try the next recorded one
                self.guided += 1
                return out
            return super().malloc(size)

    return GuidedDevice(capacity)


def recorded_placements(dt: DeviceTrace, policy: str) -> list[tuple[int, int]]:
    """The real run's device allocations (segment_alloc), when ``policy`` is the
    allocator that recorded ``dt``; otherwise none."""
    if not dt.framework or dt.framework != policy:
        return []
    return [(ev.address, ev.size) for ev in dt.events if ev.action is Action.SEGMENT_ALLOC]


def replay_device(
    trace: Trace,
    dt: DeviceTrace,
    policy: str,
    *,
    settings: Mapping[str, Any] | None = None,
    capacity: int | None = None,
    timeline: bool = False,
    lenient: bool = False,
    timeline_points: int = DEFAULT_TIMELINE_POINTS,
    infer_empty_cache: bool = True,
    guide_addresses: bool = False,
    checkpoints: Sequence[int] = (),
    until: Callable[[ReplayState], bool] | None = None,
) -> ReplayResult:
    """Replay one device stream under one policy. See :func:`replay`.

    ``checkpoints``: event indices into ``dt.events`` (0 to ``len(dt.events)``, in any
    order) at which to record the device calls and reserved memory so far, once every
    event before that index was replayed (``result.checkpoints``, in ascending order).
    ``until``: called with the :class:`ReplayState` at each checkpoint, after it is
    recorded; True ends the replay there (the result then counts the events replayed
    so far, and ``result.checkpoints`` ends with that one).
    """
    cps = _checked_checkpoints(checkpoints, len(dt.events))
    if until is not None and not callable(until):
        raise TypeError(f"until must be a callable taking a ReplayState (or None); got {until!r}")
    eff = effective_settings(dt, policy, settings)
    cap = capacity or dt.capacity or UNLIMITED_CAPACITY
    alloc, dev = make_allocator(policy, cap, eff, recorded_placements(dt, policy) if guide_addresses else None)
    try:
        result = _run(trace, dt, policy, eff, cap, alloc, dev, timeline, lenient, timeline_points, infer_empty_cache,
                      cps, until)
        result.overrides = dict(settings or {})
        return result
    finally:
        close = getattr(alloc, "close", None)
        if close is not None:
            try:
                close()
            except MemtuneError:
                pass


def _checked_checkpoints(checkpoints: Sequence[int], n_events: int) -> list[int]:
    """``checkpoints`` sorted and without repeats; a ValueError names what is wrong."""
    if isinstance(checkpoints, (str, bytes)) or not isinstance(checkpoints, Iterable):
        raise TypeError(f"checkpoints must be a sequence of event indices; got {checkpoints!r}")
    given = list(checkpoints)
    bad = [c for c in given if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= n_events]
    if bad:
        raise ValueError(f"checkpoints must be whole event indices from 0 to {n_events} (the stream's length); "
                         f"got {bad[0]!r}")
    return sorted(set(given))


def _device_calls(stats: Mapping[str, Any], dev) -> tuple[int, int]:
    """(device allocs, device frees): the allocator's counts, else the device's."""
    counters = getattr(dev, "counters", None)
    return (int(stats.get("num_device_alloc", getattr(counters, "mallocs", 0))),
            int(stats.get("num_device_free", getattr(counters, "frees", 0))))


def _checkpoint(alloc, dev, idx: int, tl: Timeline | None, initial_reserved: int) -> Checkpoint:
    s = alloc.memory_stats()
    peak = max(int(s.get("reserved_bytes.all.peak", 0)), initial_reserved, max(tl.reserved, default=0) if tl else 0)
    allocs, frees = _device_calls(s, dev)
    return Checkpoint(event_index=idx, device_allocs=allocs, device_frees=frees, peak_reserved_bytes=peak,
                      reserved_bytes=int(s.get("reserved_bytes.all.current", 0)))


def _run(trace, dt, policy, eff, cap, alloc, dev, timeline, lenient, timeline_points, infer,
         checkpoints: Sequence[int] = (), until: Callable[[ReplayState], bool] | None = None) -> ReplayResult:
    events = dt.events
    ALLOC, FREE, EMPTY = Action.ALLOC, Action.FREE, Action.EMPTY_CACHE
    OOM = Action.OOM
    actions = [ev.action for ev in events]
    replayed: Sequence[int]
    if actions.count(ALLOC) + actions.count(FREE) == len(actions):  # (most traces: the C-level counts suffice)
        replayed = range(len(actions))
    else:
        replayed = [i for i, act in enumerate(actions)
                    if act is ALLOC or act is FREE or act is EMPTY or (act is OOM and events[i].size > 0)]
    inferred = set(_inferred_empty_cache(events, actions, dt.initial_reserved_bytes(), dt.capacity)) if infer else set()
    if inferred:
        replayed = sorted(set(replayed) | inferred)
    n = len(replayed)

    # Warm start: recreate the segments live at trace start.
    addr_map: dict[int, int] = {}
    live_req: dict[int, int] = {}
    requested = 0
    if dt.initial_segments:
        mapping = alloc.restore(dt.initial_segments)
        for taddr, size, _stream in dt.initial_live():
            if taddr not in mapping:
                raise MemtuneError(
                    f"{trace.source}: device {dt.device}: allocator {policy!r} did not restore the live block at "
                    f"trace address {taddr:#x}; restore() must map every allocated block"
                )
            addr_map[taddr] = mapping[taddr]
            live_req[taddr] = size
            requested += size
    stats0 = alloc.memory_stats()
    initial_reserved = int(stats0.get("reserved_bytes.all.current", 0))
    peak_requested = requested

    malloc, free, empty_cache = alloc.malloc, alloc.free, alloc.empty_cache
    ooms: list[dict[str, Any]] = []
    survived_ooms = 0
    skipped: dict[str, int] = dict(dt.skipped or {})

    tl = Timeline() if timeline else None
    step = max(1, -(-n // max(1, timeline_points))) if timeline else n + 1
    bucket_req = requested
    t0 = next((ev.time_us for ev in events if ev.time_us is not None), None)
    if tl is not None:
        alloc.reset_peak_stats()
        _sample(tl, alloc, 0, 0.0 if t0 is not None else None, requested)

    taken: list[Checkpoint] = []
    pending = list(reversed(checkpoints))  # next checkpoint last
    due = pending.pop() if pending else len(events) + 1
    start = time.perf_counter()
    count = 0
    stopped = False
    for idx in replayed:
        while idx >= due:  # every event before `due` is replayed
            taken.append(_checkpoint(alloc, dev, due, tl, initial_reserved))
            if until is not None and until(ReplayState(due, taken[-1], alloc, addr_map, live_req, len(ooms))):
                stopped = True
                break
            due = pending.pop() if pending else len(events) + 1
        if stopped:
            break
        ev = events[idx]
        act = ev.action
        if act is ALLOC:
            taddr = ev.address
            if taddr in live_req:
                if not lenient:
                    raise TraceError(f"alloc of address {taddr:#x}, which is already live", path=trace.source,
                                     location=f"device {dt.device}, event {idx}")
                skipped["alloc_of_live_address"] = skipped.get("alloc_of_live_address", 0) + 1
                requested -= live_req.pop(taddr)
                a = addr_map.pop(taddr, None)
                if a is not None:
                    free(a)
            size = ev.size
            live_req[taddr] = size
            requested += size
            if requested > peak_requested:
                peak_requested = requested
            if requested > bucket_req:
                bucket_req = requested
            try:
                addr_map[taddr] = malloc(size, ev.stream)
            except OutOfMemoryError:  # recorded; the program's later free of it is then skipped
                ooms.append({
                    "event_index": idx, "size": size, "time_us": ev.time_us, "stream": ev.stream,
                    "time_s": None if t0 is None or ev.time_us is None else (ev.time_us - t0) / 1e6,
                })
        elif act is FREE:
            taddr = ev.address
            size = live_req.pop(taddr, None)
            if size is None:
                if not lenient:
                    raise TraceError(f"free of address {taddr:#x}, which is not live", path=trace.source,
                                     location=f"device {dt.device}, event {idx}")
                skipped["free_of_unknown_address"] = skipped.get("free_of_unknown_address", 0) + 1
            else:
                requested -= size
                a = addr_map.pop(taddr, None)
                if a is not None:  # None: the block's allocation failed (OOM) here, nothing to free
                    free(a)
        elif act is OOM:
            # The real program asked for this and failed; it never got a block, so the
            # trace has no alloc for it. Ask too: a failure here reproduces the OOM; a
            # success is given back at once (the block's lifetime is unknown).
            try:
                a = malloc(ev.size, ev.stream)
            except OutOfMemoryError:
                ooms.append({
                    "event_index": idx, "size": ev.size, "time_us": ev.time_us, "stream": ev.stream,
                    "time_s": None if t0 is None or ev.time_us is None else (ev.time_us - t0) / 1e6,
                    "recorded": True,
                })
            else:
                free(a)
                survived_ooms += 1
        else:  # EMPTY_CACHE, recorded or inferred from the real allocator's segment frees
            empty_cache()
        count += 1
        if count % step == 0 and tl is not None:
            t = None if t0 is None or ev.time_us is None else (ev.time_us - t0) / 1e6
            _sample(tl, alloc, idx, t, bucket_req)
            bucket_req = requested
    seconds = time.perf_counter() - start
    while due <= len(events) and not stopped:
        taken.append(_checkpoint(alloc, dev, due, tl, initial_reserved))
        if until is not None and until(ReplayState(due, taken[-1], alloc, addr_map, live_req, len(ooms))):
            break
        due = pending.pop() if pending else len(events) + 1

    stats = alloc.memory_stats()
    if tl is not None:
        if count % step != 0:  # the last, partial bucket
            last = events[replayed[-1]]
            t = None if t0 is None or last.time_us is None else (last.time_us - t0) / 1e6
            _sample(tl, alloc, replayed[-1], t, bucket_req)
        peak_alloc = max(tl.allocated)
        peak_res = max(max(tl.reserved), initial_reserved)
    else:
        peak_alloc = int(stats.get("allocated_bytes.all.peak", 0))
        peak_res = max(int(stats.get("reserved_bytes.all.peak", 0)), initial_reserved)

    counters = getattr(dev, "counters", None)
    allocs, frees = _device_calls(stats, dev)
    frag = (peak_res / peak_requested - 1.0) if peak_requested else 0.0
    return ReplayResult(
        trace=trace.source,
        device=dt.device,
        policy=policy,
        settings=dict(eff),
        events=count,
        peak_requested_bytes=peak_requested,
        peak_allocated_bytes=peak_alloc,
        peak_reserved_bytes=peak_res,
        initial_reserved_bytes=initial_reserved,
        device_allocs=allocs,
        device_frees=frees,
        ooms=ooms,
        fragmentation=frag,
        seconds=seconds,
        events_per_second=(count / seconds) if seconds > 0 else 0.0,
        capacity=cap if cap != UNLIMITED_CAPACITY else None,
        framework=dt.framework,
        trace_format=trace.format,
        final_reserved_bytes=int(stats.get("reserved_bytes.all.current", 0)),
        device_maps=int(getattr(counters, "maps", 0)),
        device_unmaps=int(getattr(counters, "unmaps", 0)),
        modeled_device_seconds=float(getattr(counters, "modeled_seconds", 0.0)),
        skipped=skipped,
        inferred_empty_cache=len(inferred),
        guided_device_allocs=int(getattr(dev, "guided", 0)),
        recorded_ooms_survived=survived_ooms,
        timeline=tl,
        checkpoints=taken,
    )


_RELEASES = (Action.SEGMENT_FREE, Action.SEGMENT_UNMAP)


def infer_empty_cache(events: Sequence, initial_reserved: int = 0, capacity: int | None = None) -> list[int]:
    """Indices where the traced program called ``empty_cache()``, inferred from the
    real allocator's ground truth when the trace does not record the calls.

    A PyTorch snapshot records no empty_cache entry, only the ``segment_free`` /
    ``segment_unmap`` entries it causes. A caching allocator releases segments only
    on empty_cache or on its out-of-memory path, so each run of releases marks one
    empty_cache call (at the run's first entry) -- unless it is the OOM path: the
    run is next to an ``oom`` entry, or (when the device capacity is known) the
    device allocation right after the run would not have fit without it.
    Traces that record EMPTY_CACHE events get no inference.
    """
    return _inferred_empty_cache(events, [ev.action for ev in events], initial_reserved, capacity)


def _inferred_empty_cache(events: Sequence, actions: list, initial_reserved: int, capacity: int | None) -> list[int]:
    """:func:`infer_empty_cache`, given each event's action (``actions``)."""
    if Action.EMPTY_CACHE in actions or not (Action.SEGMENT_FREE in actions or Action.SEGMENT_UNMAP in actions):
        return []  # (C-level scans: a recording of alloc and free events only costs no loop here)
    grow = (Action.SEGMENT_ALLOC, Action.SEGMENT_MAP)
    out: list[int] = []
    n = len(events)
    reserved = initial_reserved
    i = 0
    while i < n:
        act = events[i].action
        if act in _RELEASES:
            j = i
            released = 0
            while j < n and events[j].action in _RELEASES:
                released += events[j].size
                j += 1
            before = events[i - 1].action if i > 0 else None
            nxt = events[j] if j < n else None
            failure_path = before is Action.OOM or (nxt is not None and nxt.action is Action.OOM)
            if (not failure_path and capacity is not None and nxt is not None and nxt.action in grow
                    and reserved + nxt.size > capacity):
                failure_path = True
            if not failure_path:
                out.append(i)
            reserved -= released
            i = j
        else:
            if act in grow:
                reserved += events[i].size
            i += 1
    return out


def _sample(tl: Timeline, alloc, idx: int, t: float | None, req: int) -> None:
    """Append one point (maxima since the previous point) and restart the peak window."""
    s = alloc.memory_stats()
    pa = int(s.get("allocated_bytes.all.peak", 0))
    pr = int(s.get("reserved_bytes.all.peak", 0))
    tl.event_index.append(idx)
    tl.time_s.append(t)
    tl.requested.append(req)
    tl.allocated.append(pa)
    tl.reserved.append(pr)
    alloc.reset_peak_stats()


def results_to_json(results: Iterable[ReplayResult], *, timeline: bool = False) -> list[dict[str, Any]]:
    return [r.to_json(timeline=timeline) for r in results]


def trace_label(source: str) -> str:
    """A short display name for a trace path."""
    name = Path(source).name
    for suffix in (".gz", ".jsonl", ".json", ".pickle", ".csv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or source
