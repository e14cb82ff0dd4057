"""Virtual arenas with page mapping: the engine part behind memtune's own policy.

Why: a caching allocator that carves device allocations (segments) wastes memory
twice -- free space stranded inside segments it cannot give back, and segments
sized for requests that never come. With virtual memory (CUDA VMM, what
PyTorch's ``expandable_segments`` uses) address space is free and only mapped
pages cost memory, so an allocator can place blocks in one large virtual range
and back exactly the pages live blocks touch.

:class:`ArenaAllocator` does that:

* one virtual **region** per stream (optionally a separate one for blocks up to
  ``small_size``); **best fit** by size (lowest address on ties) with
  immediate coalescing of free neighbours; a request no hole fits goes to the
  region's top. Pages still moving (below) ``first_fit_after`` mallocs and
  frees after the live peak mean a repeating step has not found its layout:
  from then on requests take the **lowest** hole that fits (first fit), whose
  layout settles;
* pages (``page`` bytes, 2 MiB as on CUDA) are **mapped on demand**; a
  region's top grows by at least a chunk (``growth`` x peak live bytes, at
  least ``growth_min`` and at most ``growth_max``; past the live peak, only
  within the highest reserved so far) so a burst of small allocations costs
  one device call (the floor: early in a run the live peak so far is a small
  part of what the run needs, and a climb in chunks of 1/16 of it would cost a
  call every few requests). Peak live bytes count from where the current
  **climb** began (a rise after ``climb_pause`` mallocs and frees without one
  starts a new climb): a later step rising a little past an earlier peak would
  otherwise map 1/16 of the whole peak, left unused above the top at the new
  peak. A request landing in a hole whose pages were
  unmapped maps more of the hole while reserved stays under its highest so far
  (no new peak, fewer calls);
* freed pages stay mapped (reusing them costs nothing). Free pages are
  unmapped only when a mapping would push reserved memory past both the highest
  reserved so far and ``(1 + slack) x`` the highest live bytes seen (``move_slack``
  for a request that sets no new live peak: a repeating step whose layout needs a
  little more room would otherwise move pages every step; for a request that
  sets a new one past an earlier peak, ``climb_chunks`` growth chunks past the
  slack: a climbing peak would otherwise map again, a few requests later, the
  pages unmapped to stay within 2 % of it; on the run's first climb only once it
  has made ``first_climb_unmaps`` unmaps, as its end is often the run's peak), and then
  down to the live peak (**lazy unmapping with hysteresis**): cold pages first,
  largest runs first. Pages freed since live bytes last peaked are *hot* when
  the request sets no new peak -- a repeating step uses them again -- so they
  go last. Below the live peak such an unmap only moves pages (a **move**), and
  a move stops once reserved memory is back within the slack
  (``move_only_needed``; each unmap still gives back its whole free run): down
  to the live peak, one request of a repeating step could unmap many small runs
  that the next requests map again;
* every such unmap counts against a **device-call budget** of ``trim_budget``
  x the maps made for requests (net of unmaps; with those the floor saved) +
  ``trim_base``, so device calls
  stay within a small factor of an allocator that never gives memory back. An
  unmap below the live peak only moves pages to where a request needs them;
  moves also count against ``move_budget`` x ``trim_budget`` x the pages by which reserved memory
  rose to a new high: each page of the footprint moves about once, so a
  repeating workload's moves stop and its device calls no longer grow with the
  run. Past the budget the region grows, unless one unmap gives back at least
  ``trim_large`` of the live peak (below the peak, as often as ``large_moves``
  times the footprint could be moved that way, and once per page of its rises at most);
* while the whole workload is a sliver of one page (**tiny footprint**: under
  ``tiny_share`` of a page, in at most ``tiny_allocs`` distinct device
  allocations -- a scalar or two), requests get exact device allocations
  (cached by size) instead of a page that would be almost all waste. Past
  that, one page costs fewer device calls than an exact allocation per size;
* on device out-of-memory, every free page is unmapped and the request retried
  before :class:`memtune.OutOfMemoryError` is raised.

Statistics, events, verbose logging and warm starts follow the engine's
contracts (:mod:`memtune.allocator.engine`), so replays and reports treat it
like any preset.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field
from typing import Any, Iterable

from sortedcontainers import SortedDict, SortedList

from memtune.allocator import stats as S
from memtune.allocator.base import _LARGE, _POOL_NAME, _SMALL, AllocatorBase, _notify_created
from memtune.allocator.events import EventKind
from memtune.allocator.pools import first_at_least
from memtune.allocator.limits import Limits
from memtune.devices.base import Device, DeviceOutOfMemory
from memtune.errors import AllocatorUsageError, OutOfMemoryError
from memtune.trace.model import BlockState, SegmentState
from memtune.units import format_bytes

MiB = 1 << 20
#: Largest virtual range one region reserves (the simulated VA space is 256 TiB).
_MAX_REGION = 1 << 44
_MIN_REGION = 1 << 40


@dataclass(frozen=True)
class ArenaSpec:
    """The knobs of :class:`ArenaAllocator` (memtune's ``MEMTUNE_*`` settings)."""

    name: str = "memtune"
    #: requests round up to a multiple of this (the device's allocation granularity)
    alignment: int = 512
    #: mapping granularity (CUDA VMM: 2 MiB)
    page: int = 2 * MiB
    #: requests up to this size use a separate small-block region of their stream;
    #: None = one region per stream (small blocks then fill holes between large ones)
    small_size: int | None = None
    #: reserved may exceed the peak of live bytes by this fraction before free pages are unmapped
    slack: float = 0.02
    #: ... and below the live peak, by this fraction before free pages are unmapped to
    #: make room (a move): a repeating step whose layout needs a little more than
    #: ``slack`` would otherwise move pages every step (an effective floor of ``slack``)
    move_slack: float = 0.04
    #: below the live peak, a move stops unmapping once what it gave back brings reserved
    #: memory within the slack (each unmap still gives back its whole free run). Unmapping
    #: down to the live peak, as a climb does, made one 74 MiB request of a 1.8 GiB U-Net
    #: take eight unmaps of 2-10 MiB runs, every step: pages a repeating step maps again
    #: (docs/policy-log.md, "A move unmaps only what the slack requires")
    move_only_needed: bool = True
    #: ... and while live bytes climb past an earlier peak (the run's first climb: see
    #: first_climb_unmaps), by the slack plus this many growth chunks: a climb's peak keeps rising, so pages
    #: unmapped to stay within 2 % of it are mapped again a few requests later, two device
    #: calls each (docs/policy-log.md, "Room for a climb")
    climb_chunks: float = 2.0
    #: the run's first climb gets that room only once this many unmaps (to stay within the
    #: slack, or moves) were made: its end is often the run's peak, where the room would stay
    #: reserved, which pays only where the climb churns (0 = from the start, None = never)
    first_climb_unmaps: int | None = 8
    #: a region's top grows by this fraction of the peak live bytes beyond the request ...
    growth: float = 1 / 16
    #: ... but by at most this many bytes
    growth_max: int = 20 * MiB
    #: ... and by at least this many (at most ``growth_max``): early in a run the live
    #: peak so far is a small part of what the run will need, and a chunk of 1/16 of it
    #: would cost a device call every few requests on the way up. Past a live peak of
    #: ``growth_min / growth`` the floor changes nothing. 0 (no floor) here, as a floor
    #: in bytes suits one page size; the ``memtune`` preset sets ``MEMTUNE_GROWTH_MIN``, 6 MiB
    growth_min: int = 0
    #: a rise of the live peak after this many mallocs and frees without one starts a new
    #: climb, and the chunk is ``growth`` x the live bytes added since that climb began,
    #: not x the whole live peak: a later step that rises a little past an earlier peak
    #: would otherwise map 1/16 of the peak, left unused when the new peak is reached
    #: (0 = every chunk is ``growth`` x the live peak)
    climb_pause: int = 100
    #: unmaps made to stay under the slack are limited to this multiple of the maps that
    #: grew a region (+ ``trim_base``), bounding the device calls churn can cost
    trim_budget: float = 1.0
    trim_base: int = 4
    #: moves (unmaps below the live peak) are limited to this many x ``trim_budget`` per page
    #: by which reserved memory rose to a new high: each page of the footprint moves about
    #: once at most, so a repeating step's moves stop
    move_budget: float = 0.5
    #: ... except that past the budget, one unmap that gives back at least this share of
    #: the live peak is still made (0 = never): a workload whose shapes change (a
    #: server) would otherwise grow by whole large blocks once churn spent the budget.
    #: Below the live peak, at most once per page by which reserved memory rose to a new high
    trim_large: float = 1 / 8
    #: ... and below the live peak at most this many times the footprint in such unmaps: as
    #: many as give back ``large_moves`` x the pages by which reserved memory rose (each gives
    #: back ``trim_large`` of the live peak or more; about 16 at most by default, whatever the
    #: scale). Once per page alone scales with the footprint: a 1.8 GiB U-Net's 900 pages
    #: allowed about 900, made 8 device calls a step on a long run, and never stopped
    #: (None = once per page only)
    large_moves: float | None = 2.0
    #: tiny phase: exact device allocations while the live peak stays under this share
    #: of a page and at most ``tiny_allocs`` of them are needed (0 = pages from the start)
    tiny_share: float = 1 / 32
    tiny_allocs: int = 2
    #: which hole a request takes among those that fit: "best" (the smallest) or "first"
    #: (the lowest address; on a long run a repeating step's layout settles sooner)
    fit: str = "best"
    #: with best fit: an unmap below the live peak made more than this many mallocs and
    #: frees after the peak was set switches every region to first fit, once (0 = never).
    #: Pages still moving that long after the peak mean a repeating step has not found
    #: its layout; first fit settles one where best fit can keep drifting
    first_fit_after: int = 20_000
    #: free memory is reused only by its own stream
    per_stream: bool = True
    #: reserved memory may never exceed this (None = the device's capacity)
    #: hard limit (reserved never exceeds it; ``hard_limit_setting`` names it in OOM
    #: messages) and soft limit (above it, free pages are unmapped regardless of the
    #: device-call budget); the other fields of Limits do not apply here
    limits: Limits = field(default_factory=Limits)
    oom_hint: str = "MEMTUNE_SLACK=0 (unmap free pages sooner) or a smaller MEMTUNE_PAGE_SIZE"
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise ValueError(f"ArenaSpec {self.name!r}: {what}")

        need(self.alignment > 0 and self.alignment & (self.alignment - 1) == 0,
             f"alignment must be a positive power of two; got {self.alignment}")
        need(self.page >= self.alignment and self.page % self.alignment == 0,
             f"page must be a positive multiple of alignment ({self.alignment}); got {self.page}")
        need(self.small_size is None or self.small_size > 0, f"small_size must be positive or None; got {self.small_size}")
        need(0.0 <= self.slack, f"slack must be >= 0; got {self.slack}")
        need(0.0 <= self.growth <= 1.0, f"growth must be in [0, 1]; got {self.growth}")
        need(self.growth_max >= 0, f"growth_max must be >= 0; got {self.growth_max}")
        need(self.growth_min >= 0, f"growth_min must be >= 0; got {self.growth_min}")
        need(self.climb_pause >= 0, f"climb_pause must be >= 0; got {self.climb_pause}")
        need(0.0 <= self.move_slack, f"move_slack must be >= 0; got {self.move_slack}")
        need(0.0 <= self.climb_chunks, f"climb_chunks must be >= 0; got {self.climb_chunks}")
        need(self.first_climb_unmaps is None or self.first_climb_unmaps >= 0,
             f"first_climb_unmaps must be >= 0 or None; got {self.first_climb_unmaps}")
        need(isinstance(self.move_only_needed, bool),
             f"move_only_needed must be True or False; got {self.move_only_needed!r}")
        need(0.0 <= self.move_budget, f"move_budget must be >= 0; got {self.move_budget}")
        need(0.0 <= self.tiny_share <= 1.0, f"tiny_share must be in [0, 1]; got {self.tiny_share}")
        need(self.tiny_allocs >= 0, f"tiny_allocs must be >= 0; got {self.tiny_allocs}")
        need(0.0 <= self.trim_large, f"trim_large must be >= 0; got {self.trim_large}")
        need(self.large_moves is None or self.large_moves >= 0,
             f"large_moves must be >= 0 or None; got {self.large_moves}")
        need(self.fit in FITS, f"fit must be one of {', '.join(FITS)}; got {self.fit!r}")
        need(self.first_fit_after >= 0, f"first_fit_after must be >= 0; got {self.first_fit_after}")


#: where a request goes among the holes that fit it (``MEMTUNE_FIT``)
FITS = ("best", "first")


#: (size, start) of a hole as one int key, ``size << _SHIFT | start``: ordered as the tuple
#: (addresses are below 2**64), compared and stored faster
_SHIFT = 64
_START = (1 << _SHIFT) - 1


class _BestFit:
    """Free holes keyed ``size << 64 | start``: the smallest that fits, lowest start on ties,
    is one bisect.

    Why a plain list while it is short: a region holds tens to a few thousand holes, and
    every malloc and free adds or removes one; ``insort`` and ``del`` on a list are a C
    call each, where SortedList's are several Python-level steps (an add and a remove
    among 300 holes: 0.31 us against 1.12 us for SortedList of tuples). Past ``limit``
    holes the list becomes a SortedList, whose inserts stay logarithmic however many
    there are.
    """

    __slots__ = ("keys", "limit")

    LIMIT = 4096

    def __init__(self, limit: int = LIMIT):
        self.keys: list[int] | SortedList = []
        self.limit = limit

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, size: int, start: int) -> None:
        keys = self.keys
        if type(keys) is list:
            insort(keys, size << _SHIFT | start)
            if len(keys) > self.limit:
                self.keys = SortedList(keys)
        else:
            keys.add(size << _SHIFT | start)

    def remove(self, size: int, start: int) -> None:
        keys = self.keys
        if type(keys) is list:
            k = size << _SHIFT | start
            i = bisect_left(keys, k)
            if i == len(keys) or keys[i] != k:
                raise ValueError(f"no hole of {size} B at {start:#x}")
            del keys[i]
        else:
            keys.remove(size << _SHIFT | start)

    def take(self, size: int) -> int | None:
        keys = self.keys
        low = size << _SHIFT
        if type(keys) is list:
            i = bisect_left(keys, low)
            return keys[i] & _START if i < len(keys) else None
        hole = first_at_least(keys, low)
        return None if hole is None else hole & _START


