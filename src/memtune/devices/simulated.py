"""A simulated device: address ranges and counters, no bytes.

It lets an allocator run against any capacity (an 80 GiB GPU on a laptop), so
replays and sweeps measure policies rather than hardware. Physical capacity is
consumed by :meth:`SimulatedDevice.malloc` and by mapped pages of virtual
reservations (expandable segments); reservations themselves are free, as with
``cuMemAddressReserve``.

Addresses matter: caching allocators break best-fit ties between equal-sized
free blocks by address, so where the device puts each allocation steers later
choices. By default addresses are handed out top-down (highest free range
first, and below the lowest address placed explicitly), the way the CUDA driver
was seen to hand out cudaMalloc addresses in the shared PyTorch snapshots; with
that, replays reproduce the real device allocations exactly. A caller may also
ask for a specific address (:meth:`malloc_at`, ``reserve_address_space(...,
address=)``) so a warm-started replay uses the very addresses of a trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from sortedcontainers import SortedDict

from memtune.devices.base import Device, DeviceOutOfMemory

#: Lowest address handed out (keeps 0 and small integers out of the way).
_BASE = 1 << 32
#: End of the simulated address space (large enough for reservations of 1.125x any capacity).
_LIMIT = 1 << 62


@dataclass(frozen=True)
class CostModel:
    """Modeled time of device calls: a fixed cost per call plus a cost per byte.

    Only differences between policies matter (how many device calls a policy
    makes), so the numbers are the caller's estimate, not a claim about hardware.
    """

    malloc_seconds: float = 0.0
    free_seconds: float = 0.0
    map_seconds: float = 0.0
    unmap_seconds: float = 0.0
    seconds_per_byte: float = 0.0

    def __post_init__(self) -> None:
        for name in ("malloc_seconds", "free_seconds", "map_seconds", "unmap_seconds", "seconds_per_byte"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"CostModel.{name} must be a non-negative number of seconds; got {value!r}")


@dataclass
class _Range:
    size: int
    kind: str  # "alloc" or "reserve"
    mapped: SortedDict | None = None  # reserve only: offset -> size of mapped pieces


class SimulatedDevice(Device):
    """A device with ``capacity`` bytes that hands out address ranges.

    ``alignment`` rounds every allocation's footprint (addresses and the bytes
    counted against capacity), as cudaMalloc does with its 512 B granularity.
    ``placement`` is "top-down" (default, like the CUDA driver) or "bottom-up"
    (lowest free address first). ``cost_model`` (optional) accumulates modeled
    seconds of device calls in ``counters.modeled_seconds``.
    """

    name = "simulated"

    def __init__(self, capacity: int, alignment: int = 512, cost_model: CostModel | None = None,
                 placement: str = "top-down"):
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise ValueError(f"device capacity must be an integer number of bytes; got {capacity!r}")
        if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
            raise ValueError(f"device alignment must be a positive power of two; got {alignment!r}")
        if placement not in ("top-down", "bottom-up"):
            raise ValueError(f"placement must be 'top-down' or 'bottom-up'; got {placement!r}")
        super().__init__(capacity, alignment)
        self.cost_model = cost_model
        self.placement = placement
        # start address -> _Range, for allocations and reservations alike
        self._ranges: SortedDict = SortedDict()
        # free holes of the address space: start -> size (together they cover every free byte)
        self._holes: SortedDict = SortedDict({_BASE: _LIMIT - _BASE})
        # top-down placement hands out addresses below the lowest explicitly placed range
        # (a warm start's trace addresses), the way the CUDA driver grows downwards
        self._ceiling = _LIMIT

    # ------------------------------------------------------------------ helpers
    def _align(self, size: int) -> int:
        a = self.alignment
        return (size + a - 1) // a * a

    def _check_size(self, size: int, what: str) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise ValueError(f"{what} size must be a positive integer number of bytes; got {size!r}")

    def _charge(self, seconds: float, nbytes: int) -> None:
        cm = self.cost_model
        if cm is not None:
            self.counters.modeled_seconds += seconds + cm.seconds_per_byte * nbytes

    def _use(self, nbytes: int) -> None:
        c = self.counters
        if c.bytes_in_use + nbytes > self.capacity:
            raise DeviceOutOfMemory(nbytes, self.capacity - c.bytes_in_use, self.capacity)
        c.bytes_in_use += nbytes
        if c.bytes_in_use > c.peak_bytes_in_use:
            c.peak_bytes_in_use = c.bytes_in_use

    def _place(self, size: int, address: int | None) -> int:
        """Find (or check) an address range of ``size`` bytes; does not record it."""
        if address is not None:
            if address % self.alignment or address < _BASE or address + size > _LIMIT:
                raise ValueError(
                    f"cannot place {size} B at address {address:#x}: it must be a multiple of "
                    f"{self.alignment} inside [{_BASE:#x}, {_LIMIT:#x})"
                )
            if not self._is_free(address, size):
                raise ValueError(f"cannot place {size} B at address {address:#x}: the range is in use")
            return address
        h = self._holes
        if self.placement == "bottom-up":
            for start, hsize in h.items():  # lowest address first
                if hsize >= size:
                    return start
        else:
            ceiling = self._ceiling
            keys = h.keys()
            for i in range(h.bisect_left(ceiling) - 1, -1, -1):  # highest address below the ceiling first
                start = keys[i]
                end = min(start + h[start], ceiling)
                if end - start >= size:
                    return end - size
            for start in reversed(h.keys()):  # nothing below the ceiling: anywhere
                if h[start] >= size:
                    return start + h[start] - size
        raise DeviceOutOfMemory(size, self.free_bytes, self.capacity)

    def _is_free(self, address: int, size: int) -> bool:
        h = self._holes
        i = h.bisect_right(address) - 1
        if i < 0:
            return False
        start = h.keys()[i]
        return address + size <= start + h[start]

    def _claim(self, address: int, size: int) -> None:
        """Remove [address, address+size) (inside one hole) from the free space."""
        h = self._holes
        i = h.bisect_right(address) - 1
        start = h.keys()[i]
        hend = start + h.pop(start)
        end = address + size
        if start < address:
            h[start] = address - start
        if end < hend:
            h[end] = hend - end

    def _add_hole(self, address: int, size: int) -> None:
        h = self._holes
        end = address + size
        nxt = h.pop(end, None)
        if nxt is not None:
            end += nxt
        i = h.bisect_left(address)
        if i:
            prev = h.keys()[i - 1]
            if prev + h[prev] == address:
                address = prev
        h[address] = end - address

    def _release(self, address: int) -> _Range:
        rng = self._ranges.pop(address)
        self._add_hole(address, rng.size)
        return rng

    # --------------------------------------------------------------- public API
    def malloc(self, size: int) -> int:
        self._check_size(size, "malloc")
        footprint = self._align(size)
        address = self._place(footprint, None)
        self._use(footprint)
        self._claim(address, footprint)
        self._ranges[address] = _Range(footprint, "alloc")
        self.counters.mallocs += 1
        self._charge(self.cost_model.malloc_seconds if self.cost_model else 0.0, footprint)
        return address

    def malloc_at(self, address: int, size: int) -> int:
        """Allocate ``size`` bytes exactly at ``address`` (warm starts). ValueError if taken."""
        self._check_size(size, "malloc")
        footprint = self._align(size)
        self._place(footprint, address)
        self._use(footprint)
        self._claim(address, footprint)
        self._ranges[address] = _Range(footprint, "alloc")
        self._ceiling = min(self._ceiling, address)
        self.counters.mallocs += 1
        self._charge(self.cost_model.malloc_seconds if self.cost_model else 0.0, footprint)
        return address

    def free(self, address: int) -> None:
        rng = self._ranges.get(address)
        if rng is None or rng.kind != "alloc":
            raise ValueError(f"free of {address!r}: no device allocation starts there")
        self._release(address)
        self.counters.bytes_in_use -= rng.size
        self.counters.frees += 1
        self._charge(self.cost_model.free_seconds if self.cost_model else 0.0, rng.size)

    def reserve_address_space(self, size: int, address: int | None = None) -> int:
        """Reserve a virtual range; costs no capacity until pages are mapped."""
        self._check_size(size, "reservation")
        footprint = self._align(size)
        explicit = address is not None
        address = self._place(footprint, address)
        self._claim(address, footprint)
        self._ranges[address] = _Range(footprint, "reserve", SortedDict())
        if explicit:
            self._ceiling = min(self._ceiling, address)
        return address

    def release_address_space(self, address: int) -> None:
        """Give back a reservation; every page in it must already be unmapped."""
        rng = self._ranges.get(address)
        if rng is None or rng.kind != "reserve":
            raise ValueError(f"release of {address!r}: no reservation starts there")
        if rng.mapped:
            raise ValueError(f"release of reservation {address:#x}: {len(rng.mapped)} ranges are still mapped")
        self._release(address)

    def _reservation(self, address: int, size: int) -> tuple[int, _Range]:
        r = self._ranges
        i = r.bisect_right(address) - 1
        if i >= 0:
            start = r.keys()[i]
            rng = r[start]
            if rng.kind == "reserve" and address + size <= start + rng.size:
                return start, rng
        raise ValueError(f"range [{address:#x}, +{size}) is not inside a reservation")

    def map(self, address: int, size: int) -> None:
        self._check_size(size, "map")
        start, rng = self._reservation(address, size)
        mapped = rng.mapped
        off = address - start
        i = mapped.bisect_right(off)
        if (i and mapped.keys()[i - 1] + mapped[mapped.keys()[i - 1]] > off) or (
            i < len(mapped) and mapped.keys()[i] < off + size
        ):
            raise ValueError(f"map of [{address:#x}, +{size}): part of it is already mapped")
        self._use(size)
        mapped[off] = size
        self.counters.maps += 1
        self._charge(self.cost_model.map_seconds if self.cost_model else 0.0, size)

    def unmap(self, address: int, size: int) -> None:
        self._check_size(size, "unmap")
        start, rng = self._reservation(address, size)
        mapped = rng.mapped
        off, end = address - start, address - start + size
        # the range may cover several mapped pieces and parts of them
        i = max(mapped.bisect_right(off) - 1, 0)
        keys = list(mapped.irange(mapped.keys()[i] if mapped else 0, end, inclusive=(True, False)))
        covered = 0
        for k in keys:
            ksize = mapped[k]
            kend = k + ksize
            lo, hi = max(k, off), min(kend, end)
            if lo >= hi:
                continue
            del mapped[k]
            if k < lo:
                mapped[k] = lo - k
            if hi < kend:
                mapped[hi] = kend - hi
            covered += hi - lo
        if covered != size:
            raise ValueError(f"unmap of [{address:#x}, +{size}): only {covered} B of it were mapped")
        self.counters.bytes_in_use -= size
        self.counters.unmaps += 1
        self._charge(self.cost_model.unmap_seconds if self.cost_model else 0.0, size)

    # ------------------------------------------------------------ introspection
    def allocations(self) -> list[tuple[int, int]]:
        """(address, size) of live device allocations, by address."""
        return [(a, r.size) for a, r in self._ranges.items() if r.kind == "alloc"]

    def mapped_ranges(self) -> list[tuple[int, int]]:
        """(address, size) of mapped pieces of reservations, by address."""
        out = []
        for a, r in self._ranges.items():
            if r.kind == "reserve":
                out.extend((a + off, size) for off, size in r.mapped.items())
        return out

    def __repr__(self) -> str:
        c = self.counters
        return (
            f"SimulatedDevice(capacity={self.capacity}, in_use={c.bytes_in_use}, "
            f"mallocs={c.mallocs}, frees={c.frees}, maps={c.maps}, unmaps={c.unmaps})"
        )
