"""memtune.empty / zeros / empty_like: ordinary numpy arrays whose memory is an allocator block.

Lifetime is checked through the allocator's own statistics: a block counts as
allocated exactly while some array still views it.
"""

from __future__ import annotations

import copy
import gc
import pickle

import numpy as np
import pytest

import memtune
from memtune.errors import AllocatorUsageError
from memtune.interop.numpy import BlockOwner

MiB = 1 << 20


def allocated(alloc) -> int:
    memtune.interop.numpy.host_arrays().drain()
    return alloc.memory_stats()["allocated_bytes.all.current"]


def reserved(alloc) -> int:
    return alloc.memory_stats()["reserved_bytes.all.current"]


def owner_of(arr: np.ndarray) -> object:
    base = arr
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base


def test_empty_is_a_plain_ndarray_on_an_allocator_block(host_allocator):
    alloc = host_allocator()
    a = memtune.empty((300, 200), np.float32, allocator=alloc)
    assert type(a) is np.ndarray
    assert a.shape == (300, 200) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
    assert a.flags.aligned
    owner = owner_of(a)
    assert isinstance(owner, BlockOwner)
    assert a.ctypes.data == owner.address
    assert allocated(alloc) >= a.nbytes
    # the block lies inside memory the device really holds
    assert alloc.device.buffer(owner.address, a.nbytes) is not None


def test_numpy_behaviour_views_slicing_arithmetic(host_allocator):
    alloc = host_allocator()
    a = memtune.empty((64, 64), np.float64, allocator=alloc)
    a[:] = np.arange(64 * 64).reshape(64, 64)
    ref = np.arange(64 * 64, dtype=np.float64).reshape(64, 64)
    np.testing.assert_array_equal(a, ref)
    np.testing.assert_array_equal(a[3:10, ::3], ref[3:10, ::3])
    np.testing.assert_array_equal(a.T @ a, ref.T @ ref)
    np.testing.assert_array_equal((a * 2 + 1).sum(axis=0), (ref * 2 + 1).sum(axis=0))
    a[5] += 1
    assert a[5, 0] == ref[5, 0] + 1
    b = a.reshape(-1)
    b[0] = -7
    assert a[0, 0] == -7  # a reshape is a view of the same block
    assert np.shares_memory(np.asarray(a), a)
    c = copy.deepcopy(a)
    assert not np.shares_memory(c, a)


def test_last_view_keeps_the_block(host_allocator):
    alloc = host_allocator()
    base = allocated(alloc)
    a = memtune.empty(4 * MiB, np.uint8, allocator=alloc)
    a[:] = 3
    views = [a[1000:], a.reshape(4, -1)[2], np.asarray(a), a.view(np.int32)[::2], memoryview(a)]
    held = allocated(alloc)
    assert held - base >= 4 * MiB
    del a
    gc.collect()
    while views:
        assert allocated(alloc) == held, "block freed while a view still exists"
        v = np.asarray(views.pop())
        assert (v == (0x03030303 if v.dtype == np.int32 else 3)).all()
        del v
    assert allocated(alloc) == base


def test_pickle_round_trip_gives_an_ordinary_copy(host_allocator):
    alloc = host_allocator()
    a = memtune.empty((100, 50), np.int64, allocator=alloc)
    a[:] = np.arange(5000).reshape(100, 50)
    for obj in (a, a[::3, 7:]):
        back = pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
        np.testing.assert_array_equal(back, obj)
        assert not isinstance(owner_of(back), BlockOwner)
        assert not np.shares_memory(back, a)
    held = allocated(alloc)
    del a, obj
    assert allocated(alloc) < held  # the pickled copies do not hold the block
    np.testing.assert_array_equal(back, np.arange(5000).reshape(100, 50)[::3, 7:])


def test_use_after_empty_cache_while_alive(host_allocator, rss):
    alloc = host_allocator()
    a = memtune.empty(64 * MiB, np.uint8, allocator=alloc)
    a[:] = 9
    before = reserved(alloc)
    alloc.empty_cache()
    memtune.empty_cache(alloc)
    # the segment holding a live block is neither released nor reused
    assert reserved(alloc) == before
    assert (a == 9).all()
    b = memtune.empty(64 * MiB, np.uint8, allocator=alloc)
    b[:] = 1
    assert not np.shares_memory(a, b)
    assert (a == 9).all()
    del a, b
    gc.collect()
    alloc.empty_cache()
    assert reserved(alloc) == 0


def test_freed_block_is_reused(host_allocator):
    alloc = host_allocator()
    a = memtune.empty(8 * MiB, np.uint8, allocator=alloc)
    addr = a.ctypes.data
    del a
    b = memtune.empty(8 * MiB, np.uint8, allocator=alloc)
    assert b.ctypes.data == addr  # same block again: cached, no new device memory
    assert alloc.memory_stats()["num_device_alloc"] == 1 or reserved(alloc) <= 40 * MiB


def test_zeros_clears_a_recycled_block(host_allocator):
    alloc = host_allocator()
    a = memtune.empty(MiB, np.uint8, allocator=alloc)
    a[:] = 0xAB
    del a
    z = memtune.zeros((512, 256), np.float64, allocator=alloc, order="F")
    assert z.flags.f_contiguous and z.shape == (512, 256)
    assert not z.any()


