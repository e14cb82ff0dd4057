"""Verbose allocator logging through :mod:`logging` (logger ``memtune.allocator``).

The mask bits are PyTorch MPS's ``PYTORCH_DEBUG_MPS_ALLOCATOR`` bits. The level
comes from ``MEMTUNE_DEBUG_ALLOCATOR`` (every preset) or
``PYTORCH_DEBUG_MPS_ALLOCATOR`` (``pytorch-mps``), read when an allocator is
built, and can be scoped at run time::

    with memtune.verbose(ALLOCATIONS | RELEASES):
        ...                     # nested scopes restore the outer level exactly

The scope is a :mod:`contextvars` variable, so threads and asyncio tasks each
see their own level; inside a scope it replaces the environment's level.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from enum import IntFlag
from typing import Iterator

from memtune.allocator.events import AllocatorEvent, EventKind

logger = logging.getLogger("memtune.allocator")


class Verbosity(IntFlag):
    NONE = 0
    PROFILING = 1
    ALLOCATIONS = 2
    RECYCLES = 4
    RELEASES = 8
    LARGE_ONLY = 16


PROFILING, ALLOCATIONS, RECYCLES, RELEASES, LARGE_ONLY = (
    Verbosity.PROFILING,
    Verbosity.ALLOCATIONS,
    Verbosity.RECYCLES,
    Verbosity.RELEASES,
    Verbosity.LARGE_ONLY,
)

_SCOPED: contextvars.ContextVar[int | None] = contextvars.ContextVar("memtune_verbose", default=None)

#: which mask bit selects each event kind
_BIT = {
    EventKind.ALLOCATED: ALLOCATIONS,
    EventKind.FREED: ALLOCATIONS,
    EventKind.SEGMENT_ALLOC: ALLOCATIONS,
    EventKind.SEGMENT_MAP: ALLOCATIONS,
    EventKind.RECYCLED: RECYCLES,
    EventKind.RELEASED: RELEASES,
    EventKind.SEGMENT_FREE: RELEASES,
    EventKind.SEGMENT_UNMAP: RELEASES,
}


def _check_mask(mask: object) -> int:
    """An int 0..31, or the names MEMTUNE_DEBUG_ALLOCATOR accepts ("ALLOCATIONS|RELEASES")."""
    if isinstance(mask, str):
        from memtune import config
        from memtune.errors import AllocatorUsageError, ConfigError

        try:
            return int(config.parse_value("MEMTUNE_DEBUG_ALLOCATOR", mask, source="memtune.verbose()"))
        except ConfigError as e:
            raise AllocatorUsageError(str(e)) from None
    if isinstance(mask, bool) or not isinstance(mask, int) or mask < 0 or mask > 31:
        from memtune.errors import AllocatorUsageError

        raise AllocatorUsageError(
            f"verbose mask must be an integer 0..31 made of PROFILING=1, ALLOCATIONS=2, RECYCLES=4, "
            f"RELEASES=8, LARGE_ONLY=16, or those names joined by '|'; got {mask!r}"
        )
    return int(mask)


@contextlib.contextmanager
def verbose(mask: int | str = ALLOCATIONS | RECYCLES | RELEASES) -> Iterator[int]:
    """Scope verbose allocator logging to ``mask`` (bits or names such as
    ``"ALLOCATIONS|RELEASES"``); restores the outer level on exit."""
    level = _check_mask(mask)
    token = _SCOPED.set(level)
    try:
        yield level
    finally:
        _SCOPED.reset(token)


def scoped_mask() -> int | None:
    """The mask of the innermost ``verbose()`` scope, or None outside any scope."""
    return _SCOPED.get()


def log_event(mask: int, event: AllocatorEvent, allocator_name: str) -> None:
    """Log ``event`` if ``mask`` selects it (LARGE_ONLY drops small-pool events)."""
    if mask & LARGE_ONLY and event.pool == "small":
        return
    kind = event.kind
    if kind is EventKind.ALLOCATION_FAILED:
        if mask:
            logger.warning(
                "%s: allocation of %d B (stream %d, %s pool) failed%s",
                allocator_name, event.size, event.stream, event.pool,
                f" ({dict(event.info)})" if event.info else "",
            )
        return
    bit = _BIT.get(kind)
    if bit is None or not mask & bit:
        return
    logger.info(
        "%s: %s %#x size %d requested %d stream %d %s pool%s",
        allocator_name, kind.value, event.address, event.size, event.requested, event.stream, event.pool,
        f" {dict(event.info)}" if event.info else "",
    )


def log_profile(mask: int, allocator_name: str, what: str, stats: dict[str, int]) -> None:
    """PROFILING: one summary line (allocated / reserved, current and peak; device calls)."""
    if not mask & PROFILING:
        return
    logger.info(
        "%s: %s: allocated %d B (peak %d), reserved %d B (peak %d), device allocs %d, frees %d, OOMs %d",
        allocator_name, what, stats["allocated_bytes.all.current"], stats["allocated_bytes.all.peak"],
        stats["reserved_bytes.all.current"], stats["reserved_bytes.all.peak"], stats["num_device_alloc"],
        stats["num_device_free"], stats["num_ooms"],
    )
