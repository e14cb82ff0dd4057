"""Real host memory as a memtune device: one anonymous ``mmap`` per segment.

The allocator engine treats :class:`HostMemory` exactly like the simulated
device: it asks for segments (``malloc``/``free``) or, for expandable segments,
reserves address space and maps pages into it. Here those calls are the real
system calls, so a released segment (``munmap``) or unmapped page range goes
back to the operating system and the process's RSS drops.

Why libc through ctypes rather than Python's :mod:`mmap` module: numpy needs
the raw address of the memory, and taking the address of an ``mmap`` object
pins it (an exported buffer) so it could never be closed. Calling ``mmap``,
``munmap``, ``mprotect`` and ``madvise`` directly gives real addresses and
exact control over when pages return to the OS.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap as _mmap
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field

from sortedcontainers import SortedDict

from memtune.devices.base import Device, DeviceOutOfMemory
from memtune.errors import AllocatorUsageError, MemtuneWarning
from memtune.units import format_bytes

__all__ = ["HostMemory", "physical_memory", "page_size", "huge_pages_offered"]

_PROT_NONE = 0
_PROT_RW = _mmap.PROT_READ | _mmap.PROT_WRITE
_MAP_PRIVATE = _mmap.MAP_PRIVATE
_MAP_ANONYMOUS = getattr(_mmap, "MAP_ANONYMOUS", getattr(_mmap, "MAP_ANON", 0x20))
_MAP_NORESERVE = getattr(_mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0x40)
_MAP_FIXED = 0x10  # the same value on Linux and the BSDs/macOS
#: Linux >= 4.17: place at the hint or fail, never clobber an existing mapping.
_MAP_FIXED_NOREPLACE = 0x100000 if sys.platform.startswith("linux") else None
_MADV_HUGEPAGE = getattr(_mmap, "MADV_HUGEPAGE", None)
_MAP_FAILED = ctypes.c_void_p(-1).value
#: Transparent huge pages are 2 MiB on x86-64 and most arm64 kernels.
HUGE_PAGE = 2 * 1024 * 1024
_THP_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def page_size() -> int:
    """The system page size in bytes."""
    return os.sysconf("SC_PAGE_SIZE")


def physical_memory() -> int:
    """Installed physical RAM in bytes (what a fraction-of-RAM limit is relative to)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def huge_pages_offered() -> bool:
    """True when the kernel honours ``madvise(MADV_HUGEPAGE)`` (THP mode ``always`` or ``madvise``)."""
    if _MADV_HUGEPAGE is None:
        return False
    try:
        with open(_THP_SETTING) as f:
            setting = f.read()
    except OSError:
        return False
    return "[never]" not in setting


class _Libc:
    """Typed handles to the four libc calls HostMemory needs."""

    def __init__(self) -> None:
        if os.name != "posix":
            raise OSError(f"HostMemory needs a POSIX system with mmap; this is {sys.platform!r}")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        self.mmap = libc.mmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        self.munmap = libc.munmap
        self.munmap.restype = ctypes.c_int
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.mprotect = libc.mprotect
        self.mprotect.restype = ctypes.c_int
        self.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.madvise = libc.madvise
        self.madvise.restype = ctypes.c_int
        self.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _os_error(call: str, size: int) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{call} of {format_bytes(size)} failed: {os.strerror(err)}")


@dataclass
class _Reservation:
    """A virtual address range (PROT_NONE) into which page ranges are mapped."""

    size: int
    #: mapped ranges, start -> end, kept merged (adjacent ranges coalesce)
    mapped: SortedDict = field(default_factory=SortedDict)
    mapped_bytes: int = 0


