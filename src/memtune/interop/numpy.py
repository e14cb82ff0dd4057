"""numpy arrays whose memory is a memtune allocator block on real host memory.

``memtune.empty(shape, dtype)`` returns an ordinary :class:`numpy.ndarray`.
Its ``.base`` chain ends in a :class:`BlockOwner`, a tiny object exposing the
block through ``__array_interface__``. Every view, slice, reshape or
``np.asarray`` of the array keeps (a reference to) that owner, so the block
goes back to the allocator exactly when the last view is gone, and never
before: a block in use can be neither reused nor released, and ``empty_cache``
(which only releases segments with no live block) cannot unmap it. Pickling
copies the data into an ordinary array, as for any numpy view.

Frees run from the owner's finalizer, which may fire on any thread, inside
cyclic garbage collection, or while the same thread is in the middle of an
allocator call (a listener dropping an array, a GC pass triggered inside the
engine). Re-entering the engine there could corrupt it, so such frees are
queued and completed by the next safe call (see :class:`HostArrays`). During
interpreter shutdown nothing is freed: the process's memory goes back to the
OS anyway, and the engine may already be half torn down.
"""

from __future__ import annotations

import operator
import sys
import threading
from collections import deque
from typing import Any

import numpy as np

from memtune.errors import AllocatorUsageError

__all__ = [
    "BlockOwner",
    "HostArrays",
    "default_allocator",
    "empty",
    "empty_cache",
    "empty_like",
    "host_arrays",
    "memory_stats",
    "reset_default_allocator",
    "zeros",
]


class BlockOwner:
    """Owns one allocator block; the last link of every array's ``.base`` chain.

    When the last array viewing the block disappears, this object's finalizer
    returns the block to its allocator (via :meth:`HostArrays.release`).
    """

    __slots__ = ("__array_interface__", "allocator", "address", "nbytes", "_host", "__weakref__")

    def __init__(self, host: HostArrays, allocator: Any, address: int, nbytes: int):
        self._host = host
        self.allocator = allocator
        self.address = address
        self.nbytes = nbytes
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,), "typestr": "|u1", "version": 3}

    # Bound at class creation: module globals may already be None at shutdown.
    _finalizing = staticmethod(sys.is_finalizing)

    def __del__(self) -> None:
        host = self._host
        if host is None or self._finalizing():
            return
        self._host = None
        host.release(self.allocator, self.address)

    def __repr__(self) -> str:
        return f"<memtune block {self.address:#x} ({self.nbytes} B)>"


def _engine_lock_owned(allocator: Any) -> bool:
    """True when this thread is inside ``allocator``'s own locked section."""
    lock = getattr(allocator, "_lock", None)
    is_owned = getattr(lock, "_is_owned", None)
    return bool(is_owned and is_owned())


class HostArrays:
    """The default host allocator (created on first use) and the deferred-free queue.

    This is memtune's single piece of process-wide state for host arrays, and
    it is explicit: one instance, reachable through :func:`host_arrays`. A
    default allocator is needed so ``memtune.empty(...)`` works like
    ``numpy.empty`` without passing an allocator; it is created lazily so
    ``import memtune`` costs nothing and ``MEMTUNE_HOST_*`` variables are read
    when the first host array is made (as torch reads its allocator settings
    on first CUDA use).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._default: Any = None
        self._pending: deque[tuple[Any, int]] = deque()
        self._drain_lock = threading.Lock()
        self._local = threading.local()

    # -------------------------------------------------------- default allocator
    def default_allocator(self) -> Any:
        """The default host allocator, created on first use from ``MEMTUNE_HOST_*``."""
        alloc = self._default
        if alloc is None:
            with self._lock:
                if self._default is None:
                    self._default = _make_default_allocator()
                alloc = self._default
        return alloc

    def reset_default(self) -> None:
        """Forget the default allocator; the next use re-reads the configuration.

        Arrays made from the old one keep it alive and return their blocks to it.
        """
        with self._lock:
            self._default = None

    # ---------------------------------------------------------------- frees
    def release(self, allocator: Any, address: int) -> None:
        """Return a block to its allocator now, or queue it if that is unsafe now."""
        self._pending.append((allocator, address))
        self.drain()

    def drain(self) -> None:
        """Free queued blocks unless this thread is already inside an allocator call."""
        local = self._local
        if getattr(local, "busy", False):
            return
        pending = self._pending
        while pending:
            # Another thread draining re-checks the queue after it lets go.
            if not self._drain_lock.acquire(blocking=False):
                return
            try:
                local.busy = True
                while pending:
                    allocator, address = pending.popleft()
                    if _engine_lock_owned(allocator):
                        pending.appendleft((allocator, address))
                        return
                    if getattr(allocator, "_closed", False):
                        continue  # close() already gave every block back
                    allocator.free(address)
            finally:
                local.busy = False
                self._drain_lock.release()

    @property
    def pending(self) -> int:
        """Blocks whose arrays are gone but which are not yet back in their allocator."""
        return len(self._pending)

    # --------------------------------------------------------------- mallocs
    def malloc(self, allocator: Any, nbytes: int) -> BlockOwner:
        """Allocate ``nbytes`` from ``allocator`` and wrap the block in its owner."""
        self.drain()  # queued frees first: their memory may serve this request
        local = self._local
        outer = getattr(local, "busy", False)
        local.busy = True
        try:
            address = allocator.malloc(nbytes)
        finally:
            local.busy = outer
        owner = BlockOwner(self, allocator, address, nbytes)
        if self._pending:
            self.drain()
        return owner


def _make_default_allocator() -> Any:
    """Build the default host allocator from MEMTUNE_HOST_ALLOCATOR / _HIGH_WATERMARK / _LOW_WATERMARK."""
    from memtune.interop._host_default import make_default_allocator

    return make_default_allocator()


# The one process-wide HostArrays (see its docstring for why it exists).
_HOST = HostArrays()


def host_arrays() -> HostArrays:
    """The process's :class:`HostArrays` (default allocator + deferred frees)."""
    return _HOST


