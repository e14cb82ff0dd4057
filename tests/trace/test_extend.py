"""repeat_step: a longer run from a recorded one, by repeating its step."""

from __future__ import annotations

from pathlib import Path

import pytest

import memtune
from memtune.errors import MemtuneError
from memtune.trace.extend import repeat_step, step_copy_ends
from memtune.trace.model import Action, DeviceTrace, Event
from memtune.trace.plan import Period, find_step, tokenize

REPO = Path(__file__).resolve().parents[2]
VGG = REPO / "benchmarks" / "heldout" / "vgg-train.jsonl.gz"


def _trace(ops: list[tuple]) -> DeviceTrace:
    """ops: ("a", name, size) / ("f", name); names become addresses."""
    addr: dict[str, int] = {}
    events = []
    for op in ops:
        if op[0] == "a":
            addr[op[1]] = 4096 * (len(addr) + 1)
            events.append(Event(Action.ALLOC, addr[op[1]], op[2]))
        else:
            events.append(Event(Action.FREE, addr[op[1]]))
    return DeviceTrace(device=0, events=events)


def _step(k: int) -> list[tuple]:
    # weights stay; each step: activations, then the previous step's gradient is freed
    return [("a", f"x{k}", 1000), ("a", f"y{k}", 3000), ("f", f"x{k}"), ("a", f"g{k}", 500), ("f", f"y{k}"),
            ("f", f"g{k - 1}")]


def _run(steps: int) -> DeviceTrace:
    ops = [("a", "w", 8000), ("a", "g0", 500)]
    for k in range(1, steps + 1):
        ops += _step(k)
    return _trace(ops + [("f", f"g{steps}"), ("f", "w")])


def _live_at_end(dt: DeviceTrace) -> set[int]:
    live: set[int] = set()
    for ev in dt.events:
        if ev.action is Action.ALLOC:
            assert ev.address not in live
            live.add(ev.address)
        elif ev.action is Action.FREE:
            live.remove(ev.address)  # every free frees a live block
    return live


def test_a_longer_run_is_the_run_recorded_with_more_steps():
    recorded = _run(4)
    longer = repeat_step(recorded, 5)
    toks, keys = tokenize(longer.events)
    want, want_keys = tokenize(_run(9).events)
    assert [keys[t] for t in toks] == [want_keys[t] for t in want]
    assert longer.peak_requested_bytes() == recorded.peak_requested_bytes()
    assert _live_at_end(longer) == set()


def test_no_extra_steps_keeps_the_stream():
    recorded = _run(4)
    same = repeat_step(recorded, 0)
    toks, keys = tokenize(same.events)
    want, want_keys = tokenize(recorded.events)
    assert [keys[t] for t in toks] == [want_keys[t] for t in want]


def test_a_real_run_repeats_its_step():
    dt = memtune.load_trace(VGG).devices[0]
    per, _ = find_step(dt.events)
    longer = repeat_step(dt, 7)
    n_events = sum(1 for e in dt.events if e.action in (Action.ALLOC, Action.FREE))
    assert sum(1 for e in longer.events if e.action in (Action.ALLOC, Action.FREE)) == n_events + 7 * per.length
    assert longer.peak_requested_bytes() == dt.peak_requested_bytes()
    assert _live_at_end(longer) == _live_at_end(dt) == set()
    # the step found in the longer run is the same step, repeated 7 more times
    per2, _ = find_step(longer.events)
    assert (per2.length, per2.count) == (per.length, per.count + 7)
    # a step already found is not looked for again, and gives the same run
    assert repeat_step(dt, 7, period=per).events == longer.events


