"""HostMemory: real anonymous memory, one mmap per segment, pages back to the OS on free."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from memtune.devices.base import DeviceOutOfMemory
from memtune.devices.host import HUGE_PAGE, HostMemory, huge_pages_offered, page_size, physical_memory
from memtune.errors import AllocatorUsageError

MiB = 1 << 20


def test_capacity_defaults_to_physical_ram():
    dev = HostMemory()
    assert dev.capacity == physical_memory() > 0
    assert dev.alignment == page_size()


def test_malloc_gives_real_writable_memory_at_the_address():
    dev = HostMemory()
    addr = dev.malloc(3 * page_size() + 5)
    try:
        assert addr % dev.alignment == 0
        buf = dev.buffer(addr, 100)
        buf[:] = bytes(range(100))
        # the same bytes through the raw address: the address is the memory's real one
        assert ctypes.string_at(addr, 100) == bytes(range(100))
        assert dev.counters.mallocs == 1
        assert dev.counters.bytes_in_use == 4 * page_size()  # whole pages
    finally:
        dev.free(addr)
    assert dev.counters.frees == 1 and dev.counters.bytes_in_use == 0


def test_free_returns_pages_to_the_os(rss):
    dev = HostMemory()
    size = 256 * MiB
    before = rss()
    addr = dev.malloc(size)
    np.frombuffer(dev.buffer(addr, size), np.uint8)[:] = 1  # touch every page
    touched = rss()
    assert touched - before >= 0.9 * size
    dev.free(addr)
    assert touched - rss() >= 0.9 * size


def test_buffer_only_inside_a_live_segment():
    dev = HostMemory()
    addr = dev.malloc(page_size())
    with pytest.raises(AllocatorUsageError, match="not inside a live segment"):
        dev.buffer(addr + 1, page_size())  # runs past the end
    with pytest.raises(AllocatorUsageError, match="not inside a live segment"):
        dev.buffer(addr - page_size(), 8)
    dev.free(addr)
    with pytest.raises(AllocatorUsageError, match="not inside a live segment"):
        dev.buffer(addr, 8)


def test_bad_calls_raise_clear_errors_and_change_nothing():
    dev = HostMemory()
    for bad in (0, -1, 1.5, True, "1MB"):
        with pytest.raises(AllocatorUsageError, match="size must be a positive int"):
            dev.malloc(bad)
    with pytest.raises(AllocatorUsageError, match="not a live segment"):
        dev.free(12345)
    addr = dev.malloc(page_size())
    dev.free(addr)
    with pytest.raises(AllocatorUsageError, match="not a live segment"):
        dev.free(addr)  # double free
    assert dev.counters.bytes_in_use == 0 and dev.live_segments == 0
    with pytest.raises(AllocatorUsageError, match="capacity must be a positive"):
        HostMemory(capacity=0)
    with pytest.raises(AllocatorUsageError, match="alignment must be a power of two"):
        HostMemory(alignment=3000)


def test_capacity_is_enforced_with_device_out_of_memory():
    dev = HostMemory(capacity=4 * MiB)
    a = dev.malloc(3 * MiB)
    with pytest.raises(DeviceOutOfMemory) as info:
        dev.malloc(2 * MiB)
    assert info.value.requested == 2 * MiB and info.value.capacity == 4 * MiB
    dev.free(a)
    dev.free(dev.malloc(4 * MiB))  # usable again once memory is back


def test_expandable_reservation_map_unmap_returns_pages(rss):
    dev = HostMemory()
    r = dev.reserve_address_space(512 * MiB)
    assert dev.counters.bytes_in_use == 0  # a reservation costs no capacity
    with pytest.raises(AllocatorUsageError):
        dev.buffer(r, 8)  # nothing mapped yet
    dev.map(r, 64 * MiB)
    dev.map(r + 64 * MiB, 64 * MiB)  # adjacent: one contiguous mapped range
    before = rss()
    np.frombuffer(dev.buffer(r, 128 * MiB), np.uint8)[:] = 7
    assert rss() - before >= 0.9 * 128 * MiB
    touched = rss()
    dev.unmap(r + 32 * MiB, 64 * MiB)  # a hole in the middle goes back to the OS
    assert touched - rss() >= 0.9 * 64 * MiB
    assert dev.counters.bytes_in_use == 64 * MiB
    assert bytes(dev.buffer(r, 4)) == b"\x07" * 4 and bytes(dev.buffer(r + 96 * MiB, 4)) == b"\x07" * 4
    with pytest.raises(AllocatorUsageError):
        dev.buffer(r + 40 * MiB, 8)
    with pytest.raises(AllocatorUsageError, match="not fully mapped"):
        dev.unmap(r + 32 * MiB, 4 * MiB)
    with pytest.raises(AllocatorUsageError, match="overlaps mapped pages"):
        dev.map(r, 4 * MiB)
    dev.map(r + 32 * MiB, 64 * MiB)  # remapped pages are fresh zeros
    assert not np.frombuffer(dev.buffer(r + 32 * MiB, 64 * MiB), np.uint8).any()
    dev.unmap(r, 128 * MiB)
    dev.release_address_space(r)
    assert dev.counters.bytes_in_use == 0 and dev.live_segments == 0
    assert dev.counters.maps == 3 and dev.counters.unmaps == 2


def test_map_counts_against_capacity():
    dev = HostMemory(capacity=8 * MiB)
    r = dev.reserve_address_space(64 * MiB)
    dev.map(r, 8 * MiB)
    with pytest.raises(DeviceOutOfMemory):
        dev.map(r + 8 * MiB, 2 * MiB)
    dev.release_address_space(r)  # drops the mapped pages too
    assert dev.counters.bytes_in_use == 0


def test_placement_at_a_requested_address():
    dev = HostMemory()
    addr = dev.malloc(MiB)
    dev.free(addr)
    assert dev.malloc_at(addr, MiB) == addr
    with pytest.raises(AllocatorUsageError, match="cannot place"):
        dev.malloc_at(addr, page_size())  # taken: never clobbered
    dev.free(addr)
    r = dev.reserve_address_space(MiB, address=addr)
    assert r == addr
    dev.release_address_space(r)


@pytest.mark.skipif(not huge_pages_offered(), reason="kernel offers no transparent huge pages")
def test_huge_pages_align_large_segments():
    dev = HostMemory(huge_pages=True)
    assert dev.huge_pages_active
    addr = dev.malloc(8 * MiB)
    small = dev.malloc(page_size())
    assert addr % HUGE_PAGE == 0
    np.frombuffer(dev.buffer(addr, 8 * MiB), np.uint8)[:] = 1
    dev.free(addr)
    dev.free(small)


def test_garbage_collected_device_unmaps_what_it_still_holds(rss):
    dev = HostMemory()
    addr = dev.malloc(128 * MiB)
    np.frombuffer(dev.buffer(addr, 128 * MiB), np.uint8)[:] = 1
    touched = rss()
    del dev
    assert touched - rss() >= 0.9 * 128 * MiB
