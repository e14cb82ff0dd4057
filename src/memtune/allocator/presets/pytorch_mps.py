"""``pytorch-mps``: PyTorch's MPS heap allocator (aten/src/ATen/mps/MPSAllocator.mm).

Heaps are the device allocations: 8 MB heaps for buffers up to 1 MB, 32 MB
heaps below 10 MB, 1 GB heaps below 512 MB when not under memory pressure,
otherwise a heap of the buffer rounded to 2 MB. A freed buffer stays cached
whole and is reused whole (``get_free_buffer``) unless it is more than 32 MB
(kLargeHeap) larger than the request; such an oversize buffer is skipped when a
heap has room, else released into its heap. New buffers are sub-allocated from
heap space (best fit; Metal's own placement inside a heap is not public).
Released buffers merge back into heap space; empty heaps go back to the device
on empty_cache, on the failure path and in garbage collection.

The device capacity plays the role of the recommended working set:
``PYTORCH_MPS_HIGH_WATERMARK_RATIO`` x capacity is a hard limit (0 = none);
above ``PYTORCH_MPS_LOW_WATERMARK_RATIO`` x capacity the allocator is under
memory pressure: it garbage-collects cached large buffers of at least average
age and stops making 1 GB heaps. There is one stream, as on MPS.
"""

from __future__ import annotations

from typing import Any

from memtune.allocator.limits import Limits
from memtune.allocator.pools import AlwaysSplit, MiB, MPSHeaps
from memtune.allocator.presets import PresetInfo, Setting
from memtune.allocator.rounding import Multiple
from memtune.allocator.spec import PresetSpec

HIGH = "PYTORCH_MPS_HIGH_WATERMARK_RATIO"
LOW = "PYTORCH_MPS_LOW_WATERMARK_RATIO"
#: buffer size granularity (Metal heapBufferSizeAndAlign on Apple GPUs: 16 KiB pages)
BUFFER_ALIGNMENT = 16 * 1024

SETTINGS = (
    Setting("high_watermark_ratio", HIGH, "Hard limit as a multiple of the device capacity (0 = no limit).",
            aliases=(HIGH,)),
    Setting("low_watermark_ratio", LOW, "Above this multiple of the capacity, release idle cached heaps.",
            aliases=(LOW,)),
)


def env_settings() -> dict[str, Any]:
    from memtune import config

    return {"high_watermark_ratio": config.get(HIGH), "low_watermark_ratio": config.get(LOW)}


def build(settings: dict[str, Any], capacity: int, explicit: frozenset[str]) -> PresetSpec:
    high = float(settings["high_watermark_ratio"])
    low = float(settings["low_watermark_ratio"])
    if high and low > high:
        from memtune.errors import ConfigError

        raise ConfigError(f"{LOW}={low} is above {HIGH}={high}; the low watermark must not exceed the high one",
                          variable=LOW)
    return PresetSpec(
        name="pytorch-mps",
        rounding=Multiple(BUFFER_ALIGNMENT),
        small_size=1 * MiB,
        segments=MPSHeaps(),
        split=AlwaysSplit(BUFFER_ALIGNMENT),
        buffer_cache=True,
        max_reuse_slack=32 * MiB,  # kLargeHeap: a cached buffer this much larger is "oversize"
        per_stream=False,
        limits=Limits(
            hard_limit=int(high * capacity) if high else None,
            hard_limit_setting=f"{HIGH}={high}" if high else None,
            soft_limit=int(low * capacity) if low else None,
        ),
        oom_hint=f"{HIGH}=0.0 to disable the upper limit for memory allocations (may cause system failure)",
        settings={"high_watermark_ratio": high, "low_watermark_ratio": low},
    )


PRESETS = (
    PresetInfo(
        name="pytorch-mps",
        reproduces="PyTorch MPS heap allocator (aten/src/ATen/mps/MPSAllocator.mm)",
        settings=SETTINGS,
        env=env_settings,
        build=build,
        verbose_vars=("MEMTUNE_DEBUG_ALLOCATOR", "PYTORCH_DEBUG_MPS_ALLOCATOR"),
    ),
)
