"""``memtune plan``: JSON and table output, and clear errors."""

from __future__ import annotations

import json

from memtune.cli.main import main


def write_steps(path, steps: int = 6) -> None:
    """A lifetime table of a repeating step: two buffers per step, one living into the next."""
    rows = ["id,lower,upper,size"]
    i = 0
    for k in range(steps):
        t = 10 * k
        rows.append(f"{i},{t},{t + 4},{1 << 20}")
        rows.append(f"{i + 1},{t + 1},{t + 13},{3 << 20}")
        rows.append(f"{i + 2},{t + 2},{t + 3},{2 << 20}")
        i += 3
    path.write_text("\n".join(rows) + "\n")


def test_plan_json_reports_period_step_packing_and_replays(tmp_path, capsys):
    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--json", "--pack-seconds", "0.1"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["period"]["count"] >= 3 and rep["coverage"] > 0.5
    assert rep["plan"]["arena_bytes"] >= rep["plan"]["step_lower_bound"] > 0
    assert rep["static_packing"]["ratio"] >= 1.0
    assert rep["lower_bound"] == 9 << 20  # at t + 2: 1 + 2 + 3 MiB, and the previous step's 3 MiB
    for pol in ("memtune-plan", "memtune", "pytorch-cuda"):
        assert rep["replays"][pol]["peak_reserved_bytes"] >= rep["lower_bound"]


def test_plan_table_without_replays(tmp_path, capsys):
    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--no-replay"]) == 0
    out = capsys.readouterr().out
    assert "Plan mode" in out and "static packing" in out and "lower bound" in out


