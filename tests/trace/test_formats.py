"""Readers on small files written here: RMM logs, lifetime tables, profiler
traces, snapshots and memtune JSON Lines; bad input of every kind; and the
proof that a malicious pickle is refused before anything in it runs."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import memtune
from memtune.errors import MemtuneError, TraceError, UnknownNameError, UnsafePickleError
from memtune.trace.formats import FORMATS, detect_format, iter_events, load_trace, save_trace
from memtune.trace.model import Action, BlockState, DeviceTrace, Event, SegmentState, Trace

# ---------------------------------------------------------------------------
# Writers of realistic small inputs


def write_rmm_log(path: Path, n: int = 300, seed: int = 0, *, failure: bool = True, deallocate: bool = False):
    """An RMM logging_resource_adaptor log as RMM writes it (pattern "%t,%H:%M:%S.%f,%v"),
    with its true peak of live bytes, computed as the log is generated."""
    rng = random.Random(seed)
    lines = ["Thread,Time,Action,Pointer,Size,Stream"]
    live: dict[int, int] = {}
    t_us = (23 * 3600 + 59 * 60 + 59) * 1_000_000 + 999_000 - n * 5  # runs past midnight
    current = peak = 0
    next_ptr = 0x7F8A40000000
    streams = ["0x0", "0x7f8a38001020"]
    free_word = "deallocate" if deallocate else "free"
    allocs = 0
    for i in range(n):
        t_us += rng.randint(1, 9)
        tod = t_us % 86_400_000_000
        stamp = f"{tod // 3_600_000_000:02d}:{tod // 60_000_000 % 60:02d}:{tod // 1_000_000 % 60:02d}.{tod % 1_000_000:06d}"
        thread = rng.choice([140573312345856, 140573303953152])
        if live and rng.random() < 0.45:
            ptr = rng.choice(sorted(live))
            size = live.pop(ptr)
            current -= size
            lines.append(f"{thread},{stamp},{free_word},{ptr:#x},{size},{rng.choice(streams)}")
        elif failure and i == n // 2:
            lines.append(f"{thread},{stamp},allocate failure,(nil),{1 << 40},{streams[0]}")
        else:
            size = rng.choice([256, 1024, 4096, 1 << 20, 3_000_000, 7])
            ptr = next_ptr
            next_ptr += (size + 255) // 256 * 256
            live[ptr] = size
            current += size
            peak = max(peak, current)
            allocs += 1
            lines.append(f"{thread},{stamp},allocate,{ptr:#x},{size},{rng.choice(streams)}")
    path.write_text("\n".join(lines) + "\n")
    return peak, allocs


def small_snapshot(*, warm: bool = False) -> dict:
    """A snapshot shaped like torch.cuda.memory._dump_snapshot output."""
    seg_addr = 0x7F0000000000
    mib = 1 << 20
    traces = [
        {"action": "segment_alloc", "addr": seg_addr, "size": 20 * mib, "stream": 0, "time_us": 1, "frames": []},
        {"action": "alloc", "addr": seg_addr, "size": 3 * mib, "stream": 0, "time_us": 2, "frames": []},
        {"action": "alloc", "addr": seg_addr + 3 * mib, "size": 5 * mib, "stream": 0, "time_us": 3, "frames": []},
        {"action": "free_requested", "addr": seg_addr, "size": 3 * mib, "stream": 0, "time_us": 4, "frames": []},
        {"action": "free_completed", "addr": seg_addr, "size": 3 * mib, "stream": 0, "time_us": 4, "frames": []},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 5, "frames": []},
        {"action": "oom", "device_free": 7 * mib, "size": 100 * mib, "stream": 0, "time_us": 6, "frames": []},
    ]
    blocks = [
        {"address": seg_addr, "size": 3 * mib, "requested_size": 0, "state": "inactive", "frames": []},
        {"address": seg_addr + 3 * mib, "size": 5 * mib, "requested_size": 5 * mib, "state": "active_allocated", "frames": []},
        {"address": seg_addr + 8 * mib, "size": 12 * mib, "requested_size": 0, "state": "inactive", "frames": []},
    ]
    segments = [
        {"device": 0, "address": seg_addr, "total_size": 20 * mib, "stream": 0, "segment_type": "large",
         "is_expandable": False, "blocks": blocks, "frames": []}
    ]
    if warm:  # a segment that existed before recording, holding a live 1000-byte tensor
        w = 0x7E0000000000
        segments.append(
            {"device": 0, "address": w, "total_size": 2 * mib, "stream": 0, "segment_type": "small", "is_expandable": False,
             "blocks": [{"address": w, "size": 1024, "requested_size": 1000, "state": "active_allocated"},
                        {"address": w + 1024, "size": 2 * mib - 1024, "requested_size": 0, "state": "inactive"}]}
        )
        traces.insert(1, {"action": "free_completed", "addr": w + 1024, "size": 700, "stream": 0, "time_us": 1, "frames": []})
    return {
        "segments": segments,
        "device_traces": [traces, []],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128", "max_split_size": 128 * mib,
                               "expandable_segments": False, "roundup_power2_divisions": {"1": 0, "2": 0}},
    }


def write_pickle(path: Path, obj, protocol: int = 4) -> Path:
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    return path


def profiler_doc(events: list[tuple[int, int, int, int, float]]) -> dict:
    """(device type, device id, addr, bytes, ts) -> a Chrome trace with [memory] events."""
    trace_events = [{"ph": "X", "name": "aten::add", "ts": 0.5, "dur": 1, "pid": 1, "tid": 1, "args": {}}]
    total = 0
    for k, (dtype, did, addr, nbytes, ts) in enumerate(events):
        total += nbytes
        trace_events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                             "ts": ts, "args": {"Addr": addr, "Bytes": nbytes, "Total Allocated": total,
                                                "Total Reserved": 0, "Device Type": dtype, "Device Id": did, "Ev Idx": k}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "totalGlobalMem": 1 << 34}], "traceEvents": trace_events}


# ---------------------------------------------------------------------------
# RMM logs


def test_rmm_log_as_rmm_writes_it(tmp_path):
    path = tmp_path / "rmm_log.csv"
    peak, allocs = write_rmm_log(path)
    trace = load_trace(path)
    assert trace.format == "rmm-log" and detect_format(path) == "rmm-log"
    dt = trace.devices[0]
    assert dt.device == 0 and dt.framework == "rmm"
    assert sum(e.action is Action.ALLOC for e in dt.events) == allocs
    assert dt.peak_requested_bytes() == peak
    ooms = [e for e in dt.events if e.action is Action.OOM]
    assert len(ooms) == 1 and ooms[0].size == 1 << 40
    times = [e.time_us for e in dt.events]
    assert times == sorted(times), "time keeps counting past midnight"
    assert {e.stream for e in dt.events} == {0, 0x7F8A38001020}


def test_rmm_log_deallocate_gzip_and_epoch_seconds(tmp_path):
    path = tmp_path / "old.csv"
    peak, _ = write_rmm_log(path, deallocate=True, failure=False, seed=3)
    gz = tmp_path / "old.log.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert load_trace(gz).devices[0].peak_requested_bytes() == peak
    doc = tmp_path / "doc.csv"  # the example in RMM's docs: seconds since the epoch, columns in any order
    doc.write_text(
        "Thread,Time,Action,Pointer,Size,Stream\n"
        "140573312345856,1634567890.123456,allocate,0x7f8a40000000,1024,0x7f8a38001020\n"
        "140573312345856,1634567890.234567,allocate,0x7f8a40000400,2048,0x7f8a38001020\n"
        "140573312345856,1634567890.345678,deallocate,0x7f8a40000000,1024,0x7f8a38001020\n"
    )
    dt = load_trace(doc).devices[0]
    assert [e.action for e in dt.events] == [Action.ALLOC, Action.ALLOC, Action.FREE]
    assert dt.events[0].time_us == pytest.approx(1634567890.123456e6)
    assert dt.peak_requested_bytes() == 3072


# ---------------------------------------------------------------------------
# Lifetime tables


def test_lifetimes_frees_come_first_at_equal_times(tmp_path):
    path = tmp_path / "lt.csv"
    path.write_text("id,lower,upper,size\n0,0,5,100\n1,5,9,40\n2,2,5,7\n3,5,6,1\n")
    dt = load_trace(path).devices[0]
    assert [(e.action.value, e.address, e.time_us) for e in dt.events] == [
        ("alloc", 0, 0.0), ("alloc", 2, 2.0), ("free", 0, 5.0), ("free", 2, 5.0),
        ("alloc", 1, 5.0), ("alloc", 3, 5.0), ("free", 3, 6.0), ("free", 1, 9.0),
    ]
    assert dt.peak_requested_bytes() == 107


# ---------------------------------------------------------------------------
# Profiler


def test_profiler_devices_free_before_start_and_capacity(tmp_path):
    doc = profiler_doc([
        (1, 0, 0xA000, 512, 10.0),
        (0, -1, 0xB000, 64, 11.0),
        (1, 0, 0xC000, -4096, 12.0),  # allocated before profiling began
        (1, 0, 0xA000, -512, 13.0),
        (1, 0, 0xA000, 1024, 14.0),
    ])
    path = tmp_path / "prof.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    trace = load_trace(path)
    assert [(d.device, d.framework) for d in trace.devices] == [(0, "cuda"), (-1, "cpu")]
    cuda = trace.device(0)
    assert cuda.skipped == {"free_before_start": 1}
    assert [(e.action.value, e.size) for e in cuda.events] == [("alloc", 512), ("free", 512), ("alloc", 1024)]
    assert cuda.capacity == 1 << 34 and trace.device(-1).capacity is None


def test_profiler_orders_by_timestamp_then_ev_idx(tmp_path):
    # Two recording threads: Ev Idx runs per thread, timestamps interleave.
    doc = profiler_doc([(0, -1, 1, 100, 1.0), (0, -1, 1, -100, 2.0), (0, -1, 1, 50, 3.0)])
    doc["traceEvents"][2]["args"]["Ev Idx"] = 9  # the free was numbered by another thread
    doc["traceEvents"][3]["args"]["Ev Idx"] = 1  # by Ev Idx alone the second alloc would come first
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    dt = load_trace(path).device(-1)
    assert dt.skipped == {}
    assert [(e.action.value, e.size) for e in dt.events] == [("alloc", 100), ("free", 100), ("alloc", 50)]


# ---------------------------------------------------------------------------
# Snapshots


def test_small_warm_snapshot_rebuilds_blocks(tmp_path):
    path = write_pickle(tmp_path / "s.pickle", small_snapshot(warm=True))
    dt = load_trace(path).device(0)
    mib = 1 << 20
    w = 0x7E0000000000
    # The 20 MiB segment was allocated during the trace; the 2 MiB one existed,
    # with a live 1000-byte tensor and the 700-byte one freed later (rounded to 1024 in the small pool).
    assert dt.initial_segments == [
        SegmentState(w, 2 * mib, 0, "small", (
            BlockState(w, 1024, 1000, True),
            BlockState(w + 1024, 1024, 700, True),
            BlockState(w + 2048, 2 * mib - 2048, 0, False),
        ))
    ]
    assert dt.capacity == 7 * mib + 2 * mib + 20 * mib  # device_free + reserved at the oom
    assert dt.settings["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128"
    assert [e.action for e in dt.events] == [
        Action.SEGMENT_ALLOC, Action.FREE, Action.ALLOC, Action.ALLOC, Action.FREE, Action.OOM
    ]
    assert dt.peak_requested_bytes() == 1000 + 700 + 8 * mib - 700


def test_cold_snapshot_has_no_initial_segments(tmp_path):
    dt = load_trace(write_pickle(tmp_path / "c.pickle", small_snapshot())).device(0)
    assert dt.initial_segments == [] and not dt.is_warm


# ---------------------------------------------------------------------------
# memtune JSON Lines


def _sample_trace() -> Trace:
    seg = SegmentState(4096, 8192, 1, "large", (BlockState(4096, 1024, 1000, True), BlockState(5120, 7168, 0, False)), True)
    events = [
        Event(Action.ALLOC, 1 << 50, 3, 7, 1.5),
        Event(Action.FREE, 4096, 1000, 1, 2),
        Event(Action.MARKER, info={"name": "step 1"}),
        Event(Action.FREE, 1 << 50, 3, 7, None),
        Event(Action.EMPTY_CACHE),
    ]
    d0 = DeviceTrace(0, events, [seg], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "x": [1, 2]},
                     "pytorch-cuda", 1 << 34, {"double_free": 2})
    d1 = DeviceTrace(-1, [Event(Action.ALLOC, 1, 1)], framework="cpu")
    return Trace("orig.pickle", "pytorch-snapshot", [d0, d1], {"note": "ü"})


def test_jsonl_round_trip_and_streaming(tmp_path):
    trace = _sample_trace()
    path = tmp_path / "t.jsonl"
    save_trace(trace, path)
    again = load_trace(path)
    assert again.devices == trace.devices and again.metadata == trace.metadata
    head = json.loads(path.read_text().splitlines()[0])
    assert head["format"] == "memtune-trace" and head["version"] == 1
    assert head["source"] == "orig.pickle" and head["source_format"] == "pytorch-snapshot"
    assert list(iter_events(path)) == [(d.device, e) for d in trace.devices for e in d.events]


def _line_by_line(path, **kw):
    """What memtune's JSON Lines reader gives (or raises) reading line by line: its
    decoding of the whole file at once (jsonl._read_regular) must give the same."""
    from memtune.trace.formats import jsonl

    out: dict = {}
    try:
        events = list(jsonl.iter_device_events(path, header_out=out, **kw))
    except TraceError as e:
        return "error", str(e)
    for dt, ev in events:
        dt.events.append(ev)
    return "ok", (out["devices"], dict(out["header"].get("metadata") or {}))


def _read(path, **kw):
    try:
        t = load_trace(path, format="memtune-jsonl", **kw)
    except TraceError as e:
        return "error", str(e)
    return "ok", (t.devices, t.metadata)


IRREGULAR = {
    "two events on a line": lambda lines: [lines[0], lines[1] + "," + lines[2], *lines[3:]],
    "an event over two lines": lambda lines: [lines[0], lines[1].replace(",", ",\n", 1), *lines[2:]],
    "both (as many objects as lines)": lambda lines: [lines[0], lines[1] + "," + lines[2],
                                                      lines[3].replace(",", ",\n", 1), *lines[4:]],
    "a blank line": lambda lines: [lines[0], "", *lines[1:]],
    "spaces around an event": lambda lines: [lines[0], " " + lines[1] + " ", *lines[2:]],
    "CRLF line ends": lambda lines: [line + "\r" for line in lines],
    "a bool size": lambda lines: [lines[0], lines[1].replace('"s":', '"s":true,"x":'), *lines[2:]],
    "a float address": lambda lines: [lines[0], lines[1].replace('"p":', '"p":1.5,"x":'), *lines[2:]],
    "an unknown action": lambda lines: [lines[0], lines[1].replace('"a":"alloc"', '"a":"grow"'), *lines[2:]],
    "an info list": lambda lines: [lines[0], lines[1][:-1] + ',"i":[1]}', *lines[2:]],
    "a string time": lambda lines: [lines[0], lines[1][:-1] + ',"t":"1"}', *lines[2:]],
    "a list for an event": lambda lines: [lines[0], "[1]", *lines[2:]],
    "a free of a live block's neighbour": lambda lines: [*lines, '{"a":"free","p":12345}'],
    "an event of an unknown device": lambda lines: [lines[0], lines[1][:-1] + ',"d":7}', *lines[2:]],
    "a lost last line": lambda lines: lines[:-1],
    "no events": lambda lines: lines[:1],
    "a header only, no newline": lambda lines: lines[:1],
}


@pytest.mark.parametrize("chunk", [1 << 22, 100], ids=["4MiB", "100B"])
@pytest.mark.parametrize("edit", sorted(IRREGULAR))
def test_jsonl_read_at_once_is_the_line_by_line_read(tmp_path, monkeypatch, edit, chunk):
    """The reader decodes a file as memtune writes it a few MiB of lines at a time (here
    also a line or two at a time) and hands anything else to the line-by-line reader:
    either way the same trace, or the same error naming the line."""
    from memtune.trace.formats import jsonl

    monkeypatch.setattr(jsonl, "_CHUNK_BYTES", chunk)
    path = tmp_path / "t.jsonl"
    save_trace(_sample_trace(), path)
    lines = path.read_text().split("\n")[:-1]
    end = "" if edit == "a header only, no newline" else "\n"
    path.write_text("\n".join(IRREGULAR[edit](lines)) + end, newline="")
    want = _line_by_line(path)
    assert _read(path) == want
    if edit in ("two events on a line", "an event over two lines", "both (as many objects as lines)"):
        assert want[0] == "error"
    lenient = _line_by_line(path, lenient=True)
    assert _read(path, lenient=True) == lenient


def test_jsonl_read_at_once_is_the_line_by_line_read_on_the_held_out_runs():
    """Every recording in the repository (the demo set, the held-out runs and their later
    runs), read both ways."""
    repo = Path(__file__).resolve().parents[2]
    paths = sorted([*(repo / "src" / "memtune" / "data" / "traces").glob("*.jsonl.gz"),
                    *(repo / "benchmarks" / "heldout").glob("*.jsonl.gz")])
    assert len(paths) > 100
    from memtune.trace.formats import jsonl

    for path in paths[::14]:  # (every fourteenth: each takes a second or two both ways)
        got = _read(path)
        assert got[0] == "ok" and got == _line_by_line(path), path.name
        assert jsonl._read_regular(path, str(path)) is not None, f"{path.name} was not read at once"


def test_convert_every_format_then_compare(tmp_path):
    rmm = tmp_path / "r.csv"
    write_rmm_log(rmm)
    for src in (rmm, write_pickle(tmp_path / "s.pickle", small_snapshot(warm=True))):
        out = tmp_path / (src.name + ".jsonl.gz")
        save_trace(load_trace(src), out)
        assert load_trace(out).devices == load_trace(src).devices


# ---------------------------------------------------------------------------
# Bad input


def _err(path, **kw) -> TraceError:
    with pytest.raises(TraceError) as info:
        load_trace(path, **kw)
    return info.value


def test_empty_unknown_missing_and_directory(tmp_path):
    empty = tmp_path / "empty.pickle"
    empty.write_bytes(b"")
    assert "empty" in str(_err(empty)) and str(empty) in str(_err(empty))
    text = tmp_path / "notes.txt"
    text.write_text("hello\nworld\n")
    e = _err(text)
    assert str(text) in str(e) and "cannot tell the trace format" in str(e)
    assert all(name in str(e) for name in FORMATS)
    assert "no such file" in str(_err(tmp_path / "missing.jsonl"))
    assert "directory" in str(_err(tmp_path))
    with pytest.raises(UnknownNameError, match="pytorch-snapshot"):
        load_trace(text, format="pytorch-snapshots")
    gz = tmp_path / "broken.json.gz"
    gz.write_bytes(gzip.compress(b'{"traceEvents": []}')[:12])
    assert str(gz) in str(_err(gz))


@pytest.mark.parametrize("kind", ["rmm", "lifetimes", "jsonl", "profiler", "snapshot"])
def test_truncated_files_name_file_and_place(tmp_path, kind):
    if kind == "rmm":
        full = tmp_path / "full.csv"
        write_rmm_log(full)
        data = full.read_bytes()
        cut = data[: data.rindex(b",", 0, len(data) // 2)]  # mid-row
        expect = "line"
    elif kind == "lifetimes":
        data = b"id,lower,upper,size\n0,0,5,100\n1,2,"
        cut = data
        expect = "line 3"
    elif kind == "jsonl":
        full = tmp_path / "full.jsonl"
        save_trace(_sample_trace(), full)
        data = full.read_bytes()
        cut = data[: len(data) - 15]
        expect = "line"
    elif kind == "profiler":
        data = json.dumps(profiler_doc([(0, -1, 1, 10, 1.0), (0, -1, 1, -10, 2.0)])).encode()
        cut = data[: len(data) - 40]
        expect = "line"
    else:
        data = pickle.dumps(small_snapshot(), protocol=4)
        cut = data[: len(data) // 2]
        expect = "truncated"
    path = tmp_path / f"cut.{kind}"
    path.write_bytes(cut)
    fmt = {"rmm": "rmm-log", "lifetimes": "lifetimes", "jsonl": "memtune-jsonl", "profiler": "torch-profiler",
           "snapshot": "pytorch-snapshot"}[kind]
    for f in (None, fmt):
        e = _err(path, format=f)
        assert str(path) in str(e) and expect in str(e), str(e)


def test_jsonl_missing_lines_detected_by_header_count(tmp_path):
    path = tmp_path / "t.jsonl"
    save_trace(_sample_trace(), path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-2]) + "\n")  # whole lines lost: every remaining line is valid
    e = _err(path)
    assert "promises" in str(e) and "truncated" in str(e)
    path.write_text(lines[0].replace('"version":1', '"version":7') + "\n")
    assert "version" in str(_err(path))


INCONSISTENT = {
    "free_of_unknown_address": [("allocate", 0x10, 8), ("free", 0x20, 8)],
    "double_free": [("allocate", 0x10, 8), ("free", 0x10, 8), ("free", 0x10, 8)],
    "alloc_of_live_address": [("allocate", 0x10, 8), ("allocate", 0x10, 8), ("free", 0x10, 8)],
    "bad_size": [("allocate", 0x10, 0), ("allocate", 0x30, 8)],
    "free_size_mismatch": [("allocate", 0x10, 8), ("free", 0x10, 9)],
}


@pytest.mark.parametrize("reason", sorted(INCONSISTENT))
def test_inconsistent_traces_error_or_lenient_count(tmp_path, reason):
    rows = ["Thread,Time,Action,Pointer,Size,Stream"]
    for i, (act, ptr, size) in enumerate(INCONSISTENT[reason]):
        rows.append(f"1,10:00:00.{i:06d},{act},{ptr:#x},{size},0x0")
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(rows) + "\n")
    e = _err(path)
    bad_line = next(i for i in range(2, len(rows) + 2) if _prefix_ok(rows[: i - 1], tmp_path) and not _prefix_ok(rows[:i], tmp_path))
    assert str(path) in str(e) and f"line {bad_line}" in str(e) and "lenient" in str(e)
    dt = load_trace(path, lenient=True).devices[0]
    assert dt.skipped == {reason: 1}


def _prefix_ok(rows, tmp_path) -> bool:
    p = tmp_path / "prefix.csv"
    p.write_text("\n".join(rows) + "\n")
    try:
        load_trace(p, format="rmm-log")
        return True
    except TraceError as e:
        return "no events" in str(e)


def test_negative_size_and_bad_lifetimes(tmp_path):
    path = tmp_path / "lt.csv"
    path.write_text("id,lower,upper,size\n0,0,5,-3\n1,4,2,10\n2,0,1,5\n")
    e = _err(path)
    assert "line 2" in str(e) and "-3" in str(e)
    dt = load_trace(path, lenient=True).devices[0]
    assert dt.skipped == {"bad_size": 1, "empty_lifetime": 1} and len(dt.events) == 2


def test_snapshot_structural_errors_name_the_entry(tmp_path):
    snap = small_snapshot()
    snap["device_traces"][0][2]["size"] = "big"
    e = _err(write_pickle(tmp_path / "a.pickle", snap))
    assert "device 0, device_traces entry 2" in str(e) and "'size'" in str(e)
    snap = small_snapshot()
    snap["device_traces"][0][1]["action"] = "teleport"
    e = _err(write_pickle(tmp_path / "b.pickle", snap))
    assert "teleport" in str(e) and "entry 1" in str(e)
    assert load_trace(tmp_path / "b.pickle", lenient=True).device(0).skipped["unknown_action"] == 1
    e = _err(write_pickle(tmp_path / "c.pickle", [1, 2, 3]))
    assert "dict" in str(e)
    snap = small_snapshot()
    del snap["segments"][0]  # final state lacks the segment the trace allocated
    e = _err(write_pickle(tmp_path / "d.pickle", snap))
    assert "device_traces entry" in str(e) and "rebuild" in str(e)


# ---------------------------------------------------------------------------
# Pickle safety


class _Malicious:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_malicious_pickle_is_refused_and_never_runs(tmp_path, protocol):
    marker = tmp_path / "pwned"
    payload = {"segments": [], "device_traces": [[_Malicious(marker)]]}
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps(payload, protocol=protocol))
    # Sanity: the payload is real. Unpickled by a normal loader in a child process, it runs.
    subprocess.run([sys.executable, "-c", "import pickle,sys; pickle.loads(open(sys.argv[1],'rb').read())", str(path)],
                   check=True)
    assert marker.exists()
    marker.unlink()
    for fmt in (None, "pytorch-snapshot"):
        with pytest.raises(UnsafePickleError) as info:
            load_trace(path, format=fmt)
        msg = str(info.value)
        assert str(path) in msg and "system" in msg and ("posix" in msg or "os" in msg)
        assert isinstance(info.value, TraceError) and isinstance(info.value, MemtuneError)
    assert not marker.exists()


def test_pickle_extension_registry_and_persistent_ids_are_refused(tmp_path):
    import copyreg

    code = 0x7A11
    copyreg.add_extension("os", "system", code)
    try:
        ext = tmp_path / "ext.pickle"  # PROTO 2, EXT2 <code>, STOP
        ext.write_bytes(b"\x80\x02\x83" + struct.pack("<H", code) + b".")
        with pytest.raises(UnsafePickleError, match="os.system"):
            load_trace(ext, format="pytorch-snapshot")
    finally:
        copyreg.remove_extension("os", "system", code)
    pid = tmp_path / "pid.pickle"  # PROTO 2, BINPERSID of a string
    pid.write_bytes(b"\x80\x02X\x03\x00\x00\x00abcQ.")
    with pytest.raises(UnsafePickleError, match="persistent"):
        load_trace(pid, format="pytorch-snapshot")


def test_memtune_load_trace_is_the_lazy_export():
    assert memtune.load_trace is load_trace


def test_profiler_device_numbers_never_collide(tmp_path):
    doc = profiler_doc([(0, -1, 1, 8, 1.0), (1, -1, 2, 8, 2.0), (13, 0, 3, 8, 3.0), (1, 0, 4, 8, 4.0), (0, 5, 5, 8, 5.0)])
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    trace = load_trace(path)
    got = {(d.framework, d.events[0].address): d.device for d in trace.devices}
    assert got[("cuda", 4)] == 0 and got[("cpu", 1)] == -1  # the usual numbering is kept
    assert len(set(got.values())) == 5
    assert all(n < -1 for k, n in got.items() if k in {("cuda", 2), ("mps", 3), ("cpu", 5)})


def test_jsonl_rejects_non_finite_numbers(tmp_path):
    path = tmp_path / "t.jsonl"
    save_trace(_sample_trace(), path)
    lines = path.read_text().splitlines()
    lines[1] = '{"a":"alloc","p":99,"s":1,"t":NaN}'
    path.write_text("\n".join(lines) + "\n")
    e = _err(path)
    assert "line 2" in str(e) and "NaN" in str(e)


def test_failed_save_leaves_no_file(tmp_path):
    bad = Trace("x", "memtune-jsonl", [DeviceTrace(0, [Event(Action.ALLOC, 1, 1), Event(Action.ALLOC, 2, 1, time_us=float("nan"))])])
    out = tmp_path / "o.jsonl.gz"
    with pytest.raises(TraceError, match="event 1 of device 0"):
        save_trace(bad, out)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TraceError, match="cannot write"):
        save_trace(_sample_trace(), tmp_path / "missing-dir" / "o.jsonl")


def test_iter_events_on_every_kind(tmp_path):
    rmm = tmp_path / "r.csv"
    write_rmm_log(rmm, n=50)
    trace = load_trace(rmm)
    assert list(iter_events(rmm)) == [(0, e) for e in trace.devices[0].events]
    out = tmp_path / "r.jsonl.gz"
    save_trace(trace, out)
    assert list(iter_events(out)) == list(iter_events(rmm, format="rmm-log"))


def test_every_skip_reason_is_documented():
    from memtune.trace.formats import SKIP_REASONS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "trace-format.md").read_text()
    src = "".join(p.read_text() for p in Path(memtune.trace.formats.__file__).parent.glob("*.py"))
    import re

    used = set(re.findall(r'(?:count\([^,]+,\s*|problem\(\s*)"([a-z_]+)"', src)) | {"free_before_start"}
    assert {"alloc_of_live_address", "free_size_mismatch", "bad_size", "unknown_action"} <= used
    assert used <= set(SKIP_REASONS), used - set(SKIP_REASONS)
    assert all(f"`{r}`" in doc for r in SKIP_REASONS)
