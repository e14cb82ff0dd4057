"""``cupy``: CuPy's memory pool (cupy/cuda/memory.pyx, SingleDeviceMemoryPool).

Sizes round to 512 B; one arena per stream; free chunks are taken best fit and
always split; neighbours merge on free; a new device allocation is exactly the
rounded size. ``CUPY_GPU_MEMORY_LIMIT`` (bytes or a share like ``90%`` of the
device) caps the pool: past it OutOfMemoryError is raised at once (cached
chunks count and are not freed). When the device itself is full, all unsplit
cached chunks are freed and the allocation retried before OutOfMemoryError.
"""

from __future__ import annotations

from typing import Any

from memtune.allocator.limits import Limits
from memtune.allocator.pools import AlwaysSplit, ExactSegments
from memtune.allocator.presets import PresetInfo, Setting
from memtune.allocator.rounding import Multiple
from memtune.allocator.spec import PresetSpec

LIMIT = "CUPY_GPU_MEMORY_LIMIT"

SETTINGS = (Setting("memory_limit", LIMIT, "Cap on pool memory: bytes or a share of the device (90%). 0 = none.",
                    aliases=(LIMIT, "limit")),)


def env_settings() -> dict[str, Any]:
    from memtune import config

    return {"memory_limit": config.get(LIMIT)}


def _resolve_limit(value: Any, capacity: int) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    resolve = getattr(value, "resolve", None)
    if resolve is not None:
        return int(resolve(capacity) or 0)
    return int(value)


def build(settings: dict[str, Any], capacity: int, explicit: frozenset[str]) -> PresetSpec:
    limit = _resolve_limit(settings.get("memory_limit"), capacity)
    return PresetSpec(
        name="cupy",
        rounding=Multiple(512),
        small_size=None,
        segments=ExactSegments(),
        split=AlwaysSplit(512),
        limits=Limits(hard_limit=limit or None, hard_limit_setting=f"{LIMIT}" if limit else None),
        release_cache_on_limit=False,  # _try_malloc raises at the limit without freeing cached chunks
        oom_hint=f"a higher {LIMIT}" if limit else "",
        settings={"memory_limit": limit},
    )


PRESETS = (
    PresetInfo(name="cupy", reproduces="CuPy memory pool (cupy/cuda/memory.pyx)", settings=SETTINGS,
               env=env_settings, build=build),
)
