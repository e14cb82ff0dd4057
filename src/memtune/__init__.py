"""memtune: one caching-allocator layer for deep learning, done once and done right.

Importing memtune is cheap: submodules load on first use, and nothing here
needs torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from memtune.errors import (
    AllocatorUsageError,
    ConfigError,
    MemtuneError,
    MemtuneWarning,
    OutOfMemoryError,
    PlanFileError,
    TraceError,
)

__version__ = "0.1.0"

# name -> "module:attribute"; resolved lazily by __getattr__.
_LAZY: dict[str, str] = {
    "config": "memtune.config:",
    "allocator": "memtune.allocator:allocator",
    "presets": "memtune.allocator:presets",
    "verbose": "memtune.allocator.verbose:verbose",
    "SimulatedDevice": "memtune.devices.simulated:SimulatedDevice",
    "HostMemory": "memtune.devices.host:HostMemory",
    "empty": "memtune.interop.numpy:empty",
    "zeros": "memtune.interop.numpy:zeros",
    "empty_like": "memtune.interop.numpy:empty_like",
    "empty_cache": "memtune.interop.numpy:empty_cache",
    "memory_stats": "memtune.interop.numpy:memory_stats",
    "torch": "memtune.interop.torch:",
    "load_trace": "memtune.trace.formats:load_trace",
    "replay": "memtune.trace.replay:replay",
    "record": "memtune.trace.record:record",
}

__all__ = [
    "AllocatorUsageError",
    "ConfigError",
    "MemtuneError",
    "MemtuneWarning",
    "OutOfMemoryError",
    "PlanFileError",
    "TraceError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'memtune' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
