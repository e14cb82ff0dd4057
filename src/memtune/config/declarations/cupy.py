"""CuPy's device memory pool limit, cupy/cuda/memory.pyx (``MemoryPool``)."""

from __future__ import annotations

from memtune.config import declare, watch_prefix
from memtune.config.registry import Variable
from memtune.config.types import SizeOrFraction

GROUP = "cupy"

watch_prefix("CUPY_GPU_MEMORY_")

declare(
    Variable(
        name="CUPY_GPU_MEMORY_LIMIT",
        type=SizeOrFraction(),
        default=0,
        doc="Upper limit of the memory pool per device: a byte size (a bare integer is bytes, as in CuPy) or a "
        "share of the device's total memory ('90%'; memtune also accepts a fraction with a decimal point, "
        "0.9). Past it, an allocation first frees cached blocks and collects garbage, then raises "
        "OutOfMemoryError. 0 = no limit. Read when the pool is created (once per device), like "
        "MemoryPool.set_limit's initial value.",
        read_once=True,
        group=GROUP,
        reference="cupy/cuda/memory.pyx; docs: reference/environment.html",
    )
)
