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
#: Tests of other files that also take one held-out run each: they go to that run's worker,
#: where its recording is loaded already (heldout_runs.load_recording)
PER_TRACE_TESTS = ("test_repeat_step_is_the_reference_on_held_out_traces",
                   "test_detect_period_is_the_reference_on_held_out_traces")
_REPO = Path(__file__).resolve().parents[1]


def work_unit(nodeid: str) -> str:
    """The unit of work that runs on one xdist worker: ``trace:<name>`` for a test of
    PER_TRACE_FILES (or one of PER_TRACE_TESTS) whose one parameter is a trace, else the
    test's file. Read from the node id alone, because the controller, which schedules,
    sees nothing else."""
    path, _, test = nodeid.partition("::")
    if test.endswith("]") and "[" in test and (Path(path).name in PER_TRACE_FILES
                                               or test[:test.index("[")] in PER_TRACE_TESTS):
        return "trace:" + test[test.index("[") + 1:-1].removesuffix(".jsonl.gz")
    return path


def _trace_bytes() -> dict[str, int]:
    """Bytes of each trace's files (its later run included): how long its group takes, roughly."""
    sizes: dict[str, int] = {}
    # the measured held-out runs and their later runs only: a set kept unseen, in a directory
    # of its own beside them, is never touched (benchmarks/heldout/README.md)
    files = [*(_REPO / "benchmarks" / "heldout").glob("*.jsonl.gz"),
             *(_REPO / "benchmarks" / "heldout" / "rerun").glob("*.jsonl.gz"),
             *(_REPO / "src" / "memtune" / "data" / "traces").glob("*.jsonl.gz")]
    if SHARED_TRACES.is_dir():
        files += [p for p in SHARED_TRACES.iterdir() if p.is_file()]
    for p in files:
        key = p.name.removesuffix(".jsonl.gz")
        sizes[key] = sizes.get(key, 0) + p.stat().st_size
    return sizes


def _under_loadgroup(config: pytest.Config) -> bool:
    # An xdist worker sees ``dist`` as "no" and ``loadgroup`` as True (xdist.remote.setup_config).
    return getattr(config.option, "loadgroup", False) or getattr(config.option, "dist", "no") == "loadgroup"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--heldout", default="auto", metavar="WHICH",
        help="which held-out runs the tests that sweep the held-out corpus check: 'auto' (default: "
             "the shard of this commit, which rotates with the commit count; every run when tests are "
             "picked with -k, -m or a node id), 'all', or one shard 'J/N' (tests/heldout_runs.py, "
             "RUNS_PER_SHARD)")


def _picked_by_hand(config: pytest.Config) -> bool:
    """Tests picked with -k, -m or a node id: run what was picked, whatever its shard."""
    return bool(getattr(config.option, "keyword", "") or getattr(config.option, "markexpr", "")
                or any("::" in str(a) for a in config.args))


def heldout_selection(config: pytest.Config):
    """What ``--heldout`` selects (heldout_runs.select), worked out once per process: the
    controller and each xdist worker reach the same answer, from the commit and the manifest."""
    got = config.stash.get(_SELECTION, None)
    if got is None:
        from heldout_runs import select

        try:
            got = select(str(config.getoption("heldout", "auto")), picked_by_hand=_picked_by_hand(config))
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        config.stash[_SELECTION] = got
    return got


_SELECTION = pytest.StashKey[object]()


def pytest_configure(config: pytest.Config) -> None:
    """Check ``--heldout`` before xdist starts its workers: a bad value raised first in the
    report header reached pytest as an INTERNALERROR of a closed worker channel, not as the
    usage error that names the right shard count."""
    heldout_selection(config)


def pytest_report_header(config: pytest.Config) -> str:
    return heldout_selection(config).says


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The shard again at the end, where a CI log is read (above pytest's own closing lines)."""
    terminalreporter.write_line(heldout_selection(config).says)


def _deselect_other_shards(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the corpus sweeps' items of held-out runs outside the selected shard (marked
    ``heldout(NAME)`` by tests/heldout_runs.heldout); they show in pytest's count as deselected."""
    marked = [(item, item.get_closest_marker("heldout")) for item in items]
    if not any(m is not None for _item, m in marked):
        return
    runs = heldout_selection(config).runs
    if runs is None:
        return
    keep, drop = [], []
    for item, m in marked:
        (drop if m is not None and m.args[0] not in runs else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the held-out runs of the selected shard (:func:`heldout_selection`), then, under
    ``--dist loadgroup`` (pyproject's addopts), order the tests by work unit: the files first
    (those with the most tests first), then the traces, largest first. The scheduler below
    hands units out in this order, so the last are the smallest and the two workers finish
    close together. Without xdist the order is pytest's."""
    _deselect_other_shards(config, items)
    if not config.pluginmanager.hasplugin("xdist") or not _under_loadgroup(config):
        return
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)
    sizes = _trace_bytes()
    files = sorted((u for u in units if not u.startswith("trace:")), key=lambda u: -len(units[u]))
    traces = sorted((u for u in units if u.startswith("trace:")),
                    key=lambda u: (-sizes.get(u.removeprefix("trace:"), 0), u))
    items[:] = [item for u in files + traces for item in units[u]]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``--dist loadgroup``, schedule by :func:`work_unit`. (xdist's own loadgroup reads
    ``xdist_group`` marks by appending them to each node id, which pytest 9.2's node ids no
    longer allow: every test then went out alone, and each worker replayed most traces.
    pytest-dev/pytest-xdist#1386, open with a fix proposed in #1388.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class PerTraceScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return PerTraceScheduling(config, log)
