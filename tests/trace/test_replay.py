"""memtune.replay on traces built in memory, against the real engine."""

from __future__ import annotations

import json
import random

import pytest

import memtune
from memtune.errors import MemtuneError, TraceError, UnknownNameError
from memtune.trace.model import Action, BlockState, DeviceTrace, Event, SegmentState, Trace
from memtune.trace.replay import (
    Checkpoint,
    ReplayResult,
    infer_empty_cache,
    replay,
    replay_device,
    split_option_list,
    trace_settings_for,
)

MiB = 1 << 20
ISSUE3_KEYS = {"trace", "device", "policy", "settings", "events", "peak_requested_bytes", "peak_allocated_bytes",
               "peak_reserved_bytes", "device_allocs", "device_frees", "ooms", "fragmentation", "seconds",
               "events_per_second"}


def random_events(seed: int, n: int = 600, max_size: int = 30 * MiB, streams: int = 1) -> list[Event]:
    rng = random.Random(seed)
    events, live, t = [], [], 1_000_000.0
    for i in range(n):
        t += rng.uniform(1, 100)
        if live and rng.random() < 0.45:
            addr = live.pop(rng.randrange(len(live)))
            events.append(Event(Action.FREE, addr, 0, 0, t))
        else:
            addr = 0x10000 + i * 0x1000
            live.append(addr)
            size = rng.choice([rng.randint(1, 4096), rng.randint(4096, 2 * MiB), rng.randint(MiB, max_size)])
            events.append(Event(Action.ALLOC, addr, size, rng.randrange(streams), t))
    return events


def live_peak(events, initial=()) -> int:
    """Independent oracle: peak of live requested bytes."""
    live = dict((a, s) for a, s in initial)
    cur = peak = sum(live.values())
    for ev in events:
        if ev.action is Action.ALLOC:
            live[ev.address] = ev.size
            cur += ev.size
            peak = max(peak, cur)
        elif ev.action is Action.FREE and ev.address in live:
            cur -= live.pop(ev.address)
    return peak


def make_trace(events, **kw) -> Trace:
    return Trace("memory://test", "memtune-jsonl", [DeviceTrace(0, list(events), **kw)])


def test_replay_cold_trace_consistent_numbers():
    events = random_events(1)
    (r,) = replay(make_trace(events), "pytorch-cuda")
    assert isinstance(r, ReplayResult)
    assert r.events == len(events)
    assert r.peak_requested_bytes == live_peak(events)
    assert r.peak_allocated_bytes >= r.peak_requested_bytes
    assert r.peak_reserved_bytes >= r.peak_allocated_bytes
    assert r.device_allocs >= 1
    assert r.ooms == []
    assert r.initial_reserved_bytes == 0
    assert r.fragmentation == pytest.approx(r.peak_reserved_bytes / r.peak_requested_bytes - 1)
    assert r.events_per_second > 0 and r.seconds > 0
    assert ISSUE3_KEYS <= set(r.to_json())
    json.dumps(r.to_json(timeline=True))


def test_replay_matches_direct_engine_use():
    """The replay drives the engine exactly like a hand-written loop would."""
    events = random_events(2, streams=2)
    (r,) = replay(make_trace(events), "pytorch-cuda")
    alloc = memtune.allocator("pytorch-cuda", device=memtune.SimulatedDevice(1 << 50))
    addrs = {}
    for ev in events:
        if ev.action is Action.ALLOC:
            addrs[ev.address] = alloc.malloc(ev.size, ev.stream)
        else:
            alloc.free(addrs.pop(ev.address))
    stats = alloc.memory_stats()
    assert r.peak_reserved_bytes == stats["reserved_bytes.all.peak"]
    assert r.peak_allocated_bytes == stats["allocated_bytes.all.peak"]
    assert r.device_allocs == stats["num_device_alloc"]
    assert r.device_frees == stats["num_device_free"]


