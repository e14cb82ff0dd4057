"""Recording memtune's own allocators (TraceRecorder) and MEMTUNE_PROFILER_AUTOSTART."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import memtune
from memtune.allocator.events import AllocatorEvent, EventKind
from memtune.allocator.recording import AutostartProfiler, TraceRecorder, record_allocator
from memtune.trace.model import Action

PRESET = "pytorch-cuda"


def _ticks():
    t = iter(range(0, 10**9, 1000))
    return lambda: next(t)


def test_event_kinds_map_to_trace_actions():
    rec = TraceRecorder(clock=_ticks())
    for ev in [
        AllocatorEvent(EventKind.SEGMENT_ALLOC, 0x1000, 2 << 20),
        AllocatorEvent(EventKind.ALLOCATED, 0x1000, 1024, requested=1000),
        AllocatorEvent(EventKind.RECYCLED, 0x1400, 512, stream=7, requested=3),
        AllocatorEvent(EventKind.FREED, 0x1000, 1024, requested=1000),
        AllocatorEvent(EventKind.RELEASED, 0x1000, 2 << 20, info={"reason": "empty_cache"}),
        AllocatorEvent(EventKind.SEGMENT_FREE, 0x1000, 2 << 20),
        AllocatorEvent(EventKind.ALLOCATION_FAILED, 0, 1 << 30, requested=1 << 30, info={"device_free": 5}),
        AllocatorEvent(EventKind.SEGMENT_MAP, 0x9000, 20 << 20),
        AllocatorEvent(EventKind.SEGMENT_UNMAP, 0x9000, 20 << 20),
    ]:
        rec(ev)
    got = [(e.action, e.address, e.size, e.stream) for e in rec.events]
    assert got == [
        (Action.SEGMENT_ALLOC, 0x1000, 2 << 20, 0),
        (Action.ALLOC, 0x1000, 1000, 0),
        (Action.ALLOC, 0x1400, 3, 7),
        (Action.FREE, 0x1000, 1000, 0),
        (Action.SEGMENT_FREE, 0x1000, 2 << 20, 0),
        (Action.MARKER, 0, 1 << 30, 0),
        (Action.SEGMENT_MAP, 0x9000, 20 << 20, 0),
        (Action.SEGMENT_UNMAP, 0x9000, 20 << 20, 0),
    ]
    assert rec.events[5].info == {"name": "allocation_failed", "requested": 1 << 30, "device_free": 5}
    times = [e.time_us for e in rec.events]
    assert times == sorted(times) and times[0] > 0
    rec.close()
    rec(AllocatorEvent(EventKind.ALLOCATED, 0x2000, 512, requested=512))
    assert len(rec.events) == 8


def _workload(alloc, seed: int, steps: int = 400) -> None:
    rng = np.random.default_rng(seed)
    live: list[int] = []
    for i in range(steps):
        r = rng.random()
        if live and (r < 0.45 or len(live) > 60):
            alloc.free(live.pop(int(rng.integers(len(live)))))
        elif r < 0.47:
            alloc.empty_cache()
        else:
            size = int(rng.choice([rng.integers(1, 4096), rng.integers(4096, 1 << 20), rng.integers(1 << 20, 48 << 20)]))
            live.append(alloc.malloc(size, stream=int(rng.integers(0, 2))))
    for a in live:
        alloc.free(a)


@pytest.mark.parametrize(
    "seed, settings",
    [(0, {}), (1, {"max_split_size_mb": 40, "roundup_power2_divisions": 4}), (2, {"expandable_segments": True})],
)
def test_recorded_allocator_replays_to_the_same_statistics(tmp_path: Path, seed: int, settings: dict):
    alloc = memtune.allocator(PRESET, capacity="8GiB", **settings)
    rec = record_allocator(alloc)
    _workload(alloc, seed)
    stats = alloc.memory_stats()
    path = rec.save(tmp_path / "log.jsonl.gz")
    trace = memtune.load_trace(path)
    [dev] = trace.devices
    assert dev.events == [e for e in rec.events]
    device_calls = {Action.SEGMENT_ALLOC, Action.SEGMENT_MAP}
    assert sum(e.action in device_calls for e in dev.events) == stats["num_device_alloc"]
    assert sum(e.action is Action.EMPTY_CACHE for e in dev.events) > 0
    assert dev.peak_requested_bytes() == stats["requested_bytes.all.peak"]
    [res] = memtune.replay(trace, PRESET)  # under the recorded settings, taken from the trace
    assert res.peak_requested_bytes == stats["requested_bytes.all.peak"]
    assert res.peak_allocated_bytes == stats["allocated_bytes.all.peak"]
    assert res.peak_reserved_bytes == stats["reserved_bytes.all.peak"]
    assert res.device_allocs == stats["num_device_alloc"]


def test_recording_a_busy_allocator_starts_warm(tmp_path: Path):
    alloc = memtune.allocator(PRESET, capacity="8GiB")
    early = [alloc.malloc(s) for s in (3 << 20, 700, 25 << 20)]
    rec = record_allocator(alloc)
    assert rec.initial_segments, "live blocks at attach time are the trace's initial state"
    alloc.free(early[1])
    later = alloc.malloc(5 << 20)
    alloc.free(early[0])
    alloc.free(later)
    trace = memtune.load_trace(rec.save(tmp_path / "warm.jsonl"))
    [dev] = trace.devices
    assert dev.is_warm
    assert sorted(s for _, s, _ in dev.initial_live()) == [700, 3 << 20, 25 << 20]
    [res] = memtune.replay(trace, PRESET)  # frees of blocks from before recording replay cleanly
    assert res.initial_reserved_bytes == dev.initial_reserved_bytes()
    assert res.peak_requested_bytes == dev.peak_requested_bytes()


AUTOSTART_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import memtune
    names = sys.argv[1:]
    out = {}
    for k, name in enumerate(names):
        a = memtune.allocator(name, capacity="4GiB")
        live = [a.malloc((k + 1) * s) for s in (1000, 3 << 20, 30 << 20, 512, 7 << 20)]
        a.free(live.pop(2))
        live.append(a.malloc(1 << 20))
        a.free(live.pop(0))
        st = a.memory_stats()
        out[name] = [st["allocated_bytes.all.current"], st["reserved_bytes.all.current"],
                     st["allocated_bytes.all.peak"], st["reserved_bytes.all.peak"]]
    print(json.dumps(out))
    """
)


