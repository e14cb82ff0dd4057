"""Every reader on the real traces in ../shared/traces, checked against the
README's figures and against numbers computed here, directly from the raw
files, by code that shares nothing with the readers."""

from __future__ import annotations

import csv
import gzip
import json
import pickle
from collections import Counter

import numpy as np
import pytest

import memtune
from memtune.trace.formats import detect_format, load_trace, save_trace
from memtune.trace.model import Action

# From ../shared/traces/README.md: device -> (raw entries, {action: count}, peak reserved)
SNAPSHOT_README = {
    "pytorch-snapshot-cold-small.pickle": {0: (97, {"segment_alloc": 9}, 3_781_165_056)},
    "pytorch-snapshot-cold-expandable-3dev.pickle": {
        0: (6445, {"segment_map": 175}, 8_541_700_096),
        1: (596, {"segment_map": 40, "segment_unmap": 6, "oom": 1}, 84_202_749_952),
        2: (882, {"segment_map": 78}, 21_883_781_120),
    },
    "pytorch-snapshot-warm-finetune.pickle": {0: (10307, {"segment_alloc": 152}, 6_471_811_072)},
    "pytorch-snapshot-warm-emptycache.pickle": {0: (9576, {"segment_alloc": 420, "segment_free": 420}, 5_802_819_584)},
    "pytorch-snapshot-warm-lm-fullstep.pickle": {0: (19770, {"segment_alloc": 782, "segment_free": 430}, 61_111_009_280)},
}
WARM_START_README = {
    "pytorch-snapshot-warm-finetune.pickle": 1_400_897_536,
    "pytorch-snapshot-warm-emptycache.pickle": 230_686_720,
    "pytorch-snapshot-warm-lm-fullstep.pickle": 44_715_474_944,
}
PROFILER_README = {
    "torch-profiler-cuda-2gpu-rank1.json.gz": {1: 26770, -1: 1240},
    "torch-profiler-cpu-encoder-train.json.gz": {-1: 5574},
}
LIFETIMES_README = {"lifetimes-resnet50.csv": 1042, "lifetimes-pangu-2.6b.csv": 18692}
EXPECTED_FORMAT = {
    **{n: "pytorch-snapshot" for n in SNAPSHOT_README},
    **{n: "torch-profiler" for n in PROFILER_README},
    **{n: "lifetimes" for n in LIFETIMES_README},
}


class _PlainUnpickler(pickle.Unpickler):
    """The test's own reader of the raw pickle (independent of memtune's)."""

    def find_class(self, module, name):  # pragma: no cover - the shared files have no globals
        raise AssertionError(f"unexpected global {module}.{name}")


def raw_snapshot(path):
    with open(path, "rb") as f:
        return _PlainUnpickler(f).load()


_SEGMENT_SIGN = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}


# ---------------------------------------------------------------------------
# PyTorch snapshots


@pytest.mark.parametrize("name", sorted(SNAPSHOT_README))
def test_snapshot_counts_match_readme_and_raw_file(shared_trace_path, name):
    path = shared_trace_path(name)
    raw = raw_snapshot(path)
    trace = load_trace(path)
    assert trace.format == "pytorch-snapshot"
    expected = SNAPSHOT_README[name]
    # Devices with events, and only those.
    assert sorted(d.device for d in trace.devices) == sorted(expected)
    for dev, (n_raw, counts, _peak) in expected.items():
        entries = raw["device_traces"][dev]
        assert len(entries) == n_raw
        dt = trace.device(dev)
        assert dt.framework == "pytorch-cuda"
        assert dt.skipped == {}
        raw_counts = Counter(e["action"] for e in entries)
        ours = Counter(e.action.value for e in dt.events)
        for action, n in counts.items():
            assert raw_counts[action] == n and ours[action] == n
        # Replay stream = alloc + free_completed; free_requested and snapshot dropped.
        assert ours["alloc"] == raw_counts["alloc"]
        assert ours["free"] == raw_counts["free_completed"]
        assert len(dt.events) == n_raw - raw_counts["free_requested"] - raw_counts["snapshot"]
        # Same order and payload as the raw entries.
        kept = [e for e in entries if e["action"] in ("alloc", "free_completed")]
        assert [(e.address, e.size) for e in dt.events if e.action in (Action.ALLOC, Action.FREE)] == [
            (e["addr"], e["size"]) for e in kept
        ]


