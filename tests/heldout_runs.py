"""The held-out runs (and the bundled demo set): benchmarks/heldout/manifest.toml, read and
checked by benchmarks/heldout/manifest.py (for test parametrization).

The runs are part of the repository: never skipped. A broken or incomplete manifest (a
trace in benchmarks/heldout it does not list, a listed file that is not there, an unknown
key) fails the collection of the test files that import this module, naming each problem;
tests/plan/test_heldout_manifest.py checks the checks.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _manifest_module():
    """benchmarks/heldout/manifest.py, imported by its path (as benchmarks/bench_policy.py does)."""
    name = "heldout_manifest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "heldout" / "manifest.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # (its dataclasses look their module up there)
        spec.loader.exec_module(module)
    return sys.modules[name]


manifest = _manifest_module()
#: every run of the manifest, in its order (the capture script's: the demo set, then the held-out
#: sets in order); ``HELDOUT_RUNS["vgg-train"]`` is one run
HELDOUT_RUNS = manifest.load()


@dataclass(frozen=True)
class Replayed:
    """What a test reads of a replay: kept instead of the replay's result (its timeline)."""

    peak_reserved_bytes: int
    device_calls: int
    ooms: int
    lower_bound: int


@functools.cache
def load_recording(file: str):
    """The recording ``file`` (a held-out run's, by file name, or else a shared trace's),
    loaded once per worker: the tests of one run, in every file, run on one worker
    (tests/conftest.py) and read the same loaded trace, which none of them changes."""
    import memtune
    from shared_traces import SHARED_TRACES

    run = next((r for r in HELDOUT_RUNS if r.file == file), None)
    return memtune.load_trace(run.path if run is not None else SHARED_TRACES / file)


@functools.cache
def later_run(name: str):
    """The later run of ``name`` (benchmarks/heldout/rerun), loaded once per worker."""
    import memtune

    return memtune.load_trace(HELDOUT_RUNS[name].rerun)


@functools.cache
def replay_later_run(name: str, policy: str, plan_file: str | None = None) -> Replayed:
    """``policy`` at its default settings (``plan_file`` for memtune-plan, if given) on the
    later run of ``name``. Once per worker: tests of several files read the same replays,
    and the conftest's grouping runs all the tests of one workload on one worker."""
    from memtune.trace.replay import replay_device

    trace = later_run(name)
    dt = dataclasses.replace(trace.devices[0], settings={})
    r = replay_device(trace, dt, policy, settings={"plan_file": plan_file} if plan_file else None)
    return Replayed(r.peak_reserved_bytes, r.device_allocs + r.device_frees, len(r.ooms), dt.peak_requested_bytes())