def test_profiler_autostart_writes_counter_tracks_for_every_allocator(tmp_path: Path):
    (tmp_path / "prog.py").write_text(AUTOSTART_SCRIPT)
    names = [p for p in memtune.presets()][:3]
    env = dict(os.environ, MEMTUNE_PROFILER_AUTOSTART="1", MEMTUNE_PROFILER_OUTPUT="prof/out.json")
    r = subprocess.run([sys.executable, "prog.py", *names], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    expected = json.loads(r.stdout)
    out = tmp_path / "prof" / "out.json"
    assert f"wrote allocator profile {Path('prof/out.json')}" in r.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert len(procs) == len(names)
    for pid, name in zip(sorted(procs), names):
        assert name in procs[pid]
        counters = [e for e in events if e["ph"] == "C" and e["pid"] == pid]
        assert len(counters) > 5
        ts = [e["ts"] for e in counters]
        assert ts == sorted(ts)
        alloc_cur, res_cur, alloc_peak, res_peak = expected[name]
        assert counters[-1]["args"] == {"allocated": alloc_cur, "reserved": res_cur}
        assert max(e["args"]["allocated"] for e in counters) == alloc_peak
        assert max(e["args"]["reserved"] for e in counters) == res_peak


def test_no_autostart_no_file(tmp_path: Path):
    (tmp_path / "prog.py").write_text(AUTOSTART_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "MEMTUNE_PROFILER_AUTOSTART"}
    env["MEMTUNE_PROFILER_OUTPUT"] = "out.json"
    r = subprocess.run([sys.executable, "prog.py", PRESET], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "out.json").exists()
    assert "allocator profile" not in r.stderr


def test_autostart_profiler_chrome_trace_shape(tmp_path: Path):
    prof = AutostartProfiler(tmp_path / "p.json")

    class Fake:
        preset = "fake-preset"

        def __init__(self):
            self.listeners = []

        def add_listener(self, fn, events=None):
            self.listeners.append(fn)

    fake = Fake()
    prof.attach(fake)
    [listener] = fake.listeners
    listener(AllocatorEvent(EventKind.SEGMENT_ALLOC, 0, 2 << 20))
    listener(AllocatorEvent(EventKind.ALLOCATED, 0, 512, requested=100))
    listener(AllocatorEvent(EventKind.FREED, 0, 512, requested=100))
    listener(AllocatorEvent(EventKind.RELEASED, 0, 2 << 20))
    listener(AllocatorEvent(EventKind.SEGMENT_FREE, 0, 2 << 20))
    path = prof.write()
    doc = json.loads(path.read_text())
    counters = [(e["args"]["allocated"], e["args"]["reserved"]) for e in doc["traceEvents"] if e["ph"] == "C"]
    assert counters == [(0, 0), (0, 2 << 20), (512, 2 << 20), (0, 2 << 20), (0, 0)]
    assert "allocator 0 (fake-preset)" in doc["otherData"]["allocators"]
