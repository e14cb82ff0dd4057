"""MegEngine's memory variables (MegEngine docs, "Environment variables": memory and
DTR sections). MegEngine marks MGB_CUDA_RESERVE_MEMORY as read only on first use;
the DTR settings are read when DTR (re)configures and so are dynamic."""

from __future__ import annotations

from memtune.config import allow_names, declare, watch_prefix
from memtune.config.registry import Variable
from memtune.config.types import Bool, Bytes

GROUP = "megengine"
REFERENCE = "MegEngine docs: user-guide environment variables; megengine/dtr/dtr.py"

watch_prefix("MGB_", "MEGENGINE_")
# MegEngine's documented variables under those prefixes that memtune does not model.
allow_names(
    GROUP,
    "MEGENGINE_HOST_COMPUTE",
    "MEGENGINE_LOGGING_LEVEL",
    "MEGENGINE_INPLACE_UPDATE",
    "MEGENGINE_INPUT_NODE_USE_STATIC_SHAPE",
    "MEGENGINE_ENABLE_SWAP",
    "MEGENGINE_ENABLE_DROP",
    "MEGENGINE_DTR_AUTO_DROP",
    "MEGENGINE_INTERP_ASYNC_LEVEL",
    "MEGENGINE_CATCH_WORKER_EXEC",
    "MEGENGINE_COMMAND_BUFFER_LENGTH",
    "MEGENGINE_RECORD_COMPUTING_PATH",
    "MEGENGINE_EXECUTION_STRATEGY",
    "MGB_DEBUG_VAR_SANITY_CHECK_LOG",
    "MGB_LOG_TRT_MEM_ALLOC",
    "MGB_ROCM_RESERVE_MEMORY",
    "MGB_SUBLINEAR_MEMORY_THRESH_NR_TRY",
    "MGB_SUBLINEAR_MEMORY_GENETIC_NR_ITER",
    "MGB_SUBLINEAR_MEMORY_GENETIC_POOL_SIZE",
    "MGB_SUBLINEAR_MEMORY_LOWER_BOUND_MB",
    "MGB_SUBLINEAR_MEMORY_WORKERS",
    "MGB_CONV_PROFILING_TIMEOUT",
    "MGB_PROFILE_ONLY_WAIT",
    "MGB_JIT_BACKEND",
    "MGB_JIT_KEEP_INTERM",
    "MGB_JIT_WORKDIR",
    "MGB_DUMP_INPUT",
    "MGB_WAIT_TERMINATE",
    "MGB_THROW_ON_FORK",
    "MGB_THROW_ON_SCALAR_IDX",
    "MGB_LOG_LEVEL",
)

_UNITS_NOTE = (
    " memtune reads units by their names (MB = 10^6, MiB = 2^20); MegEngine's own dtr setters read "
    "'MB'/'GB' as powers of 1024, so write MiB/GiB (or plain bytes) to mean the same thing in both."
)

declare(
    Variable(
        name="MGB_CUDA_RESERVE_MEMORY",
        type=Bool(),
        default=False,
        doc="Reserve (nearly) all free CUDA memory up front and sub-allocate from it, which avoids driver "
        "fragmentation; MegEngine's own out-of-memory message suggests it. Read once, when the first CUDA "
        "computing node starts. (MegEngine's tests also pass 'b:<bytes>' to reserve a fixed amount; memtune "
        "accepts only on/off.)",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEGENGINE_DTR_EVICTION_THRESHOLD",
        type=Bytes(),
        default=0,
        doc="DTR (dynamic tensor rematerialization) memory budget: when device memory in use exceeds it, "
        "resident tensors are evicted (and recomputed when needed) until usage falls below it. 0 = no budget "
        "(DTR off)." + _UNITS_NOTE,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEGENGINE_DTR_EVICTEE_MINIMUM_SIZE",
        type=Bytes(),
        default=1048576,
        doc="Only tensors at least this large are candidates for DTR eviction (default 1 MiB)." + _UNITS_NOTE,
        group=GROUP,
        reference=REFERENCE,
    )
)
