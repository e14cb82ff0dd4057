"""A longer run from a recorded one: its repeating step, repeated.

Why: a recording holds a few steps, and a training job runs thousands. Whether an
allocator's device calls keep growing with the run, or its reserved memory creeps
up step after step, shows only on a longer run. A step's allocation sequence
depends on the program and its shapes, not on its data. So repeating the last
recorded step gives the run the program would have made with more steps: the same
sizes and streams, and every free at the same distance after its allocation. A
step whose shapes follow the data (variable-length batches) repeats the shapes of
that one step.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from memtune.errors import MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event, Trace, paused_gc

if TYPE_CHECKING:
    from memtune.trace.plan import Period
    from memtune.trace.replay import Checkpoint, ReplayState

__all__ = ["LongerRun", "SettleWatch", "repeat_step", "replay_longer_run", "step_copy_ends"]


def repeat_step(dt: DeviceTrace, extra_steps: int, *, min_period: int = 2,
                period: Period | None = None) -> DeviceTrace:
    """``dt`` with its last repetition of the step played ``extra_steps`` more times.

    The step is what :func:`memtune.trace.plan.find_step` finds: step markers, else
    the detected period. Events before the last repetition are kept as they are. The
    last repetition (with whatever comes between its events: markers, empty_cache)
    is repeated, and the events after it close the run. Blocks allocated from the
    last repetition on get new addresses, above every address of the recording.
    Raises :class:`MemtuneError` when no step repeats, or when the step frees a
    block it cannot have allocated (a free that reaches back before the repeating
    part of the stream). ``period``: the step :func:`find_step` found for ``dt.events``
    already (with this ``min_period``), so it is not looked for again.
    """
    _check_extra_steps(extra_steps)
    from memtune.trace.plan import ALLOC, FREE, tokenize

    at, per, last, lo, hi = _last_step(dt, min_period, period, "repeat_step")
    events = dt.events
    # each free's distance back to its allocation as tokenize() counts it (None: an
    # alloc, or a block from before the stream)
    toks, keys = tokenize(events)
    dist = [keys[t][1] if keys[t][0] == FREE else None for t in toks.tolist()]
    token_at = {i: k for k, i in enumerate(at)}
    base = _new_addresses_from(dt)
    L = per.length
    tl = toks.tolist()
    out: list[Event] = list(events[:lo])
    # The events before the last repetition pass through as they are (each free there
    # frees its own block, at its own address). live: output position -> (address, size,
    # stream) of a live block; here the blocks allocated before position `last` and not
    # freed before it.
    freed = {k - dist[k] for k in range(last) if dist[k] is not None}
    live: dict[int, tuple[int, int, int]] = {}
    for k in range(last):
        if keys[tl[k]][0] == ALLOC and k not in freed:
            ev = events[at[k]]
            live[k] = (ev.address, ev.size, ev.stream)

    def play(part: range, q: int, closing: bool) -> int:
        """Append the events of ``part`` (from output position ``q`` on) one by one."""
        for i in part:
            ev = events[i]
            k = token_at.get(i)
            if k is None:
                out.append(ev)
                continue
            if ev.action is Action.ALLOC:
                a = ev.address if q < last else base + 512 * q
                live[q] = (a, ev.size, ev.stream)
                out.append(ev if a == ev.address else Event(Action.ALLOC, a, ev.size, ev.stream))
            else:
                d = dist[k]
                if d is None:
                    if q != k:
                        raise MemtuneError(f"device {dt.device}: the step frees a block allocated before the "
                                           f"recording began; repeating it would free that block again")
                    out.append(ev)
                else:
                    # a step frees the blocks of its own copy, or of the copies before it; the
                    # events after the step free the last copy's blocks, and the first steps'
                    # blocks where they are
                    got = live.pop(k - d if closing and k - d < last else q - d, None)
                    want = events[at[k - d]]
                    if got is None or got[1:] != (want.size, want.stream):
                        raise MemtuneError(
                            f"device {dt.device}: the step frees a block allocated {d} allocations and frees "
                            f"before, where the repeated run has no such block (it reaches back before the "
                            f"part of the stream that repeats); cannot repeat this step")
                    out.append(ev if got[0] == ev.address else Event(Action.FREE, got[0], ev.size, ev.stream))
            q += 1
        return q

    # How many copies back the step's frees reach: copy c's free at phase j frees the
    # block at output position q - d, in copy c - ceil((d - j) / L), or before the
    # repeating part while c is smaller than that. From the copy where every free lands
    # in a copy on (`steady`), a copy does what the one before it did, at addresses
    # 512 x L higher: the same frees of the same phases succeed or fail. A free of a
    # block from before the recording fails in every copy but the first. So the copies
    # up to `steady` are played one by one (they raise whatever error the run has), and
    # the later ones are copies of the last of them.
    reach = [(d - j + L - 1) // L if d > j else 0
             for j, d in enumerate(dist[last: last + L]) if d is not None]
    steady = max(reach, default=0)
    if any(dist[k] is None and keys[tl[k]][0] != ALLOC for k in range(last, last + L)):
        steady = max(steady, 1)
    played = min(extra_steps, steady)
    q = last
    for _c in range(played + 1):
        q = play(range(lo, hi), q, False)
    more = extra_steps - played
    if more:
        phase = [i - lo for i in range(lo, hi) if i in token_at]  # the step's allocs and frees
        copy_start = len(out) - (hi - lo)
        first = [out[copy_start + r].address for r in phase]  # the last played copy's addresses
        tmpl = [events[lo + r] for r in phase]
        out += _copies(events[lo:hi], phase, tmpl, first, 512 * L, more)
        # the last copy's live blocks are the last played copy's, moved up `more` copies
        shift = more * L
        for key in range(last + played * L, last + (played + 1) * L):
            got = live.pop(key, None)
            if got is not None:
                live[key + shift] = (got[0] + 512 * shift, got[1], got[2])
        q += shift
    play(range(hi, len(events)), q, True)
    return dataclasses.replace(dt, events=out)


def _new_addresses_from(dt: DeviceTrace) -> int:
    """Where :func:`repeat_step`'s new addresses start: above every recorded one. The
    block allocated at output position q (allocs and frees, from the last repetition
    on) gets ``base + 512 * q``, so each copy's addresses are the copy before's plus
    512 x the step's length."""
    span = 1 + max([ev.address + max(ev.size, 1) for ev in dt.events] +
                   [a + max(n, 1) for a, n, _s in dt.initial_live()] + [0])
    return -(-span // 4096) * 4096


def step_copy_ends(dt: DeviceTrace, extra_steps: int, *, min_period: int = 2,
                   period: Period | None = None) -> list[int]:
    """Where each copy of the step ends in ``repeat_step(dt, extra_steps)``'s events.

    Element ``k`` is the event index just past copy ``k`` (0: the recorded last
    repetition, ``extra_steps``: the last copy); the events after it close the run.
    Why: a replay of the longer run read at two of these (``replay_device(checkpoints=...)``)
    shows whether anything still grows between them. Arguments, and the errors for them,
    as for :func:`repeat_step`; a step that :func:`repeat_step` refuses to repeat (it frees
    blocks from before the repeating part) is not detected here.
    """
    _check_extra_steps(extra_steps)
    _at, _per, _last, lo, hi = _last_step(dt, min_period, period, "step_copy_ends")
    return [lo + (k + 1) * (hi - lo) for k in range(extra_steps + 1)]


@dataclass(frozen=True)
class LongerRun:
    """What :func:`replay_longer_run` found: the counts where the asked copies end."""

    #: extra steps -> the counts once that many more copies of the step were replayed
    #: (its ``event_index`` is where that copy ends in ``repeat_step(dt, max(extra steps))``)
    checkpoints: dict[int, Checkpoint]
    #: the copy from which the allocator's state repeats (every later copy makes no device
    #: call and reserves nothing new); None when it did not repeat within the copies replayed
    settled: int | None
    #: how many copies one repetition of that state spans (None with ``settled``)
    cycle: int | None
    #: copies of the step replayed to find this (the longest replay made)
    replayed: int


#: copies of the step a first, short replay of :func:`replay_longer_run` plays: most runs'
#: state repeats within them (the longer run is then neither built nor replayed)
FIRST_TRY_COPIES = 32


def replay_longer_run(trace: Trace, dt: DeviceTrace, policy: str, extra_steps: Sequence[int], *,
                      settings: Mapping[str, Any] | None = None, min_period: int = 2,
                      period: Period | None = None) -> LongerRun:
    """The device calls and reserved memory of ``policy`` where the ``k``-th more copy of
    the step ends in ``repeat_step(dt, max(extra_steps))``, for each ``k`` of ``extra_steps``.

    Why: whether an allocator settles on a long run needs thousands of steps, and their
    replay costs minutes. It needs fewer: where the allocator's decision state
    (``state_key()``, the blocks' trace addresses counted from their own copy, and the
    counts) is the same at two copy ends, every later copy repeats what the copies
    between them did, and the counts stay as they are. So the replay stops there: first
    within :data:`FIRST_TRY_COPIES` copies, else on the whole longer run. Allocators
    without ``state_key()`` (every preset but ``memtune``) replay the whole run. Only the
    copies' ends are read, not the events that close the run. ``trace`` names the source
    in errors; ``settings`` as for :func:`memtune.trace.replay.replay_device`.
    """
    from memtune.trace.replay import UNLIMITED_CAPACITY, effective_settings, make_allocator, replay_device

    if isinstance(extra_steps, (str, bytes)) or not isinstance(extra_steps, Sequence) or not extra_steps:
        raise ValueError(f"extra_steps must be a non-empty sequence of step counts; got {extra_steps!r}")
    for k in extra_steps:
        _check_extra_steps(k)
    most = max(extra_steps)
    _at, per, _last, _lo, _hi = _last_step(dt, min_period, period, "replay_longer_run")
    full_ends = step_copy_ends(dt, most, min_period=min_period, period=per)
    probe, _dev = make_allocator(policy, UNLIMITED_CAPACITY, effective_settings(dt, policy, settings))
    tries = (min(most, FIRST_TRY_COPIES), most) if hasattr(probe, "state_key") else (most,)
    probe.close()
    for n in dict.fromkeys(tries):
        run = repeat_step(dt, n, min_period=min_period, period=per)
        ends = full_ends[:n + 1]
        # a shorter run's last copy is followed by the run's closing events, not by a copy:
        # its state there is not the longer run's (infer_empty_cache reads the next event)
        read = ends if n == most else ends[:-1]
        # (an allocator with a listener cannot say its state: the whole run is replayed next)
        watch = SettleWatch(dt, per, read, stop=True, stop_unknown=n < most)
        r = replay_device(trace, run, policy, settings=settings, checkpoints=read, until=watch)
        replayed = len(r.checkpoints) - 1
        if watch.settled is not None or n == most:
            break
    taken = r.checkpoints
    out: dict[int, Checkpoint] = {}
    for k in sorted(set(extra_steps)):
        if watch.settled is not None and k > watch.settled + watch.cycle:
            out[k] = dataclasses.replace(taken[watch.settled], event_index=full_ends[k])
        else:
            out[k] = taken[k]
    return LongerRun(out, watch.settled, watch.cycle, replayed)


class SettleWatch:
    """Where a replay of ``repeat_step(dt, n)``'s run first finds its state again at the
    end of a copy of the step: pass it as ``replay_device(until=...)``, with checkpoints
    at the copy ends ``ends`` (:func:`step_copy_ends`).

    Why: from the first copy end whose state an earlier one had (``settled``, ``cycle``
    copies before), every later copy repeats the copies between them, with no device call
    and nothing more reserved, however long the run (see :func:`replay_longer_run`).
    ``stop``: end the replay there; ``stop_unknown``: end it at once when the allocator
    cannot say its state (``state_key()`` missing or None; ``known`` is then False).
    Each state is kept as a 128-bit digest, so a run of thousands of copies costs little.
    """

    def __init__(self, dt: DeviceTrace, period: Period, ends: Sequence[int], *, stop: bool = False,
                 stop_unknown: bool = False):
        self._base, self._stride = _new_addresses_from(dt), 512 * period.length
        self._copy_at = {e: k for k, e in enumerate(ends)}
        self._seen: dict[bytes, int] = {}
        self._stop, self._stop_unknown = stop, stop_unknown
        self.known = True
        #: the copy whose end state a later copy end had again (None: not found)
        self.settled: int | None = None
        #: how many copies after ``settled`` it came again
        self.cycle: int | None = None

    def __call__(self, s: ReplayState) -> bool:
        k = self._copy_at.get(s.event_index)
        if k is None or not self.known:
            return False
        if self.settled is not None:
            return self._stop
        key = _copy_end_key(s, self._base, self._stride * k)
        if key is None:
            self.known = False
            return self._stop_unknown
        digest = hashlib.blake2b(repr(key).encode(), digest_size=16).digest()
        first = self._seen.setdefault(digest, k)
        if first != k:
            self.settled, self.cycle = first, k - first
            return self._stop
        return False


def _copy_end_key(s: ReplayState, base: int, shift: int) -> tuple | None:
    """The replay's state where a copy ends, with the trace addresses of the copies'
    blocks counted from that copy (``shift``: 512 x the step's length x the copy), so
    that a later copy's blocks compare with an earlier one's; None when the allocator
    cannot say what its state is."""
    state_key = getattr(s.allocator, "state_key", None)
    key = state_key() if state_key is not None else None
    if key is None:
        return None
    addresses = s.addresses
    live = tuple(sorted((a >= base, a - shift if a >= base else a, addresses.get(a, -1), n)
                        for a, n in s.requested.items()))
    c = s.checkpoint
    return key, live, s.ooms, c.device_allocs, c.device_frees, c.peak_reserved_bytes, c.reserved_bytes


def _check_extra_steps(extra_steps: int) -> None:
    if isinstance(extra_steps, bool) or not isinstance(extra_steps, int) or extra_steps < 0:
        raise ValueError(f"extra_steps must be a whole number >= 0; got {extra_steps!r}")


def _last_step(dt: DeviceTrace, min_period: int, period: Period | None,
               caller: str) -> tuple[list[int], Period, int, int, int]:
    """(event index of each alloc and free, the step, the position among those of its
    last repetition, and that repetition's events ``lo:hi``, with what lies between them)."""
    if not isinstance(dt, DeviceTrace):
        raise TypeError(f"{caller} needs a DeviceTrace (one device of a loaded trace, e.g. "
                        f"memtune.load_trace(path).devices[0]); got {type(dt).__name__}")
    if isinstance(min_period, bool) or not isinstance(min_period, int) or min_period < 1:
        raise ValueError(f"min_period must be a whole number >= 1; got {min_period!r}")
    from memtune.trace.plan import Period, find_step

    events = dt.events
    # event index of each ALLOC/FREE (the positions find_step counts in)
    at = [i for i, ev in enumerate(events) if ev.action in (Action.ALLOC, Action.FREE)]
    if period is not None and not (isinstance(period, Period) and period.length >= 1 and period.count >= 1
                                   and period.start >= 0 and period.end <= len(at)):
        raise ValueError(f"period must be a Period that find_step found for this stream, within its {len(at)} "
                         f"allocations and frees (start >= 0, length and count >= 1); got {period!r}")
    per = period if period is not None else find_step(events, min_period=min_period)[0]
    if per is None:
        raise MemtuneError(f"device {dt.device}: no repeating step found in {len(events)} events "
                           f"(no step markers, and no period of at least {min_period} allocations and frees "
                           f"that repeats); there is nothing to repeat")
    last = per.start + (per.count - 1) * per.length
    lo = at[last]
    hi = at[last + per.length] if last + per.length < len(at) else len(events)
    return at, per, last, lo, hi


def _copies(step: Sequence[Event], phase: list[int], tmpl: list[Event], first: list[int], stride: int,
            n: int) -> list[Event]:
    """``n`` more copies of a played step: the events of ``step`` (one copy), whose slots
    ``phase`` (allocs and frees, their events ``tmpl``) get new events at addresses
    ``first`` (the played copy's) plus ``stride`` x 1, 2, ... n; the other events are
    repeated as they are."""
    t = len(phase)
    top = max(first, default=0) + stride * n
    if first and min(first) >= 0 and top < 2 ** 62:
        arr = np.asarray(first, dtype=np.int64)
        addresses = (arr[None, :] + stride * np.arange(1, n + 1, dtype=np.int64)[:, None]).ravel().tolist()
    else:  # outside int64: Python ints
        addresses = [a + stride * c for c in range(1, n + 1) for a in first]
    made = _events([ev.action for ev in tmpl] * n, addresses, [ev.size for ev in tmpl] * n,
                   [ev.stream for ev in tmpl] * n)
    if t == len(step):
        return made
    grid = np.empty((n, len(step)), dtype=object)
    slots = set(phase)
    others = [r for r in range(len(step)) if r not in slots]
    kept = np.empty(len(others), dtype=object)
    kept[:] = [step[r] for r in others]
    grid[:, others] = kept
    if t:
        new = np.empty(n * t, dtype=object)
        new[:] = made
        grid[:, phase] = new.reshape(n, t)
    return grid.ravel().tolist()


def _event(action: Action, address: int, size: int, stream: int, _new=object.__new__, _cls=Event,
           _set=tuple(getattr(Event, f).__set__ for f in ("action", "address", "size", "stream", "time_us", "info"))
           ) -> Event:
    """``Event(action, address, size, stream)``, its fields set through their slots.

    Why: a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``,
    which takes half the time of making the millions of events of a longer run."""
    ev = _new(_cls)
    a, b, c, d, e, f = _set
    a(ev, action)
    b(ev, address)
    c(ev, size)
    d(ev, stream)
    e(ev, None)
    f(ev, None)
    return ev


def _events(actions: list, addresses: list[int], sizes: list[int], streams: list[int]) -> list[Event]:
    """``[Event(a, addr, size, stream) for ...]`` with the cyclic garbage collector paused
    (:func:`memtune.trace.model.paused_gc`)."""
    with paused_gc():
        return list(map(_event, actions, addresses, sizes, streams))
