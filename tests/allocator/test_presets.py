"""Each preset's own rules (MXNet, CuPy, MPS, MegEngine, memtune)."""

from __future__ import annotations

import pytest

import memtune
from memtune.devices.simulated import SimulatedDevice
from memtune.errors import OutOfMemoryError

MiB = 1 << 20
KiB = 1 << 10


def make(preset, capacity=1 << 30, **kw):
    return memtune.allocator(preset, device=SimulatedDevice(capacity), **kw)


def sizes_of_device_allocs(a):
    return sorted(size for _addr, size in a.device.allocations())


# ------------------------------------------------------------------- MXNet
def test_mxnet_naive_exact_size_free_lists():
    a = make("mxnet-naive")
    x = a.malloc(5000)  # -> 8 KiB page multiple
    assert sizes_of_device_allocs(a) == [8 * KiB]
    a.free(x)
    a.malloc(3 * MiB)  # a bigger request never takes a smaller buffer, never splits
    y = a.malloc(6000)  # same rounded size: the cached buffer
    assert y == x and a.memory_stats()["num_device_alloc"] == 2
    a.free(y)
    a.malloc(4 * KiB)  # smaller rounded size: no reuse of the 8 KiB buffer (exact fit only)
    assert a.memory_stats()["num_device_alloc"] == 3


def test_mxnet_naive_large_round_size():
    a = make("mxnet-naive", large_alloc_round_size=4 * MiB)
    a.malloc(5 * MiB)
    assert sizes_of_device_allocs(a) == [8 * MiB]


def test_mxnet_round_buckets():
    a = make("mxnet-round", round_linear_cutoff=22)  # 4 MiB
    a.malloc(3 * MiB)
    a.malloc(9 * MiB)  # above 2^22: multiples of 4 MiB
    assert sizes_of_device_allocs(a) == [4 * MiB, 12 * MiB]


def test_mxnet_reserve_releases_the_pool_before_going_below_it():
    a = make("mxnet-naive", capacity=100 * MiB, reserve=10)
    xs = [a.malloc(20 * MiB) for _ in range(4)]
    for x in xs:
        a.free(x)
    # 20 MiB free on the device; a new 12 MiB buffer would leave 8 MiB < 10 %: release the pool first
    a.malloc(12 * MiB)
    s = a.memory_stats()
    assert s["num_device_free"] == 4 and s["reserved_bytes.all.current"] == 12 * MiB
    assert s["num_ooms"] == 0


def test_mxnet_unpooled_gives_memory_back_on_free():
    a = make("mxnet-unpooled")
    x = a.malloc(1000)
    a.free(x)
    s = a.memory_stats()
    assert s["num_device_alloc"] == 1 and s["num_device_free"] == 1 and s["reserved_bytes.all.current"] == 0


def test_mxnet_ignores_streams():
    a = make("mxnet-naive")
    x = a.malloc(1 * MiB, stream=1)
    a.free(x)
    assert a.malloc(1 * MiB, stream=2) == x


def test_mxnet_type_variable_picks_the_manager():
    from memtune import config

    with config.override(MXNET_GPU_MEM_POOL_TYPE="round"):
        a = memtune.allocator("mxnet", capacity="1GiB")
    assert a.name == "mxnet-round"


# -------------------------------------------------------------------- CuPy
def test_cupy_device_allocs_exactly_the_rounded_size_and_splits():
    a = make("cupy")
    x = a.malloc(1000)
    y = a.malloc(3 * MiB + 1)
    assert sizes_of_device_allocs(a) == [1024, 3 * MiB + 512]
    a.free(y)
    z = a.malloc(1 * MiB)  # best fit from the freed chunk, split
    assert z == y and a.memory_stats()["num_device_alloc"] == 2
    assert len(next(s for s in a.segments() if s.address == y).blocks) == 2
    a.free(x)
    a.free(z)


def test_cupy_limit_as_share_of_device():
    a = make("cupy", capacity=100 * MiB, memory_limit="50%")
    a.malloc(40 * MiB)
    with pytest.raises(OutOfMemoryError) as e:
        a.malloc(20 * MiB)
    assert e.value.limit == 50 * MiB and "CUPY_GPU_MEMORY_LIMIT" in str(e.value)


def test_cupy_limit_does_not_free_the_cache():
    a = make("cupy", capacity=100 * MiB, memory_limit=50 * MiB)
    a.malloc(40 * MiB)
    a.free(a.malloc(5 * MiB))  # 5 MiB stay cached and count against the limit
    with pytest.raises(OutOfMemoryError):
        a.malloc(10 * MiB)  # 45 + 10 > 50: CuPy raises without freeing the cached 5 MiB
    assert a.memory_stats()["num_device_free"] == 0
    a.empty_cache()
    a.malloc(10 * MiB)  # after free_all_blocks it fits


