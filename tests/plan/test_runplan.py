"""Plans made from an earlier run (memtune.trace.runplan): packing, files, serving."""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
from heldout_runs import HELDOUT_RUNS, Replayed, replay_later_run
from hypothesis import given, settings, strategies as st

import memtune
from memtune.allocator.arena import ArenaSpec
from memtune.cli.main import main as cli
from memtune.devices.simulated import SimulatedDevice
from memtune.errors import ConfigError, PlanFileError
from memtune.trace import packing, runplan
from memtune.trace.model import Action, BlockState, Event, SegmentState
from memtune.trace.plan import ALLOC, PlanAllocator, PlanSpec, lifetimes
from memtune.trace.replay import replay_device

from .test_plan import KiB, lazy_optimizer_training, live_overlaps, step_events, with_measured_misses
from .test_targets import _load

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "src" / "memtune" / "data" / "traces"


def serve(plan: runplan.RunPlan | None, evs: list[Event], page: int = 64 * KiB,
          segments: list[SegmentState] | None = None) -> tuple[PlanAllocator, int]:
    """Drive a memtune-plan allocator over ``evs`` (after a warm start from ``segments``),
    checking after every event that no two live blocks overlap; returns it and the
    peak of its reserved bytes."""
    # (a device of 1 GiB: a plan file fuzzed to a larger arena is not served, and the
    # arena's page table stays small even with 512-byte pages)
    dev = SimulatedDevice(1 << 30)
    a = PlanAllocator(PlanSpec(online=ArenaSpec(page=page), run_plan=plan), dev)
    addr: dict[int, int] = dict(a.restore(segments)) if segments else {}
    assert not live_overlaps(a)
    peak = a.reserved_bytes
    for ev in evs:
        if ev.action is Action.ALLOC:
            addr[ev.address] = a.malloc(ev.size, ev.stream)
        elif ev.action is Action.FREE:
            a.free(addr.pop(ev.address))
        assert not live_overlaps(a), f"live blocks overlap after {ev}"
        peak = max(peak, a.reserved_bytes)
    assert a.reserved_bytes == dev.counters.bytes_in_use
    return a, peak


def bound(evs: list[Event]) -> int:
    return packing.lower_bound(lifetimes(evs))


# ---------------------------------------------------------------- packing around fixed buffers


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(1, 40)), min_size=1, max_size=25),
       st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(1, 40), st.integers(0, 60)),
                max_size=10))
@settings(max_examples=60, deadline=None)
def test_pack_around_never_overlaps_the_fixed_buffers_or_each_other(free, fixed):
    fixed = [(a, a + d, s, o) for a, d, s, o in fixed]
    # the fixed buffers must not overlap each other: keep those that fit
    kept: list[tuple[int, int, int, int]] = []
    for f in fixed:
        if not packing.conflicts([x[:3] for x in kept] + [f[:3]], [x[3] for x in kept] + [f[3]]):
            kept.append(f)
    intervals = [(a, a + d, s) for a, d, s in free]
    pk = packing.pack_around(intervals, kept, rounds=4)
    allv = intervals + [f[:3] for f in kept]
    offs = list(pk.offsets) + [f[3] for f in kept]
    assert packing.conflicts(allv, offs) == []
    assert pk.peak == max(o + s for (_a, _b, s), o in zip(allv, offs))
    assert pk.peak >= pk.lower_bound == packing.lower_bound(allv)


def test_pack_around_rejects_bad_fixed_buffers():
    with pytest.raises(ValueError, match="fixed buffer 0 is invalid.*offset=-1"):
        packing.pack_around([(0, 1, 8)], [(0, 2, 8, -1)])
    with pytest.raises(ValueError, match="rounds"):
        packing.pack_around([(0, 1, 8)], [], rounds=-1)


# ---------------------------------------------------------------- building and serving


def test_a_run_plan_serves_a_longer_run_from_its_first_allocation_at_the_bound():
    recorded = lazy_optimizer_training(4)
    plan = runplan.make_run_plan(recorded, alignment=512, time_budget=1.0, rounds=20)
    assert plan.step is not None and plan.start > 0
    # the plan is valid for the recording and as many cycles past it as packed
    assert plan.arena >= plan.lower_bound == bound(recorded)
    longer = lazy_optimizer_training(12)
    a, peak = serve(plan, longer, page=512)
    assert a.deviations == 0
    allocs = sum(1 for e in longer if e.action is Action.ALLOC)
    assert a.planned_allocs == allocs  # every allocation, the weights and the optimizer state included
    assert peak == plan.arena  # one arena, no online memory
    # learning online from scratch serves the first steps online: more memory
    _a0, peak0 = serve(None, longer, page=512)
    assert peak <= peak0
    assert plan.arena <= 1.05 * bound(longer)


