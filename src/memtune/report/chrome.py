"""Chrome/Perfetto trace export: counter tracks ("ph": "C") of allocated and
reserved bytes, one process per policy, like the profiler output MXNet writes
with MXNET_PROFILER_AUTOSTART. Open it in https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from memtune.trace.model import device_name
from memtune.trace.replay import ReplayResult, trace_label


def chrome_trace(results: Sequence[ReplayResult]) -> dict[str, Any]:
    """The trace as a dict (``traceEvents`` + ``displayTimeUnit``). Results need timelines.

    Timestamps are microseconds since the trace's first timed event, or the event
    index (as microseconds) when the trace has no times.
    """
    events: list[dict[str, Any]] = []
    for pid, r in enumerate(results, 1):
        name = f"{r.label} ({trace_label(r.trace)} {device_name(r.device)})"
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        tl = r.timeline
        if tl is None:
            continue
        use_time = tl.has_time
        for i in range(len(tl)):
            ts = tl.time_s[i] * 1e6 if use_time else float(tl.event_index[i])
            events.append({"name": "memory", "cat": "memtune", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                           "args": {"allocated": tl.allocated[i], "reserved": tl.reserved[i]}})
            events.append({"name": "requested", "cat": "memtune", "ph": "C", "ts": ts, "pid": pid, "tid": 0,
                           "args": {"requested": tl.requested[i]}})
        for o in r.ooms:
            t = o.get("time_s")
            ts = t * 1e6 if (use_time and t is not None) else float(o["event_index"])
            events.append({"name": "OOM", "cat": "memtune", "ph": "i", "s": "p", "ts": ts, "pid": pid, "tid": 0,
                           "args": {"size": o["size"], "event_index": o["event_index"]}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"generator": "memtune replay --chrome-trace"}}


def write_chrome_trace(results: Sequence[ReplayResult], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(results)))
    return path
