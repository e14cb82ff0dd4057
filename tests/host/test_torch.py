"""memtune.torch: CPU tensors backed by the pool, with the same lifetime guarantees."""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest

import memtune
from memtune.errors import AllocatorUsageError

torch = pytest.importorskip("torch")
mt = memtune.torch

MiB = 1 << 20


def current(alloc) -> int:
    memtune.interop.numpy.host_arrays().drain()
    return alloc.memory_stats()["allocation.all.current"]


def test_import_memtune_does_not_import_torch():
    code = "import sys, memtune; memtune.empty; memtune.zeros; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_empty_and_zeros_are_cpu_tensors_on_pool_blocks(host_allocator):
    alloc = host_allocator()
    t = mt.empty(64, 32, dtype=torch.float32, allocator=alloc)
    assert isinstance(t, torch.Tensor) and t.device.type == "cpu"
    assert t.shape == (64, 32) and t.dtype == torch.float32 and t.is_contiguous()
    assert current(alloc) == 1
    t.fill_(2.5)
    assert float((t @ t.T)[0, 0]) == pytest.approx(2.5 * 2.5 * 32)
    z = mt.zeros((8, 8), dtype=torch.bfloat16, allocator=alloc)  # a dtype numpy lacks
    assert z.dtype == torch.bfloat16 and not z.any()
    i = mt.empty(torch.Size([3, 5]), dtype=torch.int64, allocator=alloc)
    assert i.shape == (3, 5)
    d = mt.empty(4, allocator=alloc)
    assert d.dtype == torch.get_default_dtype()


def test_tensor_views_keep_the_block_alive(host_allocator):
    alloc = host_allocator()
    t = mt.empty(MiB, dtype=torch.uint8, allocator=alloc)
    t.fill_(7)
    views = [t[10:], t.view(torch.int32), t.reshape(1024, -1).T, t.numpy()]
    del t
    gc.collect()
    while views:
        assert current(alloc) == 1
        v = views.pop()
        arr = v.numpy() if isinstance(v, torch.Tensor) else v
        as_bytes = arr if arr.dtype == np.uint8 else arr.view(np.uint8)  # the int32 view is contiguous
        assert (as_bytes == 7).all()
        del v, arr, as_bytes
    assert current(alloc) == 0


def test_autograd_and_ops_on_pool_tensors(host_allocator):
    alloc = host_allocator()
    w = mt.zeros(16, 4, allocator=alloc).requires_grad_()
    x = torch.ones(2, 16)
    (x @ w).sum().backward()
    assert torch.equal(w.grad, torch.full((16, 4), 2.0))
    del w, x
    gc.collect()
    assert current(alloc) == 0


def test_like_helpers_and_errors(host_allocator):
    alloc = host_allocator()
    src = torch.randn(5, 6, dtype=torch.float64)
    e = mt.empty_like(src, allocator=alloc)
    z = mt.zeros_like(src, dtype=torch.float16, allocator=alloc)
    assert e.shape == src.shape and e.dtype == torch.float64
    assert z.dtype == torch.float16 and not z.any()
    assert mt.empty(0, 3, allocator=alloc).shape == (0, 3)
    with pytest.raises(AllocatorUsageError, match="must be a torch.dtype"):
        mt.empty(3, dtype=np.float32, allocator=alloc)
    with pytest.raises(AllocatorUsageError, match="shape dimensions must be >= 0"):
        mt.empty(-3, allocator=alloc)


def test_tensor_dropped_and_pool_reuses_the_block(host_allocator):
    alloc = host_allocator()
    t = mt.empty(4 * MiB, dtype=torch.uint8, allocator=alloc)
    addr = t.data_ptr()
    del t
    assert mt.empty(4 * MiB, dtype=torch.uint8, allocator=alloc).data_ptr() == addr