@pytest.mark.parametrize("name", sorted(SNAPSHOT_README))
def test_snapshot_reserved_at_start_and_peak_reserved(shared_trace_path, name):
    path = shared_trace_path(name)
    raw = raw_snapshot(path)
    trace = load_trace(path)
    for dev, (_n, _counts, readme_peak) in SNAPSHOT_README[name].items():
        dt = trace.device(dev)
        entries = raw["device_traces"][dev]
        final_total = sum(s["total_size"] for s in raw["segments"] if s["device"] == dev)
        net = sum(_SEGMENT_SIGN.get(e["action"], 0) * e["size"] for e in entries)
        # README: reserved at start = final total_size - net segment events.
        assert dt.initial_reserved_bytes() == final_total - net
        if name in WARM_START_README:
            assert dt.is_warm
            assert dt.initial_reserved_bytes() == WARM_START_README[name]
        else:
            assert dt.initial_segments == []
        reserved = peak = dt.initial_reserved_bytes()
        for e in entries:
            reserved += _SEGMENT_SIGN.get(e["action"], 0) * e["size"]
            peak = max(peak, reserved)
        assert peak == readme_peak


@pytest.mark.parametrize("name", sorted(SNAPSHOT_README))
def test_snapshot_peak_requested_equals_direct_count(shared_trace_path, name):
    path = shared_trace_path(name)
    raw = raw_snapshot(path)
    trace = load_trace(path)
    for dev in SNAPSHOT_README[name]:
        entries = raw["device_traces"][dev]
        final_live = sum(
            b["requested_size"]
            for s in raw["segments"]
            if s["device"] == dev
            for b in s["blocks"]
            if b["state"].startswith("active")
        )
        deltas = [e["size"] if e["action"] == "alloc" else -e["size"] for e in entries if e["action"] in ("alloc", "free_completed")]
        live_at_start = final_live - sum(deltas)
        direct_peak = live_at_start + max(0, int(np.max(np.cumsum(deltas))))
        dt = trace.device(dev)
        assert sum(size for _a, size, _s in dt.initial_live()) == live_at_start
        assert dt.peak_requested_bytes() == direct_peak


def _forward_check(dt, raw_segments):
    """Replay the device's events forward on the rebuilt start state and check
    that every step is physically possible and that the end state is the
    snapshot's final state (segments and live blocks)."""
    segs = {}  # address -> [end, expandable]
    occupied = {}  # live block address -> end of its bytes
    for s in dt.initial_segments:
        blocks = s.blocks
        # Blocks tile the segment exactly; free neighbours are merged.
        assert blocks[0].address == s.address
        assert sum(b.size for b in blocks) == s.total_size
        for a, b in zip(blocks, blocks[1:]):
            assert a.address + a.size == b.address
            assert a.allocated or b.allocated
        for b in blocks:
            if b.allocated:
                assert b.size >= b.requested_size > 0
                occupied[b.address] = b.address + b.size
            else:
                assert b.requested_size == 0
        segs[s.address] = [s.address + s.total_size, s.is_expandable]

    def mapped(a, b):
        # [a, b) inside the union of mapped ranges
        ranges = sorted((k, v[0]) for k, v in segs.items())
        pos = a
        for lo, hi in ranges:
            if lo <= pos < hi:
                pos = hi
                if pos >= b:
                    return True
        return False

    def overlaps_live(a, b):
        return any(x < b and a < end for x, end in occupied.items())

    for ev in dt.events:
        a, n = ev.address, ev.size
        if ev.action in (Action.SEGMENT_ALLOC, Action.SEGMENT_MAP):
            assert not any(lo < a + n and a < v[0] for lo, v in segs.items())
            segs[a] = [a + n, ev.action is Action.SEGMENT_MAP]
        elif ev.action is Action.SEGMENT_FREE:
            assert segs.pop(a)[0] == a + n
            assert not overlaps_live(a, a + n)
        elif ev.action is Action.SEGMENT_UNMAP:
            assert mapped(a, a + n) and not overlaps_live(a, a + n)
            for lo in [lo for lo, v in segs.items() if lo < a + n and a < v[0]]:
                hi, exp = segs.pop(lo)
                if lo < a:
                    segs[lo] = [a, exp]
                if hi > a + n:
                    segs[a + n] = [hi, exp]
        elif ev.action is Action.ALLOC:
            assert mapped(a, a + n), f"alloc at {a:#x} outside any segment"
            assert not overlaps_live(a, a + n), f"alloc at {a:#x} overlaps a live block"
            occupied[a] = a + n
        elif ev.action is Action.FREE:
            del occupied[a]
    # End state == the snapshot's final segments (mapped bytes) and live blocks.
    final = [s for s in raw_segments if s["device"] == dt.device]
    assert sorted(occupied) == sorted(b["address"] for s in final for b in s["blocks"] if b["state"].startswith("active"))
    assert sum(v[0] - lo for lo, v in segs.items()) == sum(s["total_size"] for s in final)
    for s in final:
        assert mapped(s["address"], s["address"] + s["total_size"])


