"""CPU torch tensors backed by a memtune allocator (``memtune.torch``).

Reached as ``memtune.torch`` (a lazy export), so ``import memtune`` never
imports torch; this module imports it on first use.

A tensor is made zero-copy from a memtune numpy block: ``torch.from_numpy``
of the block's uint8 array, reinterpreted as the requested dtype. torch's
storage holds a reference to that numpy array, whose ``.base`` chain ends in
the block's owner, so the block returns to the allocator exactly when the
last tensor (view, slice, ``.numpy()`` of it, ...) sharing the storage is
gone. Any torch dtype works, including ones numpy lacks (bfloat16).
"""

from __future__ import annotations

from typing import Any

try:
    import torch as _torch
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "memtune.torch needs PyTorch; install it with: pip install 'memtune[torch]'"
    ) from e

import numpy as np

from memtune.errors import AllocatorUsageError
from memtune.interop import numpy as _mnp

__all__ = ["empty", "zeros", "empty_like", "zeros_like", "empty_cache", "memory_stats", "from_block"]


def _size(size: tuple[Any, ...], where: str) -> tuple[int, ...]:
    """Accept torch's forms: ``empty(2, 3)``, ``empty((2, 3))``, ``empty(torch.Size([2, 3]))``."""
    if len(size) == 1 and not isinstance(size[0], int) and not hasattr(size[0], "__index__"):
        size = tuple(size[0])
    return _mnp._shape(size, where)


def _dtype(dtype: Any, where: str) -> _torch.dtype:
    if dtype is None:
        return _torch.get_default_dtype()
    if not isinstance(dtype, _torch.dtype):
        raise AllocatorUsageError(f"{where}: dtype must be a torch.dtype such as torch.float32; got {dtype!r}")
    if dtype.is_complex or dtype.is_floating_point or dtype in _INT_DTYPES:
        return dtype
    raise AllocatorUsageError(f"{where}: dtype {dtype} is not a plain numeric dtype memtune can back")


_INT_DTYPES = {
    getattr(_torch, n)
    for n in ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
    if hasattr(_torch, n)
}


def _tensor(shape: tuple[int, ...], dtype: _torch.dtype, allocator: Any, zero: bool, where: str) -> _torch.Tensor:
    alloc = _mnp._allocator(allocator, where)
    itemsize = _torch.empty((), dtype=dtype).element_size()
    numel = 1
    for d in shape:
        numel *= d
    if numel == 0:
        return _torch.empty(shape, dtype=dtype)  # nothing to allocate: an ordinary tensor
    raw = _mnp._new((numel * itemsize,), np.dtype(np.uint8), "C", alloc, zero=zero)
    return from_block(raw).view(dtype).view(shape)


def from_block(array: np.ndarray) -> _torch.Tensor:
    """Zero-copy CPU tensor over a (memtune) numpy array; the tensor keeps the array's block alive."""
    return _torch.from_numpy(array)


def empty(*size: Any, dtype: Any = None, allocator: Any = None) -> _torch.Tensor:
    """Like :func:`torch.empty` on CPU, with the memory from ``allocator`` (default: the host allocator)."""
    return _tensor(_size(size, "memtune.torch.empty"), _dtype(dtype, "memtune.torch.empty"), allocator, False,
                   "memtune.torch.empty")


def zeros(*size: Any, dtype: Any = None, allocator: Any = None) -> _torch.Tensor:
    """Like :func:`torch.zeros` on CPU, with the memory from ``allocator``."""
    return _tensor(_size(size, "memtune.torch.zeros"), _dtype(dtype, "memtune.torch.zeros"), allocator, True,
                   "memtune.torch.zeros")


def empty_like(tensor: _torch.Tensor, *, dtype: Any = None, allocator: Any = None) -> _torch.Tensor:
    """A contiguous pool-backed tensor with ``tensor``'s shape (and dtype unless given)."""
    dt = tensor.dtype if dtype is None else dtype
    return _tensor(tuple(tensor.shape), _dtype(dt, "memtune.torch.empty_like"), allocator, False,
                   "memtune.torch.empty_like")


def zeros_like(tensor: _torch.Tensor, *, dtype: Any = None, allocator: Any = None) -> _torch.Tensor:
    """A zero-filled pool-backed tensor with ``tensor``'s shape (and dtype unless given)."""
    dt = tensor.dtype if dtype is None else dtype
    return _tensor(tuple(tensor.shape), _dtype(dt, "memtune.torch.zeros_like"), allocator, True,
                   "memtune.torch.zeros_like")


def empty_cache(allocator: Any = None) -> None:
    """Release the (default) host allocator's cached segments (``torch.cuda.empty_cache`` for CPU)."""
    _mnp.empty_cache(allocator)


def memory_stats(allocator: Any = None) -> dict[str, int]:
    """Statistics of the (default) host allocator, with ``torch.cuda.memory_stats`` key names."""
    return _mnp.memory_stats(allocator)
