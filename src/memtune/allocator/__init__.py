"""memtune's caching allocator: one engine, many presets.

    import memtune
    alloc = memtune.allocator("pytorch-cuda", capacity="80GiB", max_split_size_mb=128)
    addr = alloc.malloc(4096, stream=0)
    alloc.free(addr)
    memtune.allocator.presets()   # ['pytorch-cuda', 'pytorch-mps', ...]

The package object itself is callable (``memtune.allocator(...)``), whether
``memtune.allocator`` resolves to this module or to the :func:`allocator`
function. Parts to build a new policy: :mod:`.rounding`, :mod:`.pools`,
:mod:`.limits`, :class:`.spec.PresetSpec`; the engine is :mod:`.engine`.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from memtune.allocator.engine import Allocator, Block
from memtune.allocator.events import AllocatorEvent, EventKind
from memtune.allocator.spec import PresetSpec
from memtune.allocator.stats import Fragmentation
from memtune.allocator.verbose import verbose
from memtune.devices.base import Device
from memtune.errors import AllocatorUsageError
from memtune.units import parse_bytes

#: Device capacity when neither ``device`` nor ``capacity`` is given (an 80 GB-class GPU).
DEFAULT_CAPACITY = 80 * 1024**3

__all__ = [
    "DEFAULT_CAPACITY",
    "Allocator",
    "AllocatorEvent",
    "Block",
    "EventKind",
    "Fragmentation",
    "PresetSpec",
    "allocator",
    "presets",
    "verbose",
]


def _capacity(capacity: Any) -> int:
    try:
        value = parse_bytes(capacity)
    except (ValueError, TypeError) as e:
        raise AllocatorUsageError(f"capacity={capacity!r}: {e}") from None
    if value <= 0:
        raise AllocatorUsageError(f"capacity must be a positive size; got {capacity!r}")
    return value


def allocator(preset: str | PresetSpec = "memtune", *, device: Device | None = None,
              capacity: int | str | None = None, **settings: Any) -> Allocator:
    """Build an allocator running ``preset`` on ``device`` (default: a new
    :class:`~memtune.devices.simulated.SimulatedDevice` of ``capacity`` bytes,
    80 GiB if not given).

    ``settings`` are the preset's settings by name (``max_split_size_mb=128``),
    validated exactly as the environment's values are; unknown names raise
    :class:`memtune.errors.UnknownNameError` with suggestions. Settings not
    given come from the environment, read now.
    """
    from memtune.devices.simulated import SimulatedDevice

    _presets = importlib.import_module("memtune.allocator.presets")

    if device is not None and not isinstance(device, Device):
        raise AllocatorUsageError(f"device must be a memtune Device (e.g. SimulatedDevice); got {device!r}")
    if device is not None and capacity is not None:
        cap = _capacity(capacity)
        if cap != device.capacity:
            raise AllocatorUsageError(
                f"capacity={capacity!r} conflicts with the device's capacity {device.capacity}; give one of them")
    if device is None:
        device = SimulatedDevice(_capacity(capacity) if capacity is not None else DEFAULT_CAPACITY)
    if isinstance(preset, PresetSpec):
        if settings:
            raise AllocatorUsageError(
                f"settings {sorted(settings)} cannot be combined with a PresetSpec; put them in the spec")
        spec, mask = preset, 0
        from memtune import config

        mask = int(config.get("MEMTUNE_DEBUG_ALLOCATOR") or 0)
    else:
        spec, mask = _presets.resolve(preset, settings, device.capacity)
    # a preset may name its own engine (memtune's ArenaAllocator, PlanAllocator)
    engine = getattr(spec, "engine", None) or Allocator
    return engine(spec, device, env_verbose=mask)


def presets() -> list[str]:
    """The names of every allocator preset."""
    return importlib.import_module("memtune.allocator.presets").names()


# ``memtune.allocator`` may resolve to the function (memtune's lazy export): give it
# the module's public helpers so ``memtune.allocator.presets()`` always works.
allocator.presets = presets  # type: ignore[attr-defined]
allocator.verbose = verbose  # type: ignore[attr-defined]
allocator.Allocator = Allocator  # type: ignore[attr-defined]
allocator.PresetSpec = PresetSpec  # type: ignore[attr-defined]
allocator.EventKind = EventKind  # type: ignore[attr-defined]


class _CallableModule(types.ModuleType):
    """``memtune.allocator(...)`` works even when the name resolves to this module."""

    def __call__(self, *args: Any, **kwargs: Any) -> Allocator:
        return allocator(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