@pytest.mark.parametrize("policy", ["pytorch-cuda", "mxnet-round", "cupy"])
def test_timeline_keeps_the_same_peaks(policy):
    events = random_events(3, n=800)
    (plain,) = replay(make_trace(events), policy)
    (timed,) = replay(make_trace(events), policy, timeline=True, timeline_points=50)
    tl = timed.timeline
    assert tl is not None and 2 <= len(tl) <= 52
    assert (timed.peak_reserved_bytes, timed.peak_allocated_bytes, timed.peak_requested_bytes) == (
        plain.peak_reserved_bytes, plain.peak_allocated_bytes, plain.peak_requested_bytes)
    assert max(tl.reserved) == plain.peak_reserved_bytes
    assert max(tl.requested) == plain.peak_requested_bytes
    assert tl.event_index == sorted(tl.event_index)
    assert tl.has_time and tl.time_s[0] == 0.0
    assert all(a <= r for a, r in zip(tl.allocated, tl.reserved))


def test_policy_all_runs_every_preset():
    events = random_events(4, n=200)
    results = replay(make_trace(events), "all")
    assert [r.policy for r in results] == list(memtune.presets())
    assert len({r.peak_requested_bytes for r in results}) == 1


def test_capacity_oom_is_recorded_and_replay_goes_on():
    events = [
        Event(Action.ALLOC, 1, 30 * MiB, 0, 10.0),
        Event(Action.ALLOC, 2, 90 * MiB, 0, 20.0),   # does not fit in 64 MiB
        Event(Action.ALLOC, 3, 10 * MiB, 0, 30.0),
        Event(Action.FREE, 2, 0, 0, 40.0),           # the program frees what it never got here: skipped
        Event(Action.FREE, 1, 0, 0, 50.0),
        Event(Action.ALLOC, 4, 40 * MiB, 0, 60.0),   # fits once block 1 is gone
        Event(Action.FREE, 3, 0, 0, 70.0),
        Event(Action.FREE, 4, 0, 0, 80.0),
    ]
    (r,) = replay(make_trace(events), "pytorch-cuda", capacity="64MiB")
    assert r.capacity == 64 * MiB
    assert [(o["event_index"], o["size"], o["time_us"]) for o in r.ooms] == [(1, 90 * MiB, 20.0)]
    assert r.ooms[0]["time_s"] == pytest.approx(10.0 / 1e6)
    assert r.peak_reserved_bytes <= 64 * MiB
    assert r.peak_requested_bytes == live_peak(events)  # the trace's figure, OOM or not
    assert r.events == len(events)


def test_trace_capacity_is_the_default_and_explicit_capacity_wins():
    events = [Event(Action.ALLOC, 1, 100 * MiB), Event(Action.FREE, 1)]
    trace = make_trace(events, capacity=50 * MiB)
    (r,) = replay(trace, "pytorch-cuda")
    assert r.capacity == 50 * MiB and len(r.ooms) == 1
    (r,) = replay(trace, "pytorch-cuda", capacity=1 << 30)
    assert r.capacity == 1 << 30 and r.ooms == []


