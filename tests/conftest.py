"""Shared fixtures. Real traces live in ../shared/traces (never copied here).

Where ../shared is absent (a user's machine) tests that need it skip with a
reason; under CI (CI=true) they fail instead, so a missing data set can never
turn CI green by skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_traces import SHARED_TRACES


def shared_trace(name: str) -> Path:
    """Path of a real trace in ../shared/traces; skip (or fail under CI) if absent."""
    path = SHARED_TRACES / name
    if not path.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but the shared trace {path} is missing")
        pytest.skip(f"shared trace {path} is not present on this machine")
    return path


@pytest.fixture
def shared_traces_dir() -> Path:
    if not SHARED_TRACES.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {SHARED_TRACES} is missing")
        pytest.skip(f"{SHARED_TRACES} is not present on this machine")
    return SHARED_TRACES


@pytest.fixture
def shared_trace_path():
    """Factory fixture: ``shared_trace_path("lifetimes-resnet50.csv") -> Path``."""
    return shared_trace


@pytest.fixture(autouse=True)
def _fresh_config_reads():
    """Every test starts with no read-once variable read yet, so a test that
    overrides one (allowed only before its first read) does not depend on which
    tests ran before it. Cheap; imports nothing if memtune.config is not loaded."""
    import sys

    cfg = sys.modules.get("memtune.config")
    if cfg is not None:
        cfg.reset_for_tests()
    yield


@pytest.fixture(autouse=True)
def _piped_terminal_width(monkeypatch):
    """CLI output is read as if piped (160 columns), whatever runs the tests: pytest-xdist's
    workers set COLUMNS to the terminal's width, which would wrap the tables' headers."""
    monkeypatch.delenv("COLUMNS", raising=False)


#: Files whose tests each take one trace (a ``name`` parameter: a held-out run or a shared
#: trace). Their per-trace work (replays of every preset, step analyses, plans, later runs)
#: is cached per worker process, so all the tests of one trace, in all three files, run on
#: one worker: CI's time is mostly these, and a whole file on one worker left the other idle.
PER_TRACE_FILES = ("test_targets.py", "test_runplan.py", "test_longer_runs.py")
_REPO = Path(__file__).resolve().parents[1]


def _trace_group(item: pytest.Item) -> str | None:
    if item.path.name not in PER_TRACE_FILES:
        return None
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("name") if callspec is not None else None
    return name.removesuffix(".jsonl.gz") if isinstance(name, str) else None


def _trace_bytes() -> dict[str, int]:
    """Bytes of each trace's files (its later run included): how long its group takes, roughly."""
    sizes: dict[str, int] = {}
    files = [*(_REPO / "benchmarks" / "heldout").rglob("*.jsonl.gz"),
             *(_REPO / "src" / "memtune" / "data" / "traces").glob("*.jsonl.gz")]
    if SHARED_TRACES.is_dir():
        files += [p for p in SHARED_TRACES.iterdir() if p.is_file()]
    for p in files:
        key = p.name.removesuffix(".jsonl.gz")
        sizes[key] = sizes.get(key, 0) + p.stat().st_size
    return sizes


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (pyproject's addopts): a group per trace in PER_TRACE_FILES,
    a group per file elsewhere (module-scoped fixtures and caches are made once, as under
    ``loadfile``). Workers take groups in collection order, so the files come first (those
    with the most tests first), then the traces, largest first: the last groups are the
    smallest, and the two workers finish close together."""
    if not config.pluginmanager.hasplugin("xdist") or getattr(config.option, "dist", "no") != "loadgroup":
        return
    groups: dict[str, list[pytest.Item]] = {}
    traces: set[str] = set()
    for item in items:
        trace = _trace_group(item)
        group = f"trace:{trace}" if trace is not None else item.path.relative_to(_REPO).as_posix()
        if trace is not None:
            traces.add(group)
        item.add_marker(pytest.mark.xdist_group(group))
        groups.setdefault(group, []).append(item)
    sizes = _trace_bytes()
    files = sorted((g for g in groups if g not in traces), key=lambda g: -len(groups[g]))
    by_size = sorted(traces, key=lambda g: (-sizes.get(g.removeprefix("trace:"), 0), g))
    items[:] = [item for g in files + by_size for item in groups[g]]