class HostMemory(Device):
    """Anonymous host memory: each device allocation is its own ``mmap``.

    ``capacity`` (default: physical RAM) bounds the bytes mapped at once; a
    request beyond it raises :class:`~memtune.devices.base.DeviceOutOfMemory`,
    which the allocator turns into its usual out-of-memory path. ``alignment``
    is the address alignment of every segment (a power of two, at least the
    page size). ``huge_pages=True`` asks the kernel for transparent huge pages
    (``MADV_HUGEPAGE``) on segments of 2 MiB or more, aligning them to 2 MiB,
    where the kernel offers them (see :attr:`huge_pages_active`).
    """

    name = "host"

    def __init__(self, capacity: int | None = None, alignment: int | None = None, huge_pages: bool = False):
        page = page_size()
        if capacity is None:
            capacity = physical_memory()
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
            raise AllocatorUsageError(
                f"HostMemory capacity must be a positive number of bytes or None (physical RAM); got {capacity!r}"
            )
        if alignment is None:
            alignment = page
        if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < page or alignment & (alignment - 1):
            raise AllocatorUsageError(
                f"HostMemory alignment must be a power of two of at least the page size ({page} B); got {alignment!r}"
            )
        super().__init__(capacity, alignment)
        self.page_size = page
        self.huge_pages = bool(huge_pages)
        self.huge_pages_active = self.huge_pages and huge_pages_offered()
        if self.huge_pages and not self.huge_pages_active:
            warnings.warn(
                "HostMemory(huge_pages=True): this kernel does not offer transparent huge pages "
                f"(see {_THP_SETTING}); using normal pages",
                MemtuneWarning,
                stacklevel=2,
            )
        self._libc = _Libc()
        # Device calls may come from the engine on any thread and from array
        # finalizers; one lock keeps the bookkeeping consistent.
        self._lock = threading.Lock()
        #: address -> (mapping start, mapping length, usable size) for malloc'd segments
        self._segments: SortedDict = SortedDict()
        #: reservation start -> _Reservation, ordered so an address finds its range
        self._reservations: SortedDict = SortedDict()

    # ------------------------------------------------------------------ helpers
    def _round_pages(self, size: int) -> int:
        return -(-size // self.page_size) * self.page_size

    def _check_size(self, what: str, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise AllocatorUsageError(f"HostMemory.{what}: size must be a positive int of bytes; got {size!r}")

    def _reserve_capacity(self, size: int) -> None:
        free = self.capacity - self.counters.bytes_in_use
        if size > free:
            raise DeviceOutOfMemory(size, free, self.capacity)

    def _count_in(self, size: int) -> None:
        c = self.counters
        c.bytes_in_use += size
        if c.bytes_in_use > c.peak_bytes_in_use:
            c.peak_bytes_in_use = c.bytes_in_use

    def _map_at(self, address: int, length: int, prot: int, flags: int) -> int:
        """mmap exactly at ``address`` (warm starts); AllocatorUsageError if that range is taken."""
        if _MAP_FIXED_NOREPLACE is None or address % self.alignment:
            raise AllocatorUsageError(
                f"HostMemory cannot place memory at {address:#x} (needs Linux and {self.alignment}-byte alignment)"
            )
        got = self._libc.mmap(address, length, prot, flags | _MAP_FIXED_NOREPLACE, -1, 0)
        if got == address:
            return got
        if got is not None and got != _MAP_FAILED:  # an old kernel treated the flag as a hint
            self._libc.munmap(got, length)
        err = ctypes.get_errno()
        if err == 12:
            raise DeviceOutOfMemory(length, self.capacity - self.counters.bytes_in_use, self.capacity)
        raise AllocatorUsageError(f"HostMemory cannot place {format_bytes(length)} at {address:#x}: "
                                  f"{os.strerror(err) if err else 'address range is taken'}")

    def _map_aligned(self, length: int, prot: int, flags: int, align: int) -> int:
        """mmap ``length`` bytes at an ``align``-aligned address (over-map, trim the ends)."""
        libc = self._libc
        extra = align - self.page_size if align > self.page_size else 0
        raw = libc.mmap(None, length + extra, prot, flags, -1, 0)
        if raw is None or raw == _MAP_FAILED:
            err = ctypes.get_errno()
            if err == 12:  # ENOMEM: the OS itself refused; the allocator may free cache and retry
                raise DeviceOutOfMemory(length, self.capacity - self.counters.bytes_in_use, self.capacity)
            raise _os_error("mmap", length + extra)
        if not extra:
            return raw
        start = -(-raw // align) * align
        head, tail = start - raw, raw + length + extra - (start + length)
        if head:
            libc.munmap(raw, head)
        if tail:
            libc.munmap(start + length, tail)
        return start

    def _advise(self, address: int, length: int) -> None:
        if self.huge_pages_active and length >= HUGE_PAGE:
            self._libc.madvise(address, length, _MADV_HUGEPAGE)  # advisory: failure is harmless

    def _segment_alignment(self, length: int) -> int:
        if self.huge_pages_active and length >= HUGE_PAGE:
            return max(self.alignment, HUGE_PAGE)
        return self.alignment

    # ------------------------------------------------------------ Device API
    def malloc(self, size: int) -> int:
        """Map a fresh anonymous segment of at least ``size`` bytes (whole pages)."""
        return self._malloc(size, None)

    def malloc_at(self, address: int, size: int) -> int:
        """Map a segment exactly at ``address`` (warm starts); AllocatorUsageError if taken."""
        return self._malloc(size, address)

    def _malloc(self, size: int, at: int | None) -> int:
        self._check_size("malloc", size)
        length = self._round_pages(size)
        with self._lock:
            self._reserve_capacity(length)
            flags = _MAP_PRIVATE | _MAP_ANONYMOUS
            if at is None:
                address = self._map_aligned(length, _PROT_RW, flags, self._segment_alignment(length))
            else:
                address = self._map_at(at, length, _PROT_RW, flags)
            self._advise(address, length)
            self._segments[address] = (address, length, size)
            self.counters.mallocs += 1
            self._count_in(length)
        return address

    def free(self, address: int) -> None:
        """Unmap a segment from :meth:`malloc` or a whole reservation; its pages go back to the OS."""
        with self._lock:
            seg = self._segments.pop(address, None)
            if seg is not None:
                start, length, _ = seg
                if self._libc.munmap(start, length) != 0:
                    self._segments[address] = seg
                    raise _os_error("munmap", length)
                self.counters.frees += 1
                self.counters.bytes_in_use -= length
                return
            res = self._reservations.get(address)
            if res is None:
                raise AllocatorUsageError(
                    f"HostMemory.free: {address:#x} is not a live segment or reservation of this device"
                )
            if self._libc.munmap(address, res.size) != 0:
                raise _os_error("munmap", res.size)
            del self._reservations[address]
            self.counters.frees += 1
            self.counters.unmaps += len(res.mapped)
            self.counters.bytes_in_use -= res.mapped_bytes

    def reserve_address_space(self, size: int, address: int | None = None) -> int:
        """Reserve ``size`` bytes of address space (PROT_NONE, no RAM, no capacity).

        ``address`` asks for that exact place (warm starts); AllocatorUsageError if taken.
        """
        self._check_size("reserve_address_space", size)
        length = self._round_pages(size)
        with self._lock:
            flags = _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE
            if address is None:
                address = self._map_aligned(length, _PROT_NONE, flags, self._segment_alignment(length))
            else:
                address = self._map_at(address, length, _PROT_NONE, flags)
            self._reservations[address] = _Reservation(length)
        return address

    def release_address_space(self, address: int) -> None:
        """Give back a whole reservation (any pages still mapped in it go back to the OS too)."""
        with self._lock:
            if address not in self._reservations:
                raise AllocatorUsageError(f"HostMemory.release_address_space: no reservation starts at {address!r}")
        self.free(address)

    def _reservation_of(self, what: str, address: int, size: int) -> tuple[int, _Reservation]:
        i = self._reservations.bisect_right(address) - 1
        if i >= 0:
            start, res = self._reservations.peekitem(i)
            if address + size <= start + res.size:
                return start, res
        raise AllocatorUsageError(
            f"HostMemory.{what}: [{address:#x}, +{size}) is not inside a reservation of this device"
        )

    def map(self, address: int, size: int) -> None:
        """Back ``[address, address+size)`` of a reservation with read-write pages (zero-filled)."""
        self._check_size("map", size)
        if address % self.page_size or size % self.page_size:
            raise AllocatorUsageError(f"HostMemory.map: address and size must be page multiples ({self.page_size} B)")
        with self._lock:
            _, res = self._reservation_of("map", address, size)
            end = address + size
            m = res.mapped
            i = m.bisect_right(address) - 1
            if (i >= 0 and m.peekitem(i)[1] > address) or (i + 1 < len(m) and m.peekitem(i + 1)[0] < end):
                raise AllocatorUsageError(f"HostMemory.map: [{address:#x}, +{size}) overlaps mapped pages")
            self._reserve_capacity(size)
            if self._libc.mprotect(address, size, _PROT_RW) != 0:
                if ctypes.get_errno() == 12:
                    raise DeviceOutOfMemory(size, self.capacity - self.counters.bytes_in_use, self.capacity)
                raise _os_error("mprotect", size)
            self._advise(address, size)
            # merge with the neighbours
            start = address
            if i >= 0 and m.peekitem(i)[1] == address:
                start = m.peekitem(i)[0]
            after = m.get(end)
            if after is not None:
                del m[end]
                end = after
            m[start] = end
            res.mapped_bytes += size
            self.counters.maps += 1
            self._count_in(size)

    def unmap(self, address: int, size: int) -> None:
        """Return ``[address, address+size)`` to the OS and make it inaccessible again."""
        self._check_size("unmap", size)
        with self._lock:
            _, res = self._reservation_of("unmap", address, size)
            end = address + size
            m = res.mapped
            i = m.bisect_right(address) - 1
            if i < 0 or m.peekitem(i)[1] < end:
                raise AllocatorUsageError(f"HostMemory.unmap: [{address:#x}, +{size}) is not fully mapped")
            start, stop = m.peekitem(i)
            # Replacing the range with a fresh PROT_NONE mapping drops its pages at once.
            flags = _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE | _MAP_FIXED
            if self._libc.mmap(address, size, _PROT_NONE, flags, -1, 0) != address:
                raise _os_error("mmap(MAP_FIXED)", size)
            del m[start]
            if start < address:
                m[start] = address
            if end < stop:
                m[end] = stop
            res.mapped_bytes -= size
            self.counters.unmaps += 1
            self.counters.bytes_in_use -= size

    def buffer(self, address: int, size: int) -> memoryview:
        """Writable bytes ``[address, address+size)``, which must lie in one live segment or mapped range.

        The memoryview does not keep the memory alive: it is valid only while
        the segment is (memtune's arrays hold the allocator block for that).
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise AllocatorUsageError(f"HostMemory.buffer: size must be a non-negative int; got {size!r}")
        with self._lock:
            if not self._contains(address, size):
                raise AllocatorUsageError(
                    f"HostMemory.buffer: [{address:#x}, +{size}) is not inside a live segment or mapped range"
                )
        return memoryview((ctypes.c_char * size).from_address(address)).cast("B")

    def _contains(self, address: int, size: int) -> bool:
        i = self._segments.bisect_right(address) - 1
        if i >= 0:
            start, (_, _, usable) = self._segments.peekitem(i)
            if address + size <= start + usable:
                return True
        i = self._reservations.bisect_right(address) - 1
        if i < 0:
            return False
        _, res = self._reservations.peekitem(i)
        j = res.mapped.bisect_right(address) - 1
        return j >= 0 and res.mapped.peekitem(j)[1] >= address + size

    # ------------------------------------------------------------- lifecycle
    @property
    def live_segments(self) -> int:
        """Segments and reservations currently mapped."""
        return len(self._segments) + len(self._reservations)

    def release_all(self) -> None:
        """Unmap everything this device still holds. Only safe when nothing uses the memory."""
        with self._lock:
            for start, length, _ in self._segments.values():
                self._libc.munmap(start, length)
            for start, res in self._reservations.items():
                self._libc.munmap(start, res.size)
            self._segments.clear()
            self._reservations.clear()
            self.counters.bytes_in_use = 0

    def __del__(self) -> None:
        # An unreachable device has no memtune arrays left (they hold the
        # allocator, which holds the device), so its mappings can go. At
        # interpreter exit the OS reclaims everything; touch nothing then.
        if sys is not None and not sys.is_finalizing() and getattr(self, "_libc", None) is not None:
            self.release_all()

    def __repr__(self) -> str:
        return (
            f"HostMemory(capacity={format_bytes(self.capacity)}, alignment={self.alignment}, "
            f"huge_pages={self.huge_pages_active}, in_use={format_bytes(self.counters.bytes_in_use)})"
        )
