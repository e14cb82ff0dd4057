"""Allocator events: what listeners, statistics views, verbose logging and
trace recorders subscribe to.

Every successful ``malloc`` emits exactly one of ALLOCATED (the request needed
new device memory: a new segment or newly mapped pages) or RECYCLED (it was
served from cached memory). Every ``free`` emits FREED. RELEASED is emitted when
cached memory goes back to the device (with the reason in ``info``).
ALLOCATION_FAILED is emitted when the device (or a limit) refuses memory; a
listener that frees memory in response makes the allocator retry. The SEGMENT_*
kinds mirror the device calls (PyTorch snapshot ``segment_*`` actions) so a
recorder can log them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Mapping


class EventKind(StrEnum):
    ALLOCATED = "allocated"
    RECYCLED = "recycled"
    FREED = "freed"
    RELEASED = "released"
    ALLOCATION_FAILED = "allocation_failed"
    SEGMENT_ALLOC = "segment_alloc"
    SEGMENT_FREE = "segment_free"
    SEGMENT_MAP = "segment_map"
    SEGMENT_UNMAP = "segment_unmap"


ALLOCATED = EventKind.ALLOCATED
RECYCLED = EventKind.RECYCLED
FREED = EventKind.FREED
RELEASED = EventKind.RELEASED
ALLOCATION_FAILED = EventKind.ALLOCATION_FAILED
SEGMENT_ALLOC = EventKind.SEGMENT_ALLOC
SEGMENT_FREE = EventKind.SEGMENT_FREE
SEGMENT_MAP = EventKind.SEGMENT_MAP
SEGMENT_UNMAP = EventKind.SEGMENT_UNMAP


@dataclass(frozen=True, slots=True)
class AllocatorEvent:
    """One thing the allocator did.

    ``size`` is the block (or segment / mapped range) size in bytes;
    ``requested`` the bytes the caller asked for (allocations and frees);
    ``pool`` is "small" or "large"; ``info`` carries kind-specific details
    (e.g. ``reason`` for RELEASED, ``device_free`` for ALLOCATION_FAILED).
    """

    kind: EventKind
    address: int
    size: int
    stream: int = 0
    requested: int = 0
    pool: str = "large"
    info: Mapping[str, Any] | None = None


Listener = Callable[[AllocatorEvent], Any]
