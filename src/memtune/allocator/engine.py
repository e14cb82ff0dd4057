"""The caching-allocator engine: one engine, many policies.

The algorithms are ports of c10's ``DeviceCachingAllocator`` (PyTorch
CUDACachingAllocator.cpp), parameterized by a :class:`PresetSpec` so the same
code reproduces PyTorch CUDA, MPS-style heaps, MXNet's pools, CuPy and
MegEngine. Function names follow c10 where the logic is c10's
(``get_free_block``, ``alloc_block``, ``release_available_cached_blocks``,
``release_cached_blocks``, ``free_block``, ``try_merge_blocks``,
``map_block``/``unmap_block`` for expandable segments), so the two can be read
side by side.

Data structures: each pool keeps its free blocks in a ``SortedList`` of
``(stream, size, address)`` keys -- best fit is one ``bisect`` -- plus a dict
from address to block; blocks of one device allocation form a doubly linked
list by address. Expandable segments also keep unmapped ranges keyed
``(stream, address)``.
"""

from __future__ import annotations

from typing import Iterable

from sortedcontainers import SortedList

from memtune.allocator import stats as S
from memtune.allocator.base import _LARGE, _POOL_NAME, _SMALL, AllocatorBase, _notify_created, check_stream
from memtune.allocator.events import EventKind
from memtune.allocator.pools import first_at_least
from memtune.allocator.spec import PresetSpec
from memtune.allocator.verbose import _SCOPED, PROFILING, log_profile
from memtune.devices.base import Device, DeviceOutOfMemory
from memtune.errors import AllocatorUsageError, OutOfMemoryError
from memtune.trace.model import BlockState, SegmentState
from memtune.units import format_bytes


class _Segment:
    """One device allocation (or one expandable virtual range)."""

    __slots__ = ("addr", "size", "stream", "pool", "expandable", "page", "pinned")

    def __init__(self, addr: int, size: int, stream: int, pool: int, expandable: bool = False, page: int = 0):
        self.addr = addr
        self.size = size
        self.stream = stream
        self.pool = pool
        self.expandable = expandable
        self.page = page
        self.pinned = False  # reserve-all segments are never given back


class Block:
    """A range inside a segment: live, cached (free) or, in expandable segments, unmapped."""

    __slots__ = ("addr", "size", "requested", "stream", "pool", "seg", "prev", "next", "allocated", "mapped",
                 "gc_base", "freed_seq", "cached")

    def __init__(self, addr: int, size: int, stream: int, pool: int, seg: _Segment):
        self.addr = addr
        self.size = size
        self.requested = 0
        self.stream = stream
        self.pool = pool
        self.seg = seg
        self.prev: Block | None = None
        self.next: Block | None = None
        self.allocated = False
        self.mapped = True
        self.gc_base = 0
        self.freed_seq = 0
        self.cached = False  # buffer-cache mode: a freed buffer kept whole (not merged into heap space)

    def __repr__(self) -> str:
        state = "live" if self.allocated else ("free" if self.mapped else "unmapped")
        return f"Block({self.addr:#x}, {self.size}, {state}, stream={self.stream}, {_POOL_NAME[self.pool]})"


class _Pool:
    __slots__ = ("index", "free", "fmap", "unmapped", "umap", "gc_calls", "cached", "cmap")

    def __init__(self, index: int):
        self.index = index
        self.free: SortedList = SortedList()  # (stream, size, addr)
        self.fmap: dict[int, Block] = {}
        self.unmapped: SortedList = SortedList()  # (stream, addr)
        self.umap: dict[int, Block] = {}
        self.gc_calls = 0
        # buffer-cache mode (MPS): freed buffers, kept whole, (stream, size, addr)
        self.cached: SortedList = SortedList()
        self.cmap: dict[int, Block] = {}