@pytest.mark.parametrize("name", sorted(SNAPSHOT_README))
def test_start_state_is_consistent_with_every_event(shared_trace_path, name):
    path = shared_trace_path(name)
    raw = raw_snapshot(path)
    for dt in load_trace(path).devices:
        _forward_check(dt, raw["segments"])


def test_expandable_snapshot_oom_gives_capacity_and_settings(shared_trace_path):
    path = shared_trace_path("pytorch-snapshot-cold-expandable-3dev.pickle")
    raw = raw_snapshot(path)
    trace = load_trace(path)
    dt = trace.device(1)
    entries = raw["device_traces"][1]
    k = next(i for i, e in enumerate(entries) if e["action"] == "oom")
    reserved = sum(_SEGMENT_SIGN.get(e["action"], 0) * e["size"] for e in entries[:k])
    assert dt.capacity == entries[k]["device_free"] + reserved
    oom = [e for e in dt.events if e.action is Action.OOM]
    assert len(oom) == 1 and oom[0].info["device_free"] == entries[k]["device_free"]
    assert trace.device(0).capacity is None
    s = dt.settings
    assert s["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert s["expandable_segments"] is True
    assert s == raw["allocator_settings"]


def test_snapshot_without_settings_gets_empty_settings(shared_trace_path):
    trace = load_trace(shared_trace_path("pytorch-snapshot-warm-finetune.pickle"))
    assert trace.devices[0].settings == {}
    assert all(e.time_us is None for e in trace.devices[0].events)  # this file has no time_us


# ---------------------------------------------------------------------------
# torch.profiler


def _raw_memory_events(path):
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    return [e for e in data["traceEvents"] if e.get("name") == "[memory]"], data


@pytest.mark.parametrize("name", sorted(PROFILER_README))
def test_profiler_events_order_and_peak(shared_trace_path, name):
    path = shared_trace_path(name)
    mem, data = _raw_memory_events(path)
    trace = load_trace(path)
    assert trace.format == "torch-profiler"
    assert {d.device: len(d.events) for d in trace.devices} == PROFILER_README[name]
    for dt in trace.devices:
        dtype = 0 if dt.device == -1 else 1
        assert dt.framework == ("cpu" if dtype == 0 else "cuda")
        raw = sorted(
            (e for e in mem if e["args"]["Device Type"] == dtype and (dtype == 0 or e["args"]["Device Id"] == dt.device)),
            key=lambda e: (e["ts"], e["args"]["Ev Idx"]),
        )
        # Our order makes the profiler's own running total consistent at every event.
        offset = raw[0]["args"]["Total Allocated"] - raw[0]["args"]["Bytes"]
        running = np.cumsum([e["args"]["Bytes"] for e in raw])
        assert all(offset + int(r) == e["args"]["Total Allocated"] for r, e in zip(running, raw))
        assert [(e.address, e.size if e.action is Action.ALLOC else -e.size) for e in dt.events] == [
            (e["args"]["Addr"], e["args"]["Bytes"]) for e in raw
        ]
        # Every free matches an allocation in this order, so the peak of live
        # requested bytes is the running maximum of the byte deltas.
        assert dt.skipped == {}
        assert dt.peak_requested_bytes() == max(0, int(running.max()))
    if name.startswith("torch-profiler-cuda"):
        props = {p["id"]: p["totalGlobalMem"] for p in data["deviceProperties"]}
        assert trace.device(1).capacity == props[1]


def test_profiler_cpu_peak_is_about_299_mib(shared_trace_path):
    dt = load_trace(shared_trace_path("torch-profiler-cpu-encoder-train.json.gz")).device(-1)
    assert 290 * 2**20 <= dt.peak_requested_bytes() <= 310 * 2**20  # README: "peak live about 299 MiB"


# ---------------------------------------------------------------------------
# Lifetime tables


@pytest.mark.parametrize("name", sorted(LIFETIMES_README))
def test_lifetimes_counts_order_and_peak(shared_trace_path, name):
    path = shared_trace_path(name)
    with open(path, newline="") as f:
        rows = [tuple(int(r[k]) for k in ("id", "lower", "upper", "size")) for r in csv.DictReader(f)]
    assert len(rows) == LIFETIMES_README[name]
    dt = load_trace(path).devices[0]
    assert dt.device == 0
    assert Counter(e.action for e in dt.events) == {Action.ALLOC: len(rows), Action.FREE: len(rows)}
    # Frees first at equal times; times never go backwards.
    times = [(e.time_us, 0 if e.action is Action.FREE else 1) for e in dt.events]
    assert times == sorted(times)
    # Peak live bytes by a different method: live(t) = sum(size | lower <= t) - sum(size | upper <= t),
    # evaluated at every lower bound.
    arr = np.array(rows, dtype=np.int64)
    lo, up, size = arr[:, 1], arr[:, 2], arr[:, 3]
    lo_order, up_order = np.argsort(lo, kind="stable"), np.argsort(up, kind="stable")
    cum_lo = np.concatenate([[0], np.cumsum(size[lo_order])])
    cum_up = np.concatenate([[0], np.cumsum(size[up_order])])
    t = np.unique(lo)
    live = cum_lo[np.searchsorted(lo[lo_order], t, side="right")] - cum_up[np.searchsorted(up[up_order], t, side="right")]
    assert dt.peak_requested_bytes() == int(live.max())


# ---------------------------------------------------------------------------
# All formats


@pytest.mark.parametrize("name", sorted(EXPECTED_FORMAT))
def test_detect_and_round_trip_through_jsonl(shared_trace_path, tmp_path, name):
    path = shared_trace_path(name)
    assert detect_format(path) == EXPECTED_FORMAT[name]
    trace = memtune.load_trace(path)
    for suffix in (".jsonl", ".jsonl.gz"):
        out = tmp_path / f"t{suffix}"
        save_trace(trace, out)
        assert (out.read_bytes()[:2] == b"\x1f\x8b") == suffix.endswith(".gz")
        assert detect_format(out) == "memtune-jsonl"
        again = load_trace(out)
        assert again.format == "memtune-jsonl"
        assert again.devices == trace.devices
        assert again.metadata == trace.metadata
        # And once more: a memtune trace re-saved is byte-identical apart from its source name.
        out2 = tmp_path / f"u{suffix}"
        save_trace(again, out2)
        assert load_trace(out2).devices == trace.devices


def test_gzip_is_detected_by_magic_not_suffix(shared_trace_path, tmp_path):
    src = shared_trace_path("pytorch-snapshot-cold-small.pickle")
    disguised = tmp_path / "snapshot.bin"  # gzip content, no .gz suffix
    disguised.write_bytes(gzip.compress(src.read_bytes()))
    plain = tmp_path / "snapshot.pickle.gz"  # .gz suffix, plain content
    plain.write_bytes(src.read_bytes())
    ref = load_trace(src).devices
    assert detect_format(disguised) == "pytorch-snapshot"
    assert load_trace(disguised).devices == ref
    assert load_trace(plain).devices == ref


def test_profiler_bare_array_form_and_uncompressed(shared_trace_path, tmp_path):
    mem, _ = _raw_memory_events(shared_trace_path("torch-profiler-cpu-encoder-train.json.gz"))
    arr = tmp_path / "trace.json"
    arr.write_text(json.dumps(mem[:200], indent=1))
    dt = load_trace(arr, format="torch-profiler", lenient=True).device(-1)
    sizes = [e["args"]["Bytes"] for e in sorted(mem[:200], key=lambda e: (e["ts"], e["args"]["Ev Idx"]))]
    assert len(dt.events) + sum(dt.skipped.values()) == len(sizes)
