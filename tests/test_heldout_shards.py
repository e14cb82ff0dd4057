"""The held-out corpus in shards (tests/heldout_runs.py) and ``--heldout`` (tests/conftest.py).

A test that sweeps the held-out corpus checks one shard of its runs per pytest run, so the
shards must cover every run exactly once, and what a pytest run selects must be exactly its
shard: nothing of another shard, and every test that names its runs by hand, always.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from heldout_runs import HELDOUT_RUNS, RUNS_PER_SHARD, manifest, parse_selection, shards

REPO = Path(__file__).resolve().parents[1]
HELDOUT = {r.name for r in HELDOUT_RUNS if r.set != manifest.DEMO_SET}


def test_the_shards_hold_every_held_out_run_once_and_no_demo_run():
    parts = shards()
    assert len(parts) == -(-len(HELDOUT) // RUNS_PER_SHARD)
    assert sorted(n for p in parts for n in p) == sorted(HELDOUT)
    counts = [len(p) for p in parts]
    assert max(counts) - min(counts) <= 1 and max(counts) <= RUNS_PER_SHARD, counts


def test_the_shards_are_balanced_in_bytes():
    """Dealt largest first, back and forth: no shard holds far more of the corpus's bytes."""
    def size(name: str) -> int:
        r = HELDOUT_RUNS[name]
        return r.path.stat().st_size + (r.rerun.stat().st_size if r.rerun else 0)

    loads = [sum(map(size, p)) for p in shards()]
    assert max(loads) <= 1.25 * min(loads), loads


