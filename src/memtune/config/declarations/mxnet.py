"""MXNet's GPU pooled storage managers, src/storage/pooled_storage_manager.h
(GPUPooledStorageManager = Naive, GPUPooledRoundedStorageManager = Round) and
docs/faq/env_var.md. MXNet reads these with dmlc::GetEnv when the storage manager
is created, i.e. once per process. MXNet reads the sizes as plain integers, so
memtune does too (``2MiB`` would be misread by MXNet itself)."""

from __future__ import annotations

from memtune.config import allow_names, declare, rule, watch_prefix
from memtune.config.registry import Variable
from memtune.config.types import Enum, Int, Percent

GROUP = "mxnet"
REFERENCE = "src/storage/pooled_storage_manager.h; docs/faq/env_var.md"

#: log2 of the largest size the Round pool buckets by power of two (16 GiB).
LOG2_MAX_MEM = 34
#: MXNet refuses a page size below this (NDEV in pooled_storage_manager.h).
MIN_PAGE_SIZE = 32

watch_prefix("MXNET_GPU_MEM_")
# Names MXNet (1.x/2.x) reads under the watched prefix that memtune does not model.
allow_names(GROUP, "MXNET_GPU_MEM_POOL_MIN_CHUNK")

declare(
    Variable(
        name="MXNET_GPU_MEM_POOL_TYPE",
        type=Enum("Naive", "Round", "Unpooled"),
        default="Naive",
        doc="The GPU memory pool. Naive: caches freed buffers by exact (page-rounded) size and reuses them "
        "for requests of that size; sizes round up to MXNET_GPU_MEM_POOL_PAGE_SIZE, and above "
        "MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE to multiples of it. Round: rounds sizes up to a power of two "
        "below 2^MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF and to multiples of that above, then caches like "
        "Naive. Unpooled: no pool, every free returns memory to the device. No pool splits or merges blocks.",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF",
        type=Int(min=20, max=LOG2_MAX_MEM),
        default=24,
        doc="Round pool only: sizes below 2^T round up to the next power of two; sizes above round up to the "
        "next multiple of 2^T (T = 24 -> 16 MiB). MXNet accepts 20 (1 MiB) to 34 (16 GiB) and requires "
        "T >= log2(MXNET_GPU_MEM_POOL_PAGE_SIZE).",
        unit="log2 bytes",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE",
        type=Int(min=1),
        default=2097152,
        doc="Naive pool: allocations larger than this are rounded up to a multiple of it, so large buffers "
        "fill whole driver slabs (less global fragmentation). 1 disables it. MXNet requires > 0.",
        unit="bytes",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MXNET_GPU_MEM_POOL_RESERVE",
        type=Percent(integer=True),
        default=5,
        doc="Percentage of device memory kept free for things other than arrays (kernel launches, cuDNN "
        "workspaces): when a new device allocation would leave less than this free, the whole pool is "
        "released first. Raise it if out-of-memory errors come from kernel launches.",
        unit="%",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MXNET_GPU_MEM_POOL_PAGE_SIZE",
        type=Int(min=MIN_PAGE_SIZE),
        default=4096,
        doc="Granularity of the pools: Naive rounds every size up to a multiple of it; Round uses it as the "
        "smallest bucket and requires a power of two. MXNet refuses values below 32 (NDEV in "
        "pooled_storage_manager.h).",
        unit="bytes",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)


@rule("MXNET_GPU_MEM_POOL_TYPE", "MXNET_GPU_MEM_POOL_PAGE_SIZE", "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF")
def _round_page(pool: str, page: int, cutoff: int) -> str | None:
    """The Round pool needs a power-of-two page size no larger than 2^cutoff (MXNet LOG(FATAL)s otherwise)."""
    if pool != "Round":
        return None
    if page & (page - 1):
        return (
            f"MXNET_GPU_MEM_POOL_PAGE_SIZE ({page}) must be a power of two when MXNET_GPU_MEM_POOL_TYPE is Round"
        )
    if cutoff < page.bit_length() - 1:
        return (
            f"MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF ({cutoff}) is below log2 of MXNET_GPU_MEM_POOL_PAGE_SIZE "
            f"({page}); MXNet's Round pool refuses this"
        )
    return None