def test_a_prologue_is_packed_freely_where_the_steps_slots_leave_it_no_room():
    """Buffers the prologue allocates and the first served cycle frees may keep the slots the
    step's cycle has for them, or go where the packer puts them: the better packing is kept.
    On held-out t5-adafactor-train the slots pin long-lived buffers far back into its first
    steps, and a 9.5 MiB buffer live through them found no room below the slots: its
    recording packed at 1.0275 x the bound. Packed freely, 1.0082 (measured)."""
    tr = _load("t5-adafactor-train.jsonl.gz")
    evs = [e for e in tr.devices[0].events if e.action in (Action.ALLOC, Action.FREE)]
    plan = runplan.make_run_plan(evs, time_budget=120.0, rounds=HELDOUT_RUNS["t5-adafactor-train"].plan_rounds)
    assert plan.ratio <= 1.01, plan.ratio
    # served on its own recording: every allocation from the plan, no two live blocks
    # overlapping (serve checks after every event), the one deviation its teardown
    a, peak = serve(plan, evs, page=2 << 20)
    assert a.planned_allocs == sum(1 for e in evs if e.action is Action.ALLOC)
    assert a.deviations == 1 and peak <= -(-plan.arena // (2 << 20)) * (2 << 20)


def test_a_run_that_deviates_falls_back_and_learns_online():
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.5, rounds=5)
    evs = lazy_optimizer_training(6)
    # step 6 allocates a size the recording never had
    cut = max(i for i, e in enumerate(evs) if e.action is Action.FREE and e.address < 10**8 and e.address >= 60000)
    evs = evs[:cut] + [Event(Action.ALLOC, 999, 9 * KiB), Event(Action.FREE, 999)] + evs[cut:]
    evs += lazy_optimizer_training(12)[len(lazy_optimizer_training(6)):]  # and the run goes on
    a, _peak = serve(plan, evs, page=512)
    assert a.deviations >= 1 and a.planned_allocs > 0
    assert a.live_blocks()  # the weights are still live, in the draining arena


def test_past_a_run_plan_a_step_that_is_a_sliver_of_the_workload_is_not_learned():
    """After a plan made from an earlier run deviates, the online policy has seen only
    what came after it, so its own live peak is small. Whether a step is a sliver (too
    small for its plan to save more than the slack) is judged against the workload's live
    peak: a 1 MiB step beside 256 MiB of weights stays online, not taken over by an arena of
    its own each time it repeats (held-out speculative-decode's later run learned and left
    such a step some 30 times, at 239 device calls against 85 learning online)."""
    weights = [Event(Action.ALLOC, 10**9, 256 << 20)]
    recorded = list(weights)
    carry = None
    for k in range(4):
        e, carry = step_events(1000 * (k + 1), carry=carry)
        recorded += e
    plan = runplan.make_run_plan(recorded, rounds=5)
    later = list(weights)
    carry = None
    for k in range(24):  # the later run's steps have other sizes: it leaves the plan at once
        e, carry = step_events(1000 * (k + 1), sizes=(310, 70, 490, 130, 210), carry=carry)
        later += e
    a, _peak = serve(plan, later)
    assert a.deviations >= 1
    assert a.plans_made == 0
    # the same steps with no weights held are planned
    b, _peak = serve(None, later[1:])
    assert b.plans_made > 0


def _reorder_frees(evs: list[Event], seed: int = 0) -> tuple[list[Event], int]:
    """``evs`` with every run of two or more frees (no allocation between them) in
    another order; returns the events and the number of runs reordered."""
    rng = random.Random(seed)
    out: list[Event] = []
    run: list[Event] = []
    n = 0
    for e in evs + [None]:
        if e is not None and e.action is Action.FREE:
            run.append(e)
            continue
        if len(run) > 1:
            shuffled = run[:]
            while shuffled == run:
                rng.shuffle(shuffled)
            run, n = shuffled, n + 1
        out += run
        run = []
        if e is not None:
            out.append(e)
    return out, n


def test_a_plan_follows_the_set_of_frees_between_two_allocations_not_their_order():
    """A later run may free a batch in another order (autocast's cached casts are; so are
    the fifth held-out set's lora-finetune weight copies): no planned block moves for it."""
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.5, rounds=5)
    longer, reordered = _reorder_frees(lazy_optimizer_training(12))
    assert reordered >= 12  # the step's gradient frees and more, every step
    a, peak = serve(plan, longer, page=512)
    assert a.deviations == 0
    assert a.planned_allocs == sum(1 for e in longer if e.action is Action.ALLOC)
    assert peak == plan.arena


def test_a_free_moved_across_an_allocation_is_a_deviation():
    """Only frees with no allocation between them may change places: a free that comes
    before an allocation the recording made first can change where that block goes."""
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.5, rounds=5)
    evs = lazy_optimizer_training(12)
    i = [k for k in range(1, len(evs) - 1) if evs[k].action is Action.FREE and evs[k - 1].action is Action.ALLOC][-8]
    later = evs[:i - 1] + [evs[i], evs[i - 1]] + evs[i + 1:]
    a, _peak = serve(plan, later, page=512)
    assert a.deviations == 1
    assert a.planned_allocs < sum(1 for e in later if e.action is Action.ALLOC)
    _a, peak = serve(plan, evs, page=512)
    assert _a.deviations == 0


def test_a_prologue_only_plan_stops_serving_at_its_end():
    evs = [Event(Action.ALLOC, i, (i + 1) * KiB) for i in range(5)] + [Event(Action.FREE, i) for i in range(5)]
    plan = runplan.make_run_plan(evs)
    assert plan.step is None and plan.start == 10
    a, peak = serve(plan, evs + [Event(Action.ALLOC, 50, KiB), Event(Action.FREE, 50)])
    assert a.planned_allocs == 5 and a.deviations == 1


def mid_run_snapshot() -> tuple[list[SegmentState], list[tuple[int, int, int]], list[Event]]:
    """A recording that begins mid-run: three blocks are live when it starts (one never
    freed, two freed in the first step), each in a segment of its own, with cached
    free space beside them, as a PyTorch snapshot has it."""
    live = [(1 << 30, 9 * KiB), (1 << 30 | 1 << 20, 6 * KiB), (1 << 30 | 2 << 20, 3 * KiB)]
    segments = [SegmentState(a, 64 * KiB, 0, "large", (BlockState(a, n, n, True), BlockState(a + n, 64 * KiB - n, 0, False)))
                for a, n in live]
    evs = lazy_optimizer_training(4)
    frees = [Event(Action.FREE, a, n) for a, n in live]
    evs = evs[:3] + [frees[1]] + evs[3:9] + [frees[2]] + evs[9:]
    return segments, [(a, n, 0) for a, n in live], evs


