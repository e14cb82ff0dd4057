"""``pytorch-cuda``: c10's CUDACachingAllocator (PyTorch CUDA).

Configured like PyTorch: ``PYTORCH_ALLOC_CONF`` (wins) or
``PYTORCH_CUDA_ALLOC_CONF`` keys, or explicit settings of the same names, plus
``per_process_memory_fraction`` (``torch.cuda.set_per_process_memory_fraction``).
"""

from __future__ import annotations

from typing import Any

from memtune.allocator.limits import Limits
from memtune.allocator.pools import MiB, PyTorchSegments, PyTorchSplit
from memtune.allocator.presets import PresetInfo, Setting
from memtune.allocator.rounding import PyTorchRounding, normalize_divisions
from memtune.allocator.spec import PresetSpec

CONF = "PYTORCH_CUDA_ALLOC_CONF"

_MODELED = {
    "max_split_size_mb": "Blocks this large (MiB) are never split; smaller requests may not take them. Default unlimited.",
    "max_non_split_rounding_mb": "An oversize request may take a cached block at most this much (MiB) larger. Default 20.",
    "roundup_power2_divisions": "Round sizes to the next 1/N of their power-of-two interval (one N or [MiB:N,...,>:N]).",
    "garbage_collection_threshold": "Free old unsplit cached blocks above this share of the allowed memory "
    "(needs per_process_memory_fraction, as in PyTorch). 0 = off.",
    "expandable_segments": "One growing virtual segment per (stream, pool): 2 MiB / 20 MiB pages.",
    "per_process_memory_fraction": "Cap reserved memory at this share of the device "
    "(torch.cuda.set_per_process_memory_fraction). Default: no cap.",
}
# keys PyTorch accepts that do not change device allocations; accepted so real configs replay
_ACCEPTED = (
    "backend",
    "release_lock_on_cudamalloc",
    "release_lock_on_hipmalloc",
    "pinned_use_cuda_host_register",
    "pinned_use_hip_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "pinned_reserve_segment_size_mb",
    "pinned_free_catch_all",
    "graph_capture_record_stream_reuse",
    "throw_on_cudamalloc_oom",
)

SETTINGS = tuple(Setting(k, f"{CONF}:{k}", doc) for k, doc in _MODELED.items()) + tuple(
    Setting(k, f"{CONF}:{k}", "accepted (PyTorch accepts it); no effect on device allocations") for k in _ACCEPTED
)


def env_settings() -> dict[str, Any]:
    from memtune.config.declarations.pytorch import alloc_conf

    conf, _source = alloc_conf()
    return dict(conf)


def build(settings: dict[str, Any], capacity: int, explicit: frozenset[str], name: str = "pytorch-cuda") -> PresetSpec:
    mss_mb = settings.get("max_split_size_mb")
    mss = None if mss_mb is None else int(mss_mb) * MiB
    mnsr = int(settings.get("max_non_split_rounding_mb") or 20) * MiB
    divisions = normalize_divisions(settings.get("roundup_power2_divisions"))
    expandable = bool(settings.get("expandable_segments"))
    gct = float(settings.get("garbage_collection_threshold") or 0.0)
    fraction = settings.get("per_process_memory_fraction")
    hard = None
    if fraction is not None and (float(fraction) < 1.0 or "per_process_memory_fraction" in explicit):
        hard = int(float(fraction) * capacity)  # c10 setMemoryFraction: allowed_memory_maximum
    if settings.get("backend", "native") != "native":
        from memtune.errors import ConfigError

        raise ConfigError(
            f"{CONF}:backend={settings.get('backend')!r}: memtune reproduces the native caching allocator only; "
            "cudaMallocAsync is CUDA's own pool and is not modeled (use backend:native)",
            variable=f"{CONF}:backend",
        )
    return PresetSpec(
        name=name,
        rounding=PyTorchRounding(divisions),
        small_size=1 * MiB,
        segments=PyTorchSegments(),
        split=PyTorchSplit(max_split_size=mss, expandable=expandable),
        max_split_size=mss,
        max_non_split_rounding=mnsr,
        expandable=expandable,
        limits=Limits(hard_limit=hard, hard_limit_setting="per_process_memory_fraction" if hard is not None else None,
                      gc_threshold=gct),
        oom_hint="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation" if not expandable else "",
        settings={"max_split_size_mb": mss_mb, "max_non_split_rounding_mb": mnsr // MiB,
                  "roundup_power2_divisions": divisions, "garbage_collection_threshold": gct,
                  "expandable_segments": expandable, "per_process_memory_fraction": fraction if hard else None},
    )


PRESETS = (
    PresetInfo(
        name="pytorch-cuda",
        reproduces="PyTorch CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp)",
        settings=SETTINGS,
        env=env_settings,
        build=build,
    ),
)
