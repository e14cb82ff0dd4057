"""``megengine``: MegEngine's device allocator.

With ``MGB_CUDA_RESERVE_MEMORY`` it takes (nearly) all device memory at start
and sub-allocates it (best fit, split, merge), never giving it back; otherwise
it asks the device for exactly the rounded size per new chunk, caches freed
chunks (best fit, split, merge) and releases them on empty_cache or failure.
"""

from __future__ import annotations

from typing import Any

from memtune.allocator.limits import Limits
from memtune.allocator.pools import AlwaysSplit, ExactSegments
from memtune.allocator.presets import PresetInfo, Setting
from memtune.allocator.rounding import Multiple
from memtune.allocator.spec import PresetSpec

RESERVE = "MGB_CUDA_RESERVE_MEMORY"

SETTINGS = (Setting("reserve_memory", RESERVE, "Take all device memory up front and never release it.",
                    aliases=(RESERVE, "reserve_all")),)


def env_settings() -> dict[str, Any]:
    from memtune import config

    return {"reserve_memory": config.get(RESERVE)}


def build(settings: dict[str, Any], capacity: int, explicit: frozenset[str]) -> PresetSpec:
    reserve = bool(settings.get("reserve_memory"))
    return PresetSpec(
        name="megengine",
        rounding=Multiple(512),
        small_size=None,
        segments=ExactSegments(),
        split=AlwaysSplit(512),
        per_stream=True,
        limits=Limits(reserve_all=reserve),
        oom_hint="" if reserve else f"{RESERVE}=1 to reserve all device memory up front",
        settings={"reserve_memory": reserve},
    )


PRESETS = (
    PresetInfo(name="megengine", reproduces="MegEngine device memory allocator", settings=SETTINGS,
               env=env_settings, build=build),
)
