"""benchmarks/heldout/manifest.toml, the one list of the held-out runs, and its loader's checks."""

from __future__ import annotations

import re

import pytest
from heldout_runs import HELDOUT_RUNS, REPO, manifest


def test_the_manifest_is_valid_and_lists_every_held_out_trace():
    """Loading checks it (HELDOUT_RUNS is loaded); here, again, without the loader: every
    trace of the demo set, benchmarks/heldout and its rerun/ is listed, and nothing else."""
    demo, heldout, rerun = REPO / "src" / "memtune" / "data" / "traces", REPO / "benchmarks" / "heldout", \
        REPO / "benchmarks" / "heldout" / "rerun"
    runs = manifest.load()
    assert runs == HELDOUT_RUNS
    assert len({r.name for r in runs}) == len(runs)
    assert {r.path for r in runs} == {p for d in (demo, heldout) for p in d.glob("*.jsonl.gz")}
    assert {r.rerun for r in runs if r.rerun} == set(rerun.glob("*.jsonl.gz"))
    for r in runs:
        assert r.path.is_file() and r.path.parent == (demo if r.set == "demo" else heldout), r
        assert r.rerun is None or r.rerun.parent == rerun, r
        assert r.set in runs.sets and r.steps >= 1, r
    # the sets in order, each with its runs together (the capture script's order)
    seen = [r.set for r in runs]
    assert [s for i, s in enumerate(seen) if i == 0 or seen[i - 1] != s] == list(runs.sets)


def test_every_later_run_is_in_the_rerun_readme_table_in_the_manifests_order():
    """benchmarks/heldout/rerun/README.md's table (steps, events, peak requested) lists every
    later run, once, in the manifest's order: it fell 63 runs behind while no test read it."""
    text = (REPO / "benchmarks" / "heldout" / "rerun" / "README.md").read_text()
    listed = re.findall(r"^\| `([a-z0-9-]+)\.jsonl\.gz` \| \d", text, re.M)
    assert listed == [r.name for r in HELDOUT_RUNS if r.rerun]


def test_an_unseen_set_is_not_read():
    """A set kept unseen sits in a directory of its own under benchmarks/heldout: no run of
    the manifest is in any directory but the demo set's, benchmarks/heldout and its rerun/."""
    demo, heldout, rerun = manifest.dirs(REPO)
    assert all(r.path.parent in (demo, heldout) for r in HELDOUT_RUNS)
    assert all(r.rerun is None or r.rerun.parent == rerun for r in HELDOUT_RUNS)


GOOD = """\
sets = ["demo", "first"]

[trace.tiny-train]
set = "demo"
fixed_shapes = true
steps = 3
rerun = true

[trace.big-train]
set = "first"
fixed_shapes = false
steps = 6
rerun = false
"""


def _repo(tmp_path, text: str = GOOD, files=("demo/tiny-train", "heldout/big-train", "rerun/tiny-train")):
    """A repository at ``tmp_path`` with ``files`` (``demo/``, ``heldout/``, ``rerun/``) and a
    manifest ``text``; returns the manifest's path."""
    demo, heldout, rerun = manifest.dirs(tmp_path)
    where = {"demo": demo, "heldout": heldout, "rerun": rerun, "unseen": heldout / "next-set"}
    for d in where.values():
        d.mkdir(parents=True, exist_ok=True)
    for f in files:
        d, name = f.split("/")
        (where[d] / f"{name}.jsonl.gz").write_bytes(b"")
    path = heldout / "manifest.toml"
    path.write_text(text)
    return path


def test_a_valid_manifest_loads_in_its_order(tmp_path):
    path = _repo(tmp_path, files=("demo/tiny-train", "heldout/big-train", "rerun/tiny-train", "unseen/unseen"))
    runs = manifest.load(path, tmp_path)
    assert [r.name for r in runs] == ["tiny-train", "big-train"] and runs.sets == ("demo", "first")
    tiny = runs["tiny-train.jsonl.gz"]
    demo, heldout, rerun = manifest.dirs(tmp_path)
    assert (tiny.path, tiny.rerun, tiny.steps, tiny.fixed_shapes) == (demo / "tiny-train.jsonl.gz",
                                                                      rerun / "tiny-train.jsonl.gz", 3, True)
    assert runs["big-train"].path == heldout / "big-train.jsonl.gz" and runs["big-train"].rerun is None
    with pytest.raises(KeyError):
        runs["unseen"]  # a set kept unseen in a directory of its own is not read


@pytest.mark.parametrize("change, files, message", [
    (("rerun = false\n", "rerun = false\ncolour = 'red'\n"), None, r"\[trace\.big-train\]: unknown key 'colour'"),
    (("sets =", "title = 'x'\nsets ="), None, r"unknown top-level key 'title'"),
    (("steps = 6\n", ""), None, r"\[trace\.big-train\]: missing key 'steps'"),
    (("steps = 6", "steps = true"), None, r"\[trace\.big-train\]: steps = True is not an int"),
    (("fixed_shapes = false", "fixed_shapes = 'no'"), None, r"\[trace\.big-train\]: fixed_shapes = 'no' is not a bool"),
    (('set = "first"', 'set = "second"'), None, r"\[trace\.big-train\]: set 'second' is not in 'sets'"),
    (('"demo", "first"', '"demo", "first", "second"'), None, r"set 'second' has no run"),
    (("steps = 6", "steps = 0"), None, r"\[trace\.big-train\]: steps = 0"),
    (None, ("demo/tiny-train", "rerun/tiny-train"), r"\[trace\.big-train\]: .*big-train\.jsonl\.gz is not there"),
    (None, ("demo/tiny-train", "heldout/big-train"), r"\[trace\.tiny-train\]: rerun = true but .*rerun/tiny-train"),
    (None, ("demo/tiny-train", "heldout/big-train", "rerun/tiny-train", "heldout/new-train"),
     r"new-train\.jsonl\.gz is not listed: add a \[trace\.new-train\] table"),
    (None, ("demo/tiny-train", "heldout/big-train", "rerun/tiny-train", "demo/new-demo"),
     r"new-demo\.jsonl\.gz is not listed"),
    (None, ("demo/tiny-train", "heldout/big-train", "rerun/tiny-train", "rerun/big-train"),
     r"big-train\.jsonl\.gz is a later run the manifest does not list: set rerun = true in \[trace\.big-train\]"),
    (("[trace.big-train]", "[trace.Big_train]"), None, r"\[trace\.Big_train\]: a run's name is lower-case"),
    (("steps = 3", "steps = "), None, r"cannot read the manifest"),
], ids=["unknown-key", "unknown-top-key", "missing-key", "bool-steps", "str-bool", "unknown-set", "empty-set",
        "zero-steps", "missing-trace", "missing-rerun", "unlisted-trace", "unlisted-demo", "unlisted-rerun",
        "bad-name", "not-toml"])
def test_the_loader_refuses_a_manifest_that_does_not_match_the_traces(tmp_path, change, files, message):
    text = GOOD if change is None else GOOD.replace(*change, 1)
    assert text != GOOD or change is None
    path = _repo(tmp_path, text, **({} if files is None else {"files": files}))
    with pytest.raises(manifest.ManifestError, match=message) as e:
        manifest.load(path, tmp_path)
    assert str(path) in str(e.value)  # names the manifest


def test_every_problem_is_reported_at_once(tmp_path):
    text = GOOD.replace("rerun = false\n", "rerun = false\nshape = 1\n").replace("steps = 3", "steps = 'x'")
    path = _repo(tmp_path, text, files=("demo/tiny-train", "heldout/big-train", "rerun/tiny-train", "heldout/new-train"))
    with pytest.raises(manifest.ManifestError) as e:
        manifest.load(path, tmp_path)
    msg = str(e.value)
    assert all(re.search(p, msg) for p in (r"big-train.*unknown key 'shape'", r"tiny-train.*steps = 'x'",
                                           r"new-train\.jsonl\.gz is not listed")), msg
