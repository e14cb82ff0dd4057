"""`memtune record -o T -- python SCRIPT ARGS`: real child processes, real PyTorch."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

import memtune  # noqa: E402
from memtune.trace.model import Action  # noqa: E402
from memtune.trace.record import CPU_DEVICE  # noqa: E402

pytestmark = pytest.mark.torch

TRAIN = textwrap.dedent(
    """
    import hashlib, sys
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(512, 32), torch.randn(512, 1)
    for _ in range(int(sys.argv[1])):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    print(__name__, sys.argv, f"loss={loss.item():.10f}", digest)
    """
)


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=240, env=env)


def memtune_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "memtune", *args]


def test_record_training_script_unchanged_output_and_profiler_peak(tmp_path: Path):
    """Acceptance: the recorded trace replays to the profiler's own peak.

    The profiler's own figure is ``Total Allocated`` on its ``[memory]`` events:
    PyTorch's CPU allocator's running total of live bytes, counted from the first
    allocation made while the profiler is on. The script runs in a fresh process
    whose recording starts before its first line, so the maximum of that total is
    the program's peak of live requested bytes; we read it from the profiler's own
    Chrome trace of the same run (``--profiler-trace``), with plain ``json``.
    """
    (tmp_path / "train.py").write_text(TRAIN)
    plain = run([sys.executable, "train.py", "5"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    rec = run(memtune_cmd("record", "-o", "t.jsonl.gz", "--profiler-trace", "prof.json", "--",
                          sys.executable, "train.py", "5"), tmp_path)
    assert rec.returncode == 0, rec.stderr
    # recording changes nothing the program computes or prints
    assert rec.stdout == plain.stdout
    assert "memtune record: wrote t.jsonl.gz" in rec.stderr

    prof = json.loads((tmp_path / "prof.json").read_text())
    mem = [e["args"] for e in prof["traceEvents"] if e.get("name") == "[memory]" and e["args"]["Device Type"] == 0]
    assert len(mem) > 50
    # asking for the profiler's trace records the ops too (a plain recording keeps no op records)
    assert any(e.get("cat") == "cpu_op" for e in prof["traceEvents"])
    profiler_peak = max(a["Total Allocated"] for a in mem)

    trace = memtune.load_trace(tmp_path / "t.jsonl.gz")
    [dev] = trace.devices
    assert dev.device == CPU_DEVICE and dev.skipped == {}
    n_allocs = sum(e.action is Action.ALLOC for e in dev.events)
    assert n_allocs == sum(1 for a in mem if a["Bytes"] > 0)
    assert dev.peak_requested_bytes() == profiler_peak
    # memtune's own torch-profiler reader, fed the profiler's export, agrees
    assert memtune.load_trace(tmp_path / "prof.json").device(CPU_DEVICE).peak_requested_bytes() == profiler_peak
    # and so does every preset's replay of the recording
    results = memtune.replay(trace, "all")
    assert len(results) >= 2
    for r in results:
        assert r.peak_requested_bytes == profiler_peak, r.policy
        assert r.peak_reserved_bytes >= profiler_peak
    assert trace.metadata["command"] == ["train.py", "5"] and trace.metadata["exit_code"] == 0


def test_exit_codes_propagate_and_the_trace_is_still_written(tmp_path: Path):
    (tmp_path / "fail.py").write_text(
        "import os, sys, torch\nos.makedirs('sub', exist_ok=True)\nos.chdir('sub')  # the trace still lands in ..\n"
        "x = torch.ones(1000)\nif sys.argv[1] == 'exit':\n    sys.exit(3)\n"
        "raise ValueError('boom in the user script')\n"
    )
    r = run(memtune_cmd("record", "-q", "-o", "a.jsonl.gz", "--", sys.executable, "fail.py", "exit"), tmp_path)
    assert r.returncode == 3, r.stderr
    r2 = run(memtune_cmd("record", "-q", "-o", "b.jsonl.gz", "--", "fail.py", "raise"), tmp_path)
    assert r2.returncode == 1
    assert "ValueError: boom in the user script" in r2.stderr
    for name in ("a.jsonl.gz", "b.jsonl.gz"):
        trace = memtune.load_trace(tmp_path / name)
        sizes = [e.size for e in trace.devices[0].events if e.action is Action.ALLOC]
        assert 4000 in sizes  # torch.ones(1000) float32
        assert trace.metadata["exit_code"] == (3 if name.startswith("a") else 1)


def test_module_and_code_targets_see_python_semantics(tmp_path: Path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "job.py").write_text(
        "import sys, torch\nt = torch.zeros(256)\nprint(__name__, sys.argv[1:], float(t.sum()))\n"
    )
    # what `python -m mypkg.job --flag x` prints; the recorded run must print exactly that
    rec = run(memtune_cmd("record", "-q", "-o", "m.jsonl", "--", sys.executable, "-m", "mypkg.job", "--flag", "x"),
              tmp_path)
    assert rec.returncode == 0, rec.stderr
    assert rec.stdout == "__main__ ['--flag', 'x'] 0.0\n"
    assert 1024 in [e.size for e in memtune.load_trace(tmp_path / "m.jsonl").devices[0].events]

    code = "import sys, torch; print(__name__, sys.argv, torch.arange(5).sum().item())"
    rec_c = run(memtune_cmd("record", "-q", "-o", "c.jsonl", "--", sys.executable, "-c", code, "a"), tmp_path)
    assert rec_c.returncode == 0, rec_c.stderr
    assert rec_c.stdout == "__main__ ['-c', 'a'] 10\n"  # as `python -c CODE a` prints


@pytest.mark.parametrize(
    "args, message",
    [
        (["-o", "t.jsonl", "--", "missing_script.py"], "script not found: missing_script.py"),
        (["-o", "t.jsonl", "--", "bash", "-c", "true"], "'bash' is not a Python interpreter"),
        (["-o", "no/such/dir/t.jsonl", "--", "x.py"], "output directory no/such/dir does not exist"),
        (["-o", "t.jsonl", "--", sys.executable], "no script to record after the interpreter"),
        (["-o", "t.jsonl", "--device", "tpu", "--", "x.py"], "'tpu' is not one of 'cpu', 'cuda', 'all'"),
    ],
)
def test_bad_command_lines_are_one_clear_error(tmp_path: Path, args: list[str], message: str):
    r = run(memtune_cmd("record", *args), tmp_path)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_without_torch_the_child_says_so(tmp_path: Path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "torch.py").write_text("raise ImportError('No module named torch (simulated)')\n")
    (tmp_path / "s.py").write_text("print('never runs')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")]))
    r = run([sys.executable, "-m", "memtune.trace.record", "--out", "t.jsonl", "--", "s.py"], tmp_path, env=env)
    assert r.returncode == 2
    assert "recording needs PyTorch" in r.stderr and "pip install 'memtune[torch]'" in r.stderr
    assert "never runs" not in r.stdout and "Traceback" not in r.stderr


def test_demo_traces_are_bundled_small_and_consistent():
    import importlib.resources

    root = importlib.resources.files("memtune") / "data" / "traces"
    names = sorted(p.name for p in root.iterdir() if p.name.endswith(".jsonl.gz"))
    assert len(names) >= 2
    readme = (root / "README.md").read_text()
    for name in names:
        assert name in readme, f"{name} is not documented in data/traces/README.md"
        with importlib.resources.as_file(root / name) as path:
            assert path.stat().st_size < 300 * 1024
            with gzip.open(path, "rt") as f:
                assert json.loads(f.readline())["format"] == "memtune-trace"
            trace = memtune.load_trace(path)
        [dev] = trace.devices
        assert 500 <= len(dev.events) <= 20_000
        # recorded from a fresh start: the profiler's running total peaks at our peak
        prof = trace.metadata["profiler"][str(dev.device)]
        assert prof["allocated_at_start"] == 0
        assert dev.peak_requested_bytes() == prof["peak_total_allocated"]


def test_split_command_understands_python_command_lines():
    from memtune.cli.record import split_command
    from memtune.errors import MemtuneError

    c = split_command([sys.executable, "-u", "-X", "dev", "-W", "error", "train.py", "--lr", "1"])
    assert c.interpreter_options == ["-u", "-X", "dev", "-W", "error"]
    assert c.target == ["train.py", "--lr", "1"]
    assert split_command(["train.py", "-u"]).interpreter == sys.executable
    assert split_command(["train.py", "-u"]).target == ["train.py", "-u"]
    assert split_command([sys.executable, "-mpkg.mod", "x"]).target == ["-m", "pkg.mod", "x"]
    assert split_command([sys.executable, "-c", "print(1)", "y"]).target == ["-c", "print(1)", "y"]
    with pytest.raises(MemtuneError, match="'torchrun' is not a Python interpreter"):
        split_command(["torchrun", "--nproc_per_node=2", "train.py"])
    with pytest.raises(MemtuneError, match="Python interpreter 'python3.99' not found"):
        split_command(["python3.99", "train.py"])
    with pytest.raises(MemtuneError, match="interactive session or stdin cannot be recorded"):
        split_command([sys.executable, "-"])