def test_a_plan_of_a_mid_run_snapshot_puts_the_blocks_live_at_its_start_in_the_arena():
    segments, initial, evs = mid_run_snapshot()
    plan = runplan.make_run_plan(evs, initial=initial, time_budget=0.2, rounds=5)
    assert [(n, s) for n, s, _off in plan.initial] == [(n, s) for _a, n, s in initial]
    with_initial = packing.lower_bound([(0, len(evs), 9 * KiB), (0, 4, 6 * KiB), (0, 11, 3 * KiB)]
                                       + [(a + 1, b + 1, n) for a, b, n in lifetimes(evs)])
    assert plan.arena >= plan.lower_bound == with_initial
    a, peak = serve(plan, evs, page=512, segments=segments)
    assert a.deviations == 0
    assert a.planned_allocs == sum(1 for e in evs if e.action is Action.ALLOC)
    assert peak == plan.arena  # the snapshot's blocks are in the arena, its cached space is not kept
    # a plan that ignores them leaves them where the online policy restores them, beside the arena
    _a, peak_without = serve(runplan.make_run_plan(evs, time_budget=0.2, rounds=5), evs, page=512, segments=segments)
    assert peak < peak_without


def test_a_plan_larger_than_the_device_is_not_served():
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.1, rounds=0)
    huge = dataclasses.replace(plan, arena=1 << 45)  # (a plan of a larger machine: the device holds 1 GiB)
    a, peak = serve(huge, lazy_optimizer_training(6), page=512)
    learned, peak_learned = serve(None, lazy_optimizer_training(6), page=512)
    assert (a.planned_allocs, a.deviations, peak) == (learned.planned_allocs, learned.deviations, peak_learned)


def test_a_snapshot_with_other_live_blocks_drops_the_plan_and_restores_them_online():
    segments, initial, evs = mid_run_snapshot()
    plan = runplan.make_run_plan(evs, initial=initial, time_budget=0.1, rounds=0)
    other = [dataclasses.replace(segments[0], blocks=(BlockState(1 << 30, 10 * KiB, 10 * KiB, True),))] + segments[1:]
    a, _peak = serve(plan, evs, page=512, segments=other)
    assert a.deviations == 1 and a.planned_allocs == 0


@st.composite
def programs(draw):
    """A random program (allocs and frees of a few sizes), run once to record and
    then again with a random change part-way."""
    n = draw(st.integers(4, 40))
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 8]), min_size=n, max_size=n))
    evs: list[Event] = []
    live: list[int] = []
    for i, s in enumerate(sizes):
        evs.append(Event(Action.ALLOC, i, s * KiB))
        live.append(i)
        while live and draw(st.booleans()):
            evs.append(Event(Action.FREE, live.pop(draw(st.integers(0, len(live) - 1)))))
    change = draw(st.integers(0, len(evs)))
    return evs, change


@given(programs(), st.integers(1, 3), st.one_of(st.none(), st.integers(0, 2**16)))
@settings(max_examples=80, deadline=None)
def test_no_plan_can_make_live_blocks_overlap(prog, times, reorder_seed):
    """(also when the run frees its batches in other orders: see _reorder_frees)"""
    evs, change = prog
    plan = runplan.make_run_plan(evs * 1, time_budget=0.0, rounds=0)
    # the run repeats the program (a step) and changes one allocation part-way
    run: list[Event] = []
    for k in range(times):
        run += [Event(e.action, e.address + 1000 * k, e.size) for e in evs]
    i = min(change, len(run) - 1)
    if run[i].action is Action.ALLOC:
        run[i] = Event(Action.ALLOC, run[i].address, run[i].size + KiB)
    if reorder_seed is not None:
        run, _n = _reorder_frees(run, reorder_seed)
    serve(plan, run)


# ---------------------------------------------------------------- files


def test_plan_files_round_trip(tmp_path):
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.2, rounds=2,
                                 source={"trace": "synthetic", "device": 0})
    for name in ("p.json", "p.json.gz"):
        back = runplan.load(plan.save(tmp_path / name))
        assert (back.keys, back.offsets, back.start, back.anchor, back.arena, back.lower_bound) == (
            plan.keys, plan.offsets, plan.start, plan.anchor, plan.arena, plan.lower_bound)
        assert back.step is not None and plan.step is not None
        assert (back.step.template, back.step.offsets, back.step.durations, back.step.cut) == (
            plan.step.template, plan.step.offsets, plan.step.durations, plan.step.cut)
        assert back.source == {"trace": "synthetic", "device": 0, "events": plan.source["events"]}
    segments, initial, evs = mid_run_snapshot()
    warm = runplan.make_run_plan(evs, initial=initial, time_budget=0.1, rounds=0)
    assert runplan.load(warm.save(tmp_path / "w.json")).initial == warm.initial != []
    assert not list(tmp_path.glob("*.tmp*"))


def _edit(data: dict, path: str, value) -> dict:
    d = json.loads(json.dumps(data))
    *head, last = path.split(".")
    cur = d
    for k in head:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return d