def test_more_runs_make_more_shards_not_larger_ones():
    runs = [r for r in HELDOUT_RUNS if r.set != manifest.DEMO_SET]
    for per in (1, 7, len(runs), len(runs) + 5):
        parts = shards(runs, per_shard=per)
        assert len(parts) == -(-len(runs) // per)
        assert max(map(len, parts)) <= per
        assert sorted(n for p in parts for n in p) == sorted(r.name for r in runs)
    with pytest.raises(ValueError, match="per_shard must be at least 1, got 0"):
        shards(runs, per_shard=0)


@pytest.mark.parametrize("value, want", [("auto", "auto"), ("ALL", None), (" all ", None), ("1/6", 0), ("6/6", 5)])
def test_selection_values(value, want):
    assert parse_selection(value, 6) == want


@pytest.mark.parametrize("value, says", [
    ("0/6", "a shard J/6 with J from 1 to 6"),
    ("7/6", "a shard J/6 with J from 1 to 6"),
    ("2/5", "in 6 shards"),
    ("half", "expected 'auto'"),
    ("", "expected 'auto'"),
    ("-1/6", "expected 'auto'"),
])
def test_bad_selection_values_are_named(value, says):
    with pytest.raises(ValueError, match=re.escape(says)) as e:
        parse_selection(value, 6)
    assert repr(value) in str(e.value)


def test_auto_is_the_shard_of_the_commit_count_and_the_first_outside_git(monkeypatch):
    import heldout_runs

    parts = shards()
    for count in (0, 13, 406):
        monkeypatch.setattr(heldout_runs, "_commit_count", lambda: count)
        got = heldout_runs.select("auto")
        assert got.runs == parts[count % len(parts)] and f"commit {count}, {count} mod {len(parts)}" in got.says
        assert heldout_runs.select("auto", picked_by_hand=True).runs is None
    monkeypatch.setattr(heldout_runs, "_commit_count", lambda: None)
    got = heldout_runs.select("auto")
    assert got.runs == parts[0] and "not a git checkout: no commit to rotate with" in got.says
    assert heldout_runs.select("all").runs is None and heldout_runs.select("2/" + str(len(parts))).runs == parts[1]


def _collect(*args: str, quiet: bool = True, path: str = "tests/plan/test_longer_runs.py") -> tuple[int, str]:
    """pytest --collect-only on ``path`` of the repository (by default a file with corpus
    sweeps and tests of named runs), as this suite runs it; ``quiet`` lists node ids, else
    the report header is shown."""
    return _pytest("--collect-only", *(["-q"] if quiet else []), "-p", "no:xdist",
                   "-o", "addopts=--import-mode=importlib", *args, path)


def _pytest(*args: str) -> tuple[int, str]:
    """pytest in the repository with ``args`` (and pyproject's addopts unless they override
    them), none of this run's PYTEST_ variables: its exit code and output."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")})
    return run.returncode, run.stdout + run.stderr


def _sweep_runs(out: str) -> set[str]:
    name = "test_memtune_device_calls_stop_growing_on_a_longer_run"
    return {m.group(1).removesuffix(".jsonl.gz") for m in re.finditer(rf"::{name}\[([^\]]+)\]", out)}


def _named_tests(out: str) -> set[str]:
    """The tests of runs named by hand (not sweeps): in every shard."""
    return set(re.findall(r"::(test_(?:plan_mode_takes|best_fit_turns)\w*\[[^\]]+\])", out))


def test_each_shard_checks_its_runs_and_the_shards_together_check_every_run():
    rc, everything = _collect("--heldout", "all")
    assert rc == 0, everything
    all_runs, named = _sweep_runs(everything), _named_tests(everything)
    assert all_runs and len(named) == 4, everything
    parts = shards()
    seen: list[set[str]] = []
    for j, part in enumerate(parts, 1):
        rc, out = _collect("--heldout", f"{j}/{len(parts)}")
        assert rc == 0, out
        got = _sweep_runs(out)
        assert got == {n for n in all_runs if n in part or n not in HELDOUT}, (j, got)
        assert _named_tests(out) == named, j
        seen.append(got)
    assert set().union(*seen) == all_runs


def test_a_test_picked_by_hand_runs_whatever_its_shard():
    """-k (or -m, or a node id) picks tests by hand: every run it names is collected."""
    rc, everything = _collect("--heldout", "all")
    runs = sorted(_sweep_runs(everything) & HELDOUT)
    far_apart = {runs[0], runs[-1]}
    rc, out = _collect("-k", " or ".join(far_apart))
    assert rc == 0, out
    assert _sweep_runs(out) == far_apart, out
    rc, out = _collect("-k", " or ".join(far_apart), quiet=False)
    assert rc == 0 and "held-out runs: all 185 (tests picked by hand)".replace("185", str(len(HELDOUT))) in out, out


def test_the_report_header_names_a_shard_given_by_hand():
    rc, out = _collect("--heldout", f"2/{len(shards())}", quiet=False)
    assert rc == 0, out
    assert f"held-out runs: shard 2/{len(shards())}, {len(shards()[1])} of {len(HELDOUT)} runs " \
           f"(--heldout 2/{len(shards())})" in out, out
    rc, out = _collect("--heldout", "all", quiet=False)
    assert f"held-out runs: all {len(HELDOUT)} (--heldout all)" in out, out


def test_a_bad_selection_is_a_usage_error_naming_it():
    rc, out = _collect("--heldout", "9/9")
    assert rc == 4, out  # pytest's usage error
    assert "--heldout '9/9'" in out and "expected" in out


def test_a_bad_selection_is_a_usage_error_under_xdist_too():
    """Checked before the workers start (pytest_configure): raised first in a worker, it was
    an INTERNALERROR about a closed channel, with the count of shards nowhere to be seen."""
    n = len(shards())
    rc, out = _pytest("-q", "--heldout", f"2/{n + 1}", "tests/plan/test_longer_runs.py")  # -n auto: addopts
    assert rc == 4 and "INTERNALERROR" not in out, out
    assert f"in {n} shards" in out and f"expected 1/{n} to {n}/{n}" in out, out


def test_the_report_header_says_which_shard_and_how_to_check_them_all():
    rc, out = _collect(quiet=False)
    assert rc == 0, out
    parts = shards()
    git = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if git.returncode != 0:  # not a git checkout: nothing to rotate with, the first shard
        assert (f"held-out runs: shard 1/{len(parts)}, {len(parts[0])} of {len(HELDOUT)} runs "
                f"(not a git checkout: no commit to rotate with)") in out, out
    else:
        commits = int(git.stdout)
        j = commits % len(parts)
        assert (f"held-out runs: shard {j + 1}/{len(parts)}, {len(parts[j])} of {len(HELDOUT)} runs "
                f"(commit {commits}, {commits} mod {len(parts)})") in out, out
    assert "--heldout all checks every run" in out


#: A test may name this many held-out runs by hand (unmarked, in every shard); more is a sweep
#: of the corpus, which must take its parameters from heldout_runs.heldout
HAND_PICKED_AT_MOST = 8


def test_every_sweep_of_the_held_out_runs_is_sharded():
    """A test parametrized over many held-out runs without the ``heldout`` mark would run them
    all in every shard, and CI's time would grow with the corpus again (the EARLY_PEAK list of
    tests/plan/test_targets.py did, 67 runs, until it was marked)."""
    rc, out = _collect("-m", "not heldout", path="tests")
    assert rc == 0, out
    per_test: dict[str, set[str]] = {}
    for m in re.finditer(r"^(\S+?)\[([^\]]+)\]$", out, re.M):
        name = re.sub(r"-\d+$", "", m.group(2).removesuffix(".jsonl.gz"))  # (ids like ddpm-train-0)
        if name in HELDOUT:
            per_test.setdefault(m.group(1), set()).add(name)
    too_many = {t: len(n) for t, n in per_test.items() if len(n) > HAND_PICKED_AT_MOST}
    assert not too_many, too_many