class _FirstFit:
    """Free holes by size class (a power of two), each class's starts in address order.

    The lowest hole that fits a request is the lowest start among the classes above
    the request's (each of their holes fits; ``lowest`` keeps each class's, so that is
    one ``min`` over a short list), or an earlier one of its own class that fits.
    Same ``add``/``remove`` of a hole's size and start as :class:`_BestFit`.
    """

    __slots__ = ("holes", "classes", "lowest")

    _NONE = 1 << 64  # above every address: "no hole in this class"

    def __init__(self, holes: dict[int, int]):
        self.holes = holes                        # the region's start -> size (read only here)
        self.classes: dict[int, SortedList] = {}  # size.bit_length() -> starts
        self.lowest = [self._NONE] * 66           # size.bit_length() -> lowest start
        for start, size in holes.items():
            self.add(size, start)

    def __len__(self) -> int:
        return sum(map(len, self.classes.values()))

    def add(self, size: int, start: int) -> None:
        c = size.bit_length()
        starts = self.classes.get(c)
        if starts is None:
            starts = self.classes[c] = SortedList()
        starts.add(start)
        if start < self.lowest[c]:
            self.lowest[c] = start

    def remove(self, size: int, start: int) -> None:
        c = size.bit_length()
        starts = self.classes[c]
        starts.remove(start)
        if not starts:
            del self.classes[c]
            self.lowest[c] = self._NONE
        elif start == self.lowest[c]:
            self.lowest[c] = starts[0]

    def take(self, size: int) -> int | None:
        c = size.bit_length()
        lowest = self.lowest
        best = min(lowest[c + 1:])
        if lowest[c] < best:  # its own class has a hole below: the first of them that fits
            holes = self.holes
            starts = self.classes[c]
            for a in starts:
                if a >= best:
                    break
                if holes[a] >= size:
                    return a
        return None if best == self._NONE else best


