"""Shared checks for allocator tests: every invariant recomputed from scratch."""

from __future__ import annotations

from collections import Counter

import pytest

from memtune.allocator.engine import Allocator

POOLS = {"small": "small_pool", "large": "large_pool"}


def recompute(alloc: Allocator) -> dict[str, int]:
    """The "current" statistics recomputed from the layout, as ``memory_stats`` names them."""
    out: Counter[str] = Counter()
    for seg in alloc.segments():
        pool = POOLS[seg.pool]
        for where in ("all", pool):
            out[f"reserved_bytes.{where}.current"] += seg.total_size
            if not seg.is_expandable:
                out[f"segment.{where}.current"] += 1
        split = len(seg.blocks) > 1
        for b in seg.blocks:
            for where in ("all", pool):
                if b.allocated:
                    out[f"allocation.{where}.current"] += 1
                    out[f"active.{where}.current"] += 1
                    out[f"allocated_bytes.{where}.current"] += b.size
                    out[f"active_bytes.{where}.current"] += b.size
                    out[f"requested_bytes.{where}.current"] += b.requested_size
                elif split and not seg.is_expandable:
                    out[f"inactive_split.{where}.current"] += 1
                    out[f"inactive_split_bytes.{where}.current"] += b.size
    return out


def check_invariants(alloc: Allocator) -> None:
    segs = alloc.segments()
    stats = alloc.memory_stats()
    # blocks tile their segment, in address order
    for s in segs:
        at = s.address
        for b in s.blocks:
            assert b.address == at, f"gap or overlap in segment {s.address:#x}"
            assert b.size > 0
            at += b.size
        assert at == s.address + s.total_size
    # segments (device allocations / mapped runs) do not overlap
    spans = sorted((s.address, s.address + s.total_size) for s in segs)
    for (a0, a1), (b0, _b1) in zip(spans, spans[1:]):
        assert a1 <= b0, "segments overlap"
    # no two live blocks overlap; each lies inside live device memory
    live = sorted((a, a + size) for a, size, _req, _st in alloc.live_blocks())
    for (a0, a1), (b0, _b1) in zip(live, live[1:]):
        assert a1 <= b0, "live blocks overlap"
    dev = alloc.device
    device_ranges = sorted(dev.allocations() + dev.mapped_ranges())
    import bisect

    starts = [r[0] for r in device_ranges]
    for a0, a1 in live:
        i = bisect.bisect_right(starts, a0) - 1
        assert i >= 0, f"live block {a0:#x} outside device memory"
        # mapped pieces may be adjacent: extend over contiguous pieces
        end = device_ranges[i][0] + device_ranges[i][1]
        j = i + 1
        while end < a1 and j < len(device_ranges) and device_ranges[j][0] == end:
            end += device_ranges[j][1]
            j += 1
        assert a1 <= end, f"live block [{a0:#x}, {a1:#x}) not inside a live device allocation"
    # statistics equal a recomputation from scratch
    expect = recompute(alloc)
    for key, value in stats.items():
        if key.endswith(".current"):
            assert value == expect.get(key, 0), f"{key}: stats say {value}, layout says {expect.get(key, 0)}"
        if key.endswith(".peak"):
            assert value >= stats[key.replace(".peak", ".current")]
    assert stats["reserved_bytes.all.current"] >= stats["allocated_bytes.all.current"]
    assert alloc.reserved_bytes == stats["reserved_bytes.all.current"]
    # the device holds exactly what the allocator reserved (up to its alignment)
    align = dev.alignment
    held = sum((s.total_size + align - 1) // align * align for s in segs if not s.is_expandable)
    held += sum(s.total_size for s in segs if s.is_expandable)
    assert dev.counters.bytes_in_use == held


@pytest.fixture
def invariants():
    return check_invariants
