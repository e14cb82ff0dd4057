"""Replay acceptance on the real traces in ../shared/traces.

The expected figures are computed here, directly from the raw files, by code
independent of memtune's readers: the peak of live requested bytes, and for
PyTorch snapshots the real allocator's device allocations and reserved bytes
(its ``segment_*`` entries).
"""

from __future__ import annotations

import csv
import gzip
import json
import pickle
from pathlib import Path

import pytest

from memtune.cli.main import main
from memtune.trace.replay import replay
from shared_traces import ALL_TRACES, SNAPSHOTS



class _NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):  # the shared snapshots hold only plain data
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def raw_snapshot(path: Path) -> dict:
    with open(path, "rb") as f:
        return _NoGlobals(f).load()


def snapshot_expectations(path: Path) -> dict[int, dict]:
    """Per device: peak requested, device allocs, reserved at start and peak reserved."""
    data = raw_snapshot(path)
    out = {}
    final_reserved: dict[int, int] = {}
    for seg in data.get("segments", []):
        final_reserved[seg["device"]] = final_reserved.get(seg["device"], 0) + seg["total_size"]
    for dev, entries in enumerate(data["device_traces"]):
        if not entries:
            continue
        # Reserved at start = final reserved - net segment growth during the trace.
        net = 0
        for e in entries:
            if e["action"] in ("segment_alloc", "segment_map"):
                net += e["size"]
            elif e["action"] in ("segment_free", "segment_unmap"):
                net -= e["size"]
        start = final_reserved.get(dev, 0) - net
        reserved = peak_res = start
        for e in entries:
            if e["action"] in ("segment_alloc", "segment_map"):
                reserved += e["size"]
            elif e["action"] in ("segment_free", "segment_unmap"):
                reserved -= e["size"]
            peak_res = max(peak_res, reserved)
        # Live requested bytes: blocks live at the end, minus the trace's own allocs,
        # plus the frees of blocks allocated before the trace began, give the start state.
        allocated_in_trace = set()
        live_at_start = {}
        final_live = {b["address"]: b["requested_size"] for seg in data.get("segments", []) if seg["device"] == dev
                      for b in seg.get("blocks", []) if b["state"] == "active_allocated"}
        seen = {}
        for e in entries:
            if e["action"] == "alloc":
                seen[e["addr"]] = e["size"]
                allocated_in_trace.add(e["addr"])
            elif e["action"] == "free_completed":
                if e["addr"] not in seen:
                    live_at_start[e["addr"]] = e["size"]
                seen.pop(e["addr"], None)
        for a, s in final_live.items():
            if a not in allocated_in_trace and a not in live_at_start:
                live_at_start[a] = s
        cur = peak_req = sum(live_at_start.values())
        live = dict(live_at_start)
        for e in entries:
            if e["action"] == "alloc":
                live[e["addr"]] = e["size"]
                cur += e["size"]
                peak_req = max(peak_req, cur)
            elif e["action"] == "free_completed" and e["addr"] in live:
                cur -= live.pop(e["addr"])
        out[dev] = {
            "peak_requested": peak_req,
            "device_allocs": sum(e["action"] == "segment_alloc" for e in entries),
            "reserved_at_start": start,
            "peak_reserved": peak_res,
            "expandable": any(e["action"] == "segment_map" for e in entries),
            "ooms": sum(e["action"] == "oom" for e in entries),
        }
    return out


