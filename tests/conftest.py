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
