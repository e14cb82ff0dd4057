"""Reports: export-line advice, the self-contained HTML, PNGs, results.json, Chrome traces."""

from __future__ import annotations

import base64
import io
import json
import random
import re

import numpy as np
import pytest

from memtune.report.advice import advise, export_lines
from memtune.report.chrome import chrome_trace
from memtune.report.html import load_results, write_report
from memtune.report.plots import human_unit
from memtune.trace.model import Action, DeviceTrace, Event, Trace
from memtune.trace.replay import replay

MiB = 1 << 20


def trace(seed=0, n=400) -> Trace:
    rng = random.Random(seed)
    events, live = [], []
    for i in range(n):
        if live and rng.random() < 0.4:
            events.append(Event(Action.FREE, live.pop(rng.randrange(len(live))), 0, 0, 100.0 * i))
        else:
            live.append(i + 1)
            events.append(Event(Action.ALLOC, i + 1, rng.choice([rng.randint(1, 1 << 20), rng.randint(1 << 20, 64 * MiB)]),
                                0, 100.0 * i))
    return Trace("memory://report-test.jsonl", "memtune-jsonl", [DeviceTrace(0, events, framework="pytorch-cuda")])


@pytest.fixture(scope="module")
def results():
    t = trace()
    out = replay(t, "all", timeline=True)
    out += replay(t, "pytorch-cuda", settings={"expandable_segments": "True"}, timeline=True)
    out += replay(t, "pytorch-cuda", settings={"max_split_size_mb": "64"}, timeline=True)
    return out


def test_export_lines():
    assert export_lines("pytorch-cuda", {"expandable_segments": "True"}) == [
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]
    assert export_lines("pytorch-cuda", {"expandable_segments": True, "max_split_size_mb": 128}) == [
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,max_split_size_mb:128"]
    assert export_lines("mxnet-round", {}) == ["export MXNET_GPU_MEM_POOL_TYPE=Round"]
    assert export_lines("mxnet-round", {"MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF": "22"}) == [
        "export MXNET_GPU_MEM_POOL_TYPE=Round", "export MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF=22"]
    assert export_lines("mxnet-naive", {}) == []


def test_advice_picks_the_lowest_peak_per_framework(results):
    advice = {a.framework: a for a in advise(results)}
    torch = advice["PyTorch (CUDA)"]
    candidates = [r for r in results if r.policy == "pytorch-cuda"]
    best = min(candidates, key=lambda r: (bool(r.ooms), r.peak_reserved_bytes))
    default = next(r for r in candidates if not r.overrides)
    assert torch.best_reserved_bytes == best.peak_reserved_bytes
    assert torch.default_reserved_bytes == default.peak_reserved_bytes
    assert torch.saved_bytes == default.peak_reserved_bytes - best.peak_reserved_bytes
    assert torch.exports == export_lines("pytorch-cuda", best.settings)
    mx = advice["MXNet"]
    mx_best = min((r for r in results if r.policy.startswith("mxnet")), key=lambda r: r.peak_reserved_bytes)
    assert mx.preset == mx_best.policy
    if mx_best.policy == "mxnet-naive":
        assert mx.is_default and mx.saved_bytes == 0
    else:
        assert mx.exports[0] == f"export MXNET_GPU_MEM_POOL_TYPE={mx_best.policy.split('-')[1].capitalize()}"


def test_human_units():
    assert human_unit(3 * (1 << 30)) == ("GiB", 1 << 30)
    assert human_unit(5 * MiB) == ("MiB", MiB)
    assert human_unit(10) == ("B", 1)


def test_report_is_self_contained(results, tmp_path):
    path = write_report(results, tmp_path / "rep", title="test report", command="pytest")
    page = path.read_text()
    # One offline file: no external resources of any kind, no scripts.
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", page)
    assert "<script" not in page and "@import" not in page and "url(" not in page
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(imgs) == 2
    from PIL import Image

    for b64 in imgs:
        img = Image.open(io.BytesIO(base64.b64decode(b64)))
        assert img.format == "PNG" and img.size[0] >= 800 and img.size[1] >= 300
        arr = np.asarray(img.convert("L"))
        assert arr.std() > 5  # not blank
    for r in results:
        assert r.label in page
    assert "export PYTORCH_CUDA_ALLOC_CONF" in page or "no change" in page
    pngs = sorted(p.name for p in (tmp_path / "rep").glob("*.png"))
    assert len(pngs) == 2
    back = load_results(tmp_path / "rep" / "results.json")
    assert [r.to_json(timeline=True) for r in back] == [r.to_json(timeline=True) for r in results]
    data = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert data["advice"] and data["command"] == "pytest"


def test_chrome_trace_counter_tracks(results):
    data = chrome_trace(results)
    json.dumps(data)
    counters = [e for e in data["traceEvents"] if e["ph"] == "C" and e["name"] == "memory"]
    pids = {e["pid"] for e in counters}
    assert len(pids) == len(results)
    names = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert all(any(r.label in n for n in names) for r in results)
    for pid, r in enumerate(results, 1):
        mine = [e for e in counters if e["pid"] == pid]
        assert max(e["args"]["reserved"] for e in mine) == r.peak_reserved_bytes
        assert max(e["args"]["allocated"] for e in mine) == r.peak_allocated_bytes
        ts = [e["ts"] for e in mine]
        assert ts == sorted(ts)


def test_advice_names_only_changed_settings_and_leads_with_avoided_ooms(shared_trace_path, tmp_path):
    """On a device too small for the default, the advice is the setting that fits,
    exported without the defaults the sweep also spelled out."""
    from memtune.report.advice import advice_lines, advise
    from memtune.trace.sweep import sweep

    trace = shared_trace_path("pytorch-snapshot-warm-emptycache.pickle")
    results = sweep([str(trace)], ["pytorch-cuda"], {"expandable_segments": ["True", "False"],
                    "max_split_size_mb": ["64"]}, capacity="5GiB", jobs=1, executor="serial", progress=False)
    (a,) = [a for a in advise(results) if a.framework == "PyTorch (CUDA)"]
    assert a.default_ooms > 0 and a.best_ooms == 0
    assert all("expandable_segments:False" not in e for e in a.exports)
    text = "\n".join(advice_lines([a]))
    assert "OOM" in text and "export PYTORCH_CUDA_ALLOC_CONF=" in text