def profiler_peaks(path: Path) -> dict[int, int]:
    """Peak live requested bytes per device of a torch.profiler trace (CPU = -1);
    frees of blocks allocated before profiling began are ignored."""
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    # Order by timestamp (then Ev Idx): in the 2-GPU trace, Ev Idx order alone frees
    # blocks before their allocation and re-allocates live addresses, timestamps do not.
    mem = [e for e in data["traceEvents"] if e.get("name") == "[memory]"]
    mem.sort(key=lambda e: (e["ts"], e["args"].get("Ev Idx", 0)))
    evs = [e["args"] for e in mem]
    live: dict[tuple, dict] = {}
    cur: dict[int, int] = {}
    peak: dict[int, int] = {}
    for a in evs:
        dev = a["Device Id"] if a["Device Type"] != 0 else -1
        lv = live.setdefault(dev, {})
        size = a["Bytes"]
        if size > 0:
            lv[a["Addr"]] = size
            cur[dev] = cur.get(dev, 0) + size
            peak[dev] = max(peak.get(dev, 0), cur[dev])
        elif a["Addr"] in lv:
            cur[dev] -= lv.pop(a["Addr"])
    return peak


def lifetime_peak(path: Path) -> int:
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f)]
    points = []
    for r in rows:
        points.append((int(r["lower"]), 1, int(r["size"])))
        points.append((int(r["upper"]), 0, -int(r["size"])))  # frees first at equal times
    cur = peak = 0
    for _, _, delta in sorted(points):
        cur += delta
        peak = max(peak, cur)
    return peak


def expected_peaks(path: Path) -> dict[int, int]:
    name = path.name
    if name.endswith(".pickle"):
        return {d: e["peak_requested"] for d, e in snapshot_expectations(path).items()}
    if name.startswith("torch-profiler"):
        return profiler_peaks(path)
    if name.startswith("lifetimes"):
        return {0: lifetime_peak(path)}
    raise AssertionError(f"no oracle for {name}")


@pytest.mark.parametrize("name", ALL_TRACES)
def test_replay_all_json_on_every_shared_trace(name, shared_trace_path, capsys):
    path = shared_trace_path(name)
    code = main(["replay", str(path), "--policy", "all", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = json.loads(captured.out)
    import memtune

    expected = expected_peaks(path)
    assert {r["device"] for r in rows} == set(expected)
    assert len(rows) == len(expected) * len(memtune.presets())
    for r in rows:
        assert r["peak_requested_bytes"] == expected[r["device"]], (r["device"], r["policy"])
        assert r["peak_reserved_bytes"] >= r["peak_allocated_bytes"] >= 0
        if not r["ooms"]:
            assert r["peak_allocated_bytes"] >= r["peak_requested_bytes"]
        assert r["fragmentation"] == pytest.approx(r["peak_reserved_bytes"] / r["peak_requested_bytes"] - 1)


def test_cold_small_reproduces_device_allocs_and_peak_exactly(shared_trace_path):
    path = shared_trace_path("pytorch-snapshot-cold-small.pickle")
    exp = snapshot_expectations(path)[0]
    (r,) = replay(path, "pytorch-cuda")
    assert r.device_allocs == exp["device_allocs"] == 9
    assert r.peak_reserved_bytes == exp["peak_reserved"] == 3_781_165_056


def test_cold_expandable_within_one_percent_and_oom(shared_trace_path):
    path = shared_trace_path("pytorch-snapshot-cold-expandable-3dev.pickle")
    exp = snapshot_expectations(path)
    results = {r.device: r for r in replay(path, "pytorch-cuda")}
    assert set(results) == set(exp)
    for dev, e in exp.items():
        r = results[dev]
        assert r.settings.get("expandable_segments") in ("True", True)
        assert abs(r.peak_reserved_bytes - e["peak_reserved"]) <= 0.01 * e["peak_reserved"], dev
    assert exp[1]["ooms"] == 1 and len(results[1].ooms) >= 1


@pytest.mark.parametrize("name", [n for n in SNAPSHOTS if "warm" in n])
def test_warm_snapshot_reserved_at_start_and_peak(name, shared_trace_path):
    path = shared_trace_path(name)
    exp = snapshot_expectations(path)
    for r in replay(path, "pytorch-cuda"):
        e = exp[r.device]
        assert r.initial_reserved_bytes == e["reserved_at_start"], "reserved at trace start"
        assert r.peak_reserved_bytes == e["peak_reserved"], "peak reserved"
