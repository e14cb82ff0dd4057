"""The upstream resource every allocator wraps (RMM's ``device_memory_resource``).

A device hands out address ranges and counts what it did; it knows nothing of
caching. Limits, statistics and logging compose around it or around the
allocator, never inside it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


class DeviceOutOfMemory(Exception):
    """Raised by a device when a malloc or map does not fit. Allocators catch it
    and run their failure path; users see :class:`memtune.OutOfMemoryError`."""

    def __init__(self, requested: int, free: int, capacity: int | None):
        super().__init__(f"device out of memory: requested {requested} B, {free} B free of {capacity} B")
        self.requested = requested
        self.free = free
        self.capacity = capacity


@dataclass
class DeviceCounters:
    mallocs: int = 0
    frees: int = 0
    maps: int = 0
    unmaps: int = 0
    bytes_in_use: int = 0
    peak_bytes_in_use: int = 0
    #: Estimated seconds spent in device calls under the device's cost model.
    modeled_seconds: float = 0.0


class Device(ABC):
    """An upstream memory resource with a fixed capacity."""

    name: str = "device"

    def __init__(self, capacity: int, alignment: int = 512):
        if capacity <= 0:
            raise ValueError(f"device capacity must be positive; got {capacity}")
        self.capacity = capacity
        self.alignment = alignment
        self.counters = DeviceCounters()

    @property
    def free_bytes(self) -> int:
        return self.capacity - self.counters.bytes_in_use

    @abstractmethod
    def malloc(self, size: int) -> int:
        """Allocate ``size`` bytes; return the address. Raise DeviceOutOfMemory."""

    @abstractmethod
    def free(self, address: int) -> None:
        """Release an allocation made by :meth:`malloc`."""

    # Virtual memory, for expandable segments. A reservation costs no capacity;
    # mapped pages do.
    def reserve_address_space(self, size: int) -> int:
        raise NotImplementedError(f"{type(self).__name__} has no virtual memory support")

    def map(self, address: int, size: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no virtual memory support")

    def unmap(self, address: int, size: int) -> None:
        raise NotImplementedError(f"{type(self).__name__} has no virtual memory support")

    def buffer(self, address: int, size: int) -> memoryview:
        """Writable bytes at ``address`` (real-memory devices only)."""
        raise NotImplementedError(f"{type(self).__name__} is simulated and holds no bytes")
