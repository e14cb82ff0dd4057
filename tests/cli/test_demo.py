"""`memtune demo`: no arguments, no network, bundled real traces, a report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


import memtune
from memtune.cli import demo as demo_module
from memtune.cli.main import main


def test_demo_replays_bundled_traces_under_every_preset(tmp_path):
    traces = demo_module.bundled_traces()
    assert traces, "the package ships demo traces"
    env = dict(os.environ)
    # No network: a proxy that refuses everything would make any download fail loudly.
    env.update({"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "no_proxy": ""})
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "memtune", "demo"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    out_dir = tmp_path / "memtune-demo-report"
    assert (out_dir / "report.html").exists()
    assert str(out_dir.resolve()) in proc.stdout.replace("\n", "")
    data = json.loads((out_dir / "results.json").read_text())
    presets = set(memtune.presets())
    by_trace: dict[str, set] = {}
    for r in data["results"]:
        by_trace.setdefault(r["trace"], set()).add(r["policy"])
    assert len(by_trace) == len(traces)
    assert all(p == presets for p in by_trace.values())
    assert "peak reserved" in proc.stdout
    assert len(list(out_dir.glob("*.png"))) >= 2 * len(traces)
    print(f"memtune demo took {elapsed:.1f} s")


def test_demo_out_option(tmp_path, capsys, monkeypatch):
    # The full demo ran above; here one bundled trace is enough to check --out.
    first = demo_module.bundled_traces()[:1]
    monkeypatch.setattr(demo_module, "bundled_traces", lambda: first)
    code = main(["demo", "--out", str(tmp_path / "elsewhere"), "--jobs", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert (tmp_path / "elsewhere" / "report.html").exists()
    assert str((tmp_path / "elsewhere").resolve()) in out.out.replace("\n", "")
    assert not (tmp_path / "memtune-demo-report").exists()


def test_demo_without_bundled_traces_fails_clearly(monkeypatch, capsys, tmp_path):
    import importlib.resources

    empty = tmp_path / "pkg"
    (empty / "data" / "traces").mkdir(parents=True)
    monkeypatch.setattr(importlib.resources, "files", lambda name: empty)
    code = main(["demo", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2
    assert "no bundled demo traces" in err and "Traceback" not in err
