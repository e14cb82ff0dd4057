"""Statistics as in ``torch.cuda.memory_stats``: a thin layer the engine updates
on its events (allocated, freed, split, merged, segment created/released).

Each stat keeps current / peak / allocated (sum of increases) / freed (sum of
decreases) for "all", "small_pool" and "large_pool", exactly as c10's
``increase_stat``/``decrease_stat`` do.
"""

from __future__ import annotations

from dataclasses import dataclass

STAT_NAMES = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)
POOL_NAMES = ("all", "small_pool", "large_pool")
FIELDS = ("current", "peak", "allocated", "freed")
COUNTERS = ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free")

# stat indices (rows of Stats.v are stat * 3 + pool)
ALLOCATION, SEGMENT, ACTIVE, INACTIVE_SPLIT, ALLOCATED_BYTES, RESERVED_BYTES, ACTIVE_BYTES, INACTIVE_SPLIT_BYTES, REQUESTED_BYTES = range(9)
SMALL, LARGE = 1, 2  # pool indices (0 = all)


class Stats:
    """The counters. ``v[stat * 3 + pool]`` is ``[current, peak, allocated, freed]``."""

    __slots__ = ("v", "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "_rows", "_shared")

    def __init__(self, active_is_allocated: bool = False) -> None:
        """``active_is_allocated``: for allocators where a block is active exactly while it
        is allocated (every one here: none defers a free to a stream's pending work, as
        c10 does for blocks a stream still uses): the active rows are the allocation rows,
        and on_alloc / on_free update them once."""
        self.v = [[0, 0, 0, 0] for _ in range(len(STAT_NAMES) * 3)]
        self._shared = active_is_allocated
        if active_is_allocated:
            for q in range(3):
                self.v[ACTIVE * 3 + q] = self.v[ALLOCATION * 3 + q]
                self.v[ACTIVE_BYTES * 3 + q] = self.v[ALLOCATED_BYTES * 3 + q]
        touched = (ALLOCATION, ALLOCATED_BYTES, REQUESTED_BYTES) if active_is_allocated else (
            ALLOCATION, ALLOCATED_BYTES, ACTIVE, ACTIVE_BYTES, REQUESTED_BYTES)
        # the rows a live block touches, per pool (all + that pool), for on_alloc / on_free
        self._rows = {p: tuple(self.v[s * 3 + q] for s in touched for q in (0, p)) for p in (SMALL, LARGE)}
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0

    def inc(self, stat: int, pool: int, amount: int) -> None:
        v = self.v
        for a in (v[stat * 3], v[stat * 3 + pool]):
            c = a[0] + amount
            a[0] = c
            if c > a[1]:
                a[1] = c
            a[2] += amount

    def dec(self, stat: int, pool: int, amount: int) -> None:
        v = self.v
        for a in (v[stat * 3], v[stat * 3 + pool]):
            a[0] -= amount
            a[3] += amount

    def _amounts(self, size: int, requested: int) -> tuple[int, ...]:
        if self._shared:
            return 1, 1, size, size, requested, requested
        return 1, 1, size, size, 1, 1, size, size, requested, requested

    def on_alloc(self, pool: int, size: int, requested: int) -> None:
        """A block became live: allocation, allocated_bytes, active, active_bytes, requested_bytes."""
        if self._shared:  # (unrolled: a replay calls this once per allocation)
            a, b, c, d, e, f = self._rows[pool]
            x = a[0] + 1
            a[0] = x
            if x > a[1]:
                a[1] = x
            a[2] += 1
            x = b[0] + 1
            b[0] = x
            if x > b[1]:
                b[1] = x
            b[2] += 1
            x = c[0] + size
            c[0] = x
            if x > c[1]:
                c[1] = x
            c[2] += size
            x = d[0] + size
            d[0] = x
            if x > d[1]:
                d[1] = x
            d[2] += size
            x = e[0] + requested
            e[0] = x
            if x > e[1]:
                e[1] = x
            e[2] += requested
            x = f[0] + requested
            f[0] = x
            if x > f[1]:
                f[1] = x
            f[2] += requested
            return
        for a, amount in zip(self._rows[pool], self._amounts(size, requested)):
            c = a[0] + amount
            a[0] = c
            if c > a[1]:
                a[1] = c
            a[2] += amount

    def on_free(self, pool: int, size: int, requested: int) -> None:
        """A live block was freed (the reverse of :meth:`on_alloc`)."""
        if self._shared:
            a, b, c, d, e, f = self._rows[pool]
            a[0] -= 1
            a[3] += 1
            b[0] -= 1
            b[3] += 1
            c[0] -= size
            c[3] += size
            d[0] -= size
            d[3] += size
            e[0] -= requested
            e[3] += requested
            f[0] -= requested
            f[3] += requested
            return
        for a, amount in zip(self._rows[pool], self._amounts(size, requested)):
            a[0] -= amount
            a[3] += amount

    def current(self, stat: int, pool: int = 0) -> int:
        return self.v[stat * 3 + pool][0]

    def peak(self, stat: int, pool: int = 0) -> int:
        return self.v[stat * 3 + pool][1]

    def reset_peak(self) -> None:
        for a in self.v:
            a[1] = a[0]

    def reset_accumulated(self) -> None:
        for a in self.v:
            a[2] = a[3] = 0
        self.num_alloc_retries = self.num_ooms = self.num_device_alloc = self.num_device_free = 0

    def as_dict(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s, name in enumerate(STAT_NAMES):
            for p, pool in enumerate(POOL_NAMES):
                a = self.v[s * 3 + p]
                for f, field in enumerate(FIELDS):
                    out[f"{name}.{pool}.{field}"] = a[f]
        for name in COUNTERS:
            out[name] = getattr(self, name)
        return out


@dataclass(frozen=True)
class Fragmentation:
    """How well the allocator used what it reserved.

    ``peak_ratio`` is peak reserved / peak requested (1.0 is perfect; a cold
    PyTorch training run is about 1.06). Current waste splits into
    ``internal_bytes`` (rounding: block size minus requested, inside live
    blocks) and ``external_bytes`` (reserved memory in no live block: gaps and
    cached blocks). ``largest_free_block / total_free`` near 1 means the free
    memory is in one piece; near 0 means it is scattered.
    """

    peak_reserved: int
    peak_requested: int
    peak_ratio: float
    reserved: int
    allocated: int
    requested: int
    internal_bytes: int
    external_bytes: int
    largest_free_block: int
    total_free: int
    largest_free_ratio: float

    @property
    def waste_fraction(self) -> float:
        """peak_reserved / peak_requested - 1 (the replay report's "fragmentation")."""
        return self.peak_ratio - 1.0 if self.peak_requested else 0.0
