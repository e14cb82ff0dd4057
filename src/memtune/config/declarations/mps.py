"""PyTorch's MPS (Apple GPU) heap allocator, aten/src/ATen/mps/MPSAllocator.mm.

All three variables are read once, in ``MPSHeapAllocatorImpl::init_allocator``:
setting them after the allocator started has no effect (a common user report).
"""

from __future__ import annotations

from memtune.config import allow_names, declare, rule, watch_prefix
from memtune.config.declarations.memtune import DEBUG_BITS
from memtune.config.registry import Variable
from memtune.config.types import BitFlags, Ratio

GROUP = "mps"
REFERENCE = "aten/src/ATen/mps/MPSAllocator.mm; docs: mps_environment_variables"

#: PyTorch rejects a high watermark ratio above this (default_high_watermark_upper_bound).
HIGH_WATERMARK_UPPER_BOUND = 2.0
LOW_WATERMARK_UNIFIED = 1.4
LOW_WATERMARK_DISCRETE = 1.0

watch_prefix("PYTORCH_MPS_", "PYTORCH_DEBUG_MPS_")
# Real PyTorch MPS variables that memtune does not model (mps_environment_variables).
allow_names(
    GROUP,
    "PYTORCH_MPS_FAST_MATH",
    "PYTORCH_MPS_PREFER_METAL",
    "PYTORCH_MPS_LOG_PROFILE_INFO",
    "PYTORCH_MPS_TRACE_SIGNPOSTS",
    "PYTORCH_MPS_METAL_VERSION",
)

declare(
    Variable(
        name="PYTORCH_MPS_HIGH_WATERMARK_RATIO",
        type=Ratio(max=HIGH_WATERMARK_UPPER_BOUND),
        default=1.7,
        doc="Hard limit of the MPS allocator as a multiple of the device's recommended maximum working set "
        "size (device.recommendedMaxWorkingSetSize): allocations beyond it fail with an out-of-memory error. "
        "0 = no limit (may cause system-wide OOM); 1.0 = the recommended size; up to 2.0.",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="PYTORCH_MPS_LOW_WATERMARK_RATIO",
        type=Ratio(max=HIGH_WATERMARK_UPPER_BOUND),
        default=LOW_WATERMARK_UNIFIED,
        default_doc="1.4 on unified memory (Apple silicon), 1.0 on discrete GPUs",
        doc="Soft limit of the MPS allocator (same unit as the high watermark): above it the allocator is "
        "under memory pressure, garbage-collects idle cached buffers and commits command buffers more often. "
        "0 = disables that adaptive behaviour. Must not exceed PYTORCH_MPS_HIGH_WATERMARK_RATIO (or 2.0 when "
        "the high watermark is 0). The declared default is the unified-memory value; memtune's pytorch-mps "
        "preset uses 1.0 for a device declared discrete.",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="PYTORCH_DEBUG_MPS_ALLOCATOR",
        type=BitFlags(**DEBUG_BITS),
        default=0,
        doc="Verbose logging of the MPS allocator (DebugVerbosity bits): PROFILING (1) set-up and limits, "
        "ALLOCATIONS (2), RECYCLES (4), RELEASES (8), LARGE_ONLY (16) only large buffers. Names joined by '|' "
        "or an integer (PyTorch reads it with strtol, so 0x1f works too).",
        read_once=True,
        group=GROUP,
        reference=REFERENCE,
    )
)


@rule("PYTORCH_MPS_LOW_WATERMARK_RATIO", "PYTORCH_MPS_HIGH_WATERMARK_RATIO")
def _low_le_high(low: float, high: float) -> str | None:
    """PyTorch: TORCH_CHECK(low >= 0 && low <= (high == 0 ? 2.0 : high))."""
    if high != 0 and low > high:
        return (
            f"PYTORCH_MPS_LOW_WATERMARK_RATIO ({low:g}) is above PYTORCH_MPS_HIGH_WATERMARK_RATIO ({high:g}); "
            "the low watermark must not exceed the high watermark (PyTorch refuses to start the MPS allocator)"
        )
    return None
