"""The held-out runs (and the bundled demo set): benchmarks/heldout/manifest.toml, read and
checked by benchmarks/heldout/manifest.py (for test parametrization).

The runs are part of the repository: never skipped. A test that sweeps them checks one
shard of them per pytest run, rotating with the commit (:data:`RUNS_PER_SHARD`,
tests/conftest.py); ``pytest --heldout all`` checks every run. A broken or incomplete manifest (a
trace in benchmarks/heldout it does not list, a listed file that is not there, an unknown
key) fails the collection of the test files that import this module, naming each problem;
tests/plan/test_heldout_manifest.py checks the checks.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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


#: Held-out runs in one shard of the corpus. A test that sweeps the corpus (every held-out
#: run, every fixed-shape run, every later run) checks the runs of one shard per pytest run
#: (tests/conftest.py, ``--heldout``): each run costs 10-280 s of test time (replays of every
#: preset, plans, longer runs), and the corpus grows by six runs a set, so checking it whole
#: took CI past its 20 minutes. A fixed number of runs per shard keeps CI's time flat as sets
#: are added; the shard rotates with the commit, so every run is checked every few commits,
#: and ``pytest --heldout all`` (or ``python benchmarks/run.py policy``) checks them all.
RUNS_PER_SHARD = 32


def heldout(value: object, run: str, *marks, id: str | None = None):
    """``value`` as a parameter of a test that sweeps the held-out corpus, for the run named
    ``run`` (with or without ``.jsonl.gz``): marked ``heldout(name)``, so that a pytest run
    checks it only when the run is in its shard. A demo run (bundled, small) is in every
    shard: it gets no mark."""
    try:
        r = HELDOUT_RUNS[run]
    except KeyError:
        raise KeyError(f"heldout(): {run!r} is not a run of benchmarks/heldout/manifest.toml") from None
    mark = () if r.set == manifest.DEMO_SET else (pytest.mark.heldout(r.name),)
    return pytest.param(value, marks=[*marks, *mark], id=id)


def shards(runs=None, per_shard: int = RUNS_PER_SHARD) -> list[frozenset[str]]:
    """The held-out runs (every set but the demo set), by name, in ``ceil(n / per_shard)``
    shards: dealt largest first (a run's bytes and its later run's: roughly its test time)
    back and forth over the shards, so that their counts differ by one at most and their
    bytes little. The same shards on every machine."""
    if per_shard < 1:
        raise ValueError(f"per_shard must be at least 1, got {per_shard!r}")
    runs = [r for r in (HELDOUT_RUNS if runs is None else runs) if r.set != manifest.DEMO_SET]
    n = max(1, -(-len(runs) // per_shard))
    size = {r.name: r.path.stat().st_size + (r.rerun.stat().st_size if r.rerun else 0) for r in runs}
    members: list[set[str]] = [set() for _ in range(n)]
    for i, name in enumerate(sorted(size, key=lambda k: (-size[k], k))):
        lap, at = divmod(i, n)
        members[at if lap % 2 == 0 else n - 1 - at].add(name)
    return [frozenset(m) for m in members]


def parse_selection(value: str, n_shards: int) -> int | None | str:
    """``--heldout``'s value: ``"auto"``, ``"all"`` (None) or a shard ``"J/N"`` (its index,
    from 0). Raises ValueError naming the value and what is accepted."""
    text = value.strip().lower()
    if text in ("auto", "all"):
        return None if text == "all" else "auto"
    j, slash, n = text.partition("/")
    if slash and j.isdigit() and n.isdigit():
        if int(n) != n_shards:
            raise ValueError(f"--heldout {value!r}: the held-out runs are in {n_shards} shards "
                             f"({RUNS_PER_SHARD} runs each at most), not {int(n)}; "
                             f"expected 1/{n_shards} to {n_shards}/{n_shards}")
        if 1 <= int(j) <= n_shards:
            return int(j) - 1
    raise ValueError(f"--heldout {value!r}: expected 'auto' (the shard of this commit), 'all' (every "
                     f"held-out run), or a shard J/{n_shards} with J from 1 to {n_shards}")


@dataclass(frozen=True)
class Selection:
    """The held-out runs a pytest run checks in the corpus sweeps (None: every run), and
    what its report header says of them."""

    runs: frozenset[str] | None
    says: str


def _commit_count() -> int | None:
    """Commits in HEAD's history: the rotation key of ``--heldout auto`` (the same for every
    run of one commit, so CI's selection can be run again), or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    text = out.stdout.strip()
    return int(text) if out.returncode == 0 and text.isdigit() else None


def select(value: str, picked_by_hand: bool = False) -> Selection:
    """``--heldout``'s selection: ``auto`` is the shard of this commit (commit count mod the
    number of shards; the first shard outside a git checkout), or every run where tests
    were picked by hand."""
    parts = shards()
    which = parse_selection(value, len(parts))
    total = sum(map(len, parts))
    how = f"--heldout {value.strip()}"
    if which == "auto" and picked_by_hand:
        which, how = None, "tests picked by hand"
    elif which == "auto":
        count = _commit_count()
        if count is None:
            which, how = 0, "not a git checkout: no commit to rotate with"
        else:
            which, how = count % len(parts), f"commit {count}, {count} mod {len(parts)}"
    if which is None:
        return Selection(None, f"held-out runs: all {total} ({how})")
    return Selection(parts[which], (
        f"held-out runs: shard {which + 1}/{len(parts)}, {len(parts[which])} of {total} runs ({how}); the corpus "
        f"sweeps check these, at most {RUNS_PER_SHARD} a shard; --heldout all checks every run"))


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
