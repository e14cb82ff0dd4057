"""Fuzzing every reader with mutated valid files (hypothesis).

The only allowed outcomes are a parsed Trace or one of memtune's own errors:
never a raw json/csv/pickle/gzip exception, a KeyError or a deep traceback.
"""

from __future__ import annotations

import copy
import gzip
import json
import pickle
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from memtune.errors import MemtuneError
from memtune.trace.formats import load_trace, save_trace
from memtune.trace.model import Action, BlockState, DeviceTrace, Event, SegmentState, Trace

MIB = 1 << 20


def _snapshot() -> dict:
    seg, w = 0x7F0000000000, 0x7E0000000000
    return {
        "segments": [
            {"device": 0, "address": seg, "total_size": 20 * MIB, "stream": 0, "segment_type": "large", "is_expandable": False,
             "blocks": [{"address": seg, "size": 3 * MIB, "requested_size": 0, "state": "inactive"},
                        {"address": seg + 3 * MIB, "size": 17 * MIB, "requested_size": 5 * MIB, "state": "active_allocated"}]},
            {"device": 0, "address": w, "total_size": 2 * MIB, "stream": 0, "segment_type": "small", "is_expandable": False,
             "blocks": [{"address": w, "size": 1024, "requested_size": 1000, "state": "active_allocated"},
                        {"address": w + 1024, "size": 2 * MIB - 1024, "requested_size": 0, "state": "inactive"}]},
        ],
        "device_traces": [[
            {"action": "free_completed", "addr": w + 1024, "size": 700, "stream": 0, "time_us": 1},
            {"action": "segment_alloc", "addr": seg, "size": 20 * MIB, "stream": 0, "time_us": 2},
            {"action": "alloc", "addr": seg, "size": 3 * MIB, "stream": 0, "time_us": 3},
            {"action": "alloc", "addr": seg + 3 * MIB, "size": 5 * MIB, "stream": 0, "time_us": 4},
            {"action": "free_requested", "addr": seg, "size": 3 * MIB, "stream": 0, "time_us": 5},
            {"action": "free_completed", "addr": seg, "size": 3 * MIB, "stream": 0, "time_us": 5},
            {"action": "oom", "device_free": 7 * MIB, "size": 100 * MIB, "stream": 0, "time_us": 6},
        ]],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                               "roundup_power2_divisions": {"1": 0, "2": 4}},
    }


def _profiler() -> dict:
    rows = [(1, 0, 0xA000, 512, 10.0), (0, -1, 0xB000, 64, 11.0), (1, 0, 0xC000, -4096, 12.0),
            (1, 0, 0xA000, -512, 13.0), (1, 0, 0xA000, 1024, 14.0), (0, -1, 0xB000, -64, 15.0)]
    events = [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "args": {"x": [1, 2]}}]
    for k, (dt, di, addr, b, ts) in enumerate(rows):
        events.append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
                       "args": {"Addr": addr, "Bytes": b, "Total Allocated": 0, "Total Reserved": 0,
                                "Device Type": dt, "Device Id": di, "Ev Idx": k}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "totalGlobalMem": 1 << 34}], "traceEvents": events}


RMM = (
    "Thread,Time,Action,Pointer,Size,Stream\n"
    "140573312345856,23:59:59.999990,allocate,0x7f8a40000000,1024,0x0\n"
    "140573312345856,23:59:59.999995,allocate,0x7f8a40000400,2048,0x7f8a38001020\n"
    "140573303953152,00:00:00.000001,free,0x7f8a40000000,1024,0x0\n"
    "140573303953152,00:00:00.000007,allocate failure,(nil),1099511627776,0x0\n"
    "140573312345856,00:00:00.000009,deallocate,0x7f8a40000400,2048,0x7f8a38001020\n"
)
LIFETIMES = "id,lower,upper,size\n0,0,5,100\n1,5,9,40\n2,2,5,7\n3,5,6,1\n4,1,3,4096\n"


def _jsonl_text() -> bytes:
    seg = SegmentState(4096, 8192, 1, "large", (BlockState(4096, 1024, 1000, True), BlockState(5120, 7168, 0, False)))
    events = [Event(Action.ALLOC, 1 << 40, 3, 7, 1.5), Event(Action.FREE, 4096, 1000, 1, 2),
              Event(Action.MARKER, info={"name": "s"}), Event(Action.FREE, 1 << 40, 3, 7)]
    trace = Trace("x", "memtune-jsonl", [DeviceTrace(0, events, [seg], {"a": 1}, "rmm", 10, {"double_free": 1}),
                                         DeviceTrace(-1, [Event(Action.ALLOC, 1, 1)])])
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.jsonl"
        save_trace(trace, p)
        return p.read_bytes()


