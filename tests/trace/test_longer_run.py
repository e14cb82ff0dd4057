"""replay_longer_run: a longer run's counts, read where copies of the step end, with the
replay stopped once the allocator's state repeats. Each answer is checked against the
replay of the whole longer run, which it must equal count for count."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import memtune
from memtune.allocator.events import EventKind
from memtune.errors import MemtuneError
from memtune.trace.extend import FIRST_TRY_COPIES, repeat_step, replay_longer_run, step_copy_ends
from memtune.trace.model import Action, DeviceTrace, Event, Trace
from memtune.trace.replay import replay_device

from .test_extend import VGG

KiB, MiB = 1 << 10, 1 << 20


def _full(tr: Trace, dt: DeviceTrace, policy: str, counts: list[int], settings: dict | None = None) -> dict:
    """The counts of the replay of the whole longer run, where the copies end."""
    ends = step_copy_ends(dt, max(counts))
    r = replay_device(tr, repeat_step(dt, max(counts)), policy, settings=settings, checkpoints=[ends[k] for k in counts])
    return dict(zip(counts, r.checkpoints))


def _training(step: list[tuple[int, int, int, int]], weights: list[int], steps: int = 3) -> DeviceTrace:
    """A run of ``steps`` steps. ``step``: (size, stream, lifetime, carried) per buffer,
    allocated in order; buffer i is freed before buffer i + lifetime is allocated (at
    the step's end if that is past it), or, when carried, at that point of the next
    step (a gradient kept for the next update)."""
    events: list[Event] = []
    addr = iter(range(1 << 20, 1 << 62, 1 << 30))
    for size in weights:
        events.append(Event(Action.ALLOC, next(addr), size))
    n = len(step)
    held: dict[int, int] = {}  # buffer -> address of the previous step's carried copy
    for _ in range(steps):
        mine: dict[int, int] = {}
        carried: dict[int, int] = {}
        for j in range(n + 1):
            for i, (size, stream, life, carry) in enumerate(step):
                if min(i + life, n) != j:
                    continue
                if carry and i in held:
                    events.append(Event(Action.FREE, held.pop(i), size, stream))
                if not carry and i in mine:
                    events.append(Event(Action.FREE, mine.pop(i), size, stream))
            if j < n:
                size, stream, _life, carry = step[j]
                a = next(addr)
                (carried if carry else mine)[j] = a
                events.append(Event(Action.ALLOC, a, size, stream))
        for i, a in mine.items():
            events.append(Event(Action.FREE, a, step[i][0], step[i][1]))
        held = carried
    for i, a in held.items():
        events.append(Event(Action.FREE, a, step[i][0], step[i][1]))
    return DeviceTrace(device=0, events=events)


_sizes = st.one_of(st.integers(1, 64 * KiB), st.integers(64 * KiB, 4 * MiB), st.integers(4 * MiB, 48 * MiB))
_buffer = st.tuples(_sizes, st.sampled_from([0, 0, 0, 1]), st.integers(1, 12), st.booleans())
_settings = st.fixed_dictionaries({}, optional={
    "first_fit_after": st.sampled_from(["0", "30", "20000"]),
    "fit": st.sampled_from(["best", "first"]),
    "page_size": st.sampled_from(["65536", "2097152"]),
    "slack": st.sampled_from(["0", "0.02", "0.1"]),
    "trim_budget": st.sampled_from(["0", "1", "4"]),
    "high_watermark": st.sampled_from([str(96 * MiB), str(160 * MiB)]),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(step=st.lists(_buffer, min_size=3, max_size=24), weights=st.lists(_sizes, max_size=3), opts=_settings)
def test_a_replay_stopped_where_the_state_repeats_reads_what_the_whole_replay_reads(step, weights, opts):
    """Random training steps, under settings that make memtune map, unmap, move pages,
    turn to first fit and run out of memory: every copy end past the first try's
    copies reads the same counts as the replay of the whole longer run."""
    dt = _training(step, weights)
    try:  # (a period found inside the step may free what a copy of it cannot have allocated)
        repeat_step(dt, 1)
    except MemtuneError:
        assume(False)
    tr = Trace("random-steps", "memtune", [dt])
    counts = list(range(0, FIRST_TRY_COPIES + 9))
    got = replay_longer_run(tr, dt, "memtune", counts, settings=opts)
    assert got.checkpoints == _full(tr, dt, "memtune", counts, opts)
    if got.settled is not None:
        assert got.replayed == got.settled + got.cycle <= max(counts)
    last = got.checkpoints[max(counts)]
    event("did not settle" if got.settled is None else "settled from copy 0" if got.settled == 0
          else "settled later")  # (pytest --hypothesis-show-statistics)
    event("pages unmapped" if last.device_frees else "no unmap")


@pytest.mark.parametrize("name, first_try", [("vgg-train", True), ("capsnet-train", False)])
def test_a_real_run_settles_and_the_rest_is_read_from_there(name, first_try):
    """vgg-train's state repeats within the first try's copies, capsnet-train's only
    after 68 (every sixteenth copy from there on): 300 more steps cost a few copies'
    replay, or one of 84, and read what the whole run's replay reads."""
    tr = memtune.load_trace(VGG.with_name(f"{name}.jsonl.gz"))
    dt = dataclasses.replace(tr.devices[0], settings={})
    counts = [0, 1, 5, 40, 200, 300]
    got = replay_longer_run(tr, dt, "memtune", counts)
    assert got.settled is not None and (got.replayed <= FIRST_TRY_COPIES) == first_try, got
    assert got.checkpoints == _full(tr, dt, "memtune", counts)
    ends = step_copy_ends(dt, 300)
    assert [got.checkpoints[k].event_index for k in counts] == [ends[k] for k in counts]


def test_an_allocator_that_cannot_say_its_state_replays_the_whole_run():
    """pytorch-cuda has no state_key(): no copy is skipped."""
    tr = memtune.load_trace(VGG)
    dt = dataclasses.replace(tr.devices[0], settings={})
    counts = [10, 40]
    got = replay_longer_run(tr, dt, "pytorch-cuda", counts)
    assert (got.settled, got.cycle, got.replayed) == (None, None, 40)
    assert got.checkpoints == _full(tr, dt, "pytorch-cuda", counts)


def test_listeners_hide_the_state():
    """A listener may keep state of its own: with one attached, state_key() says nothing."""
    alloc = memtune.allocator("memtune", device=memtune.SimulatedDevice(1 << 30))
    alloc.free(alloc.malloc(MiB))
    assert alloc.state_key() is not None
    alloc.add_listener(lambda ev: None, events=[EventKind.ALLOCATED])
    assert alloc.state_key() is None


def test_state_key_tells_apart_what_later_choices_depend_on():
    """Two allocators that served the same sizes with different frees hold different
    holes: their keys differ; the same sequence gives the same key."""
    def run(free_first: bool):
        alloc = memtune.allocator("memtune", device=memtune.SimulatedDevice(1 << 30))
        a, b = alloc.malloc(3 * MiB), alloc.malloc(5 * MiB)
        alloc.free(a if free_first else b)
        return alloc.state_key()

    assert run(True) == run(True)
    assert run(True) != run(False)


@pytest.mark.parametrize("bad, why", [([], "non-empty"), ("10", "non-empty"), ([5, -1], ">= 0"),
                                      ([2.5], "whole number")])
def test_bad_step_counts_are_refused(bad, why):
    tr = memtune.load_trace(VGG)
    with pytest.raises(ValueError, match=why):
        replay_longer_run(tr, tr.devices[0], "memtune", bad)



def test_until_must_be_callable():
    tr = memtune.load_trace(VGG)
    with pytest.raises(TypeError, match="until must be a callable taking a ReplayState"):
        replay_device(tr, tr.devices[0], "memtune", until="stop")


def test_an_unknown_policy_is_named():
    tr = memtune.load_trace(VGG)
    with pytest.raises(MemtuneError, match="unknown allocator preset .nope.. Known presets: pytorch-cuda"):
        replay_longer_run(tr, tr.devices[0], "nope", [3])