def test_cupy_device_oom_frees_cache_and_retries():
    a = make("cupy", capacity=100 * MiB)
    x = a.malloc(80 * MiB)
    a.free(x)
    a.malloc(30 * MiB + 512)  # 30.5 MiB: the 80 MiB chunk? best fit takes and splits it
    assert a.memory_stats()["num_device_alloc"] == 1
    b = make("cupy", capacity=100 * MiB)
    y = b.malloc(30 * MiB)
    z = b.malloc(60 * MiB)
    b.free(y)
    b.malloc(35 * MiB)  # no chunk fits, device has 10 MiB: free unsplit cached chunks, retry
    s = b.memory_stats()
    assert s["num_device_free"] == 1 and s["num_alloc_retries"] == 1
    b.free(z)


def test_cupy_per_stream_arenas():
    a = make("cupy")
    x = a.malloc(4096, stream=0)
    a.free(x)
    a.malloc(4096, stream=1)
    assert a.memory_stats()["num_device_alloc"] == 2


# --------------------------------------------------------------------- MPS
def test_mps_heap_sizes():
    a = make("pytorch-mps", capacity=8 << 30)
    a.malloc(100 * KiB)  # small heap
    a.malloc(5 * MiB)  # large heap (32 MB)
    a.malloc(20 * MiB)  # fits in the 32 MB heap's free space
    a.malloc(30 * MiB)  # does not: a 1 GB heap
    a.malloc(1000 * MiB)  # fits no heap: its own heap, rounded to 2 MB
    assert sizes_of_device_allocs(a) == [8 * MiB, 32 * MiB, 1000 * MiB, 1 << 30]


def test_mps_small_device_falls_back_from_1gb_heaps():
    a = make("pytorch-mps", capacity=512 * MiB)
    a.malloc(30 * MiB)  # a 1 GB heap does not fit: heap of the buffer rounded to 2 MB
    assert sizes_of_device_allocs(a) == [32 * MiB]


def test_mps_high_watermark_is_a_hard_limit():
    a = make("pytorch-mps", capacity=100 * MiB, high_watermark_ratio=0.5, low_watermark_ratio=0.4)
    a.malloc(40 * MiB)
    with pytest.raises(OutOfMemoryError) as e:
        a.malloc(20 * MiB)
    assert "PYTORCH_MPS_HIGH_WATERMARK_RATIO" in str(e.value) and e.value.limit == 50 * MiB


def test_mps_cached_buffers_are_reused_whole():
    a = make("pytorch-mps", capacity=8 << 30)
    x = a.malloc(40 * MiB)
    a.free(x)
    y = a.malloc(20 * MiB)  # 40 <= 20 + 32 MiB: the cached buffer is handed out whole, not split
    assert y == x
    assert any(b.size == 40 * MiB and b.allocated for s in a.segments() for b in s.blocks)
    a.free(y)
    z = a.malloc(4 * MiB)  # 40 > 4 + 32: oversize; its heap still has room, so a new buffer comes from the heap
    assert z != x and a.memory_stats()["num_device_alloc"] == 1


def test_mps_memory_pressure_garbage_collects_cached_buffers():
    a = make("pytorch-mps", capacity=1000 * MiB, high_watermark_ratio=1.0, low_watermark_ratio=0.1)
    xs = [a.malloc(60 * MiB) for _ in range(3)]  # 1 GB heaps do not fit: 60 MiB heaps; 180 MiB > low watermark
    for x in xs:
        a.free(x)
    reasons = []
    a.add_listener(lambda ev: reasons.append(ev.info["reason"]), events=["released"])
    a.malloc(20 * MiB)
    assert "garbage_collection" in reasons
    s = a.memory_stats()
    assert s["num_device_free"] >= 1 and s["reserved_bytes.all.current"] < 180 * MiB


def test_mps_watermark_rule():
    with pytest.raises(memtune.ConfigError, match="LOW_WATERMARK"):
        make("pytorch-mps", high_watermark_ratio=1.0, low_watermark_ratio=1.5)


# --------------------------------------------------------------- MegEngine
def test_megengine_without_reserve_behaves_like_a_cache():
    a = make("megengine")
    x = a.malloc(3 * MiB)
    a.free(x)
    a.empty_cache()
    assert a.memory_stats()["reserved_bytes.all.current"] == 0


# ----------------------------------------------------------------- memtune
def test_memtune_preset_grows_one_segment():
    a = make("memtune")
    xs = [a.malloc(s) for s in (30 * MiB, 7 * MiB, 50 * MiB)]
    assert len(a.segments()) == 1 and a.segments()[0].is_expandable
    for x in xs:
        a.free(x)
    a.empty_cache()
    assert a.memory_stats()["reserved_bytes.all.current"] == 0