def test_bad_requests_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="extra_steps must be a whole number >= 0; got -1"):
        repeat_step(_run(4), -1)
    with pytest.raises(ValueError, match="got True"):
        repeat_step(_run(4), True)
    with pytest.raises(ValueError, match="min_period must be a whole number >= 1; got 0"):
        repeat_step(_run(4), 2, min_period=0)
    with pytest.raises(TypeError, match="needs a DeviceTrace .* got str"):
        repeat_step("trace.jsonl.gz", 2)
    run = _run(4)
    per, _ = find_step(run.events)
    n = sum(1 for e in run.events if e.action in (Action.ALLOC, Action.FREE))
    for bad in ((per.start, per.length, per.count),  # not a Period
                Period(per.start, per.length, per.count + 50),  # past the stream's end
                Period(-1, per.length, per.count), Period(per.start, 0, per.count)):
        with pytest.raises(ValueError, match=f"period must be a Period .* within its {n} allocations"):
            repeat_step(run, 2, period=bad)
    no_step = _trace([("a", "a", 100), ("a", "b", 200), ("f", "a"), ("f", "b")])
    with pytest.raises(MemtuneError, match="no repeating step found in 4 events"):
        repeat_step(no_step, 3)


def test_a_step_that_frees_what_it_cannot_have_allocated_is_refused():
    # encoder-serve serves 8 request shapes once: what repeats is part of a request,
    # whose frees reach back to blocks of the request before
    dt = memtune.load_trace(REPO / "benchmarks" / "heldout" / "encoder-serve.jsonl.gz").devices[0]
    with pytest.raises(MemtuneError, match="cannot repeat this step"):
        repeat_step(dt, 2)


def test_a_step_that_frees_blocks_from_before_the_recording_is_refused():
    # a warm start: every step frees one of the blocks live when the recording began, so
    # a repeated step would free one of them a second time
    from memtune.trace.model import BlockState, SegmentState

    n = 6
    blocks = [BlockState(0x100000 + 4096 * k, 1024, 1000, True) for k in range(n)]
    warm = [SegmentState(0x100000, 4096 * n, 0, "large", tuple(blocks))]
    events = []
    for k in range(n):
        events += [Event(Action.ALLOC, 0x900000, 3000), Event(Action.FREE, 0x900000),
                   Event(Action.FREE, 0x100000 + 4096 * k)]
    dt = DeviceTrace(device=0, events=events, initial_segments=warm)
    with pytest.raises(MemtuneError, match="frees a block allocated before the recording began"):
        repeat_step(dt, 2)


def test_step_copy_ends_say_where_each_copy_of_the_step_ends():
    """Copy k of the longer run ends where the run recorded with k more steps reaches
    its closing events: the longer run up to there is that run's stream."""
    recorded = _run(4)
    longer = repeat_step(recorded, 5)
    ends = step_copy_ends(recorded, 5)
    assert len(ends) == 6 and ends == sorted(ends)
    tail = len(recorded.events) - ends[0]
    assert len(longer.events) - ends[-1] == tail
    step = ends[1] - ends[0]
    assert all(b - a == step for a, b in zip(ends, ends[1:]))
    for k in (0, 2, 5):
        # up to the end of copy k, the longer run is the run with k more steps, before its closing frees
        want, _ = tokenize(_run(4 + k).events[:len(_run(4 + k).events) - tail])
        got, _ = tokenize(longer.events[:ends[k]])
        assert got.tolist() == want.tolist()
    per = find_step(recorded.events)[0]
    assert step_copy_ends(recorded, 5, period=per) == ends
    assert step_copy_ends(recorded, 0) == ends[:1]


def test_step_copy_ends_refuses_what_repeat_step_refuses():
    with pytest.raises(ValueError, match="extra_steps must be a whole number >= 0; got -2"):
        step_copy_ends(_run(4), -2)
    with pytest.raises(TypeError, match="step_copy_ends needs a DeviceTrace"):
        step_copy_ends("trace.jsonl.gz", 2)
    with pytest.raises(MemtuneError, match="no repeating step"):
        step_copy_ends(_trace([("a", "w", 8000), ("f", "w")]), 3)
