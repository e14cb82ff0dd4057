"""The limits layer: caps on reserved memory and when cached memory is given back.

- ``hard_limit``: reserved memory may never exceed it (MPS high watermark,
  PyTorch ``set_per_process_memory_fraction``, ``CUPY_GPU_MEMORY_LIMIT``,
  memtune's own). A device allocation that would cross it fails as if the
  device were full, and the failure path runs.
- ``soft_limit``: above it, before taking new device memory, idle cached blocks
  are released oldest first until reserved is below it (MPS low watermark).
- ``gc_threshold``: PyTorch ``garbage_collection_threshold``: only with a hard
  limit from a memory fraction, above threshold x limit, release unsplit large
  cached blocks of at least average age (c10 ``garbage_collect_cached_blocks``).
- ``reserve_percent``: MXNet ``MXNET_GPU_MEM_POOL_RESERVE``: if a device malloc
  would leave less than that share of the device free, release the whole pool
  first.
- ``reserve_all``: MegEngine ``MGB_CUDA_RESERVE_MEMORY``: take the whole device
  up front and never give it back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    hard_limit: int | None = None
    #: the setting that imposes hard_limit, named in OOM messages
    hard_limit_setting: str | None = None
    soft_limit: int | None = None
    gc_threshold: float = 0.0
    reserve_percent: int = 0
    reserve_all: bool = False

    def __post_init__(self) -> None:
        if self.hard_limit is not None and self.hard_limit < 0:
            raise ValueError(f"hard_limit must be >= 0 bytes; got {self.hard_limit}")
        if self.soft_limit is not None and self.soft_limit < 0:
            raise ValueError(f"soft_limit must be >= 0 bytes; got {self.soft_limit}")
        if not 0.0 <= self.gc_threshold < 1.0:
            raise ValueError(f"gc_threshold must be in [0, 1); got {self.gc_threshold}")
        if not 0 <= self.reserve_percent <= 100:
            raise ValueError(f"reserve_percent must be in 0..100; got {self.reserve_percent}")
