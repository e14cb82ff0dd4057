"""memtune's own settings (``MEMTUNE_*``)."""

from __future__ import annotations

import os

from memtune.config import declare, rule, watch_prefix
from memtune.config.registry import Variable
from memtune.config.types import BitFlags, Bool, Enum, Path, SizeOrFraction, SizeSpec

GROUP = "memtune"

#: Verbose-logging bits, shared with PYTORCH_DEBUG_MPS_ALLOCATOR (same meanings).
DEBUG_BITS = {"PROFILING": 1, "ALLOCATIONS": 2, "RECYCLES": 4, "RELEASES": 8, "LARGE_ONLY": 16}

#: Allocator presets a host allocator can follow (names as `memtune.presets()` lists them).
HOST_POLICIES = (
    "pytorch-cuda",
    "pytorch-mps",
    "mxnet-naive",
    "mxnet-round",
    "mxnet-unpooled",
    "cupy",
    "megengine",
    "memtune",
)

watch_prefix("MEMTUNE_")

declare(
    Variable(
        name="MEMTUNE_DEBUG_ALLOCATOR",
        type=BitFlags(**DEBUG_BITS),
        default=0,
        doc="Verbose logging of every memtune allocator, as PYTORCH_DEBUG_MPS_ALLOCATOR does for MPS: "
        "PROFILING (1) logs allocator set-up and limits, ALLOCATIONS (2) each allocation, RECYCLES (4) each "
        "reuse of a cached block, RELEASES (8) each block returned to the device, LARGE_ONLY (16) restricts "
        "the log to large blocks. Names may be joined with '|' (ALLOCATIONS|RECYCLES) or given as an integer. "
        "Dynamic: takes effect on the next allocator call; `with memtune.verbose(mask)` scopes it.",
        read_once=False,
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_PROFILER_AUTOSTART",
        type=Bool(),
        default=False,
        doc="When true, memtune records every allocator it creates and writes a Chrome trace "
        "(chrome://tracing, Perfetto) of all of them at interpreter exit, to MEMTUNE_PROFILER_OUTPUT. "
        "Read once, when the first allocator is created (like MXNET_PROFILER_AUTOSTART).",
        read_once=True,
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_PROFILER_OUTPUT",
        type=Path(),
        default="memtune-profile.json",
        doc="Where MEMTUNE_PROFILER_AUTOSTART writes its Chrome trace (relative paths are relative to the "
        "working directory at exit).",
        read_once=False,
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_HOST_ALLOCATOR",
        type=Enum(*HOST_POLICIES),
        default="memtune",
        doc="The policy of the default host-memory allocator (used by memtune.empty/zeros and the numpy and "
        "torch interop when no allocator is given): one of the allocator preset names. Read once, when the "
        "default host allocator is created.",
        read_once=True,
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_HOST_HIGH_WATERMARK",
        type=SizeOrFraction(),
        default="90%",
        doc="Hard limit of the default host allocator: a share of physical RAM (90%, 0.9) or a byte size "
        "(16GiB). Allocations beyond it raise memtune.OutOfMemoryError after the cache is released. "
        "0 = no limit. Read when a host allocator is created.",
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_HOST_LOW_WATERMARK",
        type=SizeOrFraction(),
        default="60%",
        doc="Soft limit of the default host allocator (share of physical RAM or bytes): above it the allocator "
        "is under memory pressure and releases idle cached blocks before growing, as the MPS allocator does "
        "above its low watermark. 0 = off. Must not exceed MEMTUNE_HOST_HIGH_WATERMARK; when unset and the "
        "high watermark is below 60%, it is 2/3 of the high watermark.",
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_WARN_UNKNOWN",
        type=Bool(),
        default=True,
        doc="Warn (memtune.config.UnknownVariableWarning, with a 'did you mean' suggestion) about environment "
        "names under a prefix memtune watches (MEMTUNE_, PYTORCH_MPS_, MXNET_GPU_MEM_, ...) that are not "
        "declared. `memtune env check` reports them regardless.",
        group=GROUP,
    )
)

declare(
    Variable(
        name="MEMTUNE_SHARED_TRACES",
        type=Path(),
        default=None,
        default_doc="../shared/traces next to the repository",
        doc="Directory of the real traces memtune's own test suite replays (tests skip when it is absent, "
        "and fail under CI=true). Not used by the library itself.",
        group=GROUP,
    )
)



def physical_memory() -> int | None:
    """Physical RAM in bytes where the OS reports it (for comparing fractions with sizes)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return None


def _comparable(low: SizeSpec, high: SizeSpec) -> tuple[float, float] | None:
    if low.fraction is not None and high.fraction is not None:
        return low.fraction, high.fraction
    if low.bytes is not None and high.bytes is not None:
        return float(low.bytes), float(high.bytes)
    total = physical_memory()
    if total is None:
        return None
    return float(low.resolve(total)), float(high.resolve(total))


@rule("MEMTUNE_HOST_LOW_WATERMARK", "MEMTUNE_HOST_HIGH_WATERMARK")
def _host_low_le_high(low: SizeSpec, high: SizeSpec) -> str | None:
    """The low watermark must not exceed the high watermark (unless either is 0 = off/no limit)."""
    if low.is_zero or high.is_zero:
        return None
    from memtune.config import explain

    if explain("MEMTUNE_HOST_LOW_WATERMARK").source == "default":
        # An unset low watermark follows a smaller high one (2/3 of it), as the
        # default host allocator does: setting only the high watermark is valid.
        return None
    pair = _comparable(low, high)
    if pair is not None and pair[0] > pair[1]:
        return (
            f"MEMTUNE_HOST_LOW_WATERMARK ({low}) is above MEMTUNE_HOST_HIGH_WATERMARK ({high}); "
            "the low watermark must not exceed the high watermark"
        )
    return None