def test_plan_of_a_broken_trace_is_one_clear_error(tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_text("id,lower,upper,size\n0,5,1,10\n")
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err
    assert "memtune: error:" in err and "bad.csv" in err


def test_pack_rounds_make_the_packing_reproducible(tmp_path, capsys):
    """With --pack-rounds the packer's output does not depend on how much time it got:
    the same rounds under a tight and a generous budget give the same packing."""
    import random

    rng = random.Random(3)
    rows = ["id,lower,upper,size"]
    for i in range(400):
        lo = rng.randint(0, 2000)
        rows.append(f"{i},{lo},{lo + rng.randint(1, 300)},{rng.randint(1, 1 << 24)}")
    f = tmp_path / "life.csv"
    f.write_text("\n".join(rows) + "\n")
    got = []
    for seconds in ("60", "30"):
        assert main(["plan", str(f), "--json", "--no-replay", "--pack-rounds", "5", "--pack-seconds", seconds]) == 0
        (rep,) = json.loads(capsys.readouterr().out)
        got.append((rep["static_packing"]["peak_bytes"], rep["static_packing"]["method"]))
        assert main(["replay", str(f), "--policy", "memtune", "--json", "--pack-rounds", "5",
                     "--pack-seconds", seconds]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert row["static_packing"]["peak_bytes"] == got[-1][0]
    assert got[0] == got[1]


def test_plan_says_where_the_live_peak_falls(tmp_path, capsys):
    """The live peak (9 MiB) is first reached at step 1's third event; the repeating
    stretch starts with step 1's first event (step 0 lacks the buffer living into the
    next step), so the peak is in repetition 1: before plan mode can plan the step."""
    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--json", "--no-replay"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    per = rep["period"]
    # step 0 is 6 alloc/free events up to its last free before step 1 starts; the
    # peak is step 1's 3rd allocation: 1 MiB + 3 MiB + 2 MiB with the 3 MiB of step 0
    assert rep["live_peak"]["event"] >= per["start"]
    assert rep["live_peak"]["repetition"] == 1 + (rep["live_peak"]["event"] - per["start"]) // per["length"] == 1
    assert main(["plan", str(f), "--no-replay"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"live bytes peak at event {rep['live_peak']['event']}, in repetition 1 of {per['count']}" in out
    assert "before a plan of this step can serve it" in out


def test_the_live_peak_position_is_its_first_alloc_and_the_repetition_follows_the_period():
    from memtune.trace.model import Action, Event, requested_peak_at
    from memtune.trace.plan import Period, PlanReport

    ev = [Event(Action.ALLOC, 1, 5), Event(Action.MARKER), Event(Action.ALLOC, 2, 7), Event(Action.FREE, 2, 7),
          Event(Action.ALLOC, 3, 7), Event(Action.FREE, 1, 5)]
    # markers are not counted; the second 12-byte peak (event 3) is not the first
    assert requested_peak_at(ev) == (12, 1)
    # a starting state that is never exceeded again is the peak: no event reaches it
    assert requested_peak_at([Event(Action.FREE, 9, 100), *ev], [(9, 100, 0)]) == (100, None)

    def rep(event, period):
        return PlanReport("t", 0, 100, period, 1.0, None, 1, peak_event=event).peak_repetition

    per = Period(start=10, length=20, count=3)
    assert [rep(e, per) for e in (0, 9, 10, 29, 30, 69, 70, 99)] == [0, 0, 1, 1, 2, 3, 4, 4]
    assert rep(5, None) is None and rep(None, per) is None


def test_plan_does_not_call_a_sliver_of_the_run_a_step(capsys):
    """Where what repeats covers little of the run (batch shapes change every step),
    memtune plan says so instead of placing the live peak relative to that pattern."""
    from pathlib import Path

    trace = Path(__file__).resolve().parents[2] / "benchmarks" / "heldout" / "lstm-varlen-train.jsonl.gz"
    assert main(["plan", str(trace), "--no-replay"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no step repeats over most of this run" in out and "live bytes peak" not in out


def test_plan_longer_replays_the_run_with_the_step_played_more_times(tmp_path, capsys):
    """--longer N replays the policies on the run with its step played N more times, as
    memtune.trace.extend.repeat_step makes it: the same numbers as replaying that run."""
    import dataclasses

    import memtune
    from memtune.trace.extend import repeat_step, step_copy_ends
    from memtune.trace.replay import replay_device

    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--json", "--pack-seconds", "0.1", "--longer", "5"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["longer"]["extra_steps"] == 5
    tr = memtune.load_trace(f)
    longer = repeat_step(tr.devices[0], 5)
    for pol in ("memtune-plan", "memtune", "pytorch-cuda"):
        got = rep["longer"]["replays"][pol]
        r = replay_device(tr, longer, pol)
        assert (got["peak_reserved_bytes"], got["device_calls"]) == (r.peak_reserved_bytes, r.device_allocs + r.device_frees)
        assert got["peak_reserved_bytes"] >= rep["lower_bound"]
        # what the last quarter of the added steps (here 1) added: the counts of the run
        # replayed up to where that step ends, less those up to where it begins
        ends = step_copy_ends(tr.devices[0], 5)
        before, after = (replay_device(tr, dataclasses.replace(longer, events=longer.events[:e]), pol)
                         for e in (ends[4], ends[5]))
        assert got["late_growth"] == {
            "steps": 1, "device_calls": after.device_allocs + after.device_frees - before.device_allocs - before.device_frees,
            "peak_reserved_bytes": after.peak_reserved_bytes - before.peak_reserved_bytes}
    assert main(["plan", str(f), "--pack-seconds", "0.1", "--longer", "5"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "5 more steps, peak reserved / bound: memtune-plan" in out
    assert "settled: no policy made a device call or reserved more in the last 1 of them" in out
    # without --longer there is no such replay
    assert main(["plan", str(f), "--json", "--pack-seconds", "0.1"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["longer"] is None


def test_plan_longer_says_which_policy_still_grows_at_the_end_of_the_run(capsys):
    """A held-out run whose memtune layout drifts: memtune's device calls still grow
    over the last quarter of 40 more steps (measured: 40 calls in those 10 steps, 94 to
    256 over the 40), where plan mode's and pytorch-cuda's do not; the report says so,
    with the ways out (a plan of the whole run, or first fit)."""
    from heldout_runs import HELDOUT_RUNS

    from memtune import config
    from memtune.trace.plan import analyze

    (rep,) = analyze(str(HELDOUT_RUNS["transe-train"].path), pack_seconds=0.1, longer=40)
    late = {p: x["late_growth"] for p, x in rep.longer_replays.items()}
    assert all(g["steps"] == 10 for g in late.values())
    assert late["memtune"]["device_calls"] > 0
    assert late["memtune-plan"]["device_calls"] == late["pytorch-cuda"]["device_calls"] == 0
    assert main(["plan", str(HELDOUT_RUNS["transe-train"].path), "--pack-seconds", "0.1", "--longer", "40"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "still growing in the last 10 of them, so the layout has not settled; a plan of the whole run (--save)" in out
    assert ("first fit (--set fit=first, or MEMTUNE_FIT=first: the lowest hole that fits) lets memtune's own "
            "layout settle sooner") in out
    assert f"memtune +{late['memtune']['device_calls']} device calls" in out
    # and with it, memtune settles there (measured: 69 calls, none in the last 10 steps),
    # set either way
    (first,) = analyze(str(HELDOUT_RUNS["transe-train"].path), pack_seconds=0.1, longer=40, settings={"fit": "first"})
    assert first.longer_replays["memtune"]["late_growth"]["device_calls"] == 0
    with config.override(MEMTUNE_FIT="first"):
        (env,) = analyze(str(HELDOUT_RUNS["transe-train"].path), pack_seconds=0.1, longer=40)
    assert env.longer_replays == {p: dict(x, events_per_second=env.longer_replays[p]["events_per_second"])
                                  for p, x in first.longer_replays.items()}
    assert main(["plan", str(HELDOUT_RUNS["transe-train"].path), "--pack-seconds", "0.1", "--longer", "40",
                 "--set", "fit=first"]) == 0
    assert "settled: no policy made a device call" in " ".join(capsys.readouterr().out.split())
    # the setting under its variable's name is the same setting
    assert main(["plan", str(HELDOUT_RUNS["transe-train"].path), "--pack-seconds", "0.1", "--longer", "40",
                 "--set", "MEMTUNE_FIT=first"]) == 0
    assert "settled: no policy made a device call" in " ".join(capsys.readouterr().out.split())


def test_plan_set_applies_to_the_policies_that_have_the_setting(tmp_path, capsys):
    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--json", "--pack-seconds", "0.1", "--set", "slack=0.5", "--set", "growth=0"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    assert set(rep["replays"]) == {"memtune-plan", "memtune", "pytorch-cuda"}
    assert main(["plan", str(f), "--set", "fitt=first"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown setting 'fitt'" in err and "(from --set)" in err and "Did you mean 'fit'?" in err
    assert main(["plan", str(f), "--set", "fit=worst"]) == 2
    assert "MEMTUNE_FIT='worst' from --set: not a known choice" in " ".join(capsys.readouterr().err.split())
    assert main(["plan", str(f), "--no-replay", "--set", "fit=first"]) == 2
    assert "--set applies to the replays" in capsys.readouterr().err
    import pytest

    from memtune.trace.plan import analyze

    with pytest.raises(ValueError, match=r"settings \{'fit': 'first'\} apply to the replays; they need replay=True"):
        analyze(str(f), replay=False, settings={"fit": "first"})


def test_plan_longer_says_when_there_is_no_step_to_repeat(tmp_path, capsys):
    f = tmp_path / "once.csv"
    f.write_text("id,lower,upper,size\n0,0,5,1048576\n1,1,3,2097152\n")
    assert main(["plan", str(f), "--pack-seconds", "0.1", "--longer", "10"]) == 0
    assert "no step repeats here" in capsys.readouterr().out


def test_plan_longer_needs_the_replays_and_a_count(tmp_path, capsys):
    import pytest

    from memtune.trace.plan import analyze

    f = tmp_path / "steps.csv"
    write_steps(f)
    assert main(["plan", str(f), "--no-replay", "--longer", "5"]) == 2
    assert "--longer" in capsys.readouterr().err
    assert main(["plan", str(f), "--longer", "-1"]) == 2
    assert "--longer" in capsys.readouterr().err
    with pytest.raises(ValueError, match="longer must be a whole number of steps >= 0; got -1"):
        analyze(str(f), longer=-1)


def test_plan_longer_refuses_a_run_too_long_to_build(tmp_path, capsys):
    """A longer run is built and replayed in memory: a count of steps past the limit is a
    clear error naming the count and the largest one accepted, not minutes of work or an
    out-of-memory kill."""
    import pytest

    from memtune.errors import MemtuneError
    from memtune.trace.plan import LONGER_MAX_EVENTS, analyze

    f = tmp_path / "steps.csv"
    write_steps(f)
    (rep,) = analyze(str(f), replay=False)
    too_many = LONGER_MAX_EVENTS // rep.period.length + 1
    assert main(["plan", str(f), "--pack-seconds", "0.1", "--longer", str(too_many)]) == 2
    err = capsys.readouterr().err
    assert f"{too_many} more steps of {rep.period.length} events" in err
    assert f"at most {too_many - 1} more steps" in err
    with pytest.raises(MemtuneError, match=f"at most {too_many - 1} more steps"):
        analyze(str(f), longer=too_many)
    with pytest.raises(ValueError, match="longer=5 replays the run with more steps; it needs replay=True"):
        analyze(str(f), replay=False, longer=5)


def test_the_first_fit_hint_knows_the_fit_under_any_of_its_names():
    """plan --longer suggests first fit only where memtune did not replay with it: given
    by --set under the setting's name or its variable's, else from MEMTUNE_FIT."""
    from memtune import config
    from memtune.cli.plan import _fit

    assert _fit({}) == "best"
    assert _fit({"fit": "first"}) == _fit({"MEMTUNE_FIT": "First"}) == "first"
    with config.override(MEMTUNE_FIT="first"):
        assert _fit({}) == "first"
        assert _fit({"fit": "best", "slack": "0.04"}) == "best"


def test_plan_longer_says_where_memtunes_state_repeats(capsys):
    """Where memtune's decision state at the end of a step comes again at a later step's
    end, every later step repeats the ones between them (memtune.trace.extend.SettleWatch):
    the report says from which step, and the counts there are the end's."""
    from heldout_runs import HELDOUT_RUNS

    from memtune.trace.extend import replay_longer_run
    from memtune.trace.plan import analyze

    path = str(HELDOUT_RUNS["vgg-train"].path)
    (rep,) = analyze(path, pack_seconds=0.1, longer=40)
    again = rep.longer_replays["memtune"]["state_repeats"]
    assert again is not None and again["from_step"] + again["every_steps"] <= 40
    # the allocators that cannot say their state say nothing
    assert rep.longer_replays["pytorch-cuda"]["state_repeats"] is None
    import memtune
    tr = memtune.load_trace(path)
    got = replay_longer_run(tr, tr.devices[0], "memtune", [again["from_step"], 40])
    assert (got.settled, got.cycle) == (again["from_step"], again["every_steps"])
    assert got.checkpoints[40].device_calls == got.checkpoints[again["from_step"]].device_calls
    assert main(["plan", path, "--pack-seconds", "0.1", "--longer", "40"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (f"memtune's state at the end of step {again['from_step']} more comes again {again['every_steps']} "
            "step(s) later: from there on it makes no device call and reserves nothing more") in out
