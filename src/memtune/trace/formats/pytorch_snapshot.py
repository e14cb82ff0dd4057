"""PyTorch CUDA caching-allocator snapshots (``torch.cuda.memory._dump_snapshot``).

The replay stream is ``alloc`` and ``free_completed`` (a ``free_requested``
only marks the program's intent; the block is reused after ``free_completed``).
``segment_*`` and ``oom`` entries are kept as ground truth; ``snapshot``
entries are dropped; ``user_defined`` annotations become markers.

A *warm* snapshot started recording mid-run. Its allocator state at trace
start is rebuilt from the final ``segments`` by undoing the trace's events in
reverse (see :func:`rebuild_initial_segments`).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Mapping

from sortedcontainers import SortedDict

from memtune.allocator.rounding import ROUNDUP_INTERVALS, PyTorchRounding
from memtune.errors import TraceError
from memtune.trace.formats._common import PathLike, StreamChecker, count, display, json_safe
from memtune.trace.formats.safe_pickle import safe_load
from memtune.trace.model import Action, BlockState, DeviceTrace, Event, SegmentState, Trace

FORMAT = "pytorch-snapshot"
FRAMEWORK = "pytorch-cuda"

KMIN_BLOCK = 512
KSMALL_SIZE = 1 << 20  # 1 MiB: small pool requests are <= this
KSMALL_BUFFER = 2 << 20  # small-pool segments are exactly 2 MiB
DEFAULT_MAX_NON_SPLIT_ROUNDING = 20 << 20

_ACTIONS: dict[str, Action | None] = {
    "alloc": Action.ALLOC,
    "free_completed": Action.FREE,
    "segment_alloc": Action.SEGMENT_ALLOC,
    "segment_free": Action.SEGMENT_FREE,
    "segment_map": Action.SEGMENT_MAP,
    "segment_unmap": Action.SEGMENT_UNMAP,
    "oom": Action.OOM,
    "user_defined": Action.MARKER,
    "free_requested": None,  # intent only
    "snapshot": None,  # a snapshot was taken here
}

_SEGMENT_DELTA = {
    Action.SEGMENT_ALLOC: 1,
    Action.SEGMENT_MAP: 1,
    Action.SEGMENT_FREE: -1,
    Action.SEGMENT_UNMAP: -1,
}


def looks_like(head: bytes) -> bool:
    """A pickle of protocol 2+ starts with PROTO (0x80); _dump_snapshot writes one."""
    return len(head) >= 2 and head[0] == 0x80 and head[1] <= 5


# ---------------------------------------------------------------------------
# Field access that turns a malformed pickle into a TraceError with a location


def _int(entry: dict[str, Any], key: str, where: Callable[[], str], path: str, default: int | None = None) -> int:
    value = entry.get(key, default) if type(entry) is dict else None
    if type(value) is int:  # the fast, common case
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None and default is not None:
            return default
        raise TraceError(f"field {key!r} should be an integer, got {_short(value)}", path=path, location=where())
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------
# PyTorch's size rounding (c10 CUDACachingAllocator round_size)


@dataclass(frozen=True)
class _Rounding:
    divisions: tuple[int, ...] = ()  # per power-of-two interval from 1 MB up
    max_split_size: int = 0  # 0 = unlimited

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> "_Rounding":
        divs: tuple[int, ...] = ()
        raw = settings.get("roundup_power2_divisions")
        if isinstance(raw, Mapping):
            try:
                items = sorted((int(k), v) for k, v in raw.items())
                divs = tuple(int(v) if isinstance(v, int) and not isinstance(v, bool) else 0 for _, v in items)
            except (TypeError, ValueError):
                divs = ()
        elif isinstance(raw, int) and not isinstance(raw, bool):
            divs = (raw,) * ROUNDUP_INTERVALS
        mss = settings.get("max_split_size")
        max_split = mss if isinstance(mss, int) and not isinstance(mss, bool) and 0 < mss < (1 << 62) else 0
        return cls(divs, max_split)

    @cached_property
    def _pytorch(self) -> PyTorchRounding:
        """The allocator's own rounding rule; malformed recorded divisions count as none."""
        divs = (tuple(self.divisions) + (0,) * ROUNDUP_INTERVALS)[:ROUNDUP_INTERVALS]
        try:
            return PyTorchRounding(divs)
        except ValueError:
            return PyTorchRounding()

    def round_size(self, size: int) -> int:
        return self._pytorch.round(size)

    def unsplit_remainder_limit(self, block_size: int, pool: str) -> int:
        """Largest remainder PyTorch leaves inside a block instead of splitting it off."""
        if self.max_split_size and block_size >= self.max_split_size:
            return DEFAULT_MAX_NON_SPLIT_ROUNDING
        return KMIN_BLOCK - 1 if pool == "small" else KSMALL_SIZE


