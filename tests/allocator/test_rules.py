"""The PyTorch CUDA rules, one by one (c10/cuda/CUDACachingAllocator.cpp)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memtune
from memtune.allocator.pools import PyTorchSegments
from memtune.allocator.rounding import MXNetNaive, MXNetRound, PyTorchRounding, normalize_divisions
from memtune.devices.simulated import SimulatedDevice

MiB = 1 << 20


def alloc(preset="pytorch-cuda", capacity=8 << 30, **kw):
    return memtune.allocator(preset, device=SimulatedDevice(capacity), **kw)


def device_allocs(a):
    return a.memory_stats()["num_device_alloc"]


# ---------------------------------------------------------------- rounding
def test_round_512():
    r = PyTorchRounding()
    assert [r.round(s) for s in (1, 511, 512, 513, 1024, 1025)] == [512, 512, 512, 1024, 1024, 1536]


def test_roundup_power2_divisions_documented_example():
    # PyTorch docs: 1200 with 4 divisions lies between 1024 and 2048 -> steps 1024, 1280, ... -> 1280
    r = PyTorchRounding(normalize_divisions(4))
    assert r.round(1200) == 512 * 3  # below 512 * divisions: plain 512 rounding
    big = 1200 * MiB
    assert r.round(big) == 1280 * MiB
    assert r.round(1024 * MiB) == 1024 * MiB  # powers of two stay


def test_roundup_per_interval_list():
    divs = normalize_divisions("[256:1,512:2,>:8]")
    # intervals below the first named one take its value; ">" fills the rest
    assert divs[:9] == (1,) * 9 and divs[9] == 2 and divs[10:] == (8,) * 6
    r = PyTorchRounding(divs)
    assert r.round(600 * MiB) == 768 * MiB  # [512, 1024) MiB in 2 steps
    assert r.round(1100 * MiB) == 1152 * MiB  # [1024, 2048) MiB in 8 steps of 128 MiB
    assert r.round(300 * MiB + 1) == 300 * MiB + 512  # 1 division: plain rounding


@given(st.integers(1, 1 << 40), st.sampled_from([0, 1, 2, 4, 8, 16]))
@settings(max_examples=200)
def test_rounding_never_shrinks_and_is_idempotent(size, n):
    r = PyTorchRounding(normalize_divisions(n))
    out = r.round(size)
    assert out >= size and out % 512 == 0 and r.round(out) == out


def test_mxnet_rounding_rules():
    n = MXNetNaive(page_size=4096, large_alloc_round_size=2 * MiB)
    assert n.round(1) == 4096 and n.round(4097) == 8192
    assert n.round(2 * MiB) == 2 * MiB and n.round(2 * MiB + 1) == 4 * MiB
    r = MXNetRound(cutoff=24, page_size=4096)
    assert r.round(1) == 4096 and r.round(5000) == 8192 and r.round(3 * MiB) == 4 * MiB
    assert r.round((16 * MiB) + 1) == 32 * MiB  # above 2^24: multiples of 2^24
    assert r.round(40 * MiB) == 48 * MiB


# ------------------------------------------------------- pools and segments
def test_segment_sizes():
    s = PyTorchSegments()
    assert s.segment_size(512, True) == 2 * MiB
    assert s.segment_size(MiB + 512, False) == 20 * MiB
    assert s.segment_size(10 * MiB - 512, False) == 20 * MiB
    assert s.segment_size(10 * MiB, False) == 10 * MiB
    assert s.segment_size(11 * MiB + 512, False) == 12 * MiB


def test_small_requests_share_a_2mib_segment_and_pools_are_separate():
    a = alloc()
    xs = [a.malloc(100 * 1024) for _ in range(20)]  # 20 * 100 KiB = 2000 KiB < 2 MiB
    assert device_allocs(a) == 1
    s = a.memory_stats()
    assert s["segment.small_pool.current"] == 1 and s["segment.large_pool.current"] == 0
    a.malloc(MiB + 1)  # large pool: a new 20 MiB segment even though small space is free
    s = a.memory_stats()
    assert s["segment.large_pool.current"] == 1 and s["reserved_bytes.large_pool.current"] == 20 * MiB
    assert len(set(xs)) == 20


def test_requests_between_1_and_10_mib_pack_into_20_mib():
    a = alloc()
    for _ in range(4):
        a.malloc(5 * MiB)
    assert device_allocs(a) == 1  # 4 * 5 MiB fill one 20 MiB segment
    a.malloc(5 * MiB)
    assert device_allocs(a) == 2


def test_blocks_are_reused_only_by_their_stream():
    a = alloc()
    x = a.malloc(4 * MiB, stream=1)
    a.free(x)
    a.malloc(4 * MiB, stream=2)
    assert device_allocs(a) == 2
    y = a.malloc(4 * MiB, stream=1)
    assert device_allocs(a) == 2 and y == x  # best fit on its own stream, lowest address


# ------------------------------------------------------------ split / merge
def test_large_split_needs_more_than_1mib_remainder():
    a = alloc()
    x = a.malloc(19 * MiB)  # rounds to 20 MiB segment? no: 19 MiB >= 10 MiB -> own 20 MiB segment (round 2 MiB)
    segs = a.segments()
    assert [s.total_size for s in segs] == [20 * MiB]
    assert len(segs[0].blocks) == 1  # remainder 1 MiB is not > 1 MiB: not split
    a.free(x)
    y = a.malloc(18 * MiB)  # takes the 20 MiB block; remainder 2 MiB > 1 MiB: split
    assert len(a.segments()[0].blocks) == 2
    assert device_allocs(a) == 1
    assert a.memory_stats()["inactive_split_bytes.all.current"] == 2 * MiB
    a.free(y)
    assert len(a.segments()[0].blocks) == 1  # merged back
    assert a.memory_stats()["inactive_split.all.current"] == 0


def test_free_merges_both_neighbours():
    a = alloc()
    xs = [a.malloc(4 * MiB) for _ in range(5)]
    a.free(xs[1])
    a.free(xs[3])
    assert len(a.segments()[0].blocks) == 5
    a.free(xs[2])  # joins 1..3
    assert [b.size for b in a.segments()[0].blocks] == [4 * MiB, 12 * MiB, 4 * MiB]


def test_best_fit_takes_the_smallest_block_that_fits():
    a = alloc()
    big = a.malloc(30 * MiB)
    small = a.malloc(12 * MiB)
    a.free(big)
    a.free(small)
    x = a.malloc(11 * MiB)
    assert x == small


# ------------------------------------------------------------- max_split_size
def test_max_split_size_rules():
    a = alloc(max_split_size_mb=40)
    big = a.malloc(60 * MiB)
    a.free(big)
    a.malloc(30 * MiB)  # below max_split_size: may not take the 60 MiB oversize block
    assert device_allocs(a) == 2
    b = a.malloc(50 * MiB)  # oversize request: 60 MiB block is within 20 MiB -> reused, not split
    assert b == big and device_allocs(a) == 2
    assert any(blk.size == 60 * MiB and blk.allocated for s in a.segments() for blk in s.blocks)
    a.free(b)
    a.malloc(40 * MiB)  # 60 >= 40 + 20: too much rounding -> new segment
    assert device_allocs(a) == 3


def test_max_non_split_rounding():
    a = alloc(max_split_size_mb=40, max_non_split_rounding_mb=30)
    big = a.malloc(60 * MiB)
    a.free(big)
    assert a.malloc(40 * MiB) == big  # 60 < 40 + 30


def test_release_available_cached_blocks_frees_oversize_before_retry():
    a = alloc(capacity=80 * MiB, max_split_size_mb=20)
    x = a.malloc(60 * MiB)
    a.free(x)
    y = a.malloc(30 * MiB)  # may not reuse (60 >= 30 + 20); 20 MiB free on the device -> release the 60 MiB block
    s = a.memory_stats()
    assert s["num_device_free"] == 1 and s["reserved_bytes.all.current"] == 30 * MiB
    assert s["num_alloc_retries"] == 0  # freed by release_available_cached_blocks, not a full retry
    a.free(y)


# ----------------------------------------------------------------- expandable
def test_expandable_segments_map_pages():
    a = alloc(expandable_segments=True)
    x = a.malloc(30 * MiB)
    s = a.memory_stats()
    assert s["reserved_bytes.all.current"] == 40 * MiB  # two 20 MiB pages
    assert s["segment.all.current"] == 0 and s["num_device_alloc"] == 1
    y = a.malloc(5 * MiB)  # fits in the mapped tail: no new map
    assert a.memory_stats()["num_device_alloc"] == 1
    z = a.malloc(10 * MiB)  # grows the same segment at its end
    assert a.memory_stats()["reserved_bytes.all.current"] == 60 * MiB
    assert len(a.segments()) == 1 and a.segments()[0].is_expandable
    a.free(y)
    a.empty_cache()  # y's range lies inside pages shared with x and z: nothing to unmap
    assert a.memory_stats()["reserved_bytes.all.current"] == 60 * MiB
    a.free(x)
    a.free(z)
    a.empty_cache()
    assert a.memory_stats()["reserved_bytes.all.current"] == 0
    assert a.device.counters.bytes_in_use == 0


def test_expandable_small_pool_uses_2mib_pages():
    a = alloc(expandable_segments=True)
    a.malloc(1000)
    assert a.memory_stats()["reserved_bytes.small_pool.current"] == 2 * MiB


# -------------------------------------------------------------- GC / fraction
def test_per_process_memory_fraction_caps_reserved():
    a = alloc(capacity=1000 * MiB, per_process_memory_fraction=0.5)
    a.malloc(400 * MiB)
    with pytest.raises(memtune.OutOfMemoryError) as e:
        a.malloc(200 * MiB)
    assert e.value.limit == 500 * MiB
    assert "per_process_memory_fraction" in str(e.value)


def test_garbage_collection_threshold_frees_old_blocks():
    a = alloc(capacity=1000 * MiB, per_process_memory_fraction=1.0, garbage_collection_threshold=0.5)
    old = [a.malloc(100 * MiB) for _ in range(6)]
    for x in old:
        a.free(x)
    a.malloc(150 * MiB)  # no cached block fits: GC runs first (reserved 600 MiB > 0.5 * 1000 MiB)
    s = a.memory_stats()
    assert s["num_device_free"] >= 1  # blocks of at least average age were released
    assert s["reserved_bytes.all.current"] < 600 * MiB + 150 * MiB


def test_garbage_collection_needs_a_fraction_as_in_pytorch():
    a = alloc(capacity=1000 * MiB, garbage_collection_threshold=0.5)
    xs = [a.malloc(100 * MiB) for _ in range(6)]
    for x in xs:
        a.free(x)
    a.malloc(150 * MiB)
    assert a.memory_stats()["num_device_free"] == 0