SEEDS: dict[str, tuple[str, bytes]] = {
    "snapshot-p2": ("pytorch-snapshot", pickle.dumps(_snapshot(), protocol=2)),
    "snapshot-p4": ("pytorch-snapshot", pickle.dumps(_snapshot(), protocol=4)),
    "profiler": ("torch-profiler", json.dumps(_profiler(), indent=1).encode()),
    "profiler-gz": ("torch-profiler", gzip.compress(json.dumps(_profiler()).encode())),
    "rmm": ("rmm-log", RMM.encode()),
    "lifetimes": ("lifetimes", LIFETIMES.encode()),
    "jsonl": ("memtune-jsonl", _jsonl_text()),
}


def _check(data: bytes, fmt: str | None, lenient: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "input"
        path.write_bytes(data)
        try:
            trace = load_trace(path, format=fmt, lenient=lenient)
        except MemtuneError as e:
            assert str(path) in str(e), f"error does not name the file: {e}"
            return
        assert isinstance(trace, Trace)
        for dt in trace.devices:
            dt.peak_requested_bytes()  # the parsed model is usable
            # and converts to memtune JSON Lines and back identically
        out = Path(d) / "out.jsonl"
        save_trace(trace, out)
        assert load_trace(out).devices == trace.devices


# -- byte-level mutations ------------------------------------------------------

mutation = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.floats(0, 1), st.integers(1, 16)),
    st.tuples(st.just("dup_line"), st.floats(0, 1)),
    st.tuples(st.just("swap_lines"), st.floats(0, 1), st.floats(0, 1)),
)


def _apply(data: bytes, op: tuple) -> bytes:
    kind, *args = op
    i = int(args[0] * len(data)) if data else 0
    if kind == "truncate":
        return data[:i]
    if kind == "flip":
        return data[:i] + bytes([args[1]]) + data[i + 1 :] if data else data
    if kind == "insert":
        return data[:i] + args[1] + data[i:]
    if kind == "delete":
        return data[:i] + data[i + args[1] :]
    lines = data.split(b"\n")
    j = int(args[0] * len(lines)) % max(1, len(lines))
    if kind == "dup_line":
        return b"\n".join(lines[: j + 1] + lines[j:])
    k = int(args[1] * len(lines)) % max(1, len(lines))
    lines[j], lines[k] = lines[k], lines[j]
    return b"\n".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SEEDS)), st.lists(mutation, min_size=1, max_size=3), st.booleans(), st.booleans())
def test_mutated_bytes_give_a_trace_or_a_memtune_error(seed, ops, force_format, lenient):
    fmt, data = SEEDS[seed]
    for op in ops:
        data = _apply(data, op)
    _check(data, fmt if force_format else None, lenient)


# -- structural mutations (drop keys, swap columns, wrong types) --------------

JUNK = st.one_of(st.none(), st.integers(-(2**70), 2**70), st.text(max_size=5), st.floats(allow_nan=True),
                 st.booleans(), st.just([]), st.just({}), st.just([[1, 2]]))


def _nodes(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _nodes(v, path + (i,))


def _mutate_tree(obj, choice: float, drop: bool, junk):
    obj = copy.deepcopy(obj)
    containers = [(p, n) for p, n in _nodes(obj) if isinstance(n, (dict, list)) and n]
    path, node = containers[int(choice * len(containers)) % len(containers)]
    keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
    key = keys[int(choice * 7919) % len(keys)]
    if drop:
        del node[key]
    else:
        node[key] = junk
    return obj


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["snapshot", "profiler", "jsonl"]), st.floats(0, 1), st.booleans(), JUNK, st.booleans())
def test_dropped_keys_and_wrong_types_give_a_trace_or_a_memtune_error(kind, choice, drop, junk, lenient):
    if kind == "snapshot":
        data = pickle.dumps(_mutate_tree(_snapshot(), choice, drop, junk), protocol=4)
        fmt = "pytorch-snapshot"
    elif kind == "profiler":
        data = json.dumps(_mutate_tree(_profiler(), choice, drop, junk)).encode()
        fmt = "torch-profiler"
    else:
        lines = _jsonl_text().decode().splitlines()
        objs = [json.loads(line) for line in lines]
        objs = _mutate_tree(objs, choice, drop, junk)
        data = "\n".join(json.dumps(o) for o in objs).encode()
        fmt = "memtune-jsonl"
    _check(data, fmt, lenient)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["rmm", "lifetimes"]), st.permutations(range(6)), st.booleans(), st.booleans())
def test_swapped_csv_columns_give_a_trace_or_a_memtune_error(kind, perm, header_too, lenient):
    text = RMM if kind == "rmm" else LIFETIMES
    lines = [line.split(",") for line in text.strip().split("\n")]
    n = len(lines[0])
    order = [p for p in perm if p < n]
    out = []
    for k, row in enumerate(lines):
        if k == 0 and not header_too:
            out.append(",".join(row))
        else:
            out.append(",".join(row[p] for p in order))
    _check(("\n".join(out) + "\n").encode(), None, lenient)
