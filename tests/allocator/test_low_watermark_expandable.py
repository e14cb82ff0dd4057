"""The low watermark must also trim expandable segments: before a device
allocation would cross the soft limit, cached pages are unmapped oldest first.
(The default host allocator's preset uses expandable segments, so without this
MEMTUNE_HOST_LOW_WATERMARK would silently do nothing there.)"""

from __future__ import annotations

import importlib
from dataclasses import replace

from memtune.allocator.engine import Allocator
from memtune.allocator.events import EventKind
from memtune.devices.simulated import SimulatedDevice

MiB = 1 << 20


def _allocator(soft: int) -> tuple[Allocator, SimulatedDevice]:
    presets = importlib.import_module("memtune.allocator.presets")
    dev = SimulatedDevice(1 << 34)
    spec, mask = presets.resolve("pytorch-cuda", {"expandable_segments": True}, dev.capacity, source="test")
    spec = replace(spec, limits=replace(spec.limits, soft_limit=soft))
    return Allocator(spec, dev, env_verbose=mask), dev


def test_soft_limit_unmaps_cached_pages_of_expandable_segments():
    alloc, dev = _allocator(100 * MiB)
    reasons: list[str] = []
    alloc.add_listener(lambda ev: reasons.append(ev.info.get("reason")), events=[EventKind.RELEASED])
    a = alloc.malloc(60 * MiB)
    b = alloc.malloc(30 * MiB)
    alloc.free(a)  # 60 MiB of mapped pages now cached, below the live 30 MiB block
    c = alloc.malloc(70 * MiB)  # does not fit the 60 MiB hole; 100 + 70 MiB would cross the soft limit
    assert "low_watermark" in reasons
    assert dev.counters.unmaps >= 1
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.current"] == 100 * MiB
    assert stats["reserved_bytes.all.current"] <= 100 * MiB + 20 * MiB  # at most one page of slack
    for addr in (b, c):
        alloc.free(addr)
    alloc.empty_cache()
    assert alloc.memory_stats()["reserved_bytes.all.current"] == 0


def test_without_a_soft_limit_cached_pages_stay_mapped():
    alloc, dev = _allocator(0)
    a = alloc.malloc(60 * MiB)
    b = alloc.malloc(30 * MiB)
    alloc.free(a)
    alloc.malloc(70 * MiB)
    assert dev.counters.unmaps == 0
    assert alloc.memory_stats()["reserved_bytes.all.current"] >= 160 * MiB
    alloc.free(b)
