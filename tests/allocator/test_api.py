"""The public allocator API: errors, events, OOM path, statistics, verbose logging, restore."""

from __future__ import annotations

import logging
import threading

import pytest

import memtune
from memtune.allocator.events import EventKind
from memtune.allocator.stats import COUNTERS, FIELDS, POOL_NAMES, STAT_NAMES
from memtune.allocator.verbose import ALLOCATIONS, LARGE_ONLY, PROFILING, RECYCLES, RELEASES, scoped_mask
from memtune.devices.simulated import SimulatedDevice
from memtune.errors import AllocatorUsageError, ConfigError, OutOfMemoryError, UnknownNameError
from memtune.trace.model import BlockState, SegmentState

MiB = 1 << 20


def make(preset="pytorch-cuda", capacity=1 << 30, **kw):
    return memtune.allocator(preset, device=SimulatedDevice(capacity), **kw)


def snapshot(a):
    return a.memory_stats(), a.segments(), sorted(a.live_blocks())


# ----------------------------------------------------------------- building
def test_presets_listed_and_callable_forms():
    names = memtune.allocator.presets()
    assert names == memtune.presets()
    for expected in ("pytorch-cuda", "pytorch-mps", "mxnet-naive", "mxnet-round", "mxnet-unpooled", "cupy",
                     "megengine", "memtune"):
        assert expected in names
    import memtune.allocator as module

    assert callable(module) and module.presets() == names
    a = memtune.allocator("cupy", capacity="64MiB")
    assert a.device.capacity == 64 * MiB


def test_unknown_preset_suggests():
    with pytest.raises(UnknownNameError, match="pytorch-cuda"):
        memtune.allocator("pytorch-cdua")


def test_unknown_setting_suggests():
    with pytest.raises(UnknownNameError) as e:
        memtune.allocator("pytorch-cuda", max_split_size=128)
    assert "max_split_size_mb" in str(e.value) and "pytorch-cuda" in str(e.value)


def test_bad_setting_value_errors_like_the_environment(monkeypatch):
    with pytest.raises(ConfigError) as explicit:
        memtune.allocator("pytorch-cuda", max_split_size_mb=10)
    msg = str(explicit.value)
    assert "max_split_size_mb" in msg and "10" in msg and "20" in msg
    with pytest.raises(ConfigError):
        memtune.allocator("pytorch-cuda", expandable_segments="maybe")
    with pytest.raises(ConfigError):
        memtune.allocator("mxnet-round", round_linear_cutoff=40)


def test_settings_from_environment_are_read_at_construction(monkeypatch):
    from memtune import config

    with config.override(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"):
        a = make()
    assert a.spec.expandable
    b = make()
    assert not b.spec.expandable
    assert make(expandable_segments=True).spec.expandable


def test_bad_capacity():
    with pytest.raises(AllocatorUsageError, match="capacity"):
        memtune.allocator("cupy", capacity="lots")


# ------------------------------------------------------------ usage errors
@pytest.mark.parametrize("size", [0, -5, 1.5, "10", None, True])
def test_bad_sizes_leave_state_unchanged(size):
    a = make()
    a.malloc(1000)
    before = snapshot(a)
    with pytest.raises(AllocatorUsageError):
        a.malloc(size)
    assert snapshot(a) == before


def test_bad_frees_leave_state_unchanged():
    a = make()
    x = a.malloc(3 * MiB)
    y = a.malloc(1000)
    a.free(y)
    before = snapshot(a)
    for bad in (y, x + 512, 12345, "x", None):
        with pytest.raises(AllocatorUsageError):
            a.free(bad)
        assert snapshot(a) == before
    with pytest.raises(AllocatorUsageError, match="double free"):
        a.free(y)
    with pytest.raises(AllocatorUsageError, match="inside the live block"):
        a.free(x + 512)
    a.free(x)


def test_bad_stream():
    with pytest.raises(AllocatorUsageError, match="stream"):
        make().malloc(10, stream=-1)


# --------------------------------------------------------------- OOM path
def test_oom_message_attributes_and_usable_afterwards():
    a = make(capacity=64 * MiB)
    x = a.malloc(40 * MiB)
    small = a.malloc(1000)
    before = snapshot(a)
    with pytest.raises(OutOfMemoryError) as e:
        a.malloc(30 * MiB)
    err = e.value
    assert isinstance(err, MemoryError)
    assert err.requested == 30 * MiB and err.capacity == 64 * MiB
    assert err.allocated == a.memory_stats()["allocated_bytes.all.current"]
    assert err.reserved == a.memory_stats()["reserved_bytes.all.current"]
    text = str(err)
    for part in ("30.00 MiB", "64.00 MiB", "allocated", "reserved but unallocated", "expandable_segments:True"):
        assert part in text
    stats, segs, live = snapshot(a)
    assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 1
    assert live == before[2]
    a.free(x)
    y = a.malloc(30 * MiB)  # usable afterwards
    a.free(y)
    a.free(small)


def test_failure_path_releases_cache_then_retries():
    a = make(capacity=64 * MiB)
    xs = [a.malloc(20 * MiB) for _ in range(3)]  # 3 segments of 20 MiB
    for x in xs:
        a.free(x)
    y = a.malloc(50 * MiB)  # no fit; device has 4 MiB: release all cached, retry
    s = a.memory_stats()
    assert s["num_device_free"] == 3 and s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    a.free(y)


def test_allocation_failed_listener_that_frees_causes_retry():
    a = make(capacity=64 * MiB)
    hog = [a.malloc(30 * MiB)]
    events = []

    def on_fail(ev):
        events.append(ev)
        if hog:
            a.free(hog.pop())  # re-enters the allocator from inside malloc

    a.add_listener(on_fail, events=[EventKind.ALLOCATION_FAILED])
    x = a.malloc(40 * MiB)
    assert events and events[0].kind is EventKind.ALLOCATION_FAILED and events[0].info["stage"] == "device"
    assert a.memory_stats()["num_ooms"] == 0
    a.free(x)


def test_events_for_every_step():
    a = make()
    seen = []
    a.add_listener(seen.append)
    x = a.malloc(3 * MiB)
    a.free(x)
    y = a.malloc(3 * MiB)
    a.free(y)
    a.empty_cache()
    kinds = [e.kind for e in seen]
    assert kinds == [EventKind.SEGMENT_ALLOC, EventKind.ALLOCATED, EventKind.FREED, EventKind.RECYCLED,
                     EventKind.FREED, EventKind.SEGMENT_FREE, EventKind.RELEASED]
    assert seen[1].requested == 3 * MiB and seen[1].address == x and seen[1].pool == "large"
    assert seen[-1].info == {"reason": "empty_cache"}
    a.remove_listener(seen.append)
    a.malloc(10)
    assert len(seen) == len(kinds)  # no more events after removal
    with pytest.raises(AllocatorUsageError):
        a.add_listener(print, events=["not-a-kind"])
    with pytest.raises(AllocatorUsageError):
        a.remove_listener(print)


def test_a_failing_listener_is_logged_and_does_not_break_malloc(caplog, invariants):
    a = make()

    def broken(ev):
        raise RuntimeError("boom")

    a.add_listener(broken)
    with caplog.at_level(logging.ERROR, logger="memtune.allocator"):
        x = a.malloc(3 * MiB)
        a.free(x)
    assert "boom" in caplog.text and "listener" in caplog.text
    assert a.memory_stats()["allocation.all.current"] == 0
    invariants(a)


# ------------------------------------------------------------- statistics
def test_memory_stats_keys_are_torchs():
    s = make().memory_stats()
    expected = {f"{n}.{p}.{f}" for n in STAT_NAMES for p in POOL_NAMES for f in FIELDS} | set(COUNTERS)
    assert set(s) == expected
    assert "allocated_bytes.all.current" in s and "reserved_bytes.large_pool.peak" in s


def test_peaks_and_reset():
    a = make()
    x = a.malloc(30 * MiB)
    a.free(x)
    s = a.memory_stats()
    assert s["allocated_bytes.all.peak"] == 30 * MiB and s["allocated_bytes.all.current"] == 0
    assert s["requested_bytes.all.peak"] == 30 * MiB
    a.reset_peak_stats()
    assert a.memory_stats()["allocated_bytes.all.peak"] == 0
    assert a.memory_stats()["reserved_bytes.all.peak"] == 30 * MiB  # still reserved


def test_fragmentation_splits_internal_and_external():
    a = make()
    x = a.malloc(1000)  # rounds to 1024: 24 B internal
    y = a.malloc(5 * MiB)  # 20 MiB segment: 15 MiB external
    f = a.fragmentation()
    assert f.internal_bytes == 24
    assert f.external_bytes == f.reserved - f.allocated == (2 * MiB - 1024) + 15 * MiB
    assert f.largest_free_block == 15 * MiB and f.total_free == f.external_bytes
    assert f.peak_requested == 1000 + 5 * MiB and f.peak_reserved == 22 * MiB
    assert f.peak_ratio == pytest.approx(22 * MiB / (1000 + 5 * MiB))
    a.free(x)
    a.free(y)


# ---------------------------------------------------------------- verbose
def test_verbose_scopes_nest_and_restore(caplog):
    a = make()
    assert scoped_mask() is None
    with caplog.at_level(logging.INFO, logger="memtune.allocator"):
        with memtune.verbose(ALLOCATIONS):
            assert scoped_mask() == ALLOCATIONS
            x = a.malloc(3 * MiB)
            with memtune.verbose(RELEASES):
                assert scoped_mask() == RELEASES
                a.free(x)  # FREED is an ALLOCATIONS message: not logged here
            assert scoped_mask() == ALLOCATIONS
            y = a.malloc(1000)
        assert scoped_mask() is None
        a.free(y)
    text = caplog.text
    assert "allocated" in text and "freed" not in text
    assert text.count("pytorch-cuda") >= 2


def test_verbose_large_only_and_env(caplog):
    from memtune import config

    with config.override(MEMTUNE_DEBUG_ALLOCATOR=ALLOCATIONS | RECYCLES | LARGE_ONLY):
        a = make()
    with caplog.at_level(logging.INFO, logger="memtune.allocator"):
        a.malloc(1000)  # small pool: dropped by LARGE_ONLY
        a.malloc(3 * MiB)
    assert "small pool" not in caplog.text and "large pool" in caplog.text


def test_verbose_profiling_summaries(caplog):
    a = make()
    with caplog.at_level(logging.INFO, logger="memtune.allocator"), memtune.verbose(PROFILING):
        a.free(a.malloc(3 * MiB))
        a.empty_cache()
        a.close()
    assert "empty_cache: allocated 0 B (peak 3145728)" in caplog.text
    assert "close:" in caplog.text and "allocated 3145728" not in caplog.text


def test_verbose_is_per_thread():
    seen = {}

    def other():
        seen["mask"] = scoped_mask()

    with memtune.verbose(ALLOCATIONS):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["mask"] is None


def test_verbose_rejects_bad_masks():
    with pytest.raises(AllocatorUsageError):
        with memtune.verbose(64):
            pass


# ---------------------------------------------------------------- restore
def _warm_state(base=0x7F0000000000):
    return [
        SegmentState(base, 20 * MiB, 0, "large", (
            BlockState(base, 4 * MiB, 4 * MiB - 100, True),
            BlockState(base + 4 * MiB, 6 * MiB, 0, False),
            BlockState(base + 10 * MiB, 10 * MiB, 10 * MiB, True),
        )),
        SegmentState(base + 64 * MiB, 2 * MiB, 1, "small", (
            BlockState(base + 64 * MiB, 2 * MiB, 0, False),
        )),
    ]


def test_restore_uses_the_trace_addresses_and_layout(invariants):
    a = make(capacity=1 << 40)
    state = _warm_state()
    mapping = a.restore(state)
    assert all(mapping[t] == t for t in mapping)  # same addresses on a simulated device
    assert a.segments() == state
    s = a.memory_stats()
    assert s["reserved_bytes.all.current"] == 22 * MiB and s["allocated_bytes.all.current"] == 14 * MiB
    assert s["requested_bytes.all.current"] == 14 * MiB - 100
    assert s["num_device_alloc"] == 0 and s["inactive_split.all.current"] == 1
    invariants(a)
    base = state[0].address
    assert a.malloc(5 * MiB) == base + 4 * MiB  # the cached 6 MiB gap is reused
    a.free(base)  # a block live at the start can be freed
    invariants(a)


def test_restore_rejects_bad_layouts():
    a = make()
    bad = SegmentState(0x7F0000000000, 4 * MiB, 0, "large", (BlockState(0x7F0000000000, 1 * MiB, 0, False),))
    with pytest.raises(AllocatorUsageError, match="cover"):
        a.restore([bad])
    with pytest.raises(AllocatorUsageError, match="pool"):
        a.restore([SegmentState(0x7F0000000000, 2 * MiB, 0, "medium", (BlockState(0x7F0000000000, 2 * MiB, 0, False),))])


def test_restore_falls_back_to_other_addresses_when_taken(invariants):
    a = make(capacity=1 << 40)
    state = _warm_state()
    a.restore(state[:1])
    mapping = a.restore(state[:1])  # the same addresses again: placed elsewhere, mapping says where
    assert mapping[state[0].address] != state[0].address
    invariants(a)


def test_restore_expandable(invariants):
    base = 0x7F0000000000
    state = [SegmentState(base, 40 * MiB, 0, "large", (
        BlockState(base, 25 * MiB, 25 * MiB, True), BlockState(base + 25 * MiB, 15 * MiB, 0, False)),
        is_expandable=True)]
    a = make(capacity=1 << 36, expandable_segments=True)
    a.restore(state)
    assert a.segments() == state
    invariants(a)
    a.malloc(20 * MiB)  # grows the same virtual range
    assert a.memory_stats()["reserved_bytes.all.current"] == 60 * MiB
    assert len(a.segments()) == 1
    invariants(a)
    with pytest.raises(AllocatorUsageError, match="expandable"):
        make().restore(state)


def test_restore_into_a_reserve_all_allocator(invariants):
    a = make("megengine", capacity=1 << 30, reserve_memory=True)
    state = _warm_state()
    mapping = a.restore(state)
    live = [b for s in state for b in s.blocks if b.allocated]
    assert sorted(mapping) == sorted(b.address for b in live)
    assert a.memory_stats()["requested_bytes.all.current"] == sum(b.requested_size for b in live)
    assert a.memory_stats()["reserved_bytes.all.current"] == 1 << 30
    for b in live:
        a.free(mapping[b.address])
    invariants(a)


def test_close_gives_everything_back():
    for preset in ("pytorch-cuda", "memtune"):
        a = make(preset)
        a.malloc(3 * MiB)
        a.malloc(100)
        a.close()
        assert a.device.counters.bytes_in_use == 0
        with pytest.raises(AllocatorUsageError, match="closed"):
            a.malloc(1)


def test_verbose_accepts_the_names_of_the_environment_variable(caplog):
    import logging

    alloc = memtune.allocator("pytorch-cuda", capacity="1GiB")
    with caplog.at_level(logging.DEBUG, logger="memtune.allocator"):
        with memtune.verbose("ALLOCATIONS|RELEASES") as level:
            assert level == 2 | 8
            alloc.malloc(1 << 20)
    assert caplog.records, "an allocation under ALLOCATIONS must be logged"
    with pytest.raises(memtune.AllocatorUsageError, match="MEMTUNE_DEBUG_ALLOCATOR"):
        with memtune.verbose("ALLOCATIONZ"):
            pass