@pytest.mark.parametrize("path, value, says", [
    ("format", "something", "format is 'something'; expected 'memtune-run-plan'"),
    ("version", 99, "version is 99; expected 1"),
    ("arena", -5, "plan.arena is -5; expected an integer"),
    ("alignment", 3, "alignment is 3; expected a power of two"),
    ("prologue.keys.0", [0, -1, 0], "prologue.keys[0] is [0, -1, 0]"),
    ("prologue.offsets.0", [0, 1 << 40], "prologue.offsets[0] offset is 1099511627776"),
    ("prologue.offsets.0", [10**6, 0], "prologue.offsets[0] position is 1000000; expected the position of an alloc"),
    ("step.template", [], "step.template is '0 tokens'"),
    ("step.durations", [[0, 0]], "step.durations[0] is [0, 0]"),
    ("step.start", 3, "step.start is 3; expected the prologue's length"),
    ("arena", 1 << 45, "arena is 35184372088832; expected the end of the last planned slot"),
    ("initial", 5, "initial is 5; expected a list of [size, stream, offset]"),
    ("initial", [[1, 2]], "initial[0] is [1, 2]; expected [size, stream, offset]"),
    ("initial", [[512, 0, 1 << 40]], "initial[0] offset is 1099511627776"),
])
def test_bad_plan_files_are_named_errors(tmp_path, path, value, says):
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.1, rounds=0)
    data = _edit(plan.to_json(), path, value)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(data))
    with pytest.raises(PlanFileError) as e:
        runplan.load(f)
    assert str(f) in str(e.value) and says in str(e.value)


def test_unreadable_plan_files_are_named_errors(tmp_path):
    with pytest.raises(PlanFileError, match="cannot read plan file .*missing.json"):
        runplan.load(tmp_path / "missing.json")
    (tmp_path / "t.json").write_text("{not json")
    with pytest.raises(PlanFileError, match="is not JSON"):
        runplan.load(tmp_path / "t.json")
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(b'{"a": 1}')[:-6])
    with pytest.raises(PlanFileError, match="is not JSON"):
        runplan.load(tmp_path / "t.json.gz")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(PlanFileError, match="the file is \\[1, 2\\]; expected a JSON object"):
        runplan.load(tmp_path / "list.json")


def test_the_plan_file_setting_names_the_variable(tmp_path):
    (tmp_path / "t.json").write_text("{}")
    with pytest.raises(ConfigError, match="MEMTUNE_PLAN_FILE") as e:
        memtune.allocator("memtune-plan", device=SimulatedDevice(1 << 30), plan_file=str(tmp_path / "t.json"))
    assert "format" in str(e.value)


# ---------------------------------------------------------------- the command line


