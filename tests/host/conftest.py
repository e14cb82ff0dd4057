"""Helpers for host-memory tests: RSS from /proc/self/status, fresh allocators."""

from __future__ import annotations

import gc
import re
import sys

import pytest

MiB = 1 << 20

if not sys.platform.startswith("linux"):
    pytest.skip("host-memory tests read /proc/self/status (Linux)", allow_module_level=True)


def vm(field: str = "VmRSS") -> int:
    """A /proc/self/status size field in bytes (VmRSS, VmHWM, ...)."""
    with open("/proc/self/status") as f:
        m = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.M)
    assert m, f"{field} missing from /proc/self/status"
    return int(m.group(1)) * 1024


def settle() -> None:
    """Collect garbage so arrays in cycles and finalizers run before measuring."""
    gc.collect()


@pytest.fixture
def rss():
    return vm


@pytest.fixture
def host_allocator():
    """Factory: an engine allocator on a fresh HostMemory (closed at the end of the test)."""
    import memtune
    from memtune.devices.host import HostMemory

    made = []

    def make(preset: str = "memtune", capacity: int | None = None, **settings):
        alloc = memtune.allocator(preset, device=HostMemory(capacity=capacity), **settings)
        made.append(alloc)
        return alloc

    yield make
    settle()
    for alloc in made:
        alloc.empty_cache()