# ---------------------------------------------------------------------------
# Warm-start reconstruction


@dataclass
class _Seg:
    address: int
    size: int
    stream: int
    pool: str
    expandable: bool

    @property
    def end(self) -> int:
        return self.address + self.size


@dataclass
class _Live:
    requested: int
    size: int  # bytes the block occupies (exact from the final state, else inferred)
    stream: int
    exact: bool


@dataclass
class _Rebuild:
    path: str
    device: int
    lenient: bool
    rounding: _Rounding
    skipped: dict[str, int]
    segs: SortedDict = field(default_factory=SortedDict)  # address -> _Seg
    live: SortedDict = field(default_factory=SortedDict)  # address -> _Live

    def fail(self, message: str, index: int) -> None:
        if self.lenient:
            count(self.skipped, "inconsistent_segment_state")
            return
        raise TraceError(
            f"{message} (cannot rebuild the allocator state at trace start; load with lenient=True / --lenient to skip)",
            path=self.path,
            location=f"device {self.device}, device_traces entry {index}",
        )

    def seg_at(self, address: int) -> _Seg | None:
        i = self.segs.bisect_right(address) - 1
        if i < 0:
            return None
        seg: _Seg = self.segs.peekitem(i)[1]
        return seg if seg.address <= address < seg.end else None

    def live_in(self, start: int, end: int) -> list[int]:
        """Addresses of live blocks overlapping [start, end)."""
        out = []
        i = self.live.bisect_right(start) - 1
        if i >= 0:
            addr, blk = self.live.peekitem(i)
            if addr + (blk.size if blk.exact else max(1, blk.requested)) > start:
                out.append(addr)
        for addr in self.live.irange(start, end, inclusive=(False, False)):
            out.append(addr)
        return out

    def overlaps_segment(self, start: int, end: int) -> bool:
        i = self.segs.bisect_right(start) - 1
        if i >= 0 and self.segs.peekitem(i)[1].end > start:
            return True
        return any(True for _ in self.segs.irange(start, end, inclusive=(False, False)))

    # -- undo one event ---------------------------------------------------
    def undo(self, action: Action, address: int, size: int, stream: int, index: int) -> None:
        if action is Action.ALLOC:
            blk = self.live.get(address)
            if blk is None:
                return self.fail(f"alloc of {address:#x} is neither freed later nor live at the end", index)
            del self.live[address]
        elif action is Action.FREE:
            if address in self.live:
                return self.fail(f"free of {address:#x} while another block there is live", index)
            seg = self.seg_at(address)
            if seg is None:
                return self.fail(f"free of {address:#x}, which lies in no segment", index)
            req = max(size, 1)
            if self.live_in(address, address + req) or address + req > seg.end:
                return self.fail(f"free of {address:#x} ({size} bytes) overlaps a live block or its segment's end", index)
            self.live[address] = _Live(size, self.rounding.round_size(size), stream, exact=False)
        elif action is Action.SEGMENT_ALLOC:
            seg = self.segs.get(address)
            if seg is None or seg.size != size:
                return self.fail(f"segment_alloc of {address:#x} ({size} bytes) has no matching segment later", index)
            if self.live_in(seg.address, seg.end):
                return self.fail(f"segment_alloc of {address:#x} while blocks in it are live", index)
            del self.segs[address]
        elif action is Action.SEGMENT_FREE:
            if size <= 0 or self.overlaps_segment(address, address + size):
                return self.fail(f"segment_free of {address:#x} ({size} bytes) overlaps a segment that exists", index)
            pool = "small" if size == KSMALL_BUFFER else "large"
            self.segs[address] = _Seg(address, size, stream, pool, False)
        elif action is Action.SEGMENT_MAP:
            seg = self.seg_at(address)
            if seg is None or address + size > seg.end or size <= 0:
                return self.fail(f"segment_map of {address:#x} ({size} bytes) is not inside a mapped segment later", index)
            if self.live_in(address, address + size):
                return self.fail(f"segment_map of {address:#x} while blocks in the range are live", index)
            del self.segs[seg.address]
            if address > seg.address:
                self.segs[seg.address] = _Seg(seg.address, address - seg.address, seg.stream, seg.pool, True)
            if address + size < seg.end:
                self.segs[address + size] = _Seg(address + size, seg.end - address - size, seg.stream, seg.pool, True)
        elif action is Action.SEGMENT_UNMAP:
            if size <= 0 or self.overlaps_segment(address, address + size):
                return self.fail(f"segment_unmap of {address:#x} ({size} bytes) overlaps mapped memory", index)
            start, end = address, address + size
            pool = "small" if size == KSMALL_BUFFER else "large"
            before = self.seg_at(start - 1)
            if before is not None and before.expandable and before.end == start:
                del self.segs[before.address]
                start, pool, stream = before.address, before.pool, before.stream
            after = self.segs.get(end)
            if after is not None and after.expandable:
                del self.segs[after.address]
                end, pool = after.end, after.pool
            self.segs[start] = _Seg(start, end - start, stream, pool, True)
        return None

    # -- result -----------------------------------------------------------
    def result(self) -> list[SegmentState]:
        out: list[SegmentState] = []
        live_addrs = list(self.live.keys())
        for seg in self.segs.values():
            lo = bisect.bisect_left(live_addrs, seg.address)
            hi = bisect.bisect_left(live_addrs, seg.end)
            blocks: list[BlockState] = []
            cursor = seg.address
            for j in range(lo, hi):
                addr = live_addrs[j]
                blk: _Live = self.live[addr]
                nxt = live_addrs[j + 1] if j + 1 < hi else seg.end
                size = blk.size
                if not blk.exact:
                    # PyTorch leaves a small remainder inside the block rather than
                    # splitting it off, and never keeps a free block that small: a
                    # gap below the split threshold belongs to this block.
                    size = min(size, nxt - addr)
                    if nxt - addr - size <= self.rounding.unsplit_remainder_limit(size, seg.pool):
                        size = nxt - addr
                size = min(size, nxt - addr)
                if addr > cursor:
                    blocks.append(BlockState(cursor, addr - cursor, 0, False))
                blocks.append(BlockState(addr, size, blk.requested, True))
                cursor = addr + size
            if cursor < seg.end:
                blocks.append(BlockState(cursor, seg.end - cursor, 0, False))
            out.append(SegmentState(seg.address, seg.size, seg.stream, seg.pool, tuple(blocks), seg.expandable))
        return out


