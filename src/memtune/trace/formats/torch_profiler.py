"""torch.profiler Chrome traces recorded with ``profile_memory=True``.

Each ``[memory]`` instant event carries ``args``: ``Addr``, ``Bytes`` (positive
for an allocation, negative for a free), ``Device Type`` (0 CPU, 1 CUDA, ...),
``Device Id`` and ``Ev Idx``. ``[OutOfMemory]`` events become ``oom`` events.

Devices: one DeviceTrace per (device type, device id). CUDA (and other
accelerators) use their ``Device Id`` as the device number; the CPU uses -1.
``framework`` is the device type's name ("cpu", "cuda", ...).

Order: by timestamp ``ts``, then ``Ev Idx``. ``Ev Idx`` alone is *not* a global
order: the profiler numbers events per recording thread, so on a multi-threaded
CUDA trace (forward on one thread, autograd on another) sorting by ``Ev Idx``
puts frees before their allocations. Sorted by ``ts`` the running sum of
``Bytes`` equals the profiler's own ``Total Allocated`` column at every event.

A free of an address allocated before profiling began has no allocation: it is
counted in ``DeviceTrace.skipped["free_before_start"]`` and dropped, never fatal.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from memtune.errors import TraceError
from memtune.trace.formats._common import PathLike, StreamChecker, count, display, json_safe, open_binary
from memtune.trace.formats._jsonstream import stream_chrome_trace
from memtune.trace.model import Action, DeviceTrace, Event, Trace

FORMAT = "torch-profiler"
CPU_DEVICE = -1

#: c10::DeviceType numbering.
DEVICE_TYPES = {
    0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip", 7: "fpga",
    8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps", 14: "meta", 15: "hpu",
    16: "ve", 17: "lazy", 18: "ipu", 19: "mtia", 20: "privateuse1",
}

_KEPT_METADATA = ("schemaVersion", "distributedInfo", "traceName", "deviceProperties", "displayTimeUnit")


def looks_like(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] in (b"{", b"[") and (b'"traceEvents"' in head or b'"[memory]"' in head or b'"schemaVersion"' in head)


def _num(args: Mapping[str, Any], key: str) -> int | None:
    v = args.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v


def read(path: PathLike, *, lenient: bool = False) -> Trace:
    source = display(path)
    # (device type, device id) -> [(ts, ev idx, seq, kind, addr, bytes, index)]
    rows: dict[tuple[int, int], list[tuple[float, int, int, str, int, int, int]]] = {}
    skipped_global: dict[str, int] = {}
    n_memory = 0

    def bad(message: str, index: int, where: Callable[[], str]) -> None:
        if lenient:
            count(skipped_global, "malformed_event")
            return
        raise TraceError(message, path=source, location=f"traceEvents entry {index} ({where()})")

    def on_event(el: Any, index: int, where: Callable[[], str]) -> None:
        nonlocal n_memory
        if not isinstance(el, dict):
            return bad(f"a trace event should be an object, got {type(el).__name__}", index, where)
        name = el.get("name")
        if name == "[memory]":
            kind = "mem"
        elif name == "[OutOfMemory]":
            kind = "oom"
        else:
            return None
        n_memory += 1
        args = el.get("args")
        if not isinstance(args, dict):
            return bad(f"{name} event has no 'args' object", index, where)
        ts = el.get("ts")
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
            return bad(f"{name} event has no numeric 'ts' timestamp", index, where)
        dtype, did, nbytes = _num(args, "Device Type"), _num(args, "Device Id"), _num(args, "Bytes")
        addr = _num(args, "Addr") if kind == "mem" else 0
        missing = [k for k, v in (("Device Type", dtype), ("Device Id", did), ("Bytes", nbytes), ("Addr", addr)) if v is None]
        if missing:
            return bad(f"{name} event lacks integer args {', '.join(missing)}", index, where)
        idx = _num(args, "Ev Idx")
        rows.setdefault((dtype, did), []).append(  # type: ignore[arg-type]
            (float(ts), idx if idx is not None else index, index, kind, addr, nbytes, index)  # type: ignore[arg-type]
        )
        return None

    with open_binary(path) as f:
        others = stream_chrome_trace(f, source, on_event)

    if not rows:
        what = "no [memory] events" if n_memory == 0 else "no usable [memory] events"
        raise TraceError(
            f"{what} in this Chrome trace: record it with torch.profiler.profile(profile_memory=True)", path=source
        )

    capacities: dict[int, int] = {}
    props = others.get("deviceProperties")
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and _num(p, "id") is not None and (_num(p, "totalGlobalMem") or -1) >= 0:
                capacities[p["id"]] = p["totalGlobalMem"]

    devices: list[DeviceTrace] = []
    used: set[int] = set()
    # Order: CUDA devices, then the CPU, then other types. The CPU is always -1;
    # an accelerator keeps its id unless it is negative or taken (e.g. cuda:0 and
    # mps:0 in one trace), then it gets the next unused number below -1.
    order = sorted(rows, key=lambda k: ({1: 0, 0: 1}.get(k[0], 2), k[0], k[1]))
    for (dtype, did) in order:
        number = CPU_DEVICE if dtype == 0 else did
        if number in used or (dtype != 0 and number < 0):
            number = -2
            while number in used:
                number -= 1
        used.add(number)
        checker = StreamChecker(source, lenient=lenient, free_before_start=True)
        for ts, _idx, _seq, kind, addr, nbytes, index in sorted(rows[(dtype, did)], key=lambda r: (r[0], r[1], r[2])):
            loc = lambda index=index: f"traceEvents entry {index}"  # noqa: E731
            if kind == "oom":
                checker.add(Event(Action.OOM, 0, abs(nbytes), 0, ts, None), loc)
            elif nbytes >= 0:
                checker.add(Event(Action.ALLOC, addr, nbytes, 0, ts), loc)
            else:
                checker.add(Event(Action.FREE, addr, -nbytes, 0, ts), loc)
        skipped = checker.skipped
        devices.append(
            DeviceTrace(
                device=number,
                events=checker.events,
                settings={},
                framework=DEVICE_TYPES.get(dtype, f"device-type-{dtype}"),
                capacity=capacities.get(did) if dtype == 1 else None,
                skipped=skipped,
            )
        )
    if skipped_global:
        for d in devices:
            for k, v in skipped_global.items():
                count(d.skipped, k, v)
            break
    metadata = json_safe({k: others[k] for k in _KEPT_METADATA if k in others})
    return Trace(source=source, format=FORMAT, devices=devices, metadata=metadata)