def test_memtune_plan_save_writes_a_plan_a_replay_uses(tmp_path, capsys):
    out = tmp_path / "plan.json"
    assert cli(["plan", str(DEMO / "mlp-train.jsonl.gz"), "--no-replay", "--save", str(out),
                "--pack-seconds", "0.5"]) == 0
    text = capsys.readouterr().out
    assert "wrote" in text and "MEMTUNE_PLAN_FILE" in text
    assert runplan.load(out).step is not None
    assert cli(["plan", str(DEMO / "mlp-train.jsonl.gz"), "--json", "--no-replay", "--save",
                str(tmp_path / "p2.json"), "--pack-seconds", "0.2"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["run_plan"]["arena_bytes"] > 0
    assert cli(["replay", str(DEMO / "mlp-train.jsonl.gz"), "--policy", "memtune-plan", "--set",
                f"plan_file={out}"]) == 0
    assert "MEMTUNE_PLAN_FILE" in capsys.readouterr().out


def test_memtune_plan_save_needs_one_device(shared_trace_path, tmp_path, capsys):
    path = shared_trace_path("pytorch-snapshot-cold-expandable-3dev.pickle")
    assert cli(["plan", str(path), "--no-replay", "--save", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "device streams" in err and "--device" in err
    assert not (tmp_path / "p.json").exists()


# ---------------------------------------------------------------- a later run of real programs

#: fixed-shape runs: a later run (twice the steps, other data) follows the recording. Every such
#: run of benchmarks/heldout/manifest.toml, in its order (the demo set, then the held-out sets,
#: each measured once as it came or as the manifest says).
FIXED_SHAPES = [r.name for r in HELDOUT_RUNS if r.fixed_shapes and r.rerun]
#: the twelfth set's style-transfer-lbfgs (its step's L-BFGS history lives two steps; the recording
#: packs at 1.0218 x its bound) and qat-train (the recording packs at 1.0001): their later runs are
#: served by the plan at 1.0287 and 1.0218 x the bound, 3 and 5 pages above the page-rounded bound
TWELFTH_ABOVE = {"style-transfer-lbfgs": "twelfth set: 1.0287 x the bound (the recording packs at 1.0218)",
                 "qat-train": "twelfth set: 1.0218 x the bound, 5 pages above the page-rounded bound"}
#: 2 MiB pages cannot hold mlp-train's 36.8 MiB within 2 %: 19 pages are 1.032 x its bound
PAGE_FLOOR = {"mlp-train"}
#: (the twentieth set's t5-adafactor-train was served at 1.0276 x the bound, 4 pages above the
#: page-rounded bound, while its recording packed at 1.0275: the step's slots pinned the
#: previous cycle's buffers far back into its first steps. Since its prologue may be packed
#: with them placed freely: 1.0082, its later run 1.0109.)
#: the twenty-first set's dreamer-rssm-train: its recording packs at 1.0165 x its bound (its step at
#: 1.0255), and the plan serves its later run at 1.0212, 4 pages above the page-rounded bound
#: (1.1739 learning online). (Before the cyclic packer tried the buffers across the cut first:
#: 1.0223, 1.0345 and 1.0260, 5 pages above.)
TWENTYFIRST_ABOVE = {"dreamer-rssm-train": "twenty-first set: 1.0212 x the bound, 4 pages above the page-rounded "
                                           "bound (the recording packs at 1.0165; 1.1739 learned online)"}
#: the recording itself packs above 1 % of its bound (measured: the ninth set's vqvae-train
#: 1.0147); a later run is still served within 2 % (1.0147) and within a page of the floor.
#: (The sixth set's distill-train and the eleventh's hypernet-train packed at 1.0115 and 1.0116,
#: and their later runs were served at 1.0231 and 1.0164, until the cyclic packer tried the
#: buffers across the cut first: 1.0005 and 1.0001, later runs 1.0063 and 1.0067.)
LOOSE_RECORDING = {"vqvae-train"}
#: the eighth set's ppo-train is left to BENCHMARKS.md's later-run table: its first run has no
#: step, and packing its 72,000 buffers with 40 improvement rounds takes over two minutes
LEFT_TO_BENCHMARKS = {"ppo-train"}
#: runs whose shapes depend on the data: a later run deviates early (benchmarks/heldout/manifest.toml,
#: in its order)
CHANGING_SHAPES = [r.name for r in HELDOUT_RUNS if not r.fixed_shapes and r.rerun and r.name not in LEFT_TO_BENCHMARKS]
#: (speculative-decode's later run accepts other drafts than the first, so it leaves the plan in
#: its first rounds; the models' weights stay in the plan's arena, whose partly used pages (184
#: MiB mapped) sat beside the online policy's growing caches: 1.086 x the bound against 1.049
#: learning online, until plan mode took the rounds it learns over in place: 1.049 since)
#: (A plan of a run with no step used to place the buffers its recording never frees wherever
#: the static packer found room, and a later run that left the plan in its first batch kept
#: every page they were spread over: eight more runs were below, measured with the plan against
#: learning online -- moe-train 1.0549 / 1.0298, dynamic-token-vit 1.0620 / 1.0164, unet3d-seg-
#: train 1.0763 / 1.0303, sinkhorn-ot-train 1.1089 / 1.0358, tacotron2-train 1.0781 / 1.0222,
#: grpo-rollout-train 1.1002 / 1.0484, superglue-match-train 1.0638 / 1.0408, yolov5-detect-
#: train 1.1735 / 1.0431. With them at the bottom of the arena: 1.0423, 1.0230, 1.0369, 1.0480,
#: 1.0222, 1.0354, 1.0408, 1.0540.)


#: the thirty-fifth set's later runs served by a plan from the first (its recordings pack within 1.0034 x
#: their bounds)
THIRTYFIFTH_ABOVE = {
    "esrgan-train": "thirty-fifth set: 1.0175 x the bound, 19 pages above the page-rounded bound (the recording "
                    "packs at 1.0005; 1.0184 learned online)",
    "sage-fullbatch-products-train": "thirty-fifth set: 1.0158 x the bound, 22 pages above the page-rounded bound (the "
                                     "recording packs at 1.0000; 1.0158 learned online)"}
SD_LATENT_ABOVE = {
    "sd-latent-unet-train": "thirty-fifth set: 1.0756 x the bound, 92 pages above the page-rounded bound (the "
                            "recording packs at 1.0034), where plan mode learning online reserves 1.0275"}


class _Plans:
    """The plan of each workload's recording in the repository, made when a test first asks
    for it (one worker runs all the tests of a workload: tests/conftest.py), saved to a file
    its later run (benchmarks/heldout/rerun, captured separately) is replayed with."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.made: dict[str, tuple[str, runplan.RunPlan]] = {}

    def __getitem__(self, name: str) -> tuple[str, runplan.RunPlan]:
        """(plan file, plan) of ``name``."""
        if name not in self.made:
            run = HELDOUT_RUNS[name]
            tr = _load(run.file)  # (loaded once per worker, for the targets' tests too)
            # a count of improvement rounds, whatever they take: the same plan on any machine
            plan = runplan.make_run_plan(tr.devices[0].events, time_budget=120.0, rounds=run.plan_rounds)
            self.made[name] = (str(plan.save(self.directory / f"{name}.json")), plan)
        return self.made[name]


@pytest.fixture(scope="module")
def later_runs(tmp_path_factory):
    return _Plans(tmp_path_factory.mktemp("plans"))


def _served(later_runs: _Plans, name: str) -> tuple[Replayed, Replayed]:
    """The later run replayed by memtune-plan with the first run's plan, and learning online."""
    path, _plan = later_runs[name]
    return replay_later_run(name, "memtune-plan", path), replay_later_run(name, "memtune-plan")


@pytest.mark.parametrize("name", with_measured_misses(FIXED_SHAPES, {
    **{n: "page granularity: the bound rounded up to 2 MiB pages is 1.032 x the bound" for n in PAGE_FLOOR},
    **TWELFTH_ABOVE, **TWENTYFIRST_ABOVE,
    "sac-continuous-train": "thirty-first set: page granularity: 5.73 MiB rounded up to 3 pages of 2 MiB is 1.0473 x "
                            "the bound, where the plan serves it",
    "a2c-small-train": "thirty-third set: page granularity: 32.80 MiB rounded up to 17 pages of 2 MiB is 1.0364 x the "
                       "bound, where the plan serves it",
    **SD_LATENT_ABOVE}))
def test_a_plan_from_an_earlier_run_meets_the_plan_target_on_a_later_run(later_runs, name):
    r, learned = _served(later_runs, name)
    lb = r.lower_bound
    assert r.peak_reserved_bytes <= learned.peak_reserved_bytes and not r.ooms
    assert r.peak_reserved_bytes <= 1.02 * lb, f"{name}: {r.peak_reserved_bytes / lb:.4f} of the bound"


@pytest.mark.parametrize("name", with_measured_misses(FIXED_SHAPES, {
    **TWELFTH_ABOVE,
    "vmap-ensemble-train": "fifteenth set: 1.0114 x the bound, 2 pages above the page-rounded bound (the recording "
                           "packs at 1.0111)",
    "raft-flow-train": "twentieth set: 1.0128 x the bound, 2 pages above the page-rounded bound (the recording packs "
                       "at 1.0076)",
    **TWENTYFIRST_ABOVE,
    **THIRTYFIFTH_ABOVE, **SD_LATENT_ABOVE,
    "barlow-twins-train": "twenty-fourth set: 1.0166 x the bound, 2 pages above the page-rounded bound (the "
                          "recording packs at 1.0142: LARS's per-parameter norms and buffers)"}))
def test_a_later_run_served_by_a_plan_is_within_a_page_of_the_page_rounded_bound(later_runs, name):
    path, plan = later_runs[name]
    r = replay_later_run(name, "memtune-plan", path)
    lb = r.lower_bound
    page = 2 << 20
    floor = -(-lb // page) * page  # no allocator that maps pages can reserve less
    assert r.peak_reserved_bytes <= floor + page, f"{name}: {r.peak_reserved_bytes / lb:.4f} of the bound"
    # the recording itself packs within 1 % of its bound
    assert plan.ratio <= (1.02 if name in LOOSE_RECORDING else 1.01), plan.ratio


@pytest.mark.parametrize("name", with_measured_misses(CHANGING_SHAPES, {
    "dkl-gp-train": "fifteenth set: 1.1377 x the bound with the plan, 1.0863 learned online (the minibatch, and its "
                    "kernel matrices, change size every step)",
    "set-transformer-train": "twenty-fourth set: 1.0421 x the bound with the plan, 1.0197 learned online (each step "
                             "draws the sets' size)",
    "gat-padded-train": "fifteenth set, since a move unmaps only what the slack requires (move_only_needed): 1.0686 x "
                        "the bound with the plan, 1.0387 learned online (1.0924 and 1.0805 before: both fell, learning "
                        "online more; each step's 32 graphs are padded to the drawn largest)",
    "din-ctr-train": "twenty-sixth set: 1.1047 x the bound with the plan, 1.0779 learned online (each batch's user "
                     "histories are padded to its drawn longest)",
    "pinsage-walk-train": "thirty-first set: 1.1240 x the bound with the plan, 1.0834 learned online (each step's "
                          "blocks hold the nodes its drawn pairs' random walks visit)",
    "decision-transformer-train": "thirty-second set: 1.0938 x the bound with the plan, 1.0469 learned online (the "
                                  "MSE keeps the action rows each drawn window's mask selects)",
    "gflownet-seq-train": "thirty-third set: 1.1261 x the bound with the plan, 1.0799 learned online (each trajectory "
                          "stops at its sampled length)"}))
def test_a_plan_from_a_run_with_other_shapes_costs_little(later_runs, name):
    """(speculative-decode's later run leaves its plan in the first rounds; plan mode
    then learns a round online. Taken over into an arena of its own beside the pages
    the plan's blocks keep, that reserved 1.086 x the bound against 1.049 learning
    online; taken over in place, 1.049.)"""
    r, learned = _served(later_runs, name)
    lb = r.lower_bound
    # the later run leaves the recorded sequence early: plan mode falls back to its online policy
    assert r.peak_reserved_bytes <= 1.02 * learned.peak_reserved_bytes, (
        f"{name}: {r.peak_reserved_bytes / lb:.4f} against {learned.peak_reserved_bytes / lb:.4f} learned online")


@pytest.mark.parametrize("name", with_measured_misses(CHANGING_SHAPES, {
    "width-sweep-train": "twenty-first set: 105 device calls with the plan, 48 learning online (each trial draws its "
                         "model and optimizer, so the later run's trials are not the recording's)"}))
def test_a_plan_from_a_run_with_other_shapes_costs_few_device_calls(later_runs, name):
    """Past the plan, the online policy serves the rest of the run beside what the arena
    still holds; it may grow into what the arena leaves of the peak before it unmaps.
    (Measured on the fourth set's kvcache-generate, a 48-token run from a 24-token plan:
    when the online policy kept to its own peak it made 301 calls, against 40 learning
    online; now 64.)"""
    r, learned_run = _served(later_runs, name)
    calls, learned = r.device_calls, learned_run.device_calls
    assert calls <= 2 * learned, f"{name}: {calls} device calls with the plan, {learned} learning online"


def test_a_plan_smaller_than_a_page_gets_one_exact_device_allocation():
    evs = lazy_optimizer_training(4)
    plan = runplan.make_run_plan(evs, rounds=5)
    assert plan.arena < 2 << 20
    a, peak = serve(plan, lazy_optimizer_training(8), page=2 << 20)
    assert a.deviations == 0 and peak == plan.arena
    assert a.stats.num_device_alloc == 1  # the arena: nothing went online
    a.close()


def test_a_plan_maps_its_arena_in_a_few_calls_and_no_page_long_before_it_is_needed():
    plan = runplan.make_run_plan(lazy_optimizer_training(4), rounds=5)
    page = 512
    first = plan.first_use(page)
    assert first.min() == 0 and len(first) == -(-plan.arena // page)
    a, _peak = serve(plan, lazy_optimizer_training(8), page=page)
    # the whole arena is used within the first step: one mapping, not one per block's pages
    assert (first < plan.start + 64).all()
    assert a.stats.num_device_alloc == 1 and a.deviations == 0
    # a page first used far later is not mapped until then
    late = dataclasses.replace(plan, source=dict(plan.source, events=0))  # lookahead of 64 positions
    far = np.full_like(first, 10**6)
    far[:2] = 0
    late.first_use = lambda page: far  # type: ignore[method-assign]
    b, _peak = serve(late, lazy_optimizer_training(8), page=page)
    assert b.stats.num_device_alloc > 1


def test_frees_of_blocks_from_before_a_warm_start_are_tokens_of_their_size():
    from memtune.trace.model import BlockState, SegmentState
    from memtune.trace.plan import UNKNOWN_FREE

    dev = SimulatedDevice(1 << 40)
    a = PlanAllocator(PlanSpec(online=ArenaSpec(page=64 * KiB)), dev)
    seg = SegmentState(0, 64 * KiB, 0, "large", (BlockState(0, 4 * KiB, 3000, True), BlockState(4 * KiB, 60 * KiB, 0, False)))
    mapping = a.restore([seg])
    a.free(mapping[0])
    assert a._tk.keys[int(a._hist[a._hlen - 1])] == (UNKNOWN_FREE, 3000)  # as tokenize() keys it


def _paths(d, prefix=()):
    """Every (path to a value) in a JSON document."""
    yield prefix
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d[:4]):
            yield from _paths(v, prefix + (i,))


_VALID = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.1, rounds=0).to_json()
_ALL_PATHS = [p for p in _paths(_VALID) if p]


@given(st.sampled_from(_ALL_PATHS), st.one_of(
    st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True), st.text(max_size=5),
    st.lists(st.integers(-3, 3), max_size=4), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
@settings(max_examples=200, deadline=None)
def test_any_corrupted_plan_file_is_refused_with_a_plan_file_error_or_serves_safely(path, value):
    plan = _corrupted(_VALID, path, value)
    if plan is not None:
        serve(plan, lazy_optimizer_training(6), page=512)  # a plan that loads never overlaps live blocks


def _corrupted(valid: dict, path: tuple, value) -> runplan.RunPlan | None:
    """``valid`` with the value at ``path`` replaced, read back: the plan, or None when
    it is refused (with a PlanFileError that names the file)."""
    data = json.loads(json.dumps(valid))
    cur = data
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    try:
        return runplan.from_json(data, "fuzzed.json")
    except PlanFileError as e:
        assert "fuzzed.json" in str(e)
        return None


_WARM = mid_run_snapshot()
_VALID_WARM = runplan.make_run_plan(_WARM[2], initial=_WARM[1], time_budget=0.1, rounds=0).to_json()


@given(st.sampled_from([p for p in _paths(_VALID_WARM) if p and p[0] in ("initial", "arena", "alignment")]),
       st.one_of(st.none(), st.integers(-(1 << 70), 1 << 70), st.lists(st.integers(-3, 1 << 20), max_size=4)))
@settings(max_examples=100, deadline=None)
def test_a_corrupted_plan_of_a_snapshot_is_refused_or_serves_its_warm_start_safely(path, value):
    plan = _corrupted(_VALID_WARM, path, value)
    if plan is not None:
        serve(plan, _WARM[2], page=512, segments=_WARM[0])  # checks that no two live blocks overlap


#: plan mode's online policy maps smaller growth chunks (MEMTUNE_PLAN_GROWTH, 1/64 against
#: memtune's 1/16); on vit that alone costs 1.013 -> 1.023 (memtune with growth=1/64), and the
#: step it learns (a layer, during the climb) deviates before it lowers anything
CLIMB_TAKEOVER = {"vit-train"}


#: later runs where memtune got lower with its floor under the growth chunk
#: (MEMTUNE_GROWTH_MIN): the floor changed memtune's layout, not plan mode's peak, which is
#: the same with the floor (memtune-plan / memtune, and memtune before the floor)
BELOW_PLAN_SINCE_GROWTH_MIN = {
    "mae-pretrain": "memtune-plan 1.0352, memtune 1.0280 (1.0567 before the floor)",
    "neural-ode-train": "memtune-plan 1.0192, memtune 1.0138 (1.0515 before the floor)",
    "fsdp-gather-train": "memtune-plan 1.0271, memtune 1.0181 (1.0406 before the floor)",
    "diffusion-sample": "memtune-plan 1.0782, memtune 1.0614 (1.0782 before the floor)",
    # (measured once with the climbs and the move slack; before them memtune was at the same 1.0723)
    "t5-adafactor-train": "twentieth set: memtune-plan 1.0835, memtune 1.0723 (a plan of its recording: 1.0082)",
}


#: plan mode takes over a pattern inside the step during its climb and again each step, and each
#: take-over gives the online policy's free pages back (tests/plan/test_targets.py says more)
PATTERN_TAKEOVER = {
    "meshgraphnet-train": "twenty-fifth set: memtune-plan 1.0275, memtune 1.0141 (a 70-event pattern inside the "
                          "step, one of its 15 message-passing blocks, is taken over during the climb and left "
                          "3-5 cycles later, every step)",
}


#: later runs where memtune got lower with room for a later climb (MEMTUNE_CLIMB_CHUNKS): plan
#: mode's peak did not change (memtune-plan / memtune, and memtune before the room)
BELOW_PLAN_SINCE_CLIMB_CHUNKS = {
    "dqn-replay-train": "fourteenth set: memtune-plan 1.0927, memtune 1.0834 (1.1021 before the room)",
    "siamfc-track-train": "twenty-second set: memtune-plan 1.0724, memtune 1.0533 (1.0788 before the room)",
}


#: measured as they came, not looked into further
MEASURED_ONLY = {
    "cyclegan-train": "twenty-eighth set: memtune-plan 1.0319, memtune 1.0262 (on its first run both 1.0278)",
    "dcrnn-traffic-train": "twenty-ninth set: memtune-plan 1.0331, memtune 1.0270 since room on the first climb "
                           "(5728045; 1.0421 before)",
    "dnc-copy-train": "thirtieth set: memtune-plan 1.0303, memtune 1.0145 (the same on its first run: plan mode "
                      "takes over a 422-event pattern inside the step, one time step of the unrolled controller, "
                      "while live bytes still climb)",
}


@pytest.mark.parametrize("name", with_measured_misses([n for n in FIXED_SHAPES if n not in CLIMB_TAKEOVER],
                                                      {**BELOW_PLAN_SINCE_GROWTH_MIN, **BELOW_PLAN_SINCE_CLIMB_CHUNKS,
                                                       **PATTERN_TAKEOVER, **MEASURED_ONLY}))
def test_learning_online_never_raises_the_peak_of_a_later_run_over_memtune(later_runs, name):
    """Past the climb, a learned plan that the online policy's kept pages plus the arena
    would push over the peak is left alone (PlanAllocator._raises_peak)."""
    learned, online = replay_later_run(name, "memtune-plan"), replay_later_run(name, "memtune")
    lb = learned.lower_bound
    assert learned.peak_reserved_bytes <= online.peak_reserved_bytes, (
        f"{name}: memtune-plan {learned.peak_reserved_bytes / lb:.4f}, memtune {online.peak_reserved_bytes / lb:.4f}")


def test_a_plan_that_cannot_be_written_leaves_no_file_behind(tmp_path):
    plan = runplan.make_run_plan(lazy_optimizer_training(4), time_budget=0.1, rounds=0)
    (tmp_path / "taken").mkdir()  # a directory where the plan should go: os.replace fails
    with pytest.raises(OSError):
        plan.save(tmp_path / "taken")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_a_corrupt_gzip_plan_is_a_plan_file_error(tmp_path):
    data = bytearray(gzip.compress(json.dumps(_VALID).encode()))
    for i in range(12, len(data) - 8, 7):
        data[i] ^= 0x5A
    f = tmp_path / "bad.json.gz"
    f.write_bytes(bytes(data))
    with pytest.raises(PlanFileError, match="is not JSON"):
        runplan.load(f)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["pytorch-snapshot-warm-emptycache.pickle", "pytorch-snapshot-warm-finetune.pickle",
                                  "pytorch-snapshot-warm-lm-fullstep.pickle"])
def test_a_plan_of_a_real_mid_run_snapshot_serves_that_run_within_2_percent(shared_trace_path, tmp_path, name):
    """Snapshots taken mid-run begin with live blocks (warm-emptycache: 205 MiB). A plan
    that leaves them where the online policy restores them holds them beside its arena
    (warm-emptycache replayed on itself: 1.049 x its bound); planned, they are inside."""
    tr = memtune.load_trace(shared_trace_path(name))
    dt = dataclasses.replace(tr.devices[0], settings={})
    plan = runplan.make_run_plan(dt.events, initial=dt.initial_live(), time_budget=0.0, rounds=0)
    assert 0 < plan.lower_bound <= dt.peak_requested_bytes()  # (what follows the last step is not planned)
    r = replay_device(tr, dt, "memtune-plan", settings={"plan_file": str(plan.save(tmp_path / "p.json"))})
    assert r.peak_reserved_bytes <= 1.02 * dt.peak_requested_bytes(), r.peak_reserved_bytes / dt.peak_requested_bytes()


def test_a_plan_of_a_run_with_no_step_keeps_its_lasting_buffers_at_the_bottom():
    """A recording with no repeating step (its shapes follow the data): the buffers it never
    frees go at the bottom of the arena, in the order they come, as with a step, so a later
    run that leaves the plan in its first batch keeps only them, packed. (This small case is
    packed the same way without f958f30; the held-out later runs in
    test_a_plan_from_a_run_with_other_shapes_costs_little are the ones it moved.)"""
    evs, addr, lasting = [], 1, []
    for i, size in enumerate((300 * KiB, 70 * KiB, 500 * KiB, 20 * KiB, 900 * KiB)):
        evs.append(Event(Action.ALLOC, addr, size))  # a weight, never freed
        lasting.append(size)
        tmp = addr + 1
        evs += [Event(Action.ALLOC, tmp, (i + 2) * 64 * KiB), Event(Action.FREE, tmp)]  # a temporary of its own size
        addr += 2
    plan = runplan.make_run_plan(evs, time_budget=0.5, rounds=5)
    assert plan.step is None
    allocs = [q for q, k in enumerate(plan.keys) if k[0] == ALLOC]
    weights = allocs[0::2]
    want, off = [], 0
    for size in lasting:
        want.append(off)
        off += -(-size // plan.alignment) * plan.alignment
    assert [plan.offsets[q] for q in weights] == want
