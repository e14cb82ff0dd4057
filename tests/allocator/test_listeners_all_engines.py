"""Listeners behave the same on every engine (the caching engine and memtune's arena):
a bound method can be removed again, and a listener that raises is logged while the
allocation it observed still completes."""

from __future__ import annotations

import logging

import pytest

import memtune

PRESETS = ["pytorch-cuda", "memtune"]


class _Counter:
    def __init__(self) -> None:
        self.events = 0

    def on_event(self, ev) -> None:
        self.events += 1


@pytest.mark.parametrize("preset", PRESETS)
def test_a_bound_method_listener_can_be_removed(preset):
    alloc = memtune.allocator(preset, capacity="1GiB")
    counter = _Counter()
    alloc.add_listener(counter.on_event)
    alloc.free(alloc.malloc(1 << 20))
    seen = counter.events
    assert seen > 0
    alloc.remove_listener(counter.on_event)  # a new bound-method object, equal to the one added
    alloc.free(alloc.malloc(1 << 20))
    assert counter.events == seen


@pytest.mark.parametrize("preset", PRESETS)
def test_a_raising_listener_is_logged_and_the_allocation_completes(preset, caplog):
    alloc = memtune.allocator(preset, capacity="1GiB")

    def broken(ev):
        raise RuntimeError("listener bug")

    alloc.add_listener(broken)
    with caplog.at_level(logging.ERROR, logger="memtune.allocator"):
        addr = alloc.malloc(1 << 20)
    assert alloc.memory_stats()["allocated_bytes.all.current"] >= 1 << 20
    assert any("listener" in r.getMessage() for r in caplog.records)
    alloc.remove_listener(broken)
    alloc.free(addr)
    assert alloc.memory_stats()["allocated_bytes.all.current"] == 0