class _Region:
    """One virtual range: free holes (by start, by end, indexed by fit), the top, mapped runs."""

    __slots__ = ("base", "size", "end", "stream", "pool", "holes", "ends", "free_index", "top", "mapped",
                 "mapped_bytes", "stamp", "top_stamp", "reservation")

    def __init__(self, base: int, size: int, stream: int, pool: int, fit: str = "best"):
        self.base = base
        self.size = size
        self.end = base + size
        self.stream = stream
        self.pool = pool
        self.holes: dict[int, int] = {}         # start -> size of free holes below the top
        self.ends: dict[int, int] = {}          # end -> start: coalescing in O(1)
        # (size, start) of every hole, indexed for the fit: where a request goes
        self.free_index: _BestFit | _FirstFit = _FirstFit(self.holes) if fit == "first" else _BestFit()
        self.top = base                         # [top, end) is free
        self.mapped = _Runs()                   # mapped runs (merged, page aligned)
        self.mapped_bytes = 0
        self.stamp: dict[int, int] = {}         # hole start -> clock when a free last changed it
        self.top_stamp = 0
        self.reservation = base                 # start of the device reservation holding it

    def use_first_fit(self) -> None:
        """Index the holes for first fit from now on."""
        if not isinstance(self.free_index, _FirstFit):
            self.free_index = _FirstFit(self.holes)

    # ---------------------------------------------------------------- holes
    def take(self, size: int) -> int | None:
        """The hole for ``size``: best fit, the smallest of at least ``size`` (lowest address on
        ties), or first fit, the lowest; None = use the top."""
        return self.free_index.take(size)

    def carve(self, addr: int, size: int) -> None:
        """Mark [addr, addr+size) used; it is a hole start or the top."""
        if addr == self.top:
            self.top = addr + size
            return
        hsize = self.holes.pop(addr)
        self.free_index.remove(hsize, addr)
        t = self.stamp.pop(addr)
        if hsize > size:
            rest = addr + size
            rsize = hsize - size
            self.holes[rest] = rsize
            self.ends[rest + rsize] = rest
            self.free_index.add(rsize, rest)
            self.stamp[rest] = t
        else:
            del self.ends[addr + hsize]

    def release(self, addr: int, size: int, now: int) -> None:
        """Give [addr, addr+size) back, merging with free neighbours (and the top)."""
        holes, ends, stamp = self.holes, self.ends, self.stamp
        end = addr + size
        pa = ends.pop(addr, None)
        if pa is not None:
            ps = holes.pop(pa)
            self.free_index.remove(ps, pa)
            del stamp[pa]
            addr = pa
        ns = holes.pop(end, None)
        if ns is not None:
            self.free_index.remove(ns, end)
            del stamp[end]
            del ends[end + ns]
            end += ns
        if end == self.top:
            self.top = addr
            self.top_stamp = now
            return
        holes[addr] = end - addr
        ends[end] = addr
        self.free_index.add(end - addr, addr)
        stamp[addr] = now

    def claim(self, ranges: SortedDict) -> None:
        """Take the free space of ``ranges`` (start -> end, disjoint) out of the holes and
        the top: a plan places blocks there itself (see :meth:`ArenaAllocator.malloc_at`).
        Live blocks in them stay as they are."""
        if not ranges:
            return
        holes, ends, stamp, free_index = self.holes, self.ends, self.stamp, self.free_index

        def add(a: int, e: int, t: int) -> None:
            holes[a] = e - a
            ends[e] = a
            free_index.add(e - a, a)
            stamp[a] = t

        for a, n in list(holes.items()):
            parts = _outside(ranges, a, a + n)
            if parts == [(a, a + n)]:
                continue  # no range overlaps this hole
            t = stamp.pop(a)
            del holes[a]
            del ends[a + n]
            free_index.remove(n, a)
            for x, y in parts:
                add(x, y, t)
        top_hi = ranges[ranges.keys()[-1]]
        if self.top < top_hi:
            for x, y in _outside(ranges, self.top, top_hi):
                add(x, y, self.top_stamp)
            self.top = top_hi

    # ---------------------------------------------------------------- pages
    def unmapped_runs(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Unmapped page-aligned sub-ranges of [lo, hi)."""
        starts, ends = self.mapped.starts, self.mapped.ends
        i = bisect_right(starts, lo) - 1
        if i >= 0 and ends[i] >= hi:
            return []  # fast path: one run covers it
        out: list[tuple[int, int]] = []
        cur = lo
        if i < 0:
            i = 0
        n = len(starts)
        while cur < hi and i < n:
            s = starts[i]
            e = ends[i]
            if e <= cur:
                i += 1
                continue
            if s >= hi:
                break
            if s > cur:
                out.append((cur, s))
            cur = e
            i += 1
        if cur < hi:
            out.append((cur, hi))
        return out

    def next_mapped_start(self, addr: int) -> int:
        starts = self.mapped.starts
        i = bisect_left(starts, addr)
        return starts[i] if i < len(starts) else self.end

    def free_page_runs(self, page: int) -> list[tuple[int, int, int]]:
        """Mapped runs of whole pages no live block touches (in holes and above the
        top), with the clock of the free that last touched them."""
        out: list[tuple[int, int, int]] = []
        starts, ends = self.mapped.starts, self.mapped.ends
        if not starts:
            return out
        stamp = self.stamp
        # a hole smaller than a page holds no whole page
        spans = [(a, a + n, stamp[a]) for a, n in self.holes.items() if n >= page]
        spans.append((self.top, self.end, self.top_stamp))
        n = len(starts)
        for a, b, t in spans:
            lo = -(-a // page) * page
            hi = b // page * page
            if hi <= lo:
                continue
            i = max(bisect_right(starts, lo) - 1, 0)
            while i < n:
                s = starts[i]
                if s >= hi:
                    break
                e = ends[i]
                x, y = max(s, lo), min(e, hi)
                if y > x:
                    out.append((x, y, t))
                i += 1
        return out


class _Runs:
    """A region's mapped runs: page-aligned, disjoint, merged where they touch, as two sorted
    lists of starts and ends.

    Why plain lists: every request asks which of its pages are mapped, and a region holds
    tens to a few thousand runs. ``bisect`` on a list is one C call; a SortedDict's
    positional access is several Python-level ones. (With the list-based best fit above,
    memtune replays the shared snapshot warm-lm-fullstep in 72 ms instead of 92, and
    cold-small's 71 events in 0.40 ms instead of 0.48; pytorch-cuda: 64 and 0.31.)"""

    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.starts)

    def __len__(self) -> int:
        return len(self.starts)

    def items(self) -> list[tuple[int, int]]:
        """(start, end) of every run, in address order (a copy)."""
        return list(zip(self.starts, self.ends))

    def clear(self) -> None:
        self.starts.clear()
        self.ends.clear()

    def add(self, lo: int, hi: int) -> None:
        """Mark [lo, hi) mapped (none of it was), merging with the runs it touches."""
        starts, ends = self.starts, self.ends
        i = bisect_right(starts, lo) - 1
        j = i + 1
        joins_next = j < len(starts) and starts[j] == hi
        if i >= 0 and ends[i] == lo:
            if joins_next:
                ends[i] = ends[j]
                del starts[j], ends[j]
            else:
                ends[i] = hi
        elif joins_next:
            starts[j] = lo
        else:
            starts.insert(j, lo)
            ends.insert(j, hi)

    def remove(self, lo: int, hi: int) -> None:
        """Mark [lo, hi), inside one run, unmapped."""
        starts, ends = self.starts, self.ends
        i = bisect_right(starts, lo) - 1
        assert i >= 0, (lo, hi)
        s, e = starts[i], ends[i]
        assert s <= lo and hi <= e, (lo, hi, s, e)
        if s < lo:
            ends[i] = lo
            if hi < e:
                starts.insert(i + 1, hi)
                ends.insert(i + 1, e)
        elif hi < e:
            starts[i] = hi
        else:
            del starts[i], ends[i]


def _outside(ranges: SortedDict, a: int, e: int) -> list[tuple[int, int]]:
    """The parts of [a, e) that no range of ``ranges`` (start -> end, disjoint) covers."""
    parts, at = [], a
    for lo in ranges.keys()[max(ranges.bisect_right(a) - 1, 0):]:
        if lo >= e:
            break
        hi = ranges[lo]
        if hi <= at:
            continue
        if lo > at:
            parts.append((at, lo))
        at = max(at, hi)
    if at < e:
        parts.append((at, e))
    return parts


class _Live:
    __slots__ = ("size", "requested", "region")

    def __init__(self, size: int, requested: int, region: _Region):
        self.size = size
        self.requested = requested
        self.region = region

    @property
    def stream(self) -> int:
        return self.region.stream


class ArenaAllocator(AllocatorBase):
    """memtune's own allocator: virtual regions, best fit (then first fit), pages mapped on demand.

    Same public interface as :class:`memtune.allocator.engine.Allocator`.
    """

    _repr_name = "ArenaAllocator"
    _live: dict[int, _Live]

    def __init__(self, spec: ArenaSpec, device: Device, *, env_verbose: int = 0, notify: bool = True):
        if type(device).reserve_address_space is Device.reserve_address_space:
            raise AllocatorUsageError(
                f"preset {spec.name!r} maps pages into virtual ranges, but the device {type(device).__name__} has no "
                "virtual memory (reserve_address_space/map/unmap); use a SimulatedDevice"
            )
        super().__init__(spec, device, env_verbose)
        self._regions: dict[tuple[int, int], _Region] = {}
        self._region_at: SortedDict = SortedDict()  # base -> region
        # tiny phase (peak live below one page): exact device allocations, cached by size
        self._tiny: dict[int, _Region] = {}          # stream -> marker region (size 0)
        self._tiny_seg: dict[int, int] = {}          # address -> size of every tiny allocation
        self._tiny_free: dict[int, list[int]] = {}   # size -> cached tiny addresses
        self._tiny_done = False
        self._tiny_floor = 0  # tiny allocations restored by a warm start (their sizes count as used)
        self._live_bytes = 0
        self._peak_live = 0
        self._peak_clock = 0     # clock when live bytes last reached a new peak
        self._climb_base = 0     # the live peak when the current climb began (see climb_pause)
        self._high_water = 0     # highest reserved so far (not reset by reset_peak_stats)
        self._clock = 0  # counts mallocs and frees: the age of free pages
        self._maps = 0         # map calls made for requests (not undone), and those growth_min saved
        self._trims = 0        # unmaps made to stay under the slack target
        # below the live peak an unmap only moves pages to where a request needs them:
        # such moves are counted against the pages by which maps for requests raised
        # reserved memory past its highest since memory was last given back, see _trim
        self._epoch_high = 0
        self._raised_pages = 0
        self._moves = 0        # unmaps made below the live peak within the budget
        self._large_moves = 0  # unmaps made past the budget (trim_large) below the live peak
        self._fit = spec.fit   # "best" until first_fit_after switches it (see _trim)
        a = spec.alignment
        self._amask = a - 1
        self._page = spec.page
        self._small_size = spec.small_size
        cap = device.capacity
        hard, soft = spec.limits.hard_limit, spec.limits.soft_limit
        self._hard = hard if hard else None
        self._soft = soft if soft else None
        # address space is free: a region spans far more than the device holds, so holes
        # left behind (whose pages may be unmapped) never run it out
        want = max(_MIN_REGION, 8 * cap) if cap else _MAX_REGION
        self._region_size = min(_MAX_REGION, (want + spec.page - 1) // spec.page * spec.page)
        if notify:  # the MEMTUNE_PROFILER_AUTOSTART hook, as the engine's allocators do
            _notify_created(self)

    # ================================================================ helpers
    def _region(self, stream: int, pool: int) -> _Region:
        key = (stream if self.spec.per_stream else 0, pool)
        r = self._regions.get(key)
        if r is None:
            # reserve a page more than needed so the region can start on a page boundary
            page = self._page
            res = self.device.reserve_address_space(self._region_size + page)
            base = -(-res // page) * page
            r = _Region(base, self._region_size, key[0], pool, self._fit)
            r.reservation = res
            self._regions[key] = r
            self._region_at[base] = r
        return r

    # ================================================================ malloc
    def _malloc(self, orig: int, stream: int) -> int:
        self._clock += 1
        rounded = (orig + self._amask) & ~self._amask
        if not self._tiny_done and self._tiny_fits(rounded):
            # tiny footprint: the whole workload so far is a sliver of one page, so
            # a page would be almost all waste; use exact device allocations, cached
            region = self._tiny_region(stream)
            addr, mapped_new = self._tiny_malloc(region, rounded, orig)
            pool = _SMALL
        else:
            self._tiny_done = True
            ss = self._small_size
            pool = _SMALL if ss is not None and rounded <= ss else _LARGE
            region = self._region(stream, pool)
            addr, mapped_new = self._place(region, rounded, orig)
        self._commit(addr, rounded, orig, region, pool, mapped_new)
        return addr

    def _commit(self, addr: int, size: int, orig: int, region: _Region, pool: int, mapped_new: bool) -> None:
        """Book a block placed at ``addr``: live bytes and their peak, statistics, events."""
        self._live[addr] = _Live(size, orig, region)
        live = self._live_bytes + size
        self._live_bytes = live
        if live > self._peak_live:
            self._climb_base = self._climb_from()
            self._peak_live = live
            self._peak_clock = self._clock
        self.stats.on_alloc(pool, size, orig)
        if self._listeners or self._vmask:
            self._emit(EventKind.ALLOCATED if mapped_new else EventKind.RECYCLED, addr, size, region.stream,
                       orig, pool)

    def _place(self, region: _Region, size: int, orig: int) -> tuple[int, bool]:
        """Choose an address, map what it needs, commit. Raises OutOfMemoryError (state unchanged)."""
        page = self._page
        for attempt in range(3):
            addr = region.take(size)
            at_top = addr is None
            if at_top:
                addr = region.top
                if addr + size > region.end:
                    self._raise_oom(orig, size, region, "the region's virtual range is exhausted")
            lo = addr // page * page
            hi = -(-(addr + size) // page) * page
            need = region.unmapped_runs(lo, hi)
            if not need:
                region.carve(addr, size)
                return addr, False
            hole_end = region.end if at_top else addr + region.holes[addr]
            if self._map_runs(region, need, at_top, lo, hi, attempt, size, hole_end):
                region.carve(addr, size)
                return addr, True
            # attempt 0 failed: release every free page and retry; attempt 1: ask listeners
            if attempt == 0:
                self._release_all("retry")
                self.stats.num_alloc_retries += 1
            elif attempt == 1:
                frees = self._frees
                handled = False
                if self._listeners:
                    handled = self._emit(EventKind.ALLOCATION_FAILED, 0, size, region.stream, orig, region.pool,
                                         {"stage": "device", "device_free": self.device.free_bytes})
                if not handled and self._frees == frees:
                    break
        self._raise_oom(orig, size, region, None)
        raise AssertionError("unreachable")

    def _target(self) -> int:
        """Reserved bytes allowed before free pages are unmapped to make room."""
        return int(self._peak_live * (1.0 + self.spec.slack))

    def _climb_from(self) -> int:
        """The live peak the climb of a request that raises it counts from: the peak so
        far when it last rose more than ``climb_pause`` mallocs and frees ago (a new
        climb), else where the current climb began."""
        pause = self.spec.climb_pause
        if pause and self._clock - self._peak_clock > pause:
            return self._peak_live
        return self._climb_base

    def restart_peak(self) -> None:
        """Count the live peak from the live bytes now (plan mode, when a plan takes over
        what the online policy served): its slack, chunks and climbs start anew."""
        self._peak_live = self._live_bytes
        self._climb_base = 0

    def _map_runs(self, region: _Region, need: list[tuple[int, int]], at_top: bool, lo: int, hi: int,
                  attempt: int, size: int, hole_end: int = 0) -> bool:
        page = self._page
        x = sum(b - a for a, b in need)
        # live bytes after this request (approximately: the request is at most hi - lo)
        spec = self.spec
        new_peak = self._live_bytes + size > self._peak_live
        # a share of the live bytes this climb added (all of them on the first climb)
        climb_start = self._climb_from() if new_peak else self._climb_base
        chunk0 = min(spec.growth_max, int(max(0, self._peak_live - climb_start) * spec.growth))
        chunk = min(spec.growth_max, max(spec.growth_min, chunk0))
        target = self._target()
        first_after = spec.first_climb_unmaps
        if new_peak and (climb_start > 0 or (first_after is not None and self._trims >= first_after)):
            # (room for a climb: see climb_chunks and first_climb_unmaps)
            target += int(spec.climb_chunks * chunk)
        target = max(target, int((self._live_bytes + (hi - lo)) * (1.0 + spec.slack)))
        if not new_peak:  # (a move: see move_slack)
            target = max(target, int(self._peak_live * (1.0 + spec.move_slack)))
        # growing up to the highest reserved so far costs nothing in peak terms;
        # past it (and past the slack), unmap free pages first
        allowed_reserved = max(target, self._high_water)
        if self._reserved + x > allowed_reserved:
            # hysteresis: unmap down to the live peak, so one device call buys room
            # for many later requests; a move (below the live peak) stops once it is
            # within the slack (see move_only_needed)
            enough = self._reserved + x - allowed_reserved if not new_peak and spec.move_only_needed else None
            self._trim(self._reserved + x - self._peak_live, exclude=(region, lo, hi), new_peak=new_peak,
                       enough=enough)
        a, b = need[-1]
        saved = 0
        if b == hi:
            # growing within the highest reserved so far (and the slack) sets no new peak
            room = max(0, min(target, self._high_water) - (self._reserved + x))
            if at_top:
                # map at least a chunk when the top grows, so a burst of small requests
                # costs one device call (a request bigger than the chunk gets just its
                # pages). Past the climb (no new live peak) the chunk stays within the
                # room: a repeating step would map pages above what it uses, unmap them
                # for its next request elsewhere, and map them again a step later
                ext = max(0, chunk - x)
                if not new_peak:
                    ext = min(ext, room)
                b2 = min(b + ext // page * page, region.next_mapped_start(b), region.end)
                if chunk > chunk0 and b2 > b:
                    # the floor raised the chunk: growth without it (the request's pages or
                    # chunk0, whichever is more, a call at a time) would map this in more calls
                    saved = max(0, -(-(b2 - a) // max(page, chunk0, x)) - 1)
            else:
                # a request in a hole whose pages were unmapped: map more of the hole
                # within the room, so the next requests there cost no device call
                ext = min(max(0, chunk - x), room)
                b2 = min(b + ext // page * page, hole_end // page * page, region.next_mapped_start(b))
            if b2 > b:
                need[-1] = (a, b2)
        soft = self._soft
        if soft is not None and self._reserved + x > soft:
            # above the soft limit (memory pressure): unmap free pages whatever the budget
            self._trim(self._reserved + x - soft, exclude=(region, lo, hi), force=True)
        hard = self._hard
        if hard is not None and self._reserved + sum(b - a for a, b in need) > hard:
            # drop the growth chunk first; fail (and let the caller release and retry)
            # only if the request's own pages do not fit
            need[-1] = (need[-1][0], max(need[-1][0], min(need[-1][1], hi)))
            if self._reserved + sum(b - a for a, b in need) > hard:
                return False
        high = self._epoch_high
        done: list[tuple[int, int]] = []
        for k, (a, b) in enumerate(need):
            try:
                self.device.map(a, b - a)
            except DeviceOutOfMemory:
                b2 = min(b, hi)
                try:  # without the growth chunk, if there was one
                    if b2 == b or b2 <= a:
                        raise
                    self.device.map(a, b2 - a)
                    b = b2
                except DeviceOutOfMemory:
                    for da, db in done:  # undo: the state must be unchanged
                        self._unmap(region, da, db, "undo", emit=False)
                    return False
            self._mapped(region, a, b)
            done.append((a, b))
        # the budget of unmaps counts the maps the floor saved, too: it bounds the calls
        # churn may cost against growth in chunks of ``chunk0``, and a floor meant to
        # save calls on the climb would otherwise also cut the unmaps allowed later
        if done[-1][1] <= hi:
            saved = 0  # the growth chunk was dropped (a hard limit, or the device was full)
        self._maps += len(done) + saved
        if self._reserved > high:
            self._raised_pages += (self._reserved - high) // page
        return True

    def _mapped(self, region: _Region, a: int, b: int) -> None:
        region.mapped.add(a, b)
        size = b - a
        region.mapped_bytes += size
        self._reserved += size
        st = self.stats
        p = region.pool
        st.inc(S.RESERVED_BYTES, p, size)
        if self._reserved > self._high_water:
            self._high_water = self._reserved
        if self._reserved > self._epoch_high:
            self._epoch_high = self._reserved
        # (mapped runs are not counted as segments, as c10 does for expandable segments)
        st.num_device_alloc += 1
        if self._listeners or self._vmask:
            self._emit(EventKind.SEGMENT_MAP, a, size, region.stream, 0, p)

    def _unmap(self, region: _Region, a: int, b: int, reason: str, emit: bool = True) -> None:
        self.device.unmap(a, b - a)
        region.mapped.remove(a, b)
        size = b - a
        region.mapped_bytes -= size
        self._reserved -= size
        st = self.stats
        p = region.pool
        st.dec(S.RESERVED_BYTES, p, size)
        if emit:
            st.num_device_free += 1
            if self._listeners or self._vmask:
                self._emit(EventKind.SEGMENT_UNMAP, a, size, region.stream, 0, p)
                self._emit(EventKind.RELEASED, a, size, region.stream, 0, p, {"reason": reason})
        else:
            st.num_device_alloc -= 1  # an undone map is no device call on balance

    def _trim(self, excess: int, exclude: tuple[_Region, int, int] | None = None, new_peak: bool = True,
              force: bool = False, enough: int | None = None) -> int:
        """Unmap free whole pages until ``excess`` bytes are back (or, given ``enough``, until
        at least that many are: each unmap still gives back up to ``excess``).

        Cold pages go first, largest runs first. Pages freed since live bytes last
        peaked are *hot* when this request sets no new peak: a repeating workload
        uses them every step, so unmapping them only buys a map later. Every unmap
        made here counts against a budget of ``trim_budget`` x the maps that grew a
        region (+ ``trim_base``), which bounds the device calls churn can cost.
        Below the live peak (``new_peak`` False) an unmap only moves pages to where a
        request needs them, and moves also count against ``move_budget`` x ``trim_budget`` x the pages
        by which maps raised reserved memory to a new high (+ ``trim_base``): each
        page of the footprint is moved about once, so a repeating workload's moves
        stop and its device calls do not grow with the length of the run. (Maps net
        of unmaps would not bound them: pages unmapped in one call often come back
        in several.)
        """
        spec = self.spec
        large_move = False
        if force:
            allowed = float("inf")
        else:
            # maps an allocator that never unmapped would also have made (each unmap
            # here costs at most about one map later)
            allowed = spec.trim_budget * max(0, self._maps - self._trims) + spec.trim_base - self._trims
            if not new_peak:
                allowed = min(allowed, spec.move_budget * spec.trim_budget * self._raised_pages + spec.trim_base
                              - self._moves)
            if allowed <= 0 and spec.trim_large and excess >= spec.trim_large * self._peak_live:
                # one unmap that gives back a large share is worth its call; below the
                # peak, a bounded number of times (else a step could move the same large
                # run out and back every time)
                if new_peak or self._large_moves < self._large_move_limit():
                    allowed, large_move = 1, not new_peak
            if allowed <= 0:
                return 0
        page = self._page
        hot_after = self._clock if new_peak else self._peak_clock
        cands: list[tuple[bool, int, int, int, _Region]] = []
        for r in self._regions.values():
            for a, b, t in r.free_page_runs(page):
                if a == r.base:
                    # the region's first page stays mapped: the region (and where it starts)
                    # stays visible in segments(), so a warm start can rebuild it
                    a += page
                    if a >= b:
                        continue
                hot = t > hot_after
                if exclude is not None and r is exclude[0] and a < exclude[2] and b > exclude[1]:
                    # keep the pages the request is about to use
                    if a < exclude[1]:
                        cands.append((hot, a - exclude[1], a, exclude[1], r))
                    if b > exclude[2]:
                        cands.append((hot, exclude[2] - b, exclude[2], b, r))
                    continue
                cands.append((hot, a - b, a, b, r))
        cands.sort(key=lambda c: (c[0], c[1]))
        got = made = 0
        stop = excess if enough is None else min(enough, excess)
        for _hot, neg, a, b, r in cands:
            if got >= stop or made >= allowed:
                break
            made += 1
            # only what is needed, from the run's high end (low addresses stay mapped
            # for address-ordered reuse)
            take = min(-neg, -(-(excess - got) // page) * page)
            self._unmap(r, b - take, b, "slack")
            got += take
        self._trims += made
        if large_move:
            self._large_moves += made
        elif not (new_peak or force):
            self._moves += made
            after = spec.first_fit_after
            if made and after and self._fit != "first" and self._clock - self._peak_clock > after:
                self._use_first_fit()
        return got

    def _large_move_limit(self) -> int:
        """Large moves (unmaps past the budget below the live peak, each giving back at least
        ``trim_large`` of it) allowed so far: ``large_moves`` x the footprint's rise in such
        moves, and at most one per page of it."""
        spec, pages = self.spec, self._raised_pages
        if spec.large_moves is None or not self._peak_live:
            return pages
        return min(pages, int(spec.large_moves * pages * self._page / (spec.trim_large * self._peak_live)))

    def _use_first_fit(self) -> None:
        """Switch every region (and those made later) to first fit, for the rest of the run."""
        self._fit = "first"
        for r in self._regions.values():
            r.use_first_fit()

    @property
    def fit(self) -> str:
        """The fit in use: ``spec.fit``, or "first" once ``first_fit_after`` switched to it."""
        return self._fit

    def _release_all(self, reason: str) -> None:
        for r in list(self._regions.values()):
            for a, b, _t in r.free_page_runs(self._page):
                self._unmap(r, a, b, reason)
        if self._tiny_free:
            st = self.stats
            for size, addrs in self._tiny_free.items():
                for addr in addrs:
                    self.device.free(addr)
                    del self._tiny_seg[addr]
                    self._reserved -= size
                    st.dec(S.RESERVED_BYTES, _SMALL, size)
                    st.dec(S.SEGMENT, _SMALL, 1)
                    st.num_device_free += 1
                    if self._listeners or self._vmask:
                        self._emit(EventKind.SEGMENT_FREE, addr, size, 0, 0, _SMALL)
                        self._emit(EventKind.RELEASED, addr, size, 0, 0, _SMALL, {"reason": reason})
            self._tiny_free.clear()
        # memory given back (empty_cache, a retry, a plan taking over): the footprint
        # is found anew, and maps that raise it again allow moves again
        self._epoch_high = self._reserved

    # ------------------------------------------------------------ tiny blocks
    def _tiny_fits(self, rounded: int) -> bool:
        """Whether a request stays in the tiny phase: the footprint stays under
        ``tiny_share`` of a page, served by a cached exact allocation or a new one
        within ``tiny_allocs``. Each size costs a device call, where one page
        would serve them all."""
        if max(self._peak_live, self._tiny_floor) + rounded >= self._page * self.spec.tiny_share:
            return False
        return bool(self._tiny_free.get(rounded)) or len(self._tiny_seg) < self.spec.tiny_allocs

    def _tiny_region(self, stream: int) -> _Region:
        key = stream if self.spec.per_stream else 0
        r = self._tiny.get(key)
        if r is None:
            r = self._tiny[key] = _Region(0, 0, key, _SMALL)
        return r

    def _tiny_malloc(self, region: _Region, size: int, orig: int) -> tuple[int, bool]:
        cached = self._tiny_free.get(size)
        if cached:
            return cached.pop(), False
        hard = self._hard
        for attempt in range(2):
            if hard is None or self._reserved + size <= hard:
                try:
                    addr = self.device.malloc(size)
                    break
                except DeviceOutOfMemory:
                    pass
            if attempt == 0:
                self._release_all("retry")
                self.stats.num_alloc_retries += 1
        else:
            self._raise_oom(orig, size, region, None)
            raise AssertionError("unreachable")
        self._tiny_seg[addr] = size
        self._reserved += size
        if self._reserved > self._high_water:
            self._high_water = self._reserved
        if self._reserved > self._epoch_high:
            self._epoch_high = self._reserved
        st = self.stats
        st.inc(S.RESERVED_BYTES, _SMALL, size)
        st.inc(S.SEGMENT, _SMALL, 1)
        st.num_device_alloc += 1
        if self._listeners or self._vmask:
            self._emit(EventKind.SEGMENT_ALLOC, addr, size, region.stream, 0, _SMALL)
        return addr, True

    def _raise_oom(self, orig: int, size: int, region: _Region, why: str | None) -> None:
        dev, allocated, limit_text = self._oom_state()
        reserved = self._reserved
        if self._listeners or self._vmask:
            self._emit(EventKind.ALLOCATION_FAILED, 0, size, region.stream, orig, region.pool,
                       {"stage": "oom", "device_free": dev.free_bytes})
        limit = self._hard
        msg = (
            f"{self.name}: out of memory. Tried to allocate {format_bytes(size)} (request of {orig} B rounded to "
            f"{size} B, stream {region.stream}). The device has a total capacity of {format_bytes(dev.capacity)} of "
            f"which {format_bytes(dev.free_bytes)} is free.{limit_text} Of the memory in use, "
            f"{format_bytes(allocated)} is allocated and {format_bytes(reserved - allocated)} is reserved but "
            f"unallocated (every free page was already unmapped)."
            + (f" {why}." if why else "")
            + (f" Try {self.spec.oom_hint}." if self.spec.oom_hint else "")
        )
        raise OutOfMemoryError(msg, requested=orig, capacity=dev.capacity, allocated=allocated,
                               reserved=reserved, limit=limit)

    # ================================================================= free
    def free(self, address: int) -> None:
        """Return a block. Unknown or double frees raise AllocatorUsageError and change nothing."""
        self._free_block(address, give_back=True)

    def _free_block(self, address: int, give_back: bool) -> _Live:
        with self._lock:
            self._enter()
            b = self._live.pop(address, None) if type(address) is int else None
            if b is None:
                raise AllocatorUsageError(self._bad_free_message(address))
            region = b.region
            self._clock += 1
            if give_back:  # (else the space stays claimed by a plan)
                if region.size:
                    region.release(address, b.size, self._clock)
                else:  # a tiny block: keep its device allocation for a request of the same size
                    self._tiny_free.setdefault(b.size, []).append(address)
            self._live_bytes -= b.size
            self._frees += 1
            p = region.pool
            self.stats.on_free(p, b.size, b.requested)
            if self._listeners or self._vmask:
                self._emit(EventKind.FREED, address, b.size, region.stream, b.requested, p)
            return b

    # ============================================= placement dictated by a plan
    def malloc_at(self, region: _Region, addr: int, size: int, orig: int) -> bool:
        """Serve a request at ``addr``, inside space :meth:`_Region.claim` took out of
        ``region``'s free space; map the pages it touches that are not mapped. False
        (nothing changed) when the device or the hard limit has no room for them."""
        with self._lock:
            self._enter()
            page = self._page
            need = region.unmapped_runs(addr // page * page, -(-(addr + size) // page) * page)
            if need:
                hard = self._hard
                if hard is not None and self._reserved + sum(b - a for a, b in need) > hard:
                    return False
                done: list[tuple[int, int]] = []
                for a, b in need:
                    try:
                        self.device.map(a, b - a)
                    except DeviceOutOfMemory:
                        for da, db in done:
                            self._unmap(region, da, db, "undo", emit=False)
                        return False
                    self._mapped(region, a, b)
                    done.append((a, b))
            self._clock += 1
            self._commit(addr, size, orig, region, region.pool, bool(need))
            return True

    def forget(self, address: int) -> _Live:
        """Free a block whose space stays claimed by a plan (not given back to the holes)."""
        return self._free_block(address, give_back=False)

    def unclaim(self, region: _Region, ranges: SortedDict) -> None:
        """Give the free space of claimed ``ranges`` back to ``region``'s holes and top."""
        with self._lock:
            if not ranges:
                return
            lo, hi = ranges.keys()[0], ranges[ranges.keys()[-1]]
            lives = sorted((a, a + b.size) for a, b in self._live.items() if b.region is region and a < hi
                           and a + b.size > lo)
            k = 0
            for s, e in ranges.items():
                at = s
                while k < len(lives) and lives[k][1] <= s:
                    k += 1
                j = k
                while j < len(lives) and lives[j][0] < e:
                    if lives[j][0] > at:
                        region.release(at, lives[j][0] - at, self._clock)
                    at = max(at, lives[j][1])
                    j += 1
                if at < e:
                    region.release(at, e - at, self._clock)

    def release_outside(self, region: _Region, addr: int, size: int, ranges: SortedDict) -> None:
        """Give the parts of [addr, addr+size) (a block :meth:`forget` freed) that lie
        outside claimed ``ranges`` back to ``region``'s holes."""
        with self._lock:
            for x, y in _outside(ranges, addr, addr + size):
                region.release(x, y - x, self._clock)

    # ========================================================== public API
    def _empty_cache(self) -> None:
        """Unmap every free page (what c10 does for expandable segments)."""
        self._release_all("empty_cache")

    def _free_space(self) -> tuple[int, int, int]:
        page = self._page
        largest = 0
        total_free = self._reserved - self.stats.current(S.ALLOCATED_BYTES)
        for r in self._regions.values():
            for a, b, _t in r.free_page_runs(page):
                largest = max(largest, b - a)
            for a, n in r.holes.items():
                if not r.unmapped_runs(a // page * page, -(-(a + n) // page) * page):
                    largest = max(largest, n)
        return min(largest, total_free), total_free, self._reserved

    def _release_device(self) -> None:
        dev = self.device
        release = getattr(dev, "release_address_space", None)
        for r in self._regions.values():
            for a, b in r.mapped.items():
                dev.unmap(a, b - a)
            r.mapped.clear()
            if release is not None:
                release(r.reservation)
        for addr in self._tiny_seg:
            dev.free(addr)
        self._tiny_seg.clear()
        self._tiny_free.clear()
        self._regions.clear()
        self._region_at.clear()

    # ------------------------------------------------------------ inspection
    def segments(self) -> list[SegmentState]:
        """Each mapped run as an expandable ``SegmentState``; its blocks tile it
        (live blocks, free gaps). Live blocks may straddle two runs' boundary only
        if the runs are adjacent, which merging rules out."""
        with self._lock:
            out: list[SegmentState] = []
            by_region: dict[int, list[tuple[int, _Live]]] = {}
            for a, b in self._live.items():
                by_region.setdefault(id(b.region), []).append((a, b))
            for r in self._regions.values():
                lives = sorted(by_region.get(id(r), []), key=lambda t: t[0])
                j = 0
                for s, e in r.mapped.items():
                    blocks: list[BlockState] = []
                    at = s
                    while j < len(lives) and lives[j][0] < e:
                        a, b = lives[j]
                        if a > at:
                            blocks.append(BlockState(at, a - at, 0, False))
                        blocks.append(BlockState(a, b.size, b.requested, True))
                        at = a + b.size
                        j += 1
                    if at < e:
                        blocks.append(BlockState(at, e - at, 0, False))
                    out.append(SegmentState(s, e - s, r.stream, _POOL_NAME[r.pool], tuple(blocks), is_expandable=True))
            for addr, size in self._tiny_seg.items():
                b = self._live.get(addr)
                stream = b.region.stream if b is not None else 0
                block = BlockState(addr, size, b.requested if b is not None else 0, b is not None)
                out.append(SegmentState(addr, size, stream, "small", (block,)))
            out.sort(key=lambda s: s.address)
            return out

    def state_key(self) -> tuple | None:
        """Everything its later choices depend on, but its clocks; None with listeners
        attached (their own state is not known here).

        Why: a longer run repeats one step (:mod:`memtune.trace.extend`). The clocks
        (the age of free pages, of the live peak) are read only on a device call or a
        new live peak. So if the key is the same where two copies of the step end, with
        the device calls and the live peak unchanged, the copies between them made no
        call and read no clock; each later copy then repeats them, call for call, and a
        replay can stop there (:func:`memtune.trace.extend.replay_longer_run`).
        """
        with self._lock:
            if self._listeners:
                return None
            st = self.stats
            regions = tuple(
                (key, r.base, r.top, tuple(sorted(r.holes.items())), tuple(r.mapped.items()),
                 isinstance(r.free_index, _FirstFit))
                for key, r in sorted(self._regions.items()))
            live = tuple(sorted((a, b.size, b.requested, b.region.base, b.region.stream, b.region.pool)
                                for a, b in self._live.items()))
            tiny = (self._tiny_done, self._tiny_floor, tuple(sorted(self._tiny_seg.items())),
                    tuple(sorted((n, tuple(addrs)) for n, addrs in self._tiny_free.items() if addrs)))
            return (regions, live, tiny, self._fit, self._live_bytes, self._peak_live, self._climb_base,
                    self._high_water, self._reserved, self._epoch_high, self._raised_pages, self._maps,
                    self._trims, self._moves, self._large_moves, st.num_device_alloc, st.num_device_free,
                    st.num_alloc_retries, st.num_ooms)

    # =============================================================== restore
    def restore(self, initial_segments: Iterable[SegmentState]) -> dict[int, int]:
        """Warm start: recreate ``initial_segments`` at their own addresses where the
        device allows -- page-aligned segments become mapped runs of a region (their
        cached blocks free pages memtune may later unmap), small unaligned ones exact
        device allocations -- else place their live blocks compactly. Returns
        ``{trace_address: address}`` for every live block. Counts no device calls;
        peaks start from the restored state."""
        segs = sorted(initial_segments, key=lambda s: s.address)
        with self._lock:
            self._enter()
            mapping: dict[int, int] = {}
            calls = (self.stats.num_device_alloc, self.stats.num_device_free)
            for s in segs:
                for b in s.blocks:
                    if b.size <= 0:
                        raise AllocatorUsageError(f"restore: block at {b.address:#x} has size {b.size}")
            groups: dict[tuple[int, int], list[SegmentState]] = {}
            rest: list[SegmentState] = []
            page = self._page
            for s in segs:
                if s.address % page == 0 and s.total_size % page == 0:
                    ss = self._small_size
                    pool = _SMALL if ss is not None and s.pool == "small" else _LARGE
                    groups.setdefault((s.stream if self.spec.per_stream else 0, pool), []).append(s)
                else:
                    rest.append(s)
            # highest first: each region then takes the address space up to the next one
            for key, group in sorted(groups.items(), key=lambda kv: -kv[1][0].address):
                if self._restore_region(key, group, mapping):
                    self._tiny_done = True  # pages were in use: past the tiny phase
                else:
                    rest.extend(group)
            for s in sorted(rest, key=lambda s: s.address):
                self._restore_exact(s, mapping)
            self.stats.num_device_alloc, self.stats.num_device_free = calls
            self._peak_live = max(self._peak_live, self._live_bytes)
            self._high_water = max(self._high_water, self._reserved)
            self.stats.reset_peak()
            return mapping

    def _adopt(self, addr: int, size: int, requested: int, region: _Region) -> None:
        self._live[addr] = _Live(size, requested, region)
        self._live_bytes += size
        st, p = self.stats, region.pool  # not a hot path: the Stats helpers (active rows alias allocation's)
        st.inc(S.ALLOCATION, p, 1)
        st.inc(S.ALLOCATED_BYTES, p, size)
        st.inc(S.REQUESTED_BYTES, p, requested)

    def _restore_region(self, key: tuple[int, int], group: list[SegmentState], mapping: dict[int, int]) -> bool:
        """Page-aligned segments of one (stream, pool): one region holding them at their addresses."""
        if key in self._regions:
            return False
        base = group[0].address
        end = group[-1].address + group[-1].total_size
        # as much address space as is free above the segments (up to a region's size)
        need = end - base + self._page
        size = max(need, self._region_size)
        while True:
            try:
                res = self.device.reserve_address_space(size, address=base)  # type: ignore[call-arg]
                break
            except (ValueError, AllocatorUsageError):
                if size <= need:
                    return False
                size = max(need, size // 2 // self._page * self._page)
            except (TypeError, NotImplementedError):
                return False
        r = _Region(res, size, key[0], key[1], self._fit)
        self._regions[key] = r
        self._region_at[res] = r
        st = self.stats
        r.top = end
        free: list[tuple[int, int]] = []
        at = base
        page = self._page
        prev_expandable = True
        for s in group:
            if s.address > at and s.is_expandable and prev_expandable:
                # unmapped address space between mapped runs of one virtual range: free
                # (between another allocator's device allocations it is not ours to use)
                free.append((at, s.address - at))
            prev_expandable = s.is_expandable
            if s.is_expandable:
                runs = [(s.address, s.address + s.total_size)]
            else:
                # another allocator's device allocation: take over only the pages its live
                # blocks touch (its cached blocks were that allocator's choice, not memtune's)
                runs = []
                for b in s.blocks:
                    if b.allocated:
                        lo, hi = b.address // page * page, -(-(b.address + b.size) // page) * page
                        if runs and lo <= runs[-1][1]:
                            runs[-1] = (runs[-1][0], max(runs[-1][1], hi))
                        else:
                            runs.append((lo, hi))
            for lo, hi in runs:
                self.device.map(lo, hi - lo)
                r.mapped.add(lo, hi)
                r.mapped_bytes += hi - lo
                self._reserved += hi - lo
                st.inc(S.RESERVED_BYTES, key[1], hi - lo)
            for b in s.blocks:
                if b.allocated:
                    self._adopt(b.address, b.size, b.requested_size, r)
                    mapping[b.address] = b.address
                else:
                    free.append((b.address, b.size))
            at = s.address + s.total_size
        for a, n in free:
            r.release(a, n, self._clock)
        return True

    def _restore_exact(self, s: SegmentState, mapping: dict[int, int]) -> None:
        """A segment that cannot be a mapped run: an exact device allocation at its own
        address when the device allows (its live block adopted), else its live blocks
        allocated anew."""
        malloc_at = getattr(self.device, "malloc_at", None)
        if len(s.blocks) == 1 and malloc_at is not None and s.total_size < self._page:
            try:
                addr = malloc_at(s.address, s.total_size)
            except (ValueError, AllocatorUsageError):
                addr = None
            if addr is not None:
                b = s.blocks[0]
                region = self._tiny_region(s.stream)
                self._tiny_seg[addr] = s.total_size
                self._tiny_floor += s.total_size
                self._reserved += s.total_size
                self.stats.inc(S.RESERVED_BYTES, _SMALL, s.total_size)
                self.stats.inc(S.SEGMENT, _SMALL, 1)
                if b.allocated:
                    self._adopt(addr, s.total_size, b.requested_size, region)
                    mapping[b.address] = addr
                else:
                    self._tiny_free.setdefault(s.total_size, []).append(addr)
                return
        for b in s.blocks:
            if b.allocated:
                mapping[b.address] = self._malloc(b.requested_size or b.size, s.stream)


def _engine(spec: ArenaSpec) -> type[ArenaAllocator]:
    return ArenaAllocator


#: ``memtune.allocator()`` builds ``spec.engine(spec, device, env_verbose=...)`` when a
#: preset's spec names its engine (the default engine is the c10-style ``Allocator``).
ArenaSpec.engine = property(_engine)  # type: ignore[attr-defined]
