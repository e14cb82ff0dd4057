"""tests/conftest.py's xdist scheduling, checked in a run of its own: every test of one trace
runs on one worker, so the per-worker caches (replays, step analyses, plans) are made once.

xdist's own ``loadgroup`` stopped grouping anything under pytest 9.2 without an error
(pytest-dev/pytest-xdist#1386), and each worker replayed most traces: CI took 10 more CPU
minutes before anyone noticed. This
runs pytest with two workers on a few stand-in files named as the per-trace files are.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("xdist")

CONFTEST = Path(__file__).with_name("conftest.py")
TRACES = [f"run{i}" for i in range(8)]


def test_every_test_of_a_trace_runs_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util, sys
        sys.path.insert(0, {str(CONFTEST.parent)!r})
        spec = importlib.util.spec_from_file_location("memtune_tests_conftest", {str(CONFTEST)!r})
        repo_conftest = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(repo_conftest)
        pytest_collection_modifyitems = repo_conftest.pytest_collection_modifyitems
        pytest_xdist_make_scheduler = repo_conftest.pytest_xdist_make_scheduler
    """))
    log = tmp_path / "ran"
    log.mkdir()
    body = textwrap.dedent(f"""
        import os, pytest
        @pytest.mark.parametrize("name", {TRACES!r})
        def test_a(name, request):
            open(os.path.join({str(log)!r}, request.node.name), "w").write(os.environ["PYTEST_XDIST_WORKER"])
        @pytest.mark.parametrize("name", [n + ".jsonl.gz" for n in {TRACES!r}])
        def test_b(name, request):
            open(os.path.join({str(log)!r}, request.node.name), "w").write(os.environ["PYTEST_XDIST_WORKER"])
    """)
    for file in ("test_targets.py", "test_runplan.py", "test_other.py"):
        (tmp_path / file).write_text(body.replace("test_a", f"test_a_{file[5:-3]}").replace("test_b", f"test_b_{file[5:-3]}"))
    # a test of another file that takes one held-out run (conftest.PER_TRACE_TESTS) goes with its run
    (tmp_path / "test_reference.py").write_text(body.replace("test_a(", "test_repeat_step_is_the_reference_on_held_out_traces(")
                                                .replace("test_b(", "test_detect_period_is_the_reference_on_held_out_traces("))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         "--no-loadscope-reorder", "-o", "addopts=", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")})  # (this run's worker's)
    assert run.returncode == 0, run.stdout + run.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for ran in log.iterdir():
        test, _, param = ran.name.partition("[")
        unit = "other" if test.endswith("_other") else param.removesuffix("]").removesuffix(".jsonl.gz")
        workers[unit].add(ran.read_text())
    assert len(list(log.iterdir())) == 4 * 2 * len(TRACES)
    assert all(len(w) == 1 for w in workers.values()), dict(workers)
    assert set.union(*workers.values()) == {"gw0", "gw1"}, dict(workers)
