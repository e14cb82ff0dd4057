"""Verbose logging, callbacks and statistics on HostMemory: the same engine as on the simulated device.

Each check runs the same array workload on a HostMemory allocator and on a
SimulatedDevice allocator driven with the very same malloc/free sequence, and
compares what the two report.
"""

from __future__ import annotations

import logging

import numpy as np

import memtune
from memtune.allocator.events import EventKind
from memtune.allocator.verbose import ALLOCATIONS, RECYCLES, RELEASES
from memtune.devices.host import HostMemory, physical_memory
from memtune.devices.simulated import SimulatedDevice

MiB = 1 << 20
SIZES = [3 * MiB, 100_000, 40 * MiB, 3 * MiB, 700, 25 * MiB]


def _host_run(alloc) -> None:
    """Arrays of SIZES, every other one dropped at once, then the rest, then empty_cache."""
    keep = []
    for i, n in enumerate(SIZES):
        a = memtune.empty(n, np.uint8, allocator=alloc)
        if i % 2:
            keep.append(a)
        del a
    while keep:  # first kept, first freed (list.clear() would drop them last first)
        del keep[0]
    memtune.empty_cache(alloc)


def _sim_run(alloc) -> None:
    keep = []
    for i, n in enumerate(SIZES):
        addr = alloc.malloc(n)
        if i % 2:
            keep.append(addr)
        else:
            alloc.free(addr)
    for addr in keep:
        alloc.free(addr)
    alloc.empty_cache()


def _pair(preset: str = "pytorch-cuda"):
    cap = physical_memory()
    host = memtune.allocator(preset, device=HostMemory(capacity=cap))
    sim = memtune.allocator(preset, device=SimulatedDevice(cap, alignment=4096))
    return host, sim


def test_statistics_match_the_simulated_device():
    host, sim = _pair()
    _host_run(host)
    _sim_run(sim)
    hs, ss = host.memory_stats(), sim.memory_stats()
    for key in ("allocation.all.allocated", "allocated_bytes.all.peak", "reserved_bytes.all.peak",
                "requested_bytes.all.peak", "num_device_alloc", "num_device_free", "segment.all.peak",
                "allocated_bytes.all.current", "reserved_bytes.all.current"):
        assert hs[key] == ss[key], key
    assert hs["allocation.all.allocated"] == len(SIZES)
    assert hs["reserved_bytes.all.current"] == 0


def test_callbacks_see_the_same_events():
    host, sim = _pair()
    got: dict[str, list[tuple[str, int, int]]] = {"host": [], "sim": []}
    host.add_listener(lambda ev: got["host"].append((ev.kind.value, ev.size, ev.requested)))
    sim.add_listener(lambda ev: got["sim"].append((ev.kind.value, ev.size, ev.requested)))
    _host_run(host)
    _sim_run(sim)
    assert got["host"] == got["sim"]
    kinds = {k for k, _, _ in got["host"]}
    assert {EventKind.ALLOCATED.value, EventKind.FREED.value, EventKind.RELEASED.value} <= kinds


def test_verbose_logging_on_host_memory(caplog):
    host, _ = _pair()
    with caplog.at_level(logging.INFO, logger="memtune.allocator"):
        with memtune.verbose(ALLOCATIONS | RECYCLES | RELEASES):
            _host_run(host)
    text = caplog.text
    assert "allocated" in text and "freed" in text and "released" in text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memtune.allocator"):
        _host_run(host)  # outside the scope: quiet (unless MEMTUNE_DEBUG_ALLOCATOR is set)
    assert "allocated" not in caplog.text