def rebuild_initial_segments(
    final_segments: list[Mapping[str, Any]],
    raw_events: list[tuple[int, Action, int, int, int]],
    *,
    path: str,
    device: int,
    settings: Mapping[str, Any],
    lenient: bool,
    skipped: dict[str, int],
) -> list[SegmentState]:
    """Undo ``raw_events`` (index, action, address, size, stream), last first, on the final state.

    Segment events add/remove whole segments (or mapped ranges for expandable
    segments); an undone free makes its block live again, an undone alloc turns
    it back into free space. Free space between live blocks is one free block,
    as PyTorch always merges free neighbours.
    """
    rb = _Rebuild(path, device, lenient, _Rounding.from_settings(settings), skipped)
    for i, seg in enumerate(final_segments):
        where = lambda i=i: f"segments[{i}]"  # noqa: E731
        addr = _int(seg, "address", where, path)
        total = _int(seg, "total_size", where, path)
        stream = _int(seg, "stream", where, path, 0)
        pool = seg.get("segment_type", "large")
        pool = pool if pool in ("small", "large") else ("small" if total == KSMALL_BUFFER else "large")
        if total <= 0 or rb.overlaps_segment(addr, addr + total):
            raise TraceError(f"segment at {addr:#x} ({total} bytes) is empty or overlaps another", path=path, location=where())
        rb.segs[addr] = _Seg(addr, total, stream, pool, bool(seg.get("is_expandable", False)))
        blocks = seg.get("blocks", [])
        if not isinstance(blocks, list):
            raise TraceError("field 'blocks' should be a list", path=path, location=where())
        for j, b in enumerate(blocks):
            bwhere = lambda i=i, j=j: f"segments[{i}].blocks[{j}]"  # noqa: E731
            state = b.get("state", "") if type(b) is dict else None
            if not isinstance(state, str):
                raise TraceError("block has no 'state' string", path=path, location=bwhere())
            if state.startswith("active"):  # active_allocated / active_pending_free: still allocated
                baddr = _int(b, "address", bwhere, path)
                bsize = _int(b, "size", bwhere, path)
                req = _int(b, "requested_size", bwhere, path, bsize)
                if not (addr <= baddr and baddr + bsize <= addr + total) or bsize <= 0 or baddr in rb.live:
                    raise TraceError(f"block at {baddr:#x} ({bsize} bytes) lies outside its segment or repeats", path=path, location=bwhere())
                rb.live[baddr] = _Live(req, bsize, stream, exact=True)
    for index, action, address, size, stream in reversed(raw_events):
        if action in _UNDOABLE:
            rb.undo(action, address, size, stream, index)
    return rb.result()


