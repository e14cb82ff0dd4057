"""Upstream memory resources: the abstract :class:`Device`, the
:class:`SimulatedDevice` (any capacity, no bytes) and, in ``devices.host``,
``HostMemory`` (real memory)."""

from memtune.devices.base import Device, DeviceCounters, DeviceOutOfMemory
from memtune.devices.simulated import CostModel, SimulatedDevice

__all__ = ["CostModel", "Device", "DeviceCounters", "DeviceOutOfMemory", "SimulatedDevice"]
