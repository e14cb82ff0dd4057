"""What every allocator engine shares: lock, statistics, listeners, the public
inspection API and the bad-free message.

Why: :class:`memtune.allocator.engine.Allocator` (the c10-style engine every
framework preset runs) and :class:`memtune.allocator.arena.ArenaAllocator`
(memtune's own policy) expose one public interface; keeping its scaffolding in
one place keeps the two from drifting apart. The hot paths (``malloc``/``free``)
stay in the engines themselves and only read attributes set up here.

A subclass calls :meth:`AllocatorBase.__init__`, keeps its live blocks in
``self._live`` (address -> an object with ``size``, ``requested`` and
``stream``), its mapped bytes in ``self._reserved``, and implements
:meth:`_free_space` (for :meth:`fragmentation`) and :meth:`_release_device`
(for :meth:`close`), ``_malloc`` (for :meth:`malloc`) and ``_empty_cache`` (for
:meth:`empty_cache`). :func:`check_size` and :func:`check_stream` are the one
validation of a request every allocator (plan mode's included) applies.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, Iterable, Self

from memtune.allocator import stats as S
from memtune.allocator.events import AllocatorEvent, EventKind, Listener
from memtune.allocator.stats import Fragmentation, Stats
from memtune.allocator.verbose import _SCOPED, log_event, logger
from memtune.devices.base import Device
from memtune.errors import AllocatorUsageError
from memtune.units import format_bytes

_SMALL, _LARGE = S.SMALL, S.LARGE
_POOL_NAME = {_SMALL: "small", _LARGE: "large"}



def check_size(size: object) -> int:
    """``size`` if it is a valid request size, else :class:`memtune.AllocatorUsageError`."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise AllocatorUsageError(f"malloc size must be an int number of bytes; got {type(size).__name__} {size!r}")
    if size <= 0:
        raise AllocatorUsageError(f"malloc size must be positive; got {size} (accepted: an int >= 1)")
    return size


def check_stream(stream: object) -> int:
    """``stream`` if it is a valid stream id, else :class:`memtune.AllocatorUsageError`."""
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise AllocatorUsageError(f"stream must be a non-negative int; got {stream!r}")
    return stream

