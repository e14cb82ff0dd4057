"""repeat_step against the event-by-event algorithm it replaced (kept here as the reference).

repeat_step plays the first copies of the step event by event and makes the later ones
as copies of the last played one, 512 x step length higher. Its output must be the
reference's exactly: the same Event objects' fields, in the same order, and the same
errors with the same messages.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import memtune.trace.extend as extend
from heldout_runs import heldout, load_recording
from reference_algorithms import reference_repeat_step
from memtune.errors import MemtuneError
from memtune.trace.extend import repeat_step
from memtune.trace.model import Action, BlockState, DeviceTrace, Event, SegmentState

REPO = Path(__file__).resolve().parents[2]
HELDOUT = sorted((REPO / "benchmarks" / "heldout").glob("*.jsonl.gz"))  # (not a set kept unseen in a directory)


def _outcome(fn, dt: DeviceTrace, extra: int, min_period: int = 2):
    try:
        return "ok", fn(dt, extra, min_period=min_period)
    except (MemtuneError, ValueError, TypeError, IndexError) as e:
        return "error", (type(e), str(e))


def assert_same(dt: DeviceTrace, extra: int, min_period: int = 2) -> str:
    """repeat_step and the reference agree on ``dt``; returns "ok" or "error"."""
    kind, want = _outcome(reference_repeat_step, dt, extra, min_period)
    kind2, got = _outcome(repeat_step, dt, extra, min_period)
    assert (kind2, got if kind2 == "error" else None) == (kind, want if kind == "error" else None)
    if kind == "ok":
        assert len(got.events) == len(want.events)
        # field by field (an Event's == compares every field, and its class)
        bad = next((i for i, (a, b) in enumerate(zip(got.events, want.events)) if a != b), None)
        assert bad is None, f"event {bad}: {got.events[bad]} != {want.events[bad]}"
        assert all(type(e) is Event for e in got.events)
        assert dataclasses.replace(got, events=[]) == dataclasses.replace(want, events=[])
    return kind


# --------------------------------------------------------------------------- synthetic streams

SIZES = (0, 512, 1000, 3000)
PASS = (Action.EMPTY_CACHE, Action.SEGMENT_ALLOC, Action.OOM)

# an op: ("a", size index, stream) | ("f", where, k) | ("x", passthrough action index)
# where: "this" (the k-th alloc of this copy of the part), "prev" / "prev2" (of the copy
# before / two before), "init" (the k-th block live before the recording), "old" (the k-th
# oldest live block), "bogus" (an address never allocated)
WHERE = ["this"] * 3 + ["prev"] * 3 + ["prev2"] * 2 + ["old"] * 2 + ["init", "bogus"]
op = st.one_of(
    st.tuples(st.just("a"), st.integers(0, len(SIZES) - 1), st.integers(0, 1)),
    st.tuples(st.just("a"), st.integers(0, len(SIZES) - 1), st.integers(0, 1)),
    st.tuples(st.just("f"), st.sampled_from(WHERE), st.integers(0, 3)),
    st.tuples(st.just("f"), st.sampled_from(WHERE), st.integers(0, 3)),
    st.tuples(st.just("x"), st.integers(0, len(PASS) - 1)),
)


@st.composite
def streams(draw) -> DeviceTrace:
    n_init = draw(st.integers(0, 3))
    offset = draw(st.sampled_from([0, 0, 1 << 40, (1 << 62) - (1 << 20), 1 << 70]))  # last two: past int64
    reuse = draw(st.booleans())  # addresses re-used as a real allocator does (lowest freed first)
    free_sizes = draw(st.booleans())  # frees carry their block's size (else 0)
    times = draw(st.booleans())
    markers = draw(st.sampled_from(["none", "before", "after"]))
    prefix = draw(st.lists(op, max_size=6))
    step = draw(st.lists(op, min_size=1, max_size=9))
    first_step = draw(st.one_of(st.none(), st.lists(op, min_size=1, max_size=9)))  # a longer first step
    count = draw(st.integers(2, 5))
    suffix = draw(st.lists(op, max_size=6))

    init_blocks = [BlockState(offset + 0x100000 + 4096 * k, 1024, SIZES[1 + k % 3], True) for k in range(n_init)]
    initial = [SegmentState(offset + 0x100000, 4096 * max(n_init, 1), 0, "large", tuple(init_blocks))] if n_init else []
    live: dict[int, tuple[int, int]] = {b.address: (b.requested_size, 0) for b in init_blocks}
    freed: list[int] = []
    fresh = [offset + 0x200000]
    events: list[Event] = []

    def emit(action, address=0, size=0, stream=0, info=None):
        events.append(Event(action, address, size, stream, float(len(events)) if times else None, info))

    def new_address() -> int:
        if reuse and freed:
            freed.sort()
            return freed.pop(0)
        fresh[0] += 4096
        return fresh[0]

    def play(ops, prev: list[int], prev2: list[int]) -> list[int]:
        mine: list[int] = []
        for o in ops:
            if o[0] == "a":
                a = new_address()
                live[a] = (SIZES[o[1]], o[2])
                mine.append(a)
                emit(Action.ALLOC, a, SIZES[o[1]], o[2])
            elif o[0] == "x":
                emit(PASS[o[1]], 0x900000 if PASS[o[1]] is Action.SEGMENT_ALLOC else 0, 1 << 20)
            else:
                where, k = o[1], o[2]
                pool = {"this": mine, "prev": prev, "prev2": prev2, "init": [b.address for b in init_blocks],
                        "old": list(live)}.get(where, [])
                a = pool[k] if k < len(pool) else None
                if where == "bogus":
                    a = offset + 0x50000 + 64 * k
                    emit(Action.FREE, a, 0)
                elif a is not None and a in live:
                    size, stream = live.pop(a)
                    freed.append(a)
                    emit(Action.FREE, a, size if free_sizes else 0, stream)
        return mine

    prev2, prev = [], play(prefix, [], [])
    for c in range(count):
        if markers == "before":
            emit(Action.MARKER, info={"name": "step"})
        prev2, prev = prev, play(first_step if c == 0 and first_step is not None else step, prev, prev2)
        if markers == "after":
            emit(Action.MARKER, info={"name": "step"})
    play(suffix, prev, prev2)
    return DeviceTrace(device=3, events=events, initial_segments=initial, framework="test")


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.integers(0, 7), st.sampled_from([1, 2, 2, 3]))
def test_repeat_step_is_the_reference_on_synthetic_streams(dt, extra, min_period):
    assert_same(dt, extra, min_period)


def _steps(n: int, *, prev_free: bool = True, init_free: bool = False, tail: bool = True,
           marker: bool = True, reuse: bool = False, back: int = 1) -> DeviceTrace:
    """A hand-made run: weights, n steps (activations freed in the step, the gradient of
    ``back`` steps before freed in the step), a tail after the last step."""
    init = [BlockState(0x100000 + 4096 * k, 1024, 1000, True) for k in range(n + 2)]
    events = [Event(Action.ALLOC, 0x200000, 8000, time_us=0.0)]
    gs = [0x201000 + 4096 * b for b in range(back)]
    events += [Event(Action.ALLOC, g, 500) for g in gs]
    for k in range(n):
        if marker:
            events.append(Event(Action.MARKER, info={"name": f"step {k}"} if not reuse else {"name": "step"}))
        x, y, g2 = (0x300000, 0x301000, 0x302000 + 4096 * (k % (back + 1))) if reuse else (
            0x400000 + 3 * 4096 * k, 0x401000 + 3 * 4096 * k, 0x402000 + 3 * 4096 * k)
        events += [Event(Action.ALLOC, x, 1000), Event(Action.ALLOC, y, 3000), Event(Action.FREE, x, 1000),
                   Event(Action.EMPTY_CACHE), Event(Action.ALLOC, g2, 500), Event(Action.FREE, y)]
        if prev_free:
            events.append(Event(Action.FREE, gs[-back], 500, time_us=1.0))
            gs.remove(gs[-back])
        if init_free:
            events.append(Event(Action.FREE, 0x100000 + 4096 * k))
        gs.append(g2)
    if tail:
        events += [Event(Action.FREE, g) for g in gs] + [Event(Action.OOM), Event(Action.FREE, 0x200000)]
    segs = [SegmentState(0x100000, 4096 * (n + 2), 0, "large", tuple(init))] if init_free else []
    return DeviceTrace(device=0, events=events, initial_segments=segs)


@pytest.mark.parametrize("kw", [{}, {"prev_free": False}, {"init_free": True}, {"tail": False},
                                {"marker": False}, {"reuse": True}, {"reuse": True, "marker": False},
                                {"back": 2}, {"back": 2, "tail": False}, {"back": 3, "reuse": True, "tail": False},
                                {"back": 3, "marker": False, "tail": False}])
@pytest.mark.parametrize("extra", [0, 1, 2, 3, 10, 50])
def test_repeat_step_is_the_reference_on_hand_made_runs(kw, extra):
    assert_same(_steps(5, **kw), extra)


def test_events_made_in_bulk_leave_the_garbage_collector_as_it_was():
    """The collector is paused while the copies' events are made, and put back as it was."""
    import gc

    want = [Event(Action.ALLOC, 4096, 3, 0), Event(Action.FREE, 1 << 70, 0, 1)]
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert extend._events([Action.ALLOC, Action.FREE], [4096, 1 << 70], [3, 0], [0, 1]) == want
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# --------------------------------------------------------------------------- held-out traces


@pytest.fixture
def find_step_once(monkeypatch):
    """find_step memoised per event list: both implementations look the step up themselves,
    and a held-out trace's takes seconds."""
    import memtune.trace.plan as plan

    real = plan.find_step
    seen: dict[tuple[int, int], tuple] = {}

    def cached(events, min_period=2):
        key = (id(events), min_period)
        if key not in seen:
            seen[key] = (events, real(events, min_period=min_period))
        return seen[key][1]

    monkeypatch.setattr(plan, "find_step", cached)


@pytest.mark.slow
@pytest.mark.parametrize("path", [heldout(p, p.name, id=p.name.removesuffix(".jsonl.gz")) for p in HELDOUT])
def test_repeat_step_is_the_reference_on_held_out_traces(path, find_step_once):
    dt = load_recording(path.name).devices[0]  # (the run's worker has it loaded: tests/conftest.py)
    kinds = {assert_same(dt, extra) for extra in (0, 1, 3)}
    if path.name == "encoder-serve.jsonl.gz":
        assert kinds == {"ok", "error"}  # its step frees what a repetition cannot have allocated
