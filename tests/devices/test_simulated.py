"""SimulatedDevice: address ranges, capacity, counters, virtual memory, cost model."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memtune.devices import CostModel, DeviceOutOfMemory, SimulatedDevice

MiB = 1 << 20


def test_malloc_free_counts_and_capacity():
    d = SimulatedDevice(10 * MiB)
    a = d.malloc(4 * MiB)
    b = d.malloc(4 * MiB)
    assert d.counters.mallocs == 2 and d.counters.bytes_in_use == 8 * MiB and d.free_bytes == 2 * MiB
    with pytest.raises(DeviceOutOfMemory) as e:
        d.malloc(3 * MiB)
    assert e.value.requested == 3 * MiB and e.value.free == 2 * MiB and e.value.capacity == 10 * MiB
    assert d.counters.mallocs == 2  # a failed malloc changes nothing
    d.free(a)
    assert d.counters.frees == 1 and d.counters.bytes_in_use == 4 * MiB
    assert d.counters.peak_bytes_in_use == 8 * MiB
    d.free(b)
    assert d.counters.bytes_in_use == 0


def test_alignment_rounds_footprint_and_addresses():
    d = SimulatedDevice(1 * MiB, alignment=512)
    a = d.malloc(100)
    b = d.malloc(100)
    assert a % 512 == 0 and b % 512 == 0 and abs(a - b) >= 512
    assert d.counters.bytes_in_use == 1024


@pytest.mark.parametrize("placement", ["top-down", "bottom-up"])
def test_placement_order_and_reuse(placement):
    d = SimulatedDevice(100 * MiB, placement=placement)
    a, b, c = (d.malloc(MiB) for _ in range(3))
    if placement == "top-down":
        assert a > b > c
    else:
        assert a < b < c
    d.free(b)
    assert d.malloc(MiB) == b  # the hole is reused


def test_top_down_goes_below_explicit_placements():
    d = SimulatedDevice(100 * MiB)
    base = 0x7F0000000000
    d.malloc_at(base, 2 * MiB)
    x = d.malloc(MiB)
    assert x + MiB <= base  # grows downwards from the warm start's lowest address, like the CUDA driver


def test_malloc_at():
    d = SimulatedDevice(100 * MiB)
    base = 0x7F0000000000
    assert d.malloc_at(base, 4 * MiB) == base
    with pytest.raises(ValueError, match="in use"):
        d.malloc_at(base + MiB, MiB)
    with pytest.raises(ValueError, match="multiple of"):
        d.malloc_at(base + 7, 512)
    d.free(base)
    assert d.malloc_at(base + MiB, MiB) == base + MiB


def test_bad_calls():
    d = SimulatedDevice(MiB)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            d.malloc(bad)
    with pytest.raises(ValueError, match="no device allocation"):
        d.free(12345)
    with pytest.raises(ValueError):
        SimulatedDevice(0)
    with pytest.raises(ValueError):
        SimulatedDevice(MiB, alignment=3)
    with pytest.raises(ValueError):
        SimulatedDevice(MiB, placement="random")


def test_virtual_memory_counts_only_mapped_pages():
    d = SimulatedDevice(64 * MiB)
    r = d.reserve_address_space(1 << 40)  # far more than the capacity: free
    assert d.counters.bytes_in_use == 0
    d.map(r, 20 * MiB)
    d.map(r + 20 * MiB, 20 * MiB)
    assert d.counters.bytes_in_use == 40 * MiB and d.counters.maps == 2
    with pytest.raises(DeviceOutOfMemory):
        d.map(r + 40 * MiB, 40 * MiB)
    with pytest.raises(ValueError, match="already mapped"):
        d.map(r + 10 * MiB, 20 * MiB)
    d.unmap(r + 10 * MiB, 20 * MiB)  # across two mapped pieces
    assert d.counters.bytes_in_use == 20 * MiB and d.counters.unmaps == 1
    assert d.mapped_ranges() == [(r, 10 * MiB), (r + 30 * MiB, 10 * MiB)]
    with pytest.raises(ValueError, match="only"):
        d.unmap(r + 10 * MiB, 20 * MiB)
    with pytest.raises(ValueError, match="still mapped"):
        d.release_address_space(r)
    d.unmap(r, 10 * MiB)
    d.unmap(r + 30 * MiB, 10 * MiB)
    d.release_address_space(r)
    with pytest.raises(ValueError, match="not inside a reservation"):
        d.map(r, MiB)


def test_cost_model_accumulates():
    cm = CostModel(malloc_seconds=1e-3, free_seconds=5e-4, map_seconds=2e-3, unmap_seconds=1e-3,
                   seconds_per_byte=1e-12)
    d = SimulatedDevice(1 << 30, cost_model=cm)
    a = d.malloc(MiB)
    d.free(a)
    r = d.reserve_address_space(1 << 30)
    d.map(r, 2 * MiB)
    d.unmap(r, 2 * MiB)
    expect = 1e-3 + 5e-4 + 2e-3 + 1e-3 + 1e-12 * (2 * MiB + 4 * MiB)
    assert d.counters.modeled_seconds == pytest.approx(expect)
    assert SimulatedDevice(MiB).counters.modeled_seconds == 0.0
    with pytest.raises(ValueError):
        CostModel(malloc_seconds=-1)


class DeviceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.d = SimulatedDevice(64 * MiB, placement="top-down")
        self.live: dict[int, int] = {}

    @rule(size=st.integers(1, 8 * MiB))
    def malloc(self, size):
        try:
            a = self.d.malloc(size)
        except DeviceOutOfMemory:
            assert self.d.free_bytes < (size + 511) // 512 * 512
            return
        self.live[a] = (size + 511) // 512 * 512

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def free(self, data):
        a = data.draw(st.sampled_from(sorted(self.live)))
        self.d.free(a)
        del self.live[a]

    @invariant()
    def consistent(self):
        spans = sorted(self.live.items())
        for (a, s), (b, _) in zip(spans, spans[1:]):
            assert a + s <= b
        assert self.d.counters.bytes_in_use == sum(self.live.values())
        assert sorted(self.d.allocations()) == spans


TestDeviceMachine = DeviceMachine.TestCase
TestDeviceMachine.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)