_UNDOABLE = frozenset(
    {Action.ALLOC, Action.FREE, Action.SEGMENT_ALLOC, Action.SEGMENT_FREE, Action.SEGMENT_MAP, Action.SEGMENT_UNMAP}
)


# ---------------------------------------------------------------------------
# Reader


def read(path: PathLike, *, lenient: bool = False) -> Trace:
    source = display(path)
    data = safe_load(path)
    if not isinstance(data, Mapping):
        raise TraceError(f"a PyTorch snapshot is a dict with 'segments' and 'device_traces'; got {type(data).__name__}", path=source)
    traces = data.get("device_traces")
    segments = data.get("segments", [])
    if not isinstance(traces, list):
        raise TraceError("no 'device_traces' list: not a torch.cuda.memory._dump_snapshot pickle (record with torch.cuda.memory._record_memory_history first)", path=source)
    if not isinstance(segments, list):
        raise TraceError("'segments' should be a list", path=source, location="segments")
    raw_settings = data.get("allocator_settings") or {}
    if not isinstance(raw_settings, Mapping):
        raise TraceError("'allocator_settings' should be a dict", path=source, location="allocator_settings")
    try:
        settings = json_safe(raw_settings)
    except ValueError as e:
        raise TraceError(str(e), path=source, location="allocator_settings") from None
    if settings and "PYTORCH_CUDA_ALLOC_CONF" not in settings:
        settings["PYTORCH_CUDA_ALLOC_CONF"] = ""

    devices: list[DeviceTrace] = []
    for dev, entries in enumerate(traces):
        if not isinstance(entries, list):
            raise TraceError(f"device_traces[{dev}] should be a list of entries", path=source, location=f"device {dev}")
        if not entries:
            continue
        devices.append(_read_device(source, dev, entries, segments, settings, lenient))
    if not devices:
        raise TraceError(
            "the snapshot has no trace entries on any device (was torch.cuda.memory._record_memory_history enabled?)",
            path=source,
        )
    annotations = data.get("external_annotations")
    metadata: dict[str, Any] = {"devices_in_file": len(traces)}
    if isinstance(annotations, list) and annotations:
        metadata["external_annotations"] = len(annotations)
    return Trace(source=source, format=FORMAT, devices=devices, metadata=metadata)