class AllocatorBase:
    """The common part of memtune's allocator engines (not used on its own).

    All public methods take one re-entrant lock, so listeners may call ``free``.
    """

    #: name shown by ``repr``
    _repr_name: ClassVar[str] = "AllocatorBase"

    def __init__(self, spec: Any, device: Device, env_verbose: int = 0) -> None:
        self.spec = spec
        self.device = device
        self.name: str = spec.name
        self._lock = threading.RLock()
        # a block is active exactly while it is allocated here: no allocator defers a free
        # to a stream's pending work, where c10's active stats part from its allocation ones
        self.stats = Stats(active_is_allocated=True)
        self._live: dict[int, Any] = {}
        self._reserved = 0
        self._frees = 0
        self._closed = False
        self._listeners: list[tuple[Listener, frozenset[EventKind] | None]] = []
        self._env_verbose = int(env_verbose)
        self._vmask = self._env_verbose
        self._hard: int | None = None  # the hard limit in force (set by the engine), for OOM messages

    # ================================================================ malloc
    def malloc(self, size: int, stream: int = 0) -> int:
        """Allocate ``size`` bytes on ``stream``; return the address.

        Raises :class:`memtune.OutOfMemoryError` when even the failure path
        cannot find memory (the allocator stays usable), and
        :class:`memtune.AllocatorUsageError` for a bad size or stream.
        """
        if type(size) is not int or size <= 0 or type(stream) is not int or stream < 0:
            check_size(size)  # off the hot path: only a bad argument gets here
            check_stream(stream)
        with self._lock:
            self._enter()
            return self._malloc(size, stream)

    def _malloc(self, size: int, stream: int) -> int:
        raise NotImplementedError

    # ================================================================ helpers
    def _emit(self, kind: EventKind, address: int, size: int, stream: int = 0, requested: int = 0,
              pool: int = _LARGE, info: dict[str, Any] | None = None) -> bool:
        """Deliver an event to listeners and the verbose log; True if a listener returned truthy."""
        ev = AllocatorEvent(kind, address, size, stream, requested, _POOL_NAME[pool], info)
        if self._vmask:
            log_event(self._vmask, ev, self.name)
        handled = False
        for fn, kinds in tuple(self._listeners):
            if kinds is None or kind in kinds:
                try:
                    if fn(ev):
                        handled = True
                except Exception:  # a broken listener must not leave a half-done malloc/free behind
                    logger.exception("%s: listener %r failed on %s", self.name, fn, kind.value)
        return handled

    def _enter(self) -> None:
        if self._closed:
            raise AllocatorUsageError(f"allocator {self.name!r} is closed")
        m = _SCOPED.get()
        self._vmask = self._env_verbose if m is None else m

    def _oom_state(self) -> tuple[Device, int, str]:
        """Count an out-of-memory failure; return the device, the allocated bytes and
        the sentence about the limit in force, for the error message."""
        st = self.stats
        st.num_ooms += 1
        limit = self._hard
        limit_text = (f" The limit in force is {format_bytes(limit)} ({self.spec.limits.hard_limit_setting or 'hard limit'})."
                      if limit is not None else " No memory limit is in force.")
        return self.device, st.current(S.ALLOCATED_BYTES), limit_text

    def _bad_free_message(self, address: object) -> str:
        if isinstance(address, bool) or not isinstance(address, int):
            return f"free() needs an int address returned by malloc(); got {type(address).__name__} {address!r}"
        msg = self._cached_free_message(address)
        if msg is not None:
            return msg
        for a, b in self._live.items():
            if a < address < a + b.size:
                return (f"free of {address:#x}: not the start of an allocation (it is inside the live block at "
                        f"{a:#x} of {b.size} B); pass the address malloc() returned")
        return (f"free of unknown address {address:#x}: {self.name!r} never returned it, or it was already freed "
                f"({len(self._live)} blocks are live)")

    def _cached_free_message(self, address: int) -> str | None:
        """The message when ``address`` is a cached free block (a double free), else None."""
        return None

    def _free_space(self) -> tuple[int, int, int]:
        """(largest free block, total free bytes, reserved bytes) for :meth:`fragmentation`."""
        raise NotImplementedError

    def _release_device(self) -> None:
        """Give every device allocation and mapping back (called by :meth:`close`, under the lock)."""
        raise NotImplementedError

    # ========================================================== public API
    def empty_cache(self) -> None:
        """Give cached memory back to the device: every unsplit cached block and free
        expandable page (:class:`~memtune.allocator.engine.Allocator`), every free page
        (:class:`~memtune.allocator.arena.ArenaAllocator`)."""
        with self._lock:
            self._enter()
            self._empty_cache()

    def _empty_cache(self) -> None:
        raise NotImplementedError

    def memory_stats(self) -> dict[str, int]:
        """``torch.cuda.memory_stats``-style flat dict (see :mod:`memtune.allocator.stats`)."""
        with self._lock:
            return self.stats.as_dict()

    def reset_peak_stats(self) -> None:
        with self._lock:
            self.stats.reset_peak()

    def reset_accumulated_stats(self) -> None:
        with self._lock:
            self.stats.reset_accumulated()

    def fragmentation(self) -> Fragmentation:
        """Peak ratio, internal vs external waste, largest free block vs all free bytes."""
        with self._lock:
            largest, total_free, reserved = self._free_space()
            st = self.stats
            peak_res = st.peak(S.RESERVED_BYTES)
            peak_req = st.peak(S.REQUESTED_BYTES)
            allocated = st.current(S.ALLOCATED_BYTES)
            requested = st.current(S.REQUESTED_BYTES)
            return Fragmentation(
                peak_reserved=peak_res,
                peak_requested=peak_req,
                peak_ratio=peak_res / peak_req if peak_req else 0.0,
                reserved=reserved,
                allocated=allocated,
                requested=requested,
                internal_bytes=allocated - requested,
                external_bytes=reserved - allocated,
                largest_free_block=largest,
                total_free=total_free,
                largest_free_ratio=largest / total_free if total_free > 0 else 1.0,
            )

    def add_listener(self, fn: Listener, events: Iterable[EventKind | str] | None = None) -> None:
        """Call ``fn(AllocatorEvent)`` on events (all kinds, or those in ``events``).

        For ALLOCATION_FAILED, a listener that frees memory (or returns True)
        makes the allocator retry before releasing its cache. A listener that
        raises is logged (logger ``memtune.allocator``) and does not interrupt
        the allocator's operation.
        """
        if not callable(fn):
            raise AllocatorUsageError(f"add_listener needs a callable; got {fn!r}")
        kinds: frozenset[EventKind] | None = None
        if events is not None:
            ks = []
            for e in events:
                try:
                    ks.append(EventKind(e.value if isinstance(e, EventKind) else str(e).lower()))
                except ValueError:
                    raise AllocatorUsageError(
                        f"unknown event kind {e!r}; accepted: {', '.join(k.name for k in EventKind)}"
                    ) from None
            kinds = frozenset(ks)
        with self._lock:
            self._listeners.append((fn, kinds))

    def remove_listener(self, fn: Listener) -> None:
        with self._lock:
            before = len(self._listeners)
            # equality, not identity: each `obj.method` access is a new bound method
            self._listeners = [(f, k) for f, k in self._listeners if f != fn]
            if len(self._listeners) == before:
                raise AllocatorUsageError(f"remove_listener: {fn!r} is not a listener of this allocator")

    def close(self) -> None:
        """Give all device memory back (live blocks included); later calls raise."""
        with self._lock:
            if self._closed:
                return
            self._release_device()
            self._live.clear()
            self._reserved = 0
            self._closed = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ inspection
    def live_blocks(self) -> list[tuple[int, int, int, int]]:
        """(address, size, requested, stream) of every live block."""
        with self._lock:
            return [(a, b.size, b.requested, b.stream) for a, b in self._live.items()]

    @property
    def reserved_bytes(self) -> int:
        return self._reserved

    @property
    def allocated_bytes(self) -> int:
        return self.stats.current(S.ALLOCATED_BYTES)

    def __repr__(self) -> str:
        return (f"<memtune {self._repr_name} {self.name!r}: {len(self._live)} live, "
                f"{format_bytes(self.allocated_bytes)} allocated, {format_bytes(self._reserved)} reserved>")


def _notify_created(alloc: AllocatorBase) -> None:
    """Let the MEMTUNE_PROFILER_AUTOSTART profiler (memtune.allocator.recording) attach."""
    try:
        from memtune.allocator import recording
    except ImportError:
        return
    hook = getattr(recording, "on_allocator_created", None)
    if hook is not None:
        hook(alloc)
