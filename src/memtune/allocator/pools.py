"""Pool layout, segment (device-allocation) sizing and split rules.

These are the declarative parts a :class:`~memtune.allocator.spec.PresetSpec`
is built from. Each is a small frozen object with one method, so a new policy
(e.g. the ``memtune`` preset) composes them or supplies its own.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Protocol

from sortedcontainers import SortedList

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


class SegmentSizing(Protocol):
    def segment_size(self, rounded: int, small: bool) -> int:
        """Bytes to request from the device for a ``rounded`` request that found no cached block."""


@dataclass(frozen=True)
class PyTorchSegments:
    """c10 ``get_allocation_size``: 2 MiB for small requests, 20 MiB below 10 MiB,
    otherwise the request rounded up to 2 MiB."""

    small_buffer: int = 2 * MiB
    large_buffer: int = 20 * MiB
    min_large_alloc: int = 10 * MiB
    round_large: int = 2 * MiB

    def segment_size(self, rounded: int, small: bool) -> int:
        if small:
            return self.small_buffer
        if rounded < self.min_large_alloc:
            return self.large_buffer
        r = self.round_large
        return (rounded + r - 1) // r * r


@dataclass(frozen=True)
class ExactSegments:
    """One device allocation of exactly the rounded size (CuPy, MXNet)."""

    def segment_size(self, rounded: int, small: bool) -> int:
        return rounded


@dataclass(frozen=True)
class MPSHeaps:
    """MPS heap sizes (MPSAllocator.h): 8 MB heaps for small buffers, 32 MB for
    large buffers below 10 MB, 1 GB heaps for buffers below 512 MB when not under
    memory pressure, otherwise a heap of the buffer size rounded to 2 MB."""

    small_heap: int = 8 * MiB
    large_heap: int = 32 * MiB
    xlarge_heap: int = 1 * GiB
    min_large_alloc: int = 10 * MiB
    max_xlarge_buffer: int = 512 * MiB
    round_large: int = 2 * MiB

    def segment_size(self, rounded: int, small: bool) -> int:
        if small:
            return self.small_heap
        if rounded < self.min_large_alloc:
            return self.large_heap
        if rounded < self.max_xlarge_buffer:
            return self.xlarge_heap
        r = self.round_large
        return (rounded + r - 1) // r * r

    def pressure_size(self, rounded: int) -> int:
        """Heap size under memory pressure: no 1 GB heaps, just the rounded buffer."""
        r = self.round_large
        return max(self.large_heap, (rounded + r - 1) // r * r)


class SplitRule(Protocol):
    def should_split(self, block_size: int, rounded: int, small: bool) -> bool: ...


@dataclass(frozen=True)
class PyTorchSplit:
    """c10 ``should_split``: small pool (or expandable segments) if the remainder is
    at least 512 B; large pool if the request is below ``max_split_size`` and the
    remainder is above 1 MiB."""

    max_split_size: int | None = None
    expandable: bool = False
    min_block: int = 512
    small_size: int = 1 * MiB

    def should_split(self, block_size: int, rounded: int, small: bool) -> bool:
        remaining = block_size - rounded
        if small or self.expandable:
            return remaining >= self.min_block
        return (self.max_split_size is None or rounded < self.max_split_size) and remaining > self.small_size


@dataclass(frozen=True)
class AlwaysSplit:
    """Split whenever at least ``min_remainder`` bytes would remain (CuPy chunks, heaps)."""

    min_remainder: int = 1

    def should_split(self, block_size: int, rounded: int, small: bool) -> bool:
        return block_size - rounded >= self.min_remainder


@dataclass(frozen=True)
class NeverSplit:
    """Blocks are handed out whole (MXNet's exact-size free lists)."""

    def should_split(self, block_size: int, rounded: int, small: bool) -> bool:
        return False


def first_at_least(free: SortedList, low: Any) -> Any:
    """The first item of ``free`` not below ``low`` (None if none): a free list's best fit.

    Why: one bisect of SortedList's sublist maxima, then of one sublist -- what
    ``irange(low)``'s first step does, without its Python-level steps, on every allocation
    (positional indexing would rebuild SortedList's index). ``_maxes`` and ``_lists`` are
    SortedList's layout in the sortedcontainers that pyproject.toml requires, 2.4 and
    later; tests/allocator and tests/plan/test_arena.py check the fits built on it."""
    maxes = free._maxes
    pos = bisect_left(maxes, low)
    if pos == len(maxes):
        return None
    sub = free._lists[pos]
    return sub[bisect_left(sub, low)]
