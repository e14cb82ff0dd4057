"""Construction of the default host allocator from ``MEMTUNE_HOST_*``.

- ``MEMTUNE_HOST_ALLOCATOR``: the preset (policy), resolved with its own
  settings from the environment exactly as ``memtune.allocator(preset)`` would.
- ``MEMTUNE_HOST_HIGH_WATERMARK``: hard limit on reserved host memory, a share
  of physical RAM or a byte size (0 = none). It replaces the preset's own
  device limit (those describe a GPU), and OOM messages name this variable.
- ``MEMTUNE_HOST_LOW_WATERMARK``: soft limit; above it idle cached segments
  are released, oldest first, before the pool grows (0 = off).

The device is a :class:`~memtune.devices.host.HostMemory` with capacity =
physical RAM and transparent huge pages where the kernel offers them (numpy
asks for them on large arrays too, so this keeps the comparison fair and the
first touch of fresh pages cheap).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

HIGH = "MEMTUNE_HOST_HIGH_WATERMARK"
LOW = "MEMTUNE_HOST_LOW_WATERMARK"
PRESET = "MEMTUNE_HOST_ALLOCATOR"


def host_limits(total: int) -> tuple[int | None, int | None]:
    """(hard, soft) limits in bytes from the environment; None where 0 = off.

    When only the high watermark is set and the default low watermark (60% of
    RAM) would exceed it, the low watermark scales with it (2/3 of the high
    one, the defaults' own ratio) instead of failing over a variable the user
    never set. Explicit values that contradict each other raise a ConfigError
    naming both variables.
    """
    from memtune import config

    high = config.get(HIGH)
    low = config.get(LOW)
    hard = (high.resolve(total) if high else 0) or None
    soft = (low.resolve(total) if low else 0) or None
    if hard is not None and soft is not None and soft > hard:
        if config.explain(LOW).source == "default":
            soft = hard * 2 // 3
        else:
            config.validate(LOW, HIGH)  # raises the cross-rule's ConfigError naming both
    return hard, soft


def make_default_allocator() -> Any:
    """A new allocator configured by ``MEMTUNE_HOST_*`` on fresh host memory."""
    import importlib

    from memtune import config
    from memtune.allocator.engine import Allocator
    from memtune.devices.host import HostMemory, huge_pages_offered, physical_memory

    # the module, not the ``memtune.allocator.presets()`` function that shadows it
    presets = importlib.import_module("memtune.allocator.presets")
    ram = physical_memory()
    preset = config.get(PRESET)
    hard, soft = host_limits(ram)
    spec, verbose_mask = presets.resolve(preset, {}, ram, source=PRESET)
    limits = replace(spec.limits, hard_limit=hard, soft_limit=soft, hard_limit_setting=HIGH if hard else None)
    spec = replace(spec, limits=limits)
    device = HostMemory(capacity=ram, huge_pages=huge_pages_offered())
    engine = getattr(spec, "engine", None) or Allocator  # memtune's own policy has its own engine
    return engine(spec, device, env_verbose=verbose_mask)