def default_allocator() -> Any:
    """The default host allocator (created on first use from ``MEMTUNE_HOST_*``)."""
    return _HOST.default_allocator()


def reset_default_allocator() -> None:
    """Drop the default host allocator so the next use re-reads the configuration."""
    _HOST.reset_default()


# ---------------------------------------------------------------- arguments
def _shape(shape: Any, where: str) -> tuple[int, ...]:
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            dims = tuple(operator.index(d) for d in shape)
        except TypeError:
            raise AllocatorUsageError(
                f"{where}: shape must be an int or a sequence of ints; got {shape!r}"
            ) from None
    if any(d < 0 for d in dims):
        raise AllocatorUsageError(f"{where}: shape dimensions must be >= 0; got {shape!r}")
    return dims


def _dtype(dtype: Any, where: str) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise AllocatorUsageError(f"{where}: dtype {dtype!r} is not a numpy dtype ({e})") from None
    if dt.hasobject:
        raise AllocatorUsageError(
            f"{where}: dtype {dt} holds Python objects; memtune arrays accept numeric, bool, "
            "string, datetime and structured dtypes without object fields"
        )
    return dt


def _order(order: Any, where: str, accepted: tuple[str, ...] = ("C", "F")) -> str:
    if not isinstance(order, str) or order.upper() not in accepted:
        raise AllocatorUsageError(f"{where}: order must be one of {', '.join(map(repr, accepted))}; got {order!r}")
    return order.upper()


def _allocator(allocator: Any, where: str) -> Any:
    if allocator is None:
        return _HOST.default_allocator()
    from memtune.devices.host import HostMemory

    device = getattr(allocator, "device", None)
    if not callable(getattr(allocator, "malloc", None)) or not callable(getattr(allocator, "free", None)):
        raise AllocatorUsageError(
            f"{where}: allocator must be a memtune allocator (memtune.allocator(preset, device=HostMemory())); "
            f"got {allocator!r}"
        )
    if not isinstance(device, HostMemory):
        raise AllocatorUsageError(
            f"{where}: the allocator's device is {device!r}, which holds no real memory; arrays need an "
            "allocator on host memory, e.g. memtune.allocator('memtune', device=memtune.HostMemory())"
        )
    return allocator


# ---------------------------------------------------------------- public API
def _new(shape: tuple[int, ...], dt: np.dtype, order: str, allocator: Any, zero: bool = False) -> np.ndarray:
    nbytes = dt.itemsize  # a subarray dtype's itemsize covers its shape, which numpy appends
    for d in shape:
        nbytes *= d
    if nbytes == 0:
        return np.empty(shape, dt, order=order)  # nothing to allocate: an ordinary array
    owner = _HOST.malloc(allocator, nbytes)
    raw = np.asarray(owner)  # uint8 view of the whole block; its .base is the owner
    if zero:
        raw.fill(0)  # a recycled block holds old data
    return np.ndarray(shape, dtype=dt, buffer=raw, order=order)


def empty(shape: Any, dtype: Any = float, *, order: str = "C", allocator: Any = None) -> np.ndarray:
    """Like :func:`numpy.empty`, with the memory from ``allocator`` (default: the host allocator).

    Meant for large arrays (tens of KiB and up): a call costs tens of
    microseconds of Python (the engine is pure Python), while a reused block
    saves the page faults a fresh large numpy array pays on every first touch.
    Zero-size arrays allocate nothing and are plain numpy arrays.
    """
    return _new(_shape(shape, "memtune.empty"), _dtype(dtype, "memtune.empty"), _order(order, "memtune.empty"),
                _allocator(allocator, "memtune.empty"))


def zeros(shape: Any, dtype: Any = float, *, order: str = "C", allocator: Any = None) -> np.ndarray:
    """Like :func:`numpy.zeros`; a recycled block is cleared, so the array is all zeros."""
    return _new(_shape(shape, "memtune.zeros"), _dtype(dtype, "memtune.zeros"), _order(order, "memtune.zeros"),
                _allocator(allocator, "memtune.zeros"), zero=True)


def empty_like(prototype: Any, dtype: Any = None, order: str = "K", shape: Any = None, *,
               allocator: Any = None) -> np.ndarray:
    """Like :func:`numpy.empty_like` (always a base ``ndarray``).

    ``order`` 'K' and 'A' give Fortran order when the prototype is Fortran-
    but not C-contiguous, else C order.
    """
    where = "memtune.empty_like"
    proto = prototype if isinstance(prototype, np.ndarray) else np.asarray(prototype)
    dt = _dtype(proto.dtype if dtype is None else dtype, where)
    o = _order(order, where, ("C", "F", "K", "A"))
    if o in ("K", "A"):
        o = "F" if proto.flags.f_contiguous and not proto.flags.c_contiguous else "C"
    dims = proto.shape if shape is None else _shape(shape, where)
    return _new(tuple(dims), dt, o, _allocator(allocator, where))


def empty_cache(allocator: Any = None) -> None:
    """Release every cached segment of the (default) host allocator back to the OS.

    Segments that still hold a block of a live array stay: nothing in use is released.
    """
    alloc = _allocator(allocator, "memtune.empty_cache")
    _HOST.drain()
    alloc.empty_cache()


def memory_stats(allocator: Any = None) -> dict[str, int]:
    """``torch.cuda.memory_stats``-style statistics of the (default) host allocator."""
    alloc = _allocator(allocator, "memtune.memory_stats")
    _HOST.drain()
    return alloc.memory_stats()
