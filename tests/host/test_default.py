"""The default host allocator: MEMTUNE_HOST_* configuration, limits, empty_cache and RSS."""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

import memtune
from memtune import config
from memtune.allocator.events import EventKind
from memtune.devices.host import HostMemory, physical_memory
from memtune.interop.numpy import BlockOwner, default_allocator, host_arrays, reset_default_allocator

MiB = 1 << 20


@pytest.fixture
def host_env(monkeypatch):
    """Set MEMTUNE_HOST_* variables for a fresh default allocator; restore afterwards."""
    for name in ("MEMTUNE_HOST_ALLOCATOR", "MEMTUNE_HOST_HIGH_WATERMARK", "MEMTUNE_HOST_LOW_WATERMARK"):
        monkeypatch.delenv(name, raising=False)

    def apply(**env: str) -> None:
        for name in ("MEMTUNE_HOST_ALLOCATOR", "MEMTUNE_HOST_HIGH_WATERMARK", "MEMTUNE_HOST_LOW_WATERMARK"):
            monkeypatch.delenv(name, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        config.reset_for_tests()
        reset_default_allocator()

    apply()
    yield apply
    gc.collect()
    old = host_arrays()._default
    reset_default_allocator()
    monkeypatch.undo()
    config.reset_for_tests()
    if old is not None:
        old.empty_cache()


def test_default_is_created_lazily_once():
    code = (
        "import memtune\n"
        "from memtune.interop.numpy import host_arrays\n"
        "assert host_arrays()._default is None\n"
        "a = memtune.empty(10)\n"
        "alloc = host_arrays()._default\n"
        "assert alloc is not None and memtune.empty(5).base.base.allocator is alloc\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_default_allocator_follows_configuration(host_env):
    host_env(MEMTUNE_HOST_ALLOCATOR="cupy")
    alloc = default_allocator()
    assert alloc.name == "cupy"
    assert isinstance(alloc.device, HostMemory)
    assert default_allocator() is alloc  # one default, created once
    a = memtune.empty((10, 10))
    owner = a.base.base
    assert isinstance(owner, BlockOwner) and owner.allocator is alloc
    # defaults: 90% of RAM hard, 60% soft
    host_env()
    alloc = default_allocator()
    assert alloc.name == "memtune"
    assert alloc.spec.limits.hard_limit == int(0.9 * physical_memory())
    assert alloc.spec.limits.soft_limit == int(0.6 * physical_memory())


def test_high_watermark_raises_clear_oom_and_stays_usable(host_env):
    host_env(MEMTUNE_HOST_HIGH_WATERMARK="96MiB", MEMTUNE_HOST_ALLOCATOR="pytorch-cuda")
    keep = memtune.empty(60 * MiB, np.uint8)
    keep[:] = 1
    with pytest.raises(memtune.OutOfMemoryError) as info:
        memtune.empty(60 * MiB, np.uint8)
    err = info.value
    assert "MEMTUNE_HOST_HIGH_WATERMARK" in str(err)
    assert err.limit == 96 * MiB and err.requested == 60 * MiB
    assert memtune.memory_stats()["num_ooms"] == 1
    small = memtune.zeros(10 * MiB, np.uint8)  # still usable below the limit
    assert not small.any() and (keep == 1).all()
    del keep
    again = memtune.empty(60 * MiB, np.uint8)  # and the big request fits once memory is back
    again[:] = 2


def test_high_watermark_as_fraction_of_ram(host_env):
    host_env(MEMTUNE_HOST_HIGH_WATERMARK="0.25")
    limit = int(0.25 * physical_memory())
    assert default_allocator().spec.limits.hard_limit == limit
    with pytest.raises(memtune.OutOfMemoryError) as info:
        memtune.empty(limit + MiB, np.uint8)  # refused before anything is mapped
    assert info.value.limit == limit
    assert default_allocator().device.counters.bytes_in_use < 64 * MiB


def test_bad_watermark_is_a_config_error_naming_the_variable(host_env):
    host_env(MEMTUNE_HOST_HIGH_WATERMARK="lots")
    with pytest.raises(memtune.ConfigError, match="MEMTUNE_HOST_HIGH_WATERMARK"):
        memtune.empty(3)
    host_env(MEMTUNE_HOST_HIGH_WATERMARK="1GiB", MEMTUNE_HOST_LOW_WATERMARK="2GiB")
    with pytest.raises(memtune.ConfigError, match="MEMTUNE_HOST_LOW_WATERMARK.*MEMTUNE_HOST_HIGH_WATERMARK"):
        memtune.empty(3)


def test_default_low_watermark_follows_a_small_high_watermark(host_env):
    host_env(MEMTUNE_HOST_HIGH_WATERMARK="3GiB")  # below the default low watermark (60% of RAM)
    limits = default_allocator().spec.limits
    assert limits.hard_limit == 3 << 30
    assert limits.soft_limit == 2 << 30


def test_low_watermark_releases_idle_cached_segments(host_env):
    host_env(MEMTUNE_HOST_ALLOCATOR="pytorch-cuda", MEMTUNE_HOST_LOW_WATERMARK="64MiB")
    alloc = default_allocator()
    released = []
    alloc.add_listener(lambda ev: released.append(ev.info.get("reason")), events=[EventKind.RELEASED])
    a = memtune.empty(40 * MiB, np.uint8)
    del a  # cached: 40 MiB reserved, nothing allocated
    assert memtune.memory_stats()["reserved_bytes.all.current"] >= 40 * MiB
    b = memtune.empty(50 * MiB, np.uint8)  # 40 + 50 > 64: the idle segment goes first
    assert "low_watermark" in released
    stats = memtune.memory_stats()
    assert stats["reserved_bytes.all.current"] <= 64 * MiB
    assert stats["allocated_bytes.all.current"] >= 50 * MiB
    del b


def test_rss_drops_after_empty_cache_once_arrays_are_gone(host_env, rss):
    host_env()
    gc.collect()
    memtune.empty_cache()
    base = rss()
    arrays = [memtune.empty(64 * MiB, np.uint8) for _ in range(3)]
    for a in arrays:
        a[:] = 5
    del a
    grown = rss()
    assert grown - base >= 0.9 * 192 * MiB
    arrays.pop()
    memtune.empty_cache()  # two arrays still alive: their memory stays, and stays correct
    assert all((a == 5).all() for a in arrays)
    arrays.clear()
    gc.collect()
    assert memtune.memory_stats()["reserved_bytes.all.current"] > 0  # cached, not yet released
    memtune.empty_cache()
    assert memtune.memory_stats()["reserved_bytes.all.current"] == 0
    assert grown - rss() >= 0.9 * 192 * MiB
    assert rss() - base < 16 * MiB


def test_memory_stats_of_the_default_allocator(host_env):
    host_env()
    before = memtune.memory_stats()["allocation.all.allocated"]
    a = memtune.zeros((256, 256))
    stats = memtune.memory_stats()
    assert stats["allocation.all.allocated"] == before + 1
    assert stats["allocated_bytes.all.current"] >= a.nbytes
    assert stats["requested_bytes.all.current"] >= a.nbytes