def _read_device(
    source: str,
    dev: int,
    entries: list[Any],
    segments: list[Any],
    settings: dict[str, Any],
    lenient: bool,
) -> DeviceTrace:
    skipped: dict[str, int] = {}
    parsed: list[tuple[int, Event]] = []
    raw: list[tuple[int, Action, int, int, int]] = []
    for i, e in enumerate(entries):
        where = lambda i=i: f"device {dev}, device_traces entry {i}"  # noqa: E731
        if type(e) is not dict:
            raise TraceError(f"trace entry should be a dict, got {type(e).__name__}", path=source, location=where())
        name = e.get("action")
        if not isinstance(name, str) or name not in _ACTIONS:
            if lenient:
                count(skipped, "unknown_action")
                continue
            known = ", ".join(sorted(_ACTIONS))
            raise TraceError(f"unknown action {_short(name)}; known actions: {known}", path=source, location=where())
        action = _ACTIONS[name]
        if action is None:
            continue
        t = e.get("time_us")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t)):
            raise TraceError(f"field 'time_us' should be a finite number, got {_short(t)}", path=source, location=where())
        time_us = t
        stream = _int(e, "stream", where, source, 0)
        if action is Action.OOM:
            size = _int(e, "size", where, source, 0)
            info: dict[str, Any] = {}
            free = e.get("device_free", e.get("addr"))
            if isinstance(free, int) and not isinstance(free, bool) and free >= 0:
                info["device_free"] = free
            parsed.append((i, Event(Action.OOM, 0, size, stream, time_us, info or None)))
            continue
        if action is Action.MARKER:
            parsed.append((i, Event(Action.MARKER, 0, 0, stream, time_us, {"name": str(e.get("addr", e.get("name", "")))})))
            continue
        address = _int(e, "addr", where, source)
        size = _int(e, "size", where, source)
        if action in _SEGMENT_DELTA and size <= 0:
            if lenient:
                count(skipped, "bad_size")
                continue
            raise TraceError(f"{name} of {size} bytes; sizes must be positive", path=source, location=where())
        ev = Event(action, address, size, stream, time_us)
        parsed.append((i, ev))
        raw.append((i, action, address, size, stream))

    final = [s for s in segments if type(s) is dict and s.get("device", 0) == dev]
    initial = rebuild_initial_segments(
        final, raw, path=source, device=dev, settings=settings, lenient=lenient, skipped=skipped
    )
    checker = StreamChecker(source, lenient=lenient)
    checker.skipped = skipped
    checker.seed([(b.address, b.requested_size, s.stream) for s in initial for b in s.blocks if b.allocated])
    for i, ev in parsed:
        checker.add(ev, lambda i=i: f"device {dev}, device_traces entry {i}")

    capacity = None
    reserved = sum(s.total_size for s in initial)
    for ev in checker.events:
        delta = _SEGMENT_DELTA.get(ev.action)
        if delta:
            reserved += delta * ev.size
        elif ev.action is Action.OOM and ev.info and "device_free" in ev.info and capacity is None:
            capacity = int(ev.info["device_free"]) + reserved
            if capacity < 0:  # only possible in a lenient read of an inconsistent trace
                capacity = None
    return DeviceTrace(
        device=dev,
        events=checker.events,
        initial_segments=initial,
        settings=json_safe(settings),  # a fresh copy per device
        framework=FRAMEWORK,
        capacity=capacity,
        skipped=skipped,
    )
