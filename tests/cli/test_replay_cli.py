"""`memtune replay`, `memtune presets` and `memtune sweep` from the command line."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

import memtune
from memtune.cli.main import main

ISSUE3_KEYS = {"trace", "device", "policy", "settings", "events", "peak_requested_bytes", "peak_allocated_bytes",
               "peak_reserved_bytes", "device_allocs", "device_frees", "ooms", "fragmentation", "seconds",
               "events_per_second"}
MiB = 1 << 20


@pytest.fixture
def lifetimes(tmp_path):
    """A small lifetime table (id,lower,upper,size) written here, with its peak."""
    rng = random.Random(11)
    rows, points = [], []
    for i in range(200):
        lo = rng.randint(0, 1000)
        hi = lo + rng.randint(1, 200)
        size = rng.randint(1, 64 * MiB)
        rows.append(f"{i},{lo},{hi},{size}")
        points += [(lo, 1, size), (hi, 0, -size)]
    cur = peak = 0
    for _, _, d in sorted(points):
        cur += d
        peak = max(peak, cur)
    path = tmp_path / "life.csv"
    path.write_text("id,lower,upper,size\n" + "\n".join(rows) + "\n")
    return path, peak


def run(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_replay_json_has_issue_keys(lifetimes, capsys):
    path, peak = lifetimes
    code, out, err = run(capsys, "replay", str(path), "--policy", "all", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["policy"] for r in rows] == list(memtune.presets())
    for r in rows:
        assert ISSUE3_KEYS <= set(r)
        assert r["peak_requested_bytes"] == peak
        assert "timeline" not in r


def test_replay_table_and_capacity_oom(lifetimes, capsys):
    path, peak = lifetimes
    code, out, err = run(capsys, "replay", str(path), "--policy", "pytorch-cuda,cupy")
    assert code == 0, err
    assert "peak reserved" in out and "pytorch-cuda" in out and "cupy" in out
    assert "OOM" in out and "none" in out
    cap = peak // 2
    code, out, err = run(capsys, "replay", str(path), "--capacity", str(cap), "--json")
    rows = json.loads(out)
    first = rows[0]["ooms"][0]
    assert {"event_index", "size", "time_us"} <= set(first)
    code, out, err = run(capsys, "replay", str(path), "--capacity", str(cap))
    assert code == 0
    assert f"first at event {first['event_index']}" in out.replace("\n", " ")
    assert f"{first['size']:,} B" in out.replace("\n", "")


def test_replay_set_overrides(lifetimes, capsys):
    path, _ = lifetimes
    code, out, err = run(capsys, "replay", str(path), "--set", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                         "--set", "max_split_size_mb=128", "--json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["settings"] == {"expandable_segments": "True", "max_split_size_mb": "128"}


@pytest.mark.parametrize("args, needle", [
    (["--set", "max_split_size_mb"], "key=value"),
    (["--set", "max_split_sise_mb=128"], "max_split_size_mb"),
    (["--capacity", "80 gigs"], "80 gigs"),
    (["--policy", "pytorch-cudda"], "pytorch-cuda"),
])
def test_replay_bad_arguments_are_one_clear_line(lifetimes, capsys, args, needle):
    path, _ = lifetimes
    code, out, err = run(capsys, "replay", str(path), *args)
    assert code == 2
    assert needle in err and "Traceback" not in err


def test_replay_missing_file(capsys, tmp_path):
    code, out, err = run(capsys, "replay", str(tmp_path / "nope.pickle"))
    assert code == 2 and "nope.pickle" in err


def test_replay_chrome_trace_and_report(lifetimes, capsys, tmp_path):
    path, _ = lifetimes
    chrome = tmp_path / "trace.json"
    code, out, err = run(capsys, "replay", str(path), "--policy", "pytorch-cuda,mxnet-round",
                         "--chrome-trace", str(chrome), "--report", str(tmp_path / "rep"))
    assert code == 0, err
    data = json.loads(chrome.read_text())
    counters = [e for e in data["traceEvents"] if e["ph"] == "C"]
    assert {e["pid"] for e in counters} == {1, 2}
    assert all({"allocated", "reserved"} <= set(e["args"]) for e in counters if e["name"] == "memory")
    assert (tmp_path / "rep" / "report.html").exists() and (tmp_path / "rep" / "results.json").exists()
    assert len(list((tmp_path / "rep").glob("*.png"))) == 2
    assert "Report:" in out


def test_presets_lists_every_preset_with_settings(capsys):
    code, out, err = run(capsys, "presets", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["preset"] for r in rows] == list(memtune.presets())
    torch = next(r for r in rows if r["preset"] == "pytorch-cuda")
    assert any(s["name"] == "expandable_segments" and s["variable"].startswith("PYTORCH_CUDA_ALLOC_CONF")
               for s in torch["settings"])
    code, out, err = run(capsys, "presets")
    assert code == 0 and "pytorch-cuda" in out and "max_split_size_mb" in out


def test_sweep_cli_json_grid_and_capacity(lifetimes, capsys, tmp_path):
    path, peak = lifetimes
    code, out, err = run(capsys, "sweep", str(path), "--policy", "pytorch-cuda,mxnet-naive",
                         "--grid", "expandable_segments=True,False", "--capacity", str(int(peak * 1.3)),
                         "--jobs", "2", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 4  # pytorch-cuda defaults + 2 grid values, mxnet-naive
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    assert all(r["fits"] == (not r["ooms"]) for r in rows)
    code, out, err = run(capsys, "sweep", str(path), "--policy", "pytorch-cuda", "--grid",
                         "expandable_segments=True,False", "--capacity", str(int(peak * 1.3)), "--executor", "serial",
                         "--report", str(tmp_path / "rep"))
    assert code == 0, err
    assert "configurations fit in" in out and "Report:" in out
    assert (tmp_path / "rep" / "report.html").exists()


def test_sweep_bad_grid(lifetimes, capsys):
    path, _ = lifetimes
    code, out, err = run(capsys, "sweep", str(path), "--grid", "nonsense=1,2")
    assert code == 2 and "nonsense" in err


def test_console_script_runs(lifetimes):
    path, _ = lifetimes
    proc = subprocess.run([sys.executable, "-m", "memtune", "replay", str(path), "--json"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["policy"] == "pytorch-cuda"


def test_set_applies_to_the_presets_that_have_the_setting(lifetimes, capsys):
    path, _ = lifetimes
    code, out, err = run(capsys, "replay", str(path), "--policy", "all", "--set", "expandable_segments=True", "--json")
    assert code == 0, err
    rows = {r["policy"]: r for r in json.loads(out)}
    assert str(rows["pytorch-cuda"]["settings"]["expandable_segments"]) == "True"
    assert "expandable_segments" not in rows["cupy"]["settings"]


def test_set_errors_name_the_option(lifetimes, capsys):
    path, _ = lifetimes
    code, _, err = run(capsys, "replay", str(path), "--set", "max_split_size_mb=5")
    assert code == 2 and "from --set" in err and "max_split_size_mb" in err
    code, _, err = run(capsys, "replay", str(path), "--policy", "all", "--set", "max_splt_size_mb=50")
    assert code == 2 and "max_split_size_mb" in err and "--set" in err


def test_replay_reports_the_lower_bound_and_a_lifetime_tables_best_static_packing(lifetimes, capsys):
    """Every result carries its ratio to the lower bound; a lifetime table also gets the
    best static packing found offline (a valid packing: at least the bound)."""
    from memtune.trace import packing

    path, peak = lifetimes
    code, out, err = run(capsys, "replay", str(path), "--policy", "memtune,pytorch-cuda", "--json",
                         "--pack-seconds", "0.2")
    assert code == 0, err
    rows = json.loads(out)
    for r in rows:
        assert r["lower_bound_bytes"] == peak
        assert r["ratio_to_bound"] == pytest.approx(r["peak_reserved_bytes"] / peak)
        pk = r["static_packing"]
        assert pk["peak_bytes"] >= peak and pk["ratio"] == pytest.approx(pk["peak_bytes"] / peak)
        assert pk["method"] in packing.METHODS or pk["method"].endswith("-improved")
    code, out, err = run(capsys, "replay", str(path), "--policy", "memtune", "--pack-seconds", "0.2")
    text = " ".join(out.split())
    assert "÷ bound" in text and "lower bound" in text and "best static packing" in text
    ratio = f"{rows[0]['ratio_to_bound']:.3f}"
    assert ratio in text
    # --pack-seconds 0 skips the packing, not the bound
    code, out, err = run(capsys, "replay", str(path), "--policy", "memtune", "--json", "--pack-seconds", "0")
    row = json.loads(out)[0]
    assert row["static_packing"] is None and row["lower_bound_bytes"] == peak


def test_sweep_report_carries_the_bounds(lifetimes, capsys, tmp_path):
    path, peak = lifetimes
    code, out, err = run(capsys, "sweep", str(path), "--policy", "memtune,cupy", "--executor", "serial",
                         "--pack-seconds", "0.2", "--report", str(tmp_path / "rep"))
    assert code == 0, err
    data = json.loads((tmp_path / "rep" / "results.json").read_text())
    (b,) = data["bounds"]
    assert b["lower_bound_bytes"] == peak and b["static_packing"]["peak_bytes"] >= peak
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "best static packing" in html and "reserved / bound" in html