class Allocator(AllocatorBase):
    """A caching allocator running ``spec`` on ``device``.

    Build one with :func:`memtune.allocator` rather than directly. All public
    methods take one re-entrant lock, so listeners may call :meth:`free`.
    """

    _repr_name = "Allocator"
    _live: dict[int, Block]

    def __init__(self, spec: PresetSpec, device: Device, *, env_verbose: int = 0):
        super().__init__(spec, device, env_verbose)
        self._pools = {_SMALL: _Pool(_SMALL), _LARGE: _Pool(_LARGE)}
        self._small = self._pools[_SMALL]
        self._large = self._pools[_LARGE]
        self._segments: dict[int, _Segment] = {}
        # self._reserved: c10 total_allocated_memory (mapped bytes, all pools)
        self._seq = 0
        # settings resolved once: the hot path reads attributes only
        self._round = spec.rounding.round
        self._small_size = spec.small_size
        self._seg_size = spec.segments.segment_size
        self._pressure_size = getattr(spec.segments, "pressure_size", None)
        self._should_split = spec.split.should_split
        self._mss = spec.max_split_size
        self._mnsr = spec.max_non_split_rounding
        self._exact = spec.exact_fit
        self._slack = spec.max_reuse_slack
        self._merge = spec.merge
        self._buffers = spec.buffer_cache
        self._per_stream = spec.per_stream
        self._cache = spec.cache
        self._expandable = spec.expandable
        lim = spec.limits
        self._hard = lim.hard_limit if lim.hard_limit else None
        self._soft = lim.soft_limit if lim.soft_limit else None
        self._gc_on = bool(lim.gc_threshold > 0.0 and self._hard is not None)
        self._reserve_percent = lim.reserve_percent
        self._release_on_limit = spec.release_cache_on_limit
        self._limit_hit = False
        if self._expandable and type(device).reserve_address_space is Device.reserve_address_space:
            raise AllocatorUsageError(
                f"preset {spec.name!r} uses expandable segments, but the device {type(device).__name__} has no "
                "virtual memory (reserve_address_space/map/unmap); use a SimulatedDevice or disable expandable_segments"
            )
        if lim.reserve_all:
            self._reserve_everything()
        _notify_created(self)

    # ================================================================ helpers
    def _pool_for(self, size: int) -> _Pool:
        ss = self._small_size
        return self._small if ss is not None and size <= ss else self._large

    def _stamp_freed(self, pool: _Pool, b: Block) -> None:
        """Record when ``b`` became free: its age for garbage collection and its rank
        among frees (both the free list and the MPS buffer cache use them)."""
        b.gc_base = pool.gc_calls
        b.freed_seq = self._seq
        self._seq += 1

    def _insert_free(self, pool: _Pool, b: Block) -> None:
        self._stamp_freed(pool, b)
        pool.free.add((b.stream, b.size, b.addr))
        pool.fmap[b.addr] = b

    def _remove_free(self, pool: _Pool, b: Block) -> None:
        pool.free.remove((b.stream, b.size, b.addr))
        del pool.fmap[b.addr]

    # ================================================================ malloc
    def _malloc(self, orig_size: int, stream: int) -> int:
        size = self._round(orig_size)
        pool = self._pool_for(size)
        sk = stream if self._per_stream else 0
        block = self._get_free_buffer(pool, sk, size) if self._buffers else self._get_free_block(pool, sk, size)
        recycled = block is not None
        if block is None:
            alloc_size = self._seg_size(size, pool is self._small)
            if self._gc_on:
                self._garbage_collect_cached_blocks()
            if self._soft is not None:
                if self._buffers:
                    self._garbage_collect_cached_buffers(pool, size)
                else:
                    self._release_to_soft_limit(alloc_size)
            self._limit_hit = False
            block = self._alloc_block(pool, sk, size, alloc_size, False)
            if block is None and self._limit_hit and not self._release_on_limit:
                self._raise_oom(orig_size, size, alloc_size, sk, pool)
            if block is None and (self._listeners or self._vmask):
                frees = self._frees
                handled = self._emit(EventKind.ALLOCATION_FAILED, 0, size, sk, orig_size, pool.index,
                                     {"stage": "device", "device_free": self.device.free_bytes})
                if handled or self._frees != frees:
                    block = (self._get_free_buffer(pool, sk, size) if self._buffers
                             else self._get_free_block(pool, sk, size))
                    recycled = block is not None
                    if block is None:
                        block = self._alloc_block(pool, sk, size, alloc_size, False)
            if block is None and self._release_available_cached_blocks(pool, sk, size):
                block = self._alloc_block(pool, sk, size, alloc_size, False)
            if block is None and self._release_cached_blocks():
                block = self._alloc_block(pool, sk, size, alloc_size, True)
            if block is None:
                self._raise_oom(orig_size, size, alloc_size, sk, pool)
        # a recycled buffer is handed out whole (buffer-cache mode); otherwise the split rule decides
        split = not (recycled and self._buffers) and self._should_split(block.size, size, pool is self._small)
        b = self._alloc_found_block(block, pool, size, orig_size, split)
        if self._listeners or self._vmask:
            self._emit(EventKind.RECYCLED if recycled else EventKind.ALLOCATED, b.addr, b.size, b.stream,
                       orig_size, pool.index)
        return b.addr

    def _get_free_block(self, pool: _Pool, sk: int, size: int) -> Block | None:
        """c10 ``get_free_block``: best fit by (stream, size, address), then the
        max_split_size / max_non_split_rounding rules. None if no block qualifies."""
        if self._gc_on:
            pool.gc_calls += 1
        free, low = pool.free, (sk, size, 0)
        key = first_at_least(free, low)
        if key is None or key[0] != sk:
            return None
        fmap = pool.fmap
        b = fmap[key[2]]
        if b.seg.expandable:
            # an iterator past the first key, for the blocks after it
            it = free.irange(low)
            next(it)
            if self._expandable:
                # best fit by the size a block can grow to (c10 get_free_block)
                def exp_size(x: Block) -> int:
                    nx = x.next
                    return x.size + (nx.size if nx is not None and not nx.mapped else 0)

                while b.seg.expandable:
                    nk = next(it, None)
                    if nk is None or nk[0] != sk:
                        break
                    nb = fmap[nk[2]]
                    if exp_size(nb) < exp_size(b):
                        b, key = nb, nk
                    else:
                        break
            else:  # expandable segments were turned off: only non-expandable blocks
                while b.seg.expandable:
                    key = next(it, None)
                    if key is None or key[0] != sk:
                        return None
                    b = fmap[key[2]]
        bsize = b.size
        if self._exact and bsize != size:
            return None
        mss = self._mss
        if mss is not None:
            if size < mss and bsize >= mss:
                return None
            if size >= mss and bsize >= size + self._mnsr:
                return None
        if self._slack is not None and not self._buffers and bsize - size > self._slack:
            return None
        pool.free.remove(key)
        del fmap[b.addr]
        return b

    def _alloc_block(self, pool: _Pool, sk: int, size: int, alloc_size: int, is_retry: bool) -> Block | None:
        """Get new device memory for a request (c10 ``alloc_block``); None if refused."""
        st = self.stats
        if is_retry:
            st.num_alloc_retries += 1
        if self._buffers:
            if self._hard is not None and self._reserved + size > self._hard:
                self._limit_hit = True  # MPS checks the buffer against the high watermark, heap or not
                return None
            b = self._get_free_block(pool, sk, size)  # sub-allocate from an existing heap
            if b is not None:
                return b
            if self._soft is not None and self._reserved > self._soft and self._pressure_size is not None:
                alloc_size = max(size, self._pressure_size(size))  # no extra-large heaps under memory pressure
        if self._hard is not None and self._reserved + alloc_size > self._hard:
            fallback = self._fallback_size(size, pool)
            if fallback is None or self._reserved + fallback > self._hard:
                self._limit_hit = True
                return None
            alloc_size = fallback
        if self._reserve_percent:
            dev = self.device
            keep = dev.capacity * self._reserve_percent // 100
            free_now = dev.free_bytes
            if free_now <= keep or alloc_size > free_now - keep:
                self._release_cached_blocks()
        if self._expandable:
            return self._try_allocate_expandable_block(pool, sk, size)
        try:
            addr = self.device.malloc(alloc_size)
        except DeviceOutOfMemory:
            fallback = self._fallback_size(size, pool)
            if fallback is None or fallback >= alloc_size:
                return None
            try:
                addr = self.device.malloc(fallback)
            except DeviceOutOfMemory:
                return None
            alloc_size = fallback
        seg = _Segment(addr, alloc_size, sk, pool.index)
        self._segments[addr] = seg
        self._reserved += alloc_size
        b = Block(addr, alloc_size, sk, pool.index, seg)
        st.inc(S.SEGMENT, pool.index, 1)
        st.inc(S.RESERVED_BYTES, pool.index, alloc_size)
        st.num_device_alloc += 1
        if self._listeners or self._vmask:
            self._emit(EventKind.SEGMENT_ALLOC, addr, alloc_size, sk, 0, pool.index)
        return b

    def _fallback_size(self, size: int, pool: _Pool) -> int | None:
        """A smaller device allocation to try when the preferred one does not fit
        (segment sizings with ``pressure_size``, e.g. MPS heaps under memory pressure)."""
        pressure = self._pressure_size
        if pressure is None or pool is self._small:
            return None
        return pressure(size)

    def _alloc_found_block(self, block: Block, pool: _Pool, size: int, orig_size: int, split: bool) -> Block:
        st = self.stats
        p = pool.index
        already_split = block.prev is not None or block.next is not None
        expandable = block.seg.expandable
        if split:
            remaining = block
            block = Block(remaining.addr, size, remaining.stream, p, remaining.seg)
            block.prev = remaining.prev
            if block.prev is not None:
                block.prev.next = block
            block.next = remaining
            remaining.prev = block
            remaining.addr += size
            remaining.size -= size
            self._insert_free(pool, remaining)
            if not expandable:
                if already_split:
                    st.dec(S.INACTIVE_SPLIT_BYTES, p, block.size)
                else:
                    st.inc(S.INACTIVE_SPLIT_BYTES, p, remaining.size)
                    st.inc(S.INACTIVE_SPLIT, p, 1)
        elif already_split and not expandable:
            st.dec(S.INACTIVE_SPLIT_BYTES, p, block.size)
            st.dec(S.INACTIVE_SPLIT, p, 1)
        block.allocated = True
        block.requested = orig_size
        self._live[block.addr] = block
        st.on_alloc(p, block.size, orig_size)
        return block

    # ================================================================= free
    def free(self, address: int) -> None:
        """Return a block to the cache. Unknown or double frees raise
        :class:`memtune.AllocatorUsageError` and change nothing."""
        with self._lock:
            self._enter()
            block = self._live.get(address) if type(address) is int else None
            if block is None:
                raise AllocatorUsageError(self._bad_free_message(address))
            del self._live[address]
            self._free(block)

    def _cached_free_message(self, address: int) -> str | None:
        for pool in self._pools.values():
            if address in pool.fmap or address in pool.cmap:
                return f"double free: address {address:#x} is not allocated (it is a cached free block of {self.name!r})"
        return None

    def _free(self, block: Block) -> None:
        st = self.stats
        p = block.pool
        pool = self._pools[p]
        block.allocated = False
        self._frees += 1
        orig_addr, orig_size, requested, stream = block.addr, block.size, block.requested, block.stream
        st.on_free(p, orig_size, requested)
        self._free_block(block, pool)
        if self._listeners or self._vmask:
            self._emit(EventKind.FREED, orig_addr, orig_size, stream, requested, p)
        if not self._cache and block.prev is None and block.next is None and not block.seg.expandable:
            if not block.seg.pinned:
                self._release_block(block, "unpooled")

    def _free_block(self, block: Block, pool: _Pool) -> None:
        """c10 ``free_block``: merge with free neighbours and cache the block."""
        st = self.stats
        p = pool.index
        net_blocks = 0
        net_size = 0
        if self._buffers:
            self._insert_cached(pool, block)
        else:
            if self._merge:
                for cand in (block.prev, block.next):
                    sub = self._try_merge_blocks(block, cand, pool)
                    if sub:
                        net_blocks -= 1
                        net_size -= sub
            self._insert_free(pool, block)
        if block.prev is not None or block.next is not None:
            net_blocks += 1
            net_size += block.size
        if not block.seg.expandable:
            if net_blocks > 0:
                st.inc(S.INACTIVE_SPLIT, p, net_blocks)
            elif net_blocks < 0:
                st.dec(S.INACTIVE_SPLIT, p, -net_blocks)
            if net_size > 0:
                st.inc(S.INACTIVE_SPLIT_BYTES, p, net_size)
            elif net_size < 0:
                st.dec(S.INACTIVE_SPLIT_BYTES, p, -net_size)

    def _try_merge_blocks(self, dst: Block, src: Block | None, pool: _Pool) -> int:
        if src is None or src.allocated or src.cached or dst.mapped != src.mapped:
            return 0
        if src.mapped:
            self._remove_free(pool, src)
        else:
            pool.unmapped.remove((src.stream, src.addr))
            del pool.umap[src.addr]
        if dst.prev is src:
            dst.addr = src.addr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        return src.size

    # ============================================================ releasing
    def _release_block(self, block: Block, reason: str) -> None:
        """Give an unsplit cached block's device allocation back (c10 ``release_block``)."""
        st = self.stats
        p = block.pool
        seg = block.seg
        if not block.allocated and block.addr in self._pools[p].fmap:
            self._remove_free(self._pools[p], block)
        self.device.free(seg.addr)
        del self._segments[seg.addr]
        self._reserved -= seg.size
        st.dec(S.SEGMENT, p, 1)
        st.dec(S.RESERVED_BYTES, p, seg.size)
        st.num_device_free += 1
        if self._listeners or self._vmask:
            self._emit(EventKind.SEGMENT_FREE, seg.addr, seg.size, seg.stream, 0, p)
            self._emit(EventKind.RELEASED, seg.addr, seg.size, seg.stream, 0, p, {"reason": reason})

    def _release_available_cached_blocks(self, pool: _Pool, sk: int, size: int) -> bool:
        """Free oversize cached blocks, only enough for ``size`` (c10)."""
        if self._buffers:
            return self._release_available_cached_buffers(pool, sk, size)
        mss = self._mss
        if mss is None:
            return False
        key_size = size if size >= mss else mss
        free = pool.free
        i = free.bisect_left((sk, key_size, 0))
        if i == len(free) or free[i][0] != sk:
            if i == 0:
                return False
            total = 0
            i -= 1
            while total < key_size:
                k = free[i]
                if k[1] < mss or k[0] != sk:
                    break
                b = pool.fmap[k[2]]
                if b.prev is not None or b.next is not None or b.seg.expandable or b.seg.pinned:
                    break  # only whole device allocations can go back (c10 never splits oversize blocks)
                total += b.size
                self._release_block(b, "oversize")
                if i == 0:
                    break
                i -= 1
            if total < key_size:
                return False
        else:
            b = pool.fmap[free[i][2]]
            if b.prev is not None or b.next is not None or b.seg.expandable or b.seg.pinned:
                return False
            self._release_block(b, "oversize")
        return True

    def _release_cached_blocks(self, reason: str = "retry") -> bool:
        """Free every unsplit cached block, large pool first (c10 ``release_cached_blocks``)."""
        self._release_blocks(self._large, reason)
        self._release_blocks(self._small, reason)
        return True

    def _release_blocks(self, pool: _Pool, reason: str) -> None:
        if self._buffers:
            for key in list(pool.cached):
                self._release_buffer(pool.cmap[key[2]], pool, False, reason)
        to_unmap: list[Block] = []
        for key in list(pool.free):
            b = pool.fmap.get(key[2])
            if b is None:
                continue
            if b.seg.expandable:
                to_unmap.append(b)
            elif b.prev is None and b.next is None and not b.seg.pinned:
                self._release_block(b, reason)
        for b in to_unmap:
            self._unmap_block(b, pool, reason)
            if b.prev is None and b.next is None and not b.mapped:
                self._release_expandable_segment(b, pool)

    # ------------------------------------------------ buffer cache (MPS heaps)
    def _insert_cached(self, pool: _Pool, b: Block) -> None:
        b.cached = True
        self._stamp_freed(pool, b)
        pool.cached.add((b.stream, b.size, b.addr))
        pool.cmap[b.addr] = b

    def _remove_cached(self, pool: _Pool, b: Block) -> None:
        pool.cached.remove((b.stream, b.size, b.addr))
        del pool.cmap[b.addr]
        b.cached = False

    def _get_free_buffer(self, pool: _Pool, sk: int, size: int) -> Block | None:
        """MPS ``get_free_buffer``: reuse a cached buffer whole unless it is oversize
        (more than ``max_reuse_slack`` larger); an oversize one is released into its heap
        when no heap has room, so the heap space is reused instead of a new heap."""
        if self._hard is not None and self._reserved + size > self._hard:
            return None
        if self._soft is not None and pool is self._large:
            pool.gc_calls += 1  # buffer ages count look-ups (gc_count)
        key = next(pool.cached.irange((sk, size, 0)), None)
        if key is None or key[0] != sk:
            return None
        b = pool.cmap[key[2]]
        slack = self._slack
        if slack is None or b.size <= size + slack:
            self._remove_cached(pool, b)
            return b
        room = next(pool.free.irange((sk, size, 0)), None)
        if room is not None and room[0] == sk:
            return None  # an existing heap has room: sub-allocate there
        self._release_buffer(b, pool, False, "oversize")
        return None

    def _release_buffer(self, b: Block, pool: _Pool, remove_empty_heap: bool, reason: str) -> None:
        """MPS ``release_buffer``: a cached buffer's space goes back to its heap (merging
        with free heap space); an emptied heap is given back to the device if asked."""
        st = self.stats
        p = pool.index
        self._remove_cached(pool, b)
        was_split = b.prev is not None or b.next is not None
        before_blocks = 1 if was_split else 0
        before_bytes = b.size if was_split else 0
        for cand in (b.prev, b.next):
            sub = self._try_merge_blocks(b, cand, pool)
            if sub:
                before_blocks += 1
                before_bytes += sub
        after_split = b.prev is not None or b.next is not None
        after_blocks, after_bytes = (1, b.size) if after_split else (0, 0)
        if after_blocks != before_blocks:
            st.dec(S.INACTIVE_SPLIT, p, before_blocks - after_blocks)
        if after_bytes != before_bytes:
            st.dec(S.INACTIVE_SPLIT_BYTES, p, before_bytes - after_bytes)
        self._insert_free(pool, b)
        if self._listeners or self._vmask:
            self._emit(EventKind.RELEASED, b.addr, b.size, b.stream, 0, p, {"reason": reason, "to": "heap"})
        if remove_empty_heap and not after_split and not b.seg.pinned:
            self._release_block(b, reason)

    def _release_available_cached_buffers(self, pool: _Pool, sk: int, size: int) -> bool:
        """MPS ``release_available_cached_buffers``: release the smallest cached buffer that
        covers ``size``, else the largest ones until together they do."""
        cached = pool.cached
        if not cached:
            return False
        i = cached.bisect_left((sk, size, 0))
        if i < len(cached) and cached[i][0] == sk:
            self._release_buffer(pool.cmap[cached[i][2]], pool, True, "retry")
            return True
        total = 0
        i -= 1
        while total < size and i >= 0 and cached[i][0] == sk:
            b = pool.cmap[cached[i][2]]
            total += b.size
            self._release_buffer(b, pool, True, "retry")
            i -= 1
        return total >= size

    def _garbage_collect_cached_buffers(self, pool: _Pool, size: int) -> None:
        """MPS ``garbage_collect_cached_buffers`` under memory pressure (above the low
        watermark, large pool): release cached buffers of at least average age until
        reserved memory is back under the low watermark."""
        soft = self._soft
        assert soft is not None
        if pool is not self._large or self._reserved < soft:
            return
        available = sum(k[1] for k in pool.cached)
        if size >= available:
            return
        target = self._reserved - soft
        blocks = [pool.cmap[k[2]] for k in pool.cached]
        total_age = sum(pool.gc_calls - b.gc_base for b in blocks)
        count = len(blocks)
        reclaimed = 0
        freed = True
        while reclaimed < target and freed and count > 0:
            threshold = total_age / count
            freed = False
            for k in list(pool.cached):
                if reclaimed >= target:
                    break
                b = pool.cmap.get(k[2])
                if b is None:
                    continue
                age = pool.gc_calls - b.gc_base
                if age >= threshold:
                    freed = True
                    reclaimed += b.size
                    total_age -= age
                    count -= 1
                    self._release_buffer(b, pool, True, "garbage_collection")

    def _garbage_collect_cached_blocks(self) -> None:
        """c10 ``garbage_collect_cached_blocks`` (garbage_collection_threshold)."""
        assert self._hard is not None
        gc_threshold = int(self.spec.limits.gc_threshold * self._hard)
        if self._reserved <= gc_threshold:
            return
        target = self._reserved - gc_threshold
        large = self._large

        def freeable() -> list[Block]:
            out = []
            for k in large.free:
                b = large.fmap[k[2]]
                if b.prev is None and b.next is None and not b.seg.expandable:
                    out.append(b)
            return out

        blocks = freeable()
        total_age = sum(large.gc_calls - b.gc_base for b in blocks)
        count = len(blocks)
        if count == 0:
            return
        reclaimed = 0
        freed = True
        while reclaimed < target and freed and count > 0:
            age_threshold = total_age / count
            freed = False
            for b in freeable():
                age = large.gc_calls - b.gc_base
                if age >= age_threshold:
                    freed = True
                    reclaimed += b.size
                    total_age -= age
                    count -= 1
                    self._release_block(b, "garbage_collection")

    def _release_to_soft_limit(self, alloc_size: int) -> None:
        """Low watermark: release idle unsplit cached blocks, oldest first, until
        the coming device allocation keeps reserved at or below the soft limit."""
        soft = self._soft
        assert soft is not None
        if self._reserved + alloc_size <= soft:
            return
        # Whole cached segments are released; in expandable segments the pages
        # under any cached block are unmapped (the segment itself may stay live).
        candidates = [
            b for pool in (self._large, self._small) for b in pool.fmap.values()
            if not b.seg.pinned and (b.seg.expandable or (b.prev is None and b.next is None))
        ]
        candidates.sort(key=lambda b: b.freed_seq)
        for b in candidates:
            if self._reserved + alloc_size <= soft:
                break
            pool = self._pools[b.pool]
            if pool.fmap.get(b.addr) is not b:  # merged away by an earlier unmap
                continue
            if b.seg.expandable:
                self._unmap_block(b, pool, "low_watermark")
                if b.prev is None and b.next is None and not b.mapped:
                    self._release_expandable_segment(b, pool)
            else:
                self._release_block(b, "low_watermark")

    # ==================================================== expandable segments
    def _new_expandable_segment(self, pool: _Pool, sk: int, address: int | None = None,
                                size: int | None = None) -> Block:
        page = self.spec.small_page if pool is self._small else self.spec.large_page
        if size is None:
            cap = self.device.capacity
            want = int(cap * self.spec.expandable_address_factor)
            size = (want + page - 1) // page * page
        if address is None:
            addr = self.device.reserve_address_space(size)
        else:
            addr = self.device.reserve_address_space(size, address=address)  # type: ignore[call-arg]
        seg = _Segment(addr, size, sk, pool.index, expandable=True, page=page)
        self._segments[addr] = seg
        b = Block(addr, size, sk, pool.index, seg)
        b.mapped = False
        pool.unmapped.add((sk, addr))
        pool.umap[addr] = b
        return b

    def _find_expandable_block(self, pool: _Pool, sk: int, size: int) -> Block:
        def allocatable(b: Block | None) -> bool:
            return b is not None and not b.allocated

        def has_space(b: Block | None) -> bool:
            total = 0
            while total < size and allocatable(b):
                total += b.size  # type: ignore[union-attr]
                b = b.next  # type: ignore[union-attr]
            return total >= size

        um = pool.unmapped
        for key in um.irange((sk, 0), (sk + 1, 0), inclusive=(True, False)):
            c = pool.umap[key[1]]
            if allocatable(c.prev):
                c = c.prev  # type: ignore[assignment]
            if has_space(c):
                return c
        return self._new_expandable_segment(pool, sk)

    def _map_block(self, to_map: Block, size: int, pool: _Pool) -> bool:
        seg = to_map.seg
        page = seg.page
        off = to_map.addr - seg.addr
        begin = off // page
        end = -(-(off + size) // page)
        map_addr = seg.addr + begin * page
        map_size = (end - begin) * page
        if map_size == 0:
            return True
        try:
            self.device.map(map_addr, map_size)
        except DeviceOutOfMemory:
            return False
        pool.unmapped.remove((to_map.stream, to_map.addr))
        del pool.umap[to_map.addr]
        to_map.mapped = True
        if map_size < to_map.size:
            rest = Block(to_map.addr + map_size, to_map.size - map_size, to_map.stream, pool.index, seg)
            rest.mapped = False
            rest.prev = to_map
            rest.next = to_map.next
            if to_map.next is not None:
                to_map.next.prev = rest
            to_map.next = rest
            pool.unmapped.add((rest.stream, rest.addr))
            pool.umap[rest.addr] = rest
            to_map.size = map_size
        self._try_merge_blocks(to_map, to_map.prev, pool)
        self._try_merge_blocks(to_map, to_map.next, pool)
        self._insert_free(pool, to_map)
        self._reserved += map_size
        st = self.stats
        st.inc(S.RESERVED_BYTES, pool.index, map_size)
        st.num_device_alloc += 1
        if self._listeners or self._vmask:
            self._emit(EventKind.SEGMENT_MAP, map_addr, map_size, to_map.stream, 0, pool.index)
        return True

    def _try_allocate_expandable_block(self, pool: _Pool, sk: int, size: int) -> Block | None:
        candidate = self._find_expandable_block(pool, sk, size)
        if not candidate.mapped and not self._map_block(candidate, min(candidate.size, size), pool):
            return None
        while candidate.size < size:
            remaining = size - candidate.size
            nxt = candidate.next
            assert nxt is not None
            if not self._map_block(nxt, min(remaining, nxt.size), pool):
                return None
            candidate = nxt
        self._remove_free(pool, candidate)
        return candidate

    def _unmap_block(self, block: Block, pool: _Pool, reason: str) -> None:
        seg = block.seg
        page = seg.page
        off = block.addr - seg.addr
        begin = -(-off // page)
        end = (off + block.size) // page
        if begin >= end:
            return
        un_addr = seg.addr + begin * page
        un_size = (end - begin) * page
        self.device.unmap(un_addr, un_size)
        self._remove_free(pool, block)
        before = un_addr - block.addr
        if before > 0:
            bf = Block(block.addr, before, block.stream, pool.index, seg)
            bf.prev = block.prev
            if bf.prev is not None:
                bf.prev.next = bf
            bf.next = block
            block.prev = bf
            self._insert_free(pool, bf)
        after = block.size - (before + un_size)
        if after > 0:
            af = Block(un_addr + un_size, after, block.stream, pool.index, seg)
            af.next = block.next
            if af.next is not None:
                af.next.prev = af
            af.prev = block
            block.next = af
            self._insert_free(pool, af)
        block.addr = un_addr
        block.size = un_size
        block.mapped = False
        self._try_merge_blocks(block, block.prev, pool)
        self._try_merge_blocks(block, block.next, pool)
        pool.unmapped.add((block.stream, block.addr))
        pool.umap[block.addr] = block
        self._reserved -= un_size
        st = self.stats
        st.dec(S.RESERVED_BYTES, pool.index, un_size)
        st.num_device_free += 1
        if self._listeners or self._vmask:
            self._emit(EventKind.SEGMENT_UNMAP, un_addr, un_size, block.stream, 0, pool.index)
            self._emit(EventKind.RELEASED, un_addr, un_size, block.stream, 0, pool.index, {"reason": reason})

    def _release_expandable_segment(self, block: Block, pool: _Pool) -> None:
        seg = block.seg
        pool.unmapped.remove((block.stream, block.addr))
        del pool.umap[block.addr]
        del self._segments[seg.addr]
        release = getattr(self.device, "release_address_space", None)
        if release is not None:
            release(seg.addr)

    # ================================================================= OOM
    def _raise_oom(self, orig_size: int, size: int, alloc_size: int, sk: int, pool: _Pool) -> None:
        dev, allocated, limit_text = self._oom_state()
        st = self.stats
        reserved = st.current(S.RESERVED_BYTES)
        device_free = dev.free_bytes
        if self._listeners or self._vmask:
            self._emit(EventKind.ALLOCATION_FAILED, 0, size, sk, orig_size, pool.index,
                       {"stage": "oom", "device_free": device_free, "alloc_size": alloc_size})
            if self._vmask & PROFILING:
                log_profile(self._vmask, self.name, f"out of memory for {orig_size} B", st.as_dict())
        limit = self._hard
        hint = self.spec.oom_hint
        msg = (
            f"{self.name}: out of memory. Tried to allocate {format_bytes(alloc_size)} "
            f"(request of {orig_size} B rounded to {size} B, stream {sk}). The device has a total capacity of "
            f"{format_bytes(dev.capacity)} of which {format_bytes(device_free)} is free.{limit_text} "
            f"Of the memory in use, {format_bytes(allocated)} is allocated and {format_bytes(reserved - allocated)} "
            f"is reserved but unallocated."
            + (f" If reserved but unallocated memory is large, try setting {hint}." if hint
               else " Free memory before this allocation or give the device more capacity.")
        )
        raise OutOfMemoryError(msg, requested=orig_size, capacity=dev.capacity, allocated=allocated,
                               reserved=reserved, limit=limit)

    # ============================================================ reserve-all
    def _reserve_everything(self) -> None:
        """MegEngine-style: take the whole device as one pinned segment in the large pool."""
        dev = self.device
        size = dev.free_bytes // dev.alignment * dev.alignment
        if size <= 0:
            return
        addr = dev.malloc(size)
        pool = self._large
        seg = _Segment(addr, size, 0, pool.index)
        seg.pinned = True
        self._segments[addr] = seg
        self._reserved += size
        b = Block(addr, size, 0, pool.index, seg)
        self._insert_free(pool, b)
        self.stats.inc(S.SEGMENT, pool.index, 1)
        self.stats.inc(S.RESERVED_BYTES, pool.index, size)
        self.stats.num_device_alloc += 1

    # ========================================================== public API
    def _empty_cache(self) -> None:
        """Give every unsplit cached block (and free expandable pages) back to the device."""
        self._release_cached_blocks("empty_cache")
        if self._vmask & PROFILING:
            log_profile(self._vmask, self.name, "empty_cache", self.stats.as_dict())

    def _free_space(self) -> tuple[int, int, int]:
        largest = 0
        total_free = 0
        for pool in self._pools.values():
            for b in (*pool.fmap.values(), *pool.cmap.values()):
                total_free += b.size
                if b.size > largest:
                    largest = b.size
        return largest, total_free, self.stats.current(S.RESERVED_BYTES)

    def _release_device(self) -> None:
        m = _SCOPED.get()
        mask = self._env_verbose if m is None else m
        if mask & PROFILING:
            log_profile(mask, self.name, "close", self.stats.as_dict())
        dev = self.device
        for seg in list(self._segments.values()):
            if seg.expandable:
                for a, s in _mapped_pages(self._segment_blocks(seg), seg):
                    dev.unmap(a, s)
                release = getattr(dev, "release_address_space", None)
                if release is not None:
                    release(seg.addr)
            else:
                dev.free(seg.addr)
        self._segments.clear()
        for pool in self._pools.values():
            pool.free.clear()
            pool.fmap.clear()
            pool.unmapped.clear()
            pool.umap.clear()
            pool.cached.clear()
            pool.cmap.clear()

    # ------------------------------------------------------------ inspection
    def _segment_blocks(self, seg: _Segment) -> list[Block]:
        pool = self._pools[seg.pool]
        b = self._live.get(seg.addr) or pool.fmap.get(seg.addr) or pool.cmap.get(seg.addr) or pool.umap.get(seg.addr)
        if b is None or b.seg is not seg:
            raise AssertionError(f"segment {seg.addr:#x} has no head block")
        out = []
        while b is not None:
            out.append(b)
            b = b.next
        return out

    def segments(self) -> list[SegmentState]:
        """The current layout, as trace-model ``SegmentState``s sorted by address.

        Expandable segments are reported as one segment per contiguous mapped
        range (as PyTorch snapshots do).
        """
        with self._lock:
            out: list[SegmentState] = []
            for seg in self._segments.values():
                blocks = self._segment_blocks(seg)
                pool = _POOL_NAME[seg.pool]
                if not seg.expandable:
                    out.append(SegmentState(seg.addr, seg.size, seg.stream, pool, tuple(
                        BlockState(b.addr, b.size, b.requested if b.allocated else 0, b.allocated) for b in blocks)))
                    continue
                run: list[Block] = []
                for b in blocks + [None]:  # type: ignore[list-item]
                    if b is not None and b.mapped:
                        run.append(b)
                        continue
                    if run:
                        out.append(SegmentState(run[0].addr, sum(x.size for x in run), seg.stream, pool, tuple(
                            BlockState(x.addr, x.size, x.requested if x.allocated else 0, x.allocated)
                            for x in run), is_expandable=True))
                        run = []
            out.sort(key=lambda s: s.address)
            return out

    # =============================================================== restore
    def restore(self, initial_segments: Iterable[SegmentState]) -> dict[int, int]:
        """Warm start: recreate ``initial_segments`` (sizes, pools, streams, block
        layout; live blocks allocated, cached blocks free).

        Segments are placed at the trace's own addresses when the device allows
        (:meth:`SimulatedDevice.malloc_at`), so best-fit tie-breaks match the
        real run. Returns ``{trace_address: address}`` for every block and
        segment start. Restoring counts no device allocations and emits no
        events; peaks start from the restored state. A reserve-all allocator
        (MegEngine) already holds the whole device: there the live blocks are
        allocated from its reserve instead.
        """
        segs = list(initial_segments)
        with self._lock:
            self._enter()
            mapping: dict[int, int] = {}
            if self.spec.limits.reserve_all:
                # the whole device is this allocator's reserve: live blocks are carved out of it
                for s in segs:
                    self._check_layout(s)
                for s in segs:
                    for b in s.blocks:
                        if b.allocated:
                            mapping[b.address] = self._malloc(max(b.requested_size, 1), check_stream(s.stream))
                self.stats.reset_peak()
                return mapping
            plain = [s for s in segs if not s.is_expandable]
            expandable = [s for s in segs if s.is_expandable]
            for s in plain:
                self._restore_segment(s, mapping)
            if expandable:
                self._restore_expandable(expandable, mapping)
            return mapping

    def _restore_pool(self, s: SegmentState) -> _Pool:
        if s.pool not in ("small", "large"):
            raise AllocatorUsageError(f"restore: segment {s.address:#x} has pool {s.pool!r}; accepted: 'small', 'large'")
        if s.pool == "small" and self._small_size is not None:
            return self._small
        return self._large

    def _check_layout(self, s: SegmentState) -> None:
        if s.total_size <= 0 or not s.blocks:
            raise AllocatorUsageError(f"restore: segment {s.address:#x} has size {s.total_size} and "
                                      f"{len(s.blocks)} blocks; need a positive size and at least one block")
        at = s.address
        for b in s.blocks:
            if b.address != at or b.size <= 0:
                raise AllocatorUsageError(
                    f"restore: segment {s.address:#x}: block at {b.address:#x} (size {b.size}) does not follow the "
                    f"previous block (expected address {at:#x}); blocks must tile the segment in address order")
            at += b.size
        if at != s.address + s.total_size:
            raise AllocatorUsageError(
                f"restore: segment {s.address:#x}: blocks cover {at - s.address} B of total_size {s.total_size}")

    def _restore_segment(self, s: SegmentState, mapping: dict[int, int]) -> None:
        self._check_layout(s)
        pool = self._restore_pool(s)
        sk = check_stream(s.stream) if self._per_stream else 0
        dev = self.device
        malloc_at = getattr(dev, "malloc_at", None)
        addr = None
        if malloc_at is not None:
            try:
                addr = malloc_at(s.address, s.total_size)
            except ValueError:
                addr = None
        try:
            if addr is None:
                addr = dev.malloc(s.total_size)
        except DeviceOutOfMemory as e:
            raise OutOfMemoryError(
                f"restore: segment of {format_bytes(s.total_size)} does not fit on the device "
                f"({format_bytes(e.free)} free of {format_bytes(dev.capacity)})",
                requested=s.total_size, capacity=dev.capacity, allocated=self.allocated_bytes,
                reserved=self._reserved) from None
        delta = addr - s.address
        seg = _Segment(addr, s.total_size, sk, pool.index)
        self._segments[addr] = seg
        self._reserved += s.total_size
        st = self.stats
        p = pool.index
        st.inc(S.SEGMENT, p, 1)
        st.inc(S.RESERVED_BYTES, p, s.total_size)
        mapping[s.address] = addr
        split = len(s.blocks) > 1
        prev: Block | None = None
        for bs in s.blocks:
            b = Block(bs.address + delta, bs.size, sk, p, seg)
            b.prev = prev
            if prev is not None:
                prev.next = b
            prev = b
            mapping[bs.address] = b.addr
            if bs.allocated:
                b.allocated = True
                b.requested = bs.requested_size
                self._live[b.addr] = b
                st.inc(S.ALLOCATION, p, 1)
                st.inc(S.ALLOCATED_BYTES, p, b.size)  # (and active, the same rows: base.py)
                st.inc(S.REQUESTED_BYTES, p, b.requested)
            else:
                self._insert_free(pool, b)
                if split:
                    st.inc(S.INACTIVE_SPLIT, p, 1)
                    st.inc(S.INACTIVE_SPLIT_BYTES, p, b.size)

    def _restore_expandable(self, segs: list[SegmentState], mapping: dict[int, int]) -> None:
        """Rebuild expandable segments: one virtual range per (stream, pool) holding
        the mapped ranges at their trace addresses, unmapped gaps in between."""
        if not self._expandable:
            raise AllocatorUsageError(
                "restore: the trace has expandable segments but this allocator does not use them; "
                "replay with expandable_segments=True")
        groups: dict[tuple[int, int], list[SegmentState]] = {}
        for s in segs:
            self._check_layout(s)
            pool = self._restore_pool(s)
            sk = check_stream(s.stream) if self._per_stream else 0
            groups.setdefault((sk, pool.index), []).append(s)
        st = self.stats
        for (sk, p), group in groups.items():
            pool = self._pools[p]
            group.sort(key=lambda s: s.address)
            page = self.spec.small_page if p == _SMALL else self.spec.large_page
            base = group[0].address
            span = group[-1].address + group[-1].total_size - base
            want = int(self.device.capacity * self.spec.expandable_address_factor)
            size = max(span, want)
            size = (size + page - 1) // page * page
            try:
                head = self._new_expandable_segment(pool, sk, address=base, size=size)
            except (ValueError, TypeError):
                head = self._new_expandable_segment(pool, sk, size=size)
            seg = head.seg
            delta = seg.addr - base
            # carve the single unmapped block into [unmapped gap][mapped blocks]... [unmapped tail]
            pool.unmapped.remove((sk, head.addr))
            del pool.umap[head.addr]
            blocks: list[Block] = []
            at = seg.addr
            for s in group:
                start = s.address + delta
                if (start - seg.addr) % page or s.total_size % page:
                    raise AllocatorUsageError(
                        f"restore: expandable segment {s.address:#x} of {s.total_size} B is not aligned to "
                        f"{page} B pages")
                if start > at:
                    gap = Block(at, start - at, sk, p, seg)
                    gap.mapped = False
                    blocks.append(gap)
                self.device.map(start, s.total_size)
                self._reserved += s.total_size
                st.inc(S.RESERVED_BYTES, p, s.total_size)
                mapping[s.address] = start
                for bs in s.blocks:
                    b = Block(bs.address + delta, bs.size, sk, p, seg)
                    if bs.allocated:
                        b.allocated = True
                        b.requested = bs.requested_size
                    blocks.append(b)
                    mapping[bs.address] = b.addr
                at = start + s.total_size
            if at < seg.addr + seg.size:
                tail = Block(at, seg.addr + seg.size - at, sk, p, seg)
                tail.mapped = False
                blocks.append(tail)
            for a, b in zip(blocks, blocks[1:]):
                a.next = b
                b.prev = a
            for b in blocks:
                if not b.mapped:
                    pool.unmapped.add((sk, b.addr))
                    pool.umap[b.addr] = b
                elif b.allocated:
                    self._live[b.addr] = b
                    st.inc(S.ALLOCATION, p, 1)
                    st.inc(S.ALLOCATED_BYTES, p, b.size)  # (and active, the same rows: base.py)
                    st.inc(S.REQUESTED_BYTES, p, b.requested)
                else:
                    self._insert_free(pool, b)


def _mapped_pages(blocks: list[Block], seg: _Segment) -> list[tuple[int, int]]:
    """Contiguous mapped ranges of an expandable segment, as (address, size)."""
    out: list[tuple[int, int]] = []
    start = None
    end = 0
    for b in blocks:
        if b.mapped:
            if start is None:
                start = b.addr
            end = b.addr + b.size
        elif start is not None:
            out.append((start, end - start))
            start = None
    if start is not None:
        out.append((start, end - start))
    return out