def test_trace_settings_apply_to_the_recording_allocator_only():
    dt = DeviceTrace(0, random_events(5, n=300), settings={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                     framework="pytorch-cuda")
    trace = Trace("memory://x", "pytorch-snapshot", [dt])
    (r,) = replay(trace, "pytorch-cuda")
    assert r.settings == {"expandable_segments": "True"} and r.overrides == {}
    (r2,) = replay(trace, "pytorch-cuda", settings={"expandable_segments": "False"})
    assert r2.settings == {"expandable_segments": "False"} and r2.overrides == {"expandable_segments": "False"}
    (m,) = replay(trace, "mxnet-naive")
    assert m.settings == {}
    # Expandable segments map pages instead of allocating segments: the replays differ.
    assert (r.device_maps, r.device_allocs) != (r2.device_maps, r2.device_allocs)


def test_trace_settings_fallback_to_parsed_fields():
    dt = DeviceTrace(0, [], settings={"expandable_segments": True, "max_split_size": 256 * MiB,
                                      "garbage_collection_threshold": 0.0}, framework="pytorch-cuda")
    assert trace_settings_for(dt, "pytorch-cuda") == {"expandable_segments": True, "max_split_size_mb": 256}


def test_bad_setting_is_a_clear_error():
    with pytest.raises(UnknownNameError, match="max_split_sise_mb"):
        replay(make_trace(random_events(6, n=10)), "pytorch-cuda", settings={"max_split_sise_mb": "128"})
    with pytest.raises(memtune.ConfigError, match="max_split_size_mb"):
        replay(make_trace(random_events(6, n=10)), "pytorch-cuda", settings={"max_split_size_mb": "lots"})


def test_unknown_policy_and_bad_capacity():
    with pytest.raises(UnknownNameError):
        replay(make_trace(random_events(6, n=10)), "pytorch-cudaa")
    with pytest.raises(MemtuneError, match="capacity"):
        replay(make_trace(random_events(6, n=10)), "pytorch-cuda", capacity="80 gigs")
    with pytest.raises(TraceError, match="no device 3"):
        replay(make_trace(random_events(6, n=10)), "pytorch-cuda", device=3)


def test_inconsistent_trace_strict_and_lenient():
    events = [Event(Action.ALLOC, 1, 1000), Event(Action.FREE, 7), Event(Action.FREE, 1), Event(Action.FREE, 1)]
    with pytest.raises(TraceError, match=r"event 1\b"):
        replay(make_trace(events), "pytorch-cuda")
    (r,) = replay(make_trace(events), "pytorch-cuda", lenient=True)
    assert r.skipped == {"free_of_unknown_address": 2}
    assert r.peak_requested_bytes == 1000


def test_warm_start_restores_segments_and_live_blocks():
    seg = SegmentState(
        address=0x7F0000000000, total_size=20 * MiB, stream=0, pool="large",
        blocks=(BlockState(0x7F0000000000, 4 * MiB, 4 * MiB - 100, True),
                BlockState(0x7F0000000000 + 4 * MiB, 16 * MiB, 0, False)),
    )
    events = [Event(Action.ALLOC, 0x1, 8 * MiB), Event(Action.FREE, 0x7F0000000000), Event(Action.FREE, 0x1)]
    trace = make_trace(events, initial_segments=[seg], framework="pytorch-cuda")
    (r,) = replay(trace, "pytorch-cuda")
    assert r.initial_reserved_bytes == 20 * MiB
    assert r.peak_requested_bytes == 4 * MiB - 100 + 8 * MiB
    # The 8 MiB request fits in the cached 16 MiB block: no new device allocation.
    assert r.device_allocs == 0 and r.peak_reserved_bytes == 20 * MiB


def test_infer_empty_cache_from_segment_frees():
    A, F, SF, SA, OOM = Action.ALLOC, Action.FREE, Action.SEGMENT_FREE, Action.SEGMENT_ALLOC, Action.OOM
    evs = [Event(a) for a in (A, F, SF, SF, SA, A, SF, OOM, A, SF)]
    assert infer_empty_cache(evs) == [2, 9]  # the run next to the OOM is the failure path
    assert infer_empty_cache(evs + [Event(Action.EMPTY_CACHE)]) == []


def test_inferred_empty_cache_releases_memory():
    events = [Event(Action.ALLOC, 1, 50 * MiB), Event(Action.FREE, 1),
              Event(Action.SEGMENT_FREE, 0xABC, 50 * MiB), Event(Action.ALLOC, 2, 10 * MiB), Event(Action.FREE, 2)]
    (r,) = replay(make_trace(events), "pytorch-cuda")
    assert r.inferred_empty_cache == 1 and r.device_frees == 1 and r.device_allocs == 2
    (r,) = replay(make_trace(events), "pytorch-cuda", infer_empty_cache=False)
    assert r.inferred_empty_cache == 0 and r.device_frees == 0 and r.device_allocs == 1


def test_split_option_list_keeps_bracketed_lists():
    assert split_option_list("expandable_segments:True, roundup_power2_divisions:[256:1,512:2,>:8]") == [
        ("expandable_segments", "True"), ("roundup_power2_divisions", "[256:1,512:2,>:8]")]
    with pytest.raises(TraceError):
        split_option_list("expandable_segments")


@pytest.mark.parametrize("policy", ["pytorch-cuda", "memtune", "cupy"])
@pytest.mark.parametrize("timeline", [False, True])
def test_a_checkpoint_holds_the_counts_of_the_stream_replayed_up_to_it(policy, timeline):
    """One replay read at event indices gives what replaying each prefix would."""
    events = random_events(11, n=700)
    trace = make_trace(events)
    at = [700, 0, 350, 123, 350]
    r = replay_device(trace, trace.devices[0], policy, checkpoints=at, timeline=timeline, timeline_points=40)
    assert [c.event_index for c in r.checkpoints] == [0, 123, 350, 700]
    for c in r.checkpoints:
        (prefix,) = replay(make_trace(events[:c.event_index]), policy)
        assert (c.device_allocs, c.device_frees, c.peak_reserved_bytes, c.reserved_bytes) == (
            prefix.device_allocs, prefix.device_frees, prefix.peak_reserved_bytes, prefix.final_reserved_bytes)
        assert c.device_calls == c.device_allocs + c.device_frees
    (whole,) = replay(trace, policy)
    assert r.checkpoints[-1].peak_reserved_bytes == whole.peak_reserved_bytes == r.peak_reserved_bytes
    back = ReplayResult.from_json(json.loads(json.dumps(r.to_json())))
    assert back.checkpoints == r.checkpoints and all(isinstance(c, Checkpoint) for c in back.checkpoints)
    assert "checkpoints" not in replay(trace, policy)[0].to_json()


@pytest.mark.parametrize("bad", [[-1], [701], [1.5], [True], "12"])
def test_a_checkpoint_outside_the_stream_is_a_clear_error(bad):
    trace = make_trace(random_events(12, n=700))
    err = TypeError if isinstance(bad, str) else ValueError
    with pytest.raises(err, match="checkpoints must be") as info:
        replay_device(trace, trace.devices[0], "pytorch-cuda", checkpoints=bad)
    if err is ValueError:
        assert "from 0 to 700" in str(info.value) and repr(bad[0]) in str(info.value)


def test_result_json_round_trip():
    (r,) = replay(make_trace(random_events(7, n=100)), "pytorch-cuda", timeline=True)
    back = ReplayResult.from_json(json.loads(json.dumps(r.to_json(timeline=True))))
    assert back.to_json(timeline=True) == r.to_json(timeline=True)


def test_lazy_export():
    assert memtune.replay is replay


def test_recorded_oom_is_attempted():
    events = [Event(Action.ALLOC, 1, 30 * MiB, 0, 1.0), Event(Action.OOM, 0, 90 * MiB, 0, 2.0),
              Event(Action.FREE, 1, 0, 0, 3.0)]
    (r,) = replay(make_trace(events), "pytorch-cuda", capacity=64 * MiB)
    assert r.ooms == [{"event_index": 1, "size": 90 * MiB, "time_us": 2.0, "stream": 0,
                       "time_s": pytest.approx(1e-6), "recorded": True}]
    assert r.recorded_ooms_survived == 0
    (r,) = replay(make_trace(events), "pytorch-cuda", capacity=1 << 30)
    assert r.ooms == [] and r.recorded_ooms_survived == 1
    assert r.peak_requested_bytes == 30 * MiB  # the failed request never became live


def test_guided_device_uses_the_recorded_addresses():
    from memtune.trace.replay import guided_device

    a, b = 0x7F00_0000_0000, 0x7E00_0000_0000
    dev = guided_device(1 << 40, [(a, 20 * MiB), (b, 2 * MiB), (a, 20 * MiB)])
    assert dev.malloc(20 * MiB) == a
    assert dev.malloc(2 * MiB) == b
    other = dev.malloc(20 * MiB)  # its recorded address is taken: an ordinary one
    assert other not in (a, b)
    assert dev.malloc(4 * MiB) not in (a, b)
    assert dev.guided == 2


def test_recording_allocator_follows_the_real_segment_addresses():
    base = 0x7F00_0000_0000
    events = [Event(Action.SEGMENT_ALLOC, base, 20 * MiB), Event(Action.ALLOC, base, 3 * MiB),
              Event(Action.SEGMENT_ALLOC, base - 0x1000_0000, 18 * MiB), Event(Action.ALLOC, 2, 18 * MiB),
              Event(Action.FREE, base), Event(Action.FREE, 2)]
    dt = DeviceTrace(0, events, framework="pytorch-cuda")
    (plain,) = replay(Trace("memory://g", "pytorch-snapshot", [dt]), "pytorch-cuda")
    assert plain.guided_device_allocs == 0  # guidance is opt-in: a replay is a pure simulation
    (r,) = replay(Trace("memory://g", "pytorch-snapshot", [dt]), "pytorch-cuda", guide_addresses=True)
    assert r.guided_device_allocs == 2 and r.device_allocs == 2
    (m,) = replay(Trace("memory://g", "pytorch-snapshot", [dt]), "cupy", guide_addresses=True)
    assert m.guided_device_allocs == 0  # only the allocator that recorded the trace is guided