def test_dtypes_orders_and_empty_like(host_allocator):
    alloc = host_allocator()
    for dt in (np.bool_, np.int8, np.uint16, np.float16, np.complex128, "M8[ns]", "U7",
               np.dtype([("x", "<f4"), ("y", "<i8")]), "(2,3)f4"):
        a = memtune.zeros((5, 4), dt, allocator=alloc)
        ref = np.zeros((5, 4), dt)
        assert a.shape == ref.shape and a.dtype == ref.dtype
        assert a.tobytes() == ref.tobytes()
    f = memtune.empty((6, 7), np.float32, order="F", allocator=alloc)
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    like = memtune.empty_like(f, allocator=alloc)
    assert like.flags.f_contiguous and like.shape == f.shape and like.dtype == f.dtype
    assert isinstance(owner_of(like), BlockOwner) and not np.shares_memory(like, f)
    c = memtune.empty_like(f, dtype=np.int16, order="C", shape=(3, 3), allocator=alloc)
    assert c.shape == (3, 3) and c.dtype == np.int16 and c.flags.c_contiguous
    lst = memtune.empty_like([[1, 2, 3]], allocator=alloc)
    assert lst.shape == (1, 3)


def test_zero_size_arrays_allocate_nothing(host_allocator):
    alloc = host_allocator()
    a = memtune.empty((0, 5), np.float64, allocator=alloc)
    assert a.shape == (0, 5) and a.size == 0
    assert alloc.memory_stats()["allocation.all.current"] == 0


def test_bad_arguments_raise_memtune_errors(host_allocator):
    alloc = host_allocator()
    cases = [
        (dict(shape=(2, -1)), "shape dimensions must be >= 0"),
        (dict(shape="big"), "shape must be an int or a sequence of ints"),
        (dict(shape=3, dtype="float77"), "is not a numpy dtype"),
        (dict(shape=3, dtype=object), "holds Python objects"),
        (dict(shape=3, dtype=[("a", "O")]), "holds Python objects"),
        (dict(shape=3, order="X"), "order must be one of"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(AllocatorUsageError, match=msg):
            memtune.empty(allocator=alloc, **kwargs)
    with pytest.raises(AllocatorUsageError, match="must be a memtune allocator"):
        memtune.empty(3, allocator="pytorch-cuda")
    assert alloc.memory_stats()["allocation.all.current"] == 0


def test_an_allocator_on_a_simulated_device_is_refused():
    sim = memtune.allocator("pytorch-cuda", capacity="1GiB")
    with pytest.raises(AllocatorUsageError, match="holds no real memory"):
        memtune.empty(10, allocator=sim)


def test_out_of_memory_is_clear_and_the_allocator_stays_usable(host_allocator):
    alloc = host_allocator(capacity=64 * MiB)
    keep = memtune.empty(40 * MiB, np.uint8, allocator=alloc)
    with pytest.raises(memtune.OutOfMemoryError) as info:
        memtune.empty(40 * MiB, np.uint8, allocator=alloc)
    assert info.value.requested >= 40 * MiB
    assert "40" in str(info.value) or "MiB" in str(info.value)
    assert isinstance(info.value, MemoryError)
    assert alloc.memory_stats()["num_ooms"] == 1
    keep[:] = 1  # still valid
    del keep
    c = memtune.empty(40 * MiB, np.uint8, allocator=alloc)  # fits once the first is gone
    c[:] = 2
    assert (c == 2).all()


def test_no_leaks_allocate_and_drop_many(host_allocator, rss):
    alloc = host_allocator()
    gc.collect()
    stats0 = alloc.memory_stats()
    rss0 = rss()
    rng = np.random.default_rng(0)
    live = []
    for i in range(400):
        n = int(rng.integers(1, 6 * MiB))
        a = memtune.empty(n, np.uint8, allocator=alloc)
        a[:: 4096] = i % 256
        if rng.random() < 0.3:
            live.append(a[::2])  # keep a view of some of them for a while
        if len(live) > 8:
            live.pop(0)
    del a
    live.clear()
    gc.collect()
    stats = alloc.memory_stats()
    assert stats["allocated_bytes.all.current"] == stats0["allocated_bytes.all.current"] == 0
    assert stats["allocation.all.current"] == 0
    assert stats["active_bytes.all.current"] == 0
    alloc.empty_cache()
    assert alloc.memory_stats()["reserved_bytes.all.current"] == 0
    assert alloc.device.counters.bytes_in_use == 0
    assert rss() - rss0 < 16 * MiB  # RSS back at its baseline (allowing interpreter noise)


def test_arrays_outliving_a_closed_allocator_do_not_complain(host_allocator, recwarn):
    import subprocess
    import sys

    code = (
        "import numpy as np, memtune\n"
        "alloc = memtune.allocator('memtune', device=memtune.HostMemory())\n"
        "a = memtune.empty(1000, allocator=alloc)\n"
        "alloc.close()\n"
        "del a\n"
        "b = memtune.empty(10)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr
