"""benchmarks/targets.py, the quick harness for issue 6's targets: it must judge a stream as
tests/plan does, cache the presets it does not change, and compare two runs."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys

import pytest
from heldout_runs import REPO

from memtune.trace.replay import replay_device


def _harness():
    name = "targets_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "targets.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # (its dataclasses look their module up there)
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_it_judges_a_run_as_the_tests_do_and_replays_only_memtune_the_second_time(tmp_path, capsys):
    h = _harness()
    out, cache = tmp_path / "a.json", tmp_path / "cache.json"
    argv = ["run", "-o", str(out), "--jobs", "1", "--only", "mlp-train", "--kinds", "first,later", "--longer",
            "--plan", "--cache", str(cache)]
    assert h.main(argv) == 0
    doc = json.loads(out.read_text())
    first, later = doc["streams"]["first:mlp-train"], doc["streams"]["later:mlp-train"]
    # the demo set's mlp-train: 2 MiB pages are too coarse for 1.05 x its 36.8 MiB bound (a strict
    # xfail of tests/plan/test_targets.py), and it repeats a fixed step
    assert first["verdicts"]["bound"] is False and first["verdicts"]["pytorch-cuda"] is True
    assert set(first["verdicts"]) == {"presets", "bound", "pytorch-cuda", "calls", "settles", "plan-1.02"}
    assert set(later["verdicts"]) == {"bound", "pytorch-cuda", "calls", "plan<=memtune"}
    import memtune

    tr = memtune.load_trace(REPO / "src" / "memtune" / "data" / "traces" / "mlp-train.jsonl.gz")
    r = replay_device(tr, tr.devices[0], "memtune")
    assert first["memtune"] == {"reserved": r.peak_reserved_bytes, "calls": r.device_allocs + r.device_frees,
                                "ooms": 0}
    assert first["bound"] == tr.devices[0].peak_requested_bytes()
    # the presets come from the cache the second time: a stale number there would show
    cached = json.loads(cache.read_text())
    key = next(iter(cached["streams"]))
    cached["streams"][key]["pytorch-cuda"]["reserved"] = 1
    cache.write_text(json.dumps(cached))
    out2 = tmp_path / "b.json"
    assert h.main([*argv[:1], "-o", str(out2), *argv[3:]]) == 0
    doc2 = json.loads(out2.read_text())
    assert 1 in (doc2["streams"][k]["presets"]["pytorch-cuda"]["reserved"] for k in doc2["streams"])
    capsys.readouterr()
    assert h.main(["compare", str(out), str(out)]) == 0
    assert "0 won, 0 lost; 0 replays changed" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--set", "slack"], "--set 'slack': expected KEY=VALUE"),
    (["--set", "slak=0.1"], "slak"),
    (["--set", "slack=lots"], "lots"),
    (["--kinds", "first,nope"], "--kinds 'first,nope': unknown ['nope']"),
    (["--only", "no-such-run", "--kinds", "first"], "no stream matches --only ['no-such-run']"),
    (["--extra", "/no/such/dir", "--kinds", "first"], "--extra '/no/such/dir' is not a directory"),
    (["--runplan", "--runplan-cache", "/dev/null", "--kinds", "later"], "--runplan-cache '/dev/null' is not a directory that can be made or written"),
])
def test_bad_arguments_are_named(tmp_path, argv, says):
    with pytest.raises(SystemExit, match=says.replace("[", r"\[").replace("]", r"\]")):
        _harness().main(["run", "-o", str(tmp_path / "x.json"), "--jobs", "1", *argv])


def test_compare_names_a_file_it_cannot_use(tmp_path):
    h = _harness()
    with pytest.raises(SystemExit, match="cannot read results file '.*missing.json'"):
        h.main(["compare", str(tmp_path / "missing.json"), str(tmp_path / "missing.json")])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit, match="is not JSON"):
        h.main(["compare", str(bad), str(bad)])
    bad.write_text('{"streams": {"first:x": {"memtune": {}}}}')
    with pytest.raises(SystemExit, match="is not a results file of 'targets.py run'"):
        h.main(["compare", str(bad), str(bad)])


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_an_unusable_preset_cache_is_replaced_not_a_traceback(tmp_path, capsys, content):
    cache = tmp_path / "cache.json"
    cache.write_text(content)
    out = tmp_path / "a.json"
    assert _harness().main(["run", "-o", str(out), "--jobs", "1", "--only", "first:mlp-train", "--kinds", "first",
                            "--cache", str(cache)]) == 0
    assert "replaying the presets again" in capsys.readouterr().err
    assert json.loads(cache.read_text())["streams"]  # rewritten with the presets' numbers
    assert json.loads(out.read_text())["streams"]["first:mlp-train"]["presets"]["pytorch-cuda"]["reserved"] > 0


def test_runplan_serves_later_runs_from_a_plan_of_their_first_run_as_the_tests_do(tmp_path):
    from memtune.trace import runplan

    h = _harness()
    out, plans = tmp_path / "a.json", tmp_path / "plans"
    # mlp-train (demo set, fixed shapes) and lstm-varlen-train (second set, shapes follow the data)
    argv = ["run", "-o", str(out), "--jobs", "1", "--only", "later:mlp-train", "--only", "later:lstm-varlen-train",
            "--kinds", "later", "--runplan", "--runplan-cache", str(plans), "--cache", str(tmp_path / "c.json")]
    assert h.main(argv) == 0
    doc = json.loads(out.read_text())
    mlp, lstm = doc["streams"]["later:mlp-train"], doc["streams"]["later:lstm-varlen-train"]
    # mlp-train's 36.8 MiB bound rounded up to 2 MiB pages is already 1.032 x it (a strict xfail
    # of test_runplan.py): the plan serves it within a page of that, not within 1.02 x
    assert {k: mlp["verdicts"][k] for k in ("runplan-1.02", "runplan-page")} == {"runplan-1.02": False,
                                                                                 "runplan-page": True}
    assert {"runplan-little", "runplan-calls"} <= set(lstm["verdicts"]) and "runplan-1.02" not in lstm["verdicts"]
    made = sorted(plans.iterdir())
    assert len(made) == 2
    # the served numbers are a replay of the later run with a plan made as test_runplan.py makes it
    import memtune

    demo = REPO / "src" / "memtune" / "data" / "traces"
    first, later = memtune.load_trace(demo / "mlp-train.jsonl.gz"), memtune.load_trace(
        REPO / "benchmarks" / "heldout" / "rerun" / "mlp-train.jsonl.gz")
    plan = runplan.make_run_plan(first.devices[0].events, time_budget=120.0, rounds=40)
    path = plan.save(tmp_path / "mlp.json")
    dt = dataclasses.replace(later.devices[0], settings={})
    served = replay_device(later, dt, "memtune-plan", settings={"plan_file": str(path)})
    learned = replay_device(later, dt, "memtune-plan")
    assert mlp["runplan"]["served"] == {"reserved": served.peak_reserved_bytes, "ooms": 0,
                                        "calls": served.device_allocs + served.device_frees}
    assert mlp["runplan"]["learned"]["reserved"] == learned.peak_reserved_bytes
    # a second run reuses the plans it made: their files are not written again
    stamp = [p.stat().st_mtime_ns for p in made]
    assert h.main(argv) == 0
    assert [p.stat().st_mtime_ns for p in sorted(plans.iterdir())] == stamp
