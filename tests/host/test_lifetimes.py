"""Property test over every preset: a block any live array uses is never reused or released.

Random sequences of creating arrays (each filled with its own byte pattern),
taking views, dropping arrays or views and calling empty_cache. After every
step each live array must still hold exactly its pattern (a reused block would
be overwritten by a newer array's pattern; a released one would crash or read
zeros), its memory must still be mapped by the device, and the allocator's
statistics must count exactly the live blocks.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memtune
from memtune.devices.host import HostMemory
from memtune.interop.numpy import BlockOwner, host_arrays

KiB = 1 << 10
MiB = 1 << 20

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.integers(1, 600 * KiB)),
        st.tuples(st.just("view"), st.integers(0, 50)),
        st.tuples(st.just("drop"), st.integers(0, 50)),
        st.tuples(st.just("empty_cache"), st.just(0)),
    ),
    min_size=1,
    max_size=30,
)


def _owner(arr: np.ndarray) -> BlockOwner | None:
    base = arr
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base if isinstance(base, BlockOwner) else None


def _step(op: str, arg: int, alloc, live: list, counter: list[int]) -> None:
    """One operation; a function so that no local outlives the step."""
    if op == "new":
        counter[0] = counter[0] % 255 + 1
        try:
            a = memtune.empty(arg, np.uint8, allocator=alloc)
        except memtune.OutOfMemoryError:
            return  # a small device: fine, the allocator must stay usable
        a[:] = counter[0]
        live.append((a, counter[0]))
    elif op == "view" and live:
        arr, pat = live[arg % len(live)]
        live.append((arr[arg % 7 :: 3], pat))
    elif op == "drop" and live:
        live.pop(arg % len(live))
    elif op == "empty_cache":
        memtune.empty_cache(alloc)


def _check(alloc, device: HostMemory, live: list) -> None:
    for arr, pat in live:
        owner = _owner(arr)
        assert owner is not None
        device.buffer(owner.address, owner.nbytes)  # still mapped (raises if released)
        sample = np.concatenate([arr[:: max(1, arr.size // 64)], arr[-1:]])
        assert (sample == pat).all(), "a live block was reused"
    host_arrays().drain()
    owners = {id(o): o for o in (_owner(a) for a, _ in live)}
    stats = alloc.memory_stats()
    assert stats["allocation.all.current"] == len(owners)
    assert stats["requested_bytes.all.current"] == sum(o.nbytes for o in owners.values())


@pytest.mark.parametrize("preset", memtune.presets())
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_live_blocks_are_never_reused_or_released(preset, ops):
    device = HostMemory(capacity=64 * MiB)  # megengine reserves the whole device: keep it small
    alloc = memtune.allocator(preset, device=device)
    live: list[tuple[np.ndarray, int]] = []  # (array or view, its pattern byte)
    counter = [0]
    try:
        for op, arg in ops:
            _step(op, arg, alloc, live, counter)
            _check(alloc, device, live)
    finally:
        live.clear()
        gc.collect()
        host_arrays().drain()
        leaked = alloc.memory_stats()["allocation.all.current"]
        alloc.close()
    assert leaked == 0
    assert device.counters.bytes_in_use == 0
