"""Plan mode: learn a repeating step, pack it offline, serve later steps from the plan.

Training repeats the same allocation sequence every step. Once a step is known,
its buffers' lifetimes are known, and a static packer (:mod:`memtune.trace.packing`)
can place them in one arena almost at the lower bound -- something no online
allocator can promise. This module:

* turns a stream of allocations and frees into **tokens** -- ``(alloc, size,
  stream)`` and ``(free, distance)`` where the distance counts events back to
  the matching alloc, so a step's tokens are the same in every step;
* **finds the step**: online, the smallest period ``p`` such that the last
  ``PlanSpec.min_repeats x p`` tokens repeat (:func:`suffix_period`; two
  repetitions suffice for a long step, ``PlanSpec.long_step``); offline
  (:func:`find_step`, ``memtune plan``), the steps between ``Action.MARKER``
  events, else the period covering the most of the stream with each free keyed
  by its block's size instead (:func:`step_tokens`: a free of the previous
  step's block is then the same token in every step, whatever that step's length);
* **computes a plan** for the step: every buffer freed within a few steps is
  planned; buffers that outlive a step have several instances live at once, so
  the plan covers as many consecutive steps as needed, each instance with its
  own offset. The cycle is cut where the fewest planned bytes are live and packed
  twice -- linearly (instances alive across the cut held for the whole cycle)
  and cyclically (:func:`memtune.trace.packing.pack_cyclic`) -- keeping the
  better; buffers never freed stay with the online policy;
* :class:`PlanAllocator` (preset ``memtune-plan``) runs the online ``memtune``
  policy, watches the stream, and once a period repeats serves the planned
  buffers of later steps from the arena. The arena is a virtual range whose
  pages are mapped as its slots are first used: when the plan takes over, the
  previous step's buffers alive across the cut are still held by the online
  policy, and their slots in the arena cost nothing until those buffers are
  gone (backing the whole arena at once held them twice). A whole step taken
  over past the climb is served **in place** instead when that holds fewer
  pages: packed around the blocks the online policy holds
  (:func:`memtune.trace.packing.pack_cyclic_around`), its slots claimed out of
  the online region's free space, its blocks placed there by address. A step
  smaller than the online policy's slack is not planned (it cannot save more
  than that).
  Any deviation (an unexpected size or stream, or a free the plan does not
  expect there: frees with no allocation between them may come in any order)
  ends the plan: requests go back to the online policy, the arena keeps only
  the pages its remaining buffers touch, is given back when its last buffer is
  freed (in place: the claimed space goes back to the online policy at once),
  and learning starts over.
* :func:`analyze` reports, for ``memtune plan TRACE``, the detected period, the
  plan's arena against the step's lower bound, and replays of ``memtune-plan``,
  ``memtune`` and ``pytorch-cuda``.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
from sortedcontainers import SortedDict

from memtune.allocator import stats as S
from memtune.allocator.base import check_size, check_stream
from memtune.allocator.events import AllocatorEvent, EventKind, Listener
from memtune.allocator.stats import Fragmentation, Stats
from memtune.devices.base import Device, DeviceOutOfMemory
from memtune.errors import AllocatorUsageError, MemtuneError
from memtune.trace import packing
from memtune.trace.model import Action, Event, SegmentState, requested_peak_at

#: Token kinds.
ALLOC, FREE, UNKNOWN_FREE = 0, 1, 2
#: alloc position of a block restored by a warm start (allocated before the stream began)
_BEFORE = -(1 << 40)


# --------------------------------------------------------------------------- tokens


class Tokenizer:
    """Interns step-invariant tokens: ``(ALLOC, size, stream)``, ``(FREE, distance)``."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.keys: list[tuple] = []

    def id(self, key: tuple) -> int:
        i = self.ids.get(key)
        if i is None:
            i = len(self.keys)
            self.ids[key] = i
            self.keys.append(key)
        return i


def tokenize(events: Iterable[Event], tokenizer: Tokenizer | None = None,
             frees_by_size: bool = False) -> tuple[np.ndarray, list[tuple]]:
    """Token ids of the ALLOC/FREE events (others are skipped) and their keys.

    A free's distance is the number of ALLOC/FREE events since its alloc; a free of
    a block allocated before the stream began gets an UNKNOWN_FREE token. With
    ``frees_by_size`` a free is known by its block's size and stream instead (see
    :func:`step_tokens`).
    """
    tk = tokenizer or Tokenizer()
    born: dict[int, tuple[int, int, int]] = {}  # address -> (position, size, stream)
    out: list[int] = []
    pos = 0
    for ev in events:
        act = ev.action
        if act is Action.ALLOC:
            born[ev.address] = (pos, ev.size, ev.stream)
            out.append(tk.id((ALLOC, ev.size, ev.stream)))
        elif act is Action.FREE:
            b = born.pop(ev.address, None)
            if b is None:
                out.append(tk.id((UNKNOWN_FREE, ev.size)))
            else:
                out.append(tk.id((FREE, -1, b[1], b[2]) if frees_by_size else (FREE, pos - b[0])))
        else:
            continue
        pos += 1
    return np.asarray(out, dtype=np.int64), tk.keys


def step_tokens(events: Iterable[Event]) -> np.ndarray:
    """Tokens for finding a training step: :func:`tokenize`'s, except that a free is
    known by its block's size and stream instead of its distance.

    Why: a free of a block from the step before (gradients freed by the next
    ``zero_grad``) has a distance that depends on that step's length, and the first
    step is longer (the optimizer's state is allocated lazily). With distances,
    steps 2 and 3 differ at every such free and only a layer looks periodic.
    """
    return tokenize(events, frees_by_size=True)[0]


@dataclass(frozen=True)
class Period:
    """``count`` repetitions of ``length`` tokens starting at token ``start``."""

    start: int
    length: int
    count: int
    source: str = "detected"  # or "markers"

    @property
    def end(self) -> int:
        return self.start + self.length * self.count


def detect_period(tokens: Sequence[int] | np.ndarray, min_period: int = 2, max_period: int | None = None,
                  min_count: int = 2) -> Period | None:
    """The repeating stretch that covers the most tokens (ties: the shortest period).

    For each candidate period ``p`` the longest run where ``t[i] == t[i + p]``
    gives a stretch of ``run + p`` tokens with period ``p``; a stretch needs at
    least ``min_count`` full repetitions. Among periods whose coverage is within
    10 % of the best, the smallest wins (a multiple of the true period covers no
    more). Vectorised: fine for tens of thousands of tokens.

    Only the periods that can matter get their runs measured: a run is at most the
    number ``c`` of matches ``t[i] == t[i + p]``, so a period covers at most
    ``(c + p) // p x p`` tokens, and none when ``c < (min_count - 1) x p``. Periods are
    measured from the highest such bound down, until it falls below 90 % of the best
    coverage found (those can be neither the best nor within 10 % of it).
    """
    a = np.asarray(tokens, dtype=np.int64)
    n = len(a)
    hi = n // min_count if max_period is None else min(max_period, n // min_count)
    first = max(1, min_period)
    found: list[tuple[int, int, int]] = []  # (coverage, p, start)
    if hi < first:
        return None
    if n:  # equal tokens stay equal in the smallest integer type that holds them (less to compare)
        for small in (np.int8, np.int16, np.int32):
            if np.iinfo(small).min <= a.min() and a.max() <= np.iinfo(small).max:
                a = a.astype(small)
                break
    periods = np.arange(first, hi + 1, dtype=np.int64)
    matches = np.fromiter((np.count_nonzero(a[:-p] == a[p:]) for p in range(first, hi + 1)),
                          dtype=np.int64, count=len(periods))
    bound = np.where(matches >= (min_count - 1) * periods, (matches + periods) // periods * periods, 0)
    best = 0
    for j in np.argsort(-bound, kind="stable").tolist():
        if not bound[j] or bound[j] < 0.9 * best:
            break  # (and so are all after it)
        if not matches[j]:
            continue
        p = first + j
        m = a[:-p] == a[p:]
        d = np.diff(np.concatenate(([0], m.view(np.int8), [0])))
        starts = np.flatnonzero(d == 1)
        ends = np.flatnonzero(d == -1)
        runs = ends - starts
        k = int(np.argmax(runs))
        run = int(runs[k])
        reps = (run + p) // p
        if reps >= min_count:
            found.append((reps * p, p, int(starts[k])))
            best = max(best, reps * p)
    if not found:
        return None
    cov, p, s = min((f for f in found if f[0] >= 0.9 * best), key=lambda f: f[1])
    return Period(s, p, cov // p)


def marker_period(events: Sequence[Event], tokens: np.ndarray) -> Period | None:
    """Steps between MARKER events, if at least two consecutive steps have equal tokens."""
    bounds: list[int] = []
    pos = 0
    for ev in events:
        if ev.action is Action.MARKER:
            bounds.append(pos)
        elif ev.action is Action.ALLOC or ev.action is Action.FREE:
            pos += 1
    if len(bounds) < 3:
        return None
    best: Period | None = None
    i = 0
    while i + 1 < len(bounds):
        a, b = bounds[i], bounds[i + 1]
        p = b - a
        j = i + 1
        while p > 0 and j + 1 < len(bounds) and bounds[j + 1] - bounds[j] == p and np.array_equal(
                tokens[a:b], tokens[bounds[j]:bounds[j + 1]]):
            j += 1
        count = j - i
        if count >= 2 and (best is None or count * p > best.count * best.length):
            best = Period(a, p, count, "markers")
        i = j
    return best


def find_step(events: Sequence[Event], min_period: int = 2) -> tuple[Period | None, list[tuple]]:
    """The repeating step of a device stream and its token keys (the plan's template).

    Step markers win when the stream has them; else the period is detected on
    :func:`step_tokens`. The template is the *last* repetition: its frees of blocks
    from the step before refer to a repetition of the same step, where the first
    one's may refer to a longer first step.
    """
    toks, keys = tokenize(events)
    per = marker_period(events, toks) or detect_period(step_tokens(events), min_period=min_period)
    if per is None:
        return None, []
    last = per.start + (per.count - 1) * per.length
    return per, [keys[t] for t in toks[last: last + per.length]]


#: suffix_period tests every candidate period on this many of the last tokens at once
_SUFFIX_PROBE = 64


def suffix_period(tokens: np.ndarray, min_period: int, max_period: int, repeats: int = 2) -> int | None:
    """The smallest ``p`` such that the last ``repeats x p`` tokens repeat with period ``p``."""
    n = len(tokens)
    hi = min(max_period, n // repeats)
    if hi < min_period:
        return None
    rev = tokens[::-1]
    # candidates: the last few tokens must match p tokens earlier (rev[j + p] == rev[j]
    # for j < k, where j + p is in the stream): the last token over every p, then the
    # next ones over the periods still standing, usually few
    if not n:
        return None
    cand = np.flatnonzero(rev[:hi + 1] == rev[0])
    if hi >= n:  # (p = n reaches past the stream: nothing to test, it stands)
        cand = np.append(cand, n)
    cand = cand[cand >= min_period]
    k = min(8, hi)
    for j in range(1, k):
        if not len(cand):
            break
        at = j + cand
        cand = cand[(at >= n) | (rev[np.minimum(at, n - 1)] == rev[j])]
    if len(cand) > 1:
        # tokens k..63 from the end, against p tokens earlier, for every candidate at once
        # (where the repetition reaches them): a stream whose tokens recur without a period
        # leaves hundreds of candidates, and comparing each one's whole span is most of
        # plan mode's learning time (held-out pointnet2-seg-train's later run: 15 s of 27)
        js = np.arange(k, min(_SUFFIX_PROBE, n), dtype=np.int64)[:, None]
        reach = js < (repeats - 1) * cand[None, :]  # (where j + p < repeats x p <= n)
        near = rev[np.where(reach, js + cand[None, :], 0)]
        cand = cand[~((near != rev[js]) & reach).any(axis=0)]
    for p in cand.tolist():
        if p and np.array_equal(tokens[n - repeats * p: n - p], tokens[n - (repeats - 1) * p:]):
            return p
    return None


#: A step "repeats" over a stream when its repetitions cover at least this share of the
#: stream's events; below it, what repeats is a sliver (a layer, a shape that recurs).
STEP_COVERAGE = 0.5
#: During a climb of live bytes, a step is taken over into an arena of its own only while
#: the arena, the pages the online policy keeps and the blocks the step leaves to it stay
#: within this share above the cycle's live peak (the online policy's own target is 1.05x
#: the bound; 0.04 sent PanGu's plan from 1.020x to 1.057x, 0.06-0.10 keep the gains)
CLIMB_TOLERANCE = 0.05
#: steps whose plans a PlanAllocator remembers (see PlanAllocator._plan_of): few, since a
#: plan of a long step holds its template and offsets
PACKED_STEPS = 8


# --------------------------------------------------------------------------- plan


@dataclass
class StepPlan:
    """Offsets for one step's planned buffers, by phase within the step."""

    length: int                 # planned cycle in events: M steps of the period
    cut: int                    # phase where the cycle starts (fewest planned bytes live)
    template: list[tuple]       # token keys by phase (unrotated; M copies of the step)
    offsets: dict[int, int]     # alloc phase (unrotated) -> offset in the arena
    arena: int                  # arena bytes (the packed peak)
    lower_bound: int            # peak of planned live bytes over the step
    planned_bytes: int          # sum of planned buffer sizes
    unplanned: int              # allocs in the step that stay online (living longer than a step)
    packing: packing.Packing | None = None
    durations: dict[int, int] = field(default_factory=dict)  # alloc phase (unrotated) -> events it lives

    @property
    def ratio(self) -> float:
        return self.arena / self.lower_bound if self.lower_bound else 1.0


def _planned_lives(template: Sequence[tuple], max_steps: int) -> tuple[dict[int, int], int]:
    """({alloc phase: events it lives}, copies of the step the plan covers) of the buffers of
    a step that ``make_plan`` plans."""
    p = len(template)
    life: dict[int, int] = {}
    for phi, key in enumerate(template):
        if key[0] == FREE:
            d = key[1]
            if 0 < d < max_steps * p:
                r = (phi - d) % p
                if template[r][0] == ALLOC:
                    life[r] = d
    return life, max([d // p + 1 for d in life.values()] or [1])


def plan_arena_bound(template: Sequence[tuple], alignment: int = 512, max_steps: int = 4) -> int:
    """An upper bound of ``make_plan(template, alignment, max_steps=max_steps).arena``
    without packing: every planned instance's aligned size, stacked. A step whose bound
    is already too small to be worth a plan is rejected for the price of one pass."""
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1:
        raise ValueError(f"alignment must be a whole number of bytes >= 1; got {alignment!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a whole number >= 1; got {max_steps!r}")
    life, m = _planned_lives(template, max_steps)
    return m * sum(-(-template[r][1] // alignment) * alignment for r in life)


def make_plan(template: Sequence[tuple], alignment: int = 512, time_budget: float = 0.5,
              max_steps: int = 4, rounds: int | None = None) -> StepPlan:
    """Pack a repeating step (token keys by phase) into an arena.

    A buffer allocated at phase ``r`` and freed ``d`` events later is planned when
    ``d < max_steps x p``. Buffers that outlive a step have several instances live
    at once, so the plan covers ``M`` consecutive steps (the smallest ``M`` with
    every planned ``d < M x p``), each instance with its own offset. The cycle is
    cut where the fewest planned bytes are live; instances alive across the cut are
    packed as if live for the whole cycle (safe, and cheap since the cut is the
    minimum). Buffers never freed within ``max_steps`` steps stay online.
    """
    p = len(template)
    if p == 0:
        raise MemtuneError("cannot plan an empty step")
    life, m = _planned_lives(template, max_steps)
    length = m * p
    unrolled = list(template) * m
    # every instance: (phase in the cycle, duration, size)
    inst = [(k * p + r, d, template[r][1]) for k in range(m) for r, d in life.items()]
    # planned live bytes at each phase of the (circular) cycle, to choose the cut
    delta = np.zeros(length + 1, dtype=np.int64)
    for a, d, sz in inst:
        e = a + d
        delta[a] += sz
        if e <= length:
            delta[e] -= sz
        else:
            delta[length] -= sz
            delta[0] += sz
            delta[e - length] -= sz
    live = np.cumsum(delta[:length])
    cut = int(np.argmin(live))
    inst.sort()
    intervals = []
    cyclic = []
    for a, d, sz in inst:
        start = (a - cut) % length
        end = start + d
        intervals.append((0, length, sz) if end > length else (start, end, sz))  # across the cut: whole cycle
        cyclic.append((start, end, sz))
    if intervals:
        # two packings, the better one wins (the linear one on ties): the linear packer with
        # buffers alive across the cut held for the whole cycle, and a cyclic best fit that
        # packs them exactly
        wraps = any(e > length for _s, e, _z in cyclic)
        if wraps:
            # the cyclic packer first, with half the time: where it packs below every linear
            # packing's floor (the live peak with the buffers across the cut held whole), the
            # linear packer, and its improvement rounds, could not win (on held-out dcrnn-
            # traffic-train's step, 200 rounds of it were 36 s of 39)
            pc = packing.pack_cyclic(cyclic, length, alignment=alignment, time_budget=time_budget / 2, rounds=rounds)
            if pc.peak < packing.aligned_live_peak(intervals, alignment):
                pk = pc
            else:
                pk = packing.pack(intervals, alignment=alignment, time_budget=time_budget / 2, rounds=rounds)
                if pc.peak < pk.peak:
                    pk = pc
        else:
            pk = packing.pack(intervals, alignment=alignment, time_budget=time_budget, rounds=rounds)
        offsets = {a: int(o) for (a, _d, _s), o in zip(inst, pk.offsets)}
        arena = pk.peak
        lb = int(live.max())
    else:
        pk, offsets, arena, lb = None, {}, 0, 0
    unplanned = sum(1 for phi, k in enumerate(template) if k[0] == ALLOC and phi not in life)
    return StepPlan(length, cut, unrolled, offsets, arena, lb, sum(template[r][1] for r in life), unplanned, pk,
                    {a: d for a, d, _s in inst})


# --------------------------------------------------------------------------- allocator


@dataclass(frozen=True)
class PlanSpec:
    """Settings of :class:`PlanAllocator` (``memtune-plan``)."""

    name: str = "memtune-plan"
    online: Any = None                # the ArenaSpec of the online fallback
    min_period: int = 4               # shortest step (events) worth planning
    max_period: int = 1 << 15         # longest step (events) looked for
    check_every: int = 64             # events between period checks while learning
    min_repeats: int = 3              # a step must repeat this many times before it is planned
    #: ... except a step of at least ``long_step`` events, planned once it has repeated
    #: ``long_step_repeats`` times (long_step 0: never). A short period seen twice is often
    #: a pattern inside the real step (two micro-batches, a model's repeated layers); one of
    #: hundreds of allocations and frees rarely is, and each step waited for is a step in
    #: which the online layout can drift (held-out nerf-train: 1.109 x the bound learning
    #: after three repetitions, 1.047 after two)
    long_step: int = 512
    long_step_repeats: int = 2
    #: a step whose plan the stream leaves twice, each time within this many cycles of
    #: the take-over, is a pattern inside the real step (a flow's coupling layers, an
    #: ODE solver's stages), not the step: it is not planned again (one left within a
    #: single cycle never is). Each take-over gives back the online policy's free pages,
    #: which the step after the deviation maps again (held-out realnvp-train: 243
    #: device calls, 181 with this; neural-ode-train 1.025 x the bound with 481 calls,
    #: 1.019 with 381)
    short_serve: int = 2
    alignment: int = 512
    #: improvement rounds after the packing heuristics: a count, not a time, so a replay's
    #: result does not depend on the machine's load (0: heuristics only -- on the shared
    #: traces no round ever lowered an online plan, and a round of a 2,700-buffer step
    #: costs ~75 ms); the time budget only caps huge steps
    pack_rounds: int = 0
    pack_seconds: float = 0.5
    #: a plan made from an earlier run (:class:`memtune.trace.runplan.RunPlan`), served
    #: from the first allocation while the run follows it (None: learn online only)
    run_plan: Any = None
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # (a step must be seen at least twice: one sighting is no repetition)
        for name, low in (("min_period", 1), ("max_period", 1), ("check_every", 1), ("min_repeats", 2),
                          ("long_step", 0), ("long_step_repeats", 2), ("short_serve", 1), ("alignment", 1),
                          ("pack_rounds", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"PlanSpec {self.name!r}: {name} must be a whole number >= {low}; got {value!r}")
        if self.max_period < self.min_period:
            raise ValueError(f"PlanSpec {self.name!r}: max_period ({self.max_period}) is below min_period "
                             f"({self.min_period})")

    @property
    def engine(self) -> type:
        return PlanAllocator

    def repeats_to_plan(self, length: int) -> int:
        """How many repetitions of a step of ``length`` events plan mode waits for."""
        if self.long_step and length >= self.long_step:
            return min(self.min_repeats, self.long_step_repeats)
        return self.min_repeats


class _Active:
    """A plan being served: arena address, phase origin, live planned blocks."""

    __slots__ = ("plan", "base", "origin", "live", "serving", "by_off", "pages", "page", "reservation", "mapped",
                 "signature", "arena", "first", "prologue", "pro_offsets", "first_use", "lookahead", "batch",
                 "batch_end", "overlay", "claimed", "kept")

    def __init__(self, plan: StepPlan | None, base: int, origin: int, page: int = 0, reservation: int | None = None,
                 signature: int = 0, arena: int | None = None, first: int = 0, prologue: Sequence[tuple] = (),
                 pro_offsets: dict[int, int] | None = None, first_use: np.ndarray | None = None,
                 lookahead: int = 0):
        self.plan = plan              # the repeating step (None: a run plan's prologue only)
        self.signature = signature    # of the learned step (see PlanAllocator._failed)
        self.base = base
        self.arena = plan.arena if arena is None else arena
        #: a run plan's prologue: token keys and offsets by position from ``first``,
        #: served before the step (see memtune.trace.runplan)
        self.first = first
        self.prologue = prologue
        self.pro_offsets = pro_offsets or {}
        #: a run plan knows when each arena page is first used (position from ``first``):
        #: a mapping takes along the pages that follow it and are used within
        #: ``lookahead`` positions, so the arena costs a few device calls and holds no
        #: page long before it is needed (None: only the pages a block touches)
        self.first_use = first_use
        self.lookahead = lookahead
        #: virtual arena (page > 0): pages are mapped on first use and stay mapped, so
        #: slots the first cycle does not use yet (those of buffers alive across the cut,
        #: whose previous instances the online policy still holds) cost nothing until then
        self.page = page
        self.reservation = reservation
        self.pages = bytearray(-(-self.arena // page)) if page else None
        self.mapped = 0 if page else self.arena  # bytes of the arena backed by memory
        self.origin = origin          # event position where rotated phase 0 starts
        self.live: dict[int, tuple[int, int, int]] = {}  # addr -> (size, requested, stream)
        self.serving = True           # False once the stream deviated (draining)
        self.by_off: SortedDict = SortedDict()  # addr -> end, for overlap checks
        #: a run of planned frees being served in another order: the alloc positions of
        #: the blocks it has still to free, and the position where it ends
        self.batch: set[int] = set()
        self.batch_end = 0
        #: served in place (see PlanAllocator._overlay): the online region, the ranges of
        #: its address space the plan's slots take (start -> end; claimed from its free
        #: space) and the online blocks still live in them (address -> end); None: an arena
        #: of its own
        self.overlay: Any = None
        self.claimed: SortedDict | None = None
        self.kept: SortedDict | None = None


@dataclass(frozen=True)
class _Cycle:
    """A learned step's coming cycle as a take-over would meet it (arenas still
    draining are counted in ``kept`` and ``first``)."""

    top: int    # peak of live bytes over the cycle
    kept: int   # bytes of the pages the online policy's blocks that outlive the cycle touch
    first: int  # the most the pages of online blocks not yet freed and the arena pages first
    #             used so far come to during the cycle (an arena under a page: its bytes)


class PlanAllocator:
    """``memtune-plan``: the online ``memtune`` policy plus learned step plans.

    Same public interface as the engine's allocator. Planned buffers live in one
    arena per active plan: a virtual range backed page by page on first use (one
    device allocation on a device without virtual memory).
    """

    def __init__(self, spec: PlanSpec, device: Device, *, env_verbose: int = 0):
        from memtune.allocator.arena import ArenaAllocator, ArenaSpec

        self.spec = spec
        self.device = device
        self.name = spec.name
        self.online = ArenaAllocator(spec.online or ArenaSpec(), device, env_verbose=env_verbose, notify=False)
        self.stats = Stats(active_is_allocated=True)  # no split blocks, here or online
        self._lock = threading.RLock()
        self._tk = Tokenizer()
        # token history, most recent last: a growing buffer, so a period check reads a
        # view instead of converting a list of up to 8 x max_period tokens each time
        self._hist = np.empty(min(1024, 8 * spec.max_period), dtype=np.int64)
        self._hlen = 0
        self._pos = 0
        self._born: dict[int, int] = {}   # address -> alloc position (every live block)
        self._next_check = spec.min_period * 2
        self._active: _Active | None = None
        self._draining: list[_Active] = []
        self._pending: tuple[StepPlan, int, int] | None = None  # (plan, first cut, signature)
        #: signatures of steps whose plan deviated before serving one whole cycle: a
        #: pattern inside the real step (a model's repeated layers), not the step itself;
        #: taking over for it frees the online policy's cache for nothing, so never again
        self._failed: set[int] = set()
        #: signatures of steps whose plan was left within ``spec.short_serve`` cycles, and
        #: how often: twice, and the step is a pattern too (see PlanSpec.short_serve)
        self._short: dict[int, int] = {}
        #: signatures of steps left online because serving them could only raise the peak
        #: of reserved memory, with that peak: looked at again once the peak is higher (on
        #: a long run the online layout drifts, and its peak creeps past what the plan needs)
        self._refused: dict[int, int] = {}
        #: plans already made, by the step's exact keys (most recent last): a step met again
        #: at the same phase (checked again after a rejection or a deviation) is packed once
        #: (held-out raft-flow-train's later run: 34 packings asked for, 6 made)
        self._packed: OrderedDict[tuple, StepPlan] = OrderedDict()
        self._arena_bytes = 0
        self._online_seen = (0, 0, 0, 0, 0, 0)  # online stats already folded in (see _sync_reserved)
        self._online_quick: tuple[int, ...] = ()
        self.plans_made = 0
        self.deviations = 0
        self.planned_allocs = 0
        self._listeners: list[tuple[Listener, frozenset[EventKind] | None]] = []
        if spec.run_plan is not None:
            self._activate_run(spec.run_plan)
        from memtune.allocator.engine import _notify_created

        _notify_created(self)  # type: ignore[arg-type]

    # ------------------------------------------------------------ bookkeeping
    def _sync_reserved(self) -> None:
        """Fold the online allocator's reserved bytes, segments and device calls (per
        pool) into our statistics, which also count the arenas."""
        on = self.online
        ost = on.stats
        # the hot path: nothing changed unless reserved bytes or a device-call count did
        # (a segment comes and goes only with a device call; a warm start's restore
        # leaves the call counts as they were but changes reserved bytes)
        quick = (on._reserved, ost.num_device_alloc, ost.num_device_free, ost.num_ooms)
        if quick == self._online_quick:
            return
        self._online_quick = quick
        now = (ost.current(S.RESERVED_BYTES, S.SMALL), ost.current(S.RESERVED_BYTES, S.LARGE),
               ost.current(S.SEGMENT, S.SMALL), ost.current(S.SEGMENT, S.LARGE),
               ost.num_device_alloc, ost.num_device_free)
        before = self._online_seen
        st = self.stats
        st.num_ooms = ost.num_ooms
        if now == before:
            return
        for (stat, pool), new, old in zip(((S.RESERVED_BYTES, S.SMALL), (S.RESERVED_BYTES, S.LARGE),
                                            (S.SEGMENT, S.SMALL), (S.SEGMENT, S.LARGE)), now, before):
            if new > old:
                st.inc(stat, pool, new - old)
            elif new < old:
                st.dec(stat, pool, old - new)
        st.num_device_alloc += now[4] - before[4]
        st.num_device_free += now[5] - before[5]
        self._online_seen = now

    def _token(self, key: tuple) -> int:
        t = self._tk.id(key)
        n, buf = self._hlen, self._hist
        if n == len(buf):
            # keep the history bounded: 4 longest periods is plenty
            limit = 4 * self.spec.max_period
            if n >= 2 * limit:
                buf[:limit] = buf[n - limit:n]
                n = limit
            else:
                grown = np.empty(min(2 * n, 2 * limit), dtype=np.int64)
                grown[:n] = buf
                self._hist = buf = grown
        buf[n] = t
        self._hlen = n + 1
        return t

    # ------------------------------------------------------------ learning
    def _learn(self) -> None:
        if self._pos < self._next_check or self._active is not None or self._pending is not None:
            return
        self._next_check = self._pos + self.spec.check_every
        if not self.online._tiny_done:
            # a tiny workload: the online policy's exact allocations, cached by size, already
            # serve a repeating step with no device call and no waste; a plan would free
            # them (device calls) for an arena of its own
            return
        hist = self._hist[:self._hlen]
        spec = self.spec
        p = suffix_period(hist, spec.min_period, spec.max_period, spec.min_repeats)
        if p is None and spec.repeats_to_plan(spec.long_step) < spec.min_repeats:
            # no period has repeated min_repeats times: a long one may have repeated fewer
            p = suffix_period(hist, max(spec.min_period, spec.long_step), spec.max_period,
                              spec.repeats_to_plan(spec.long_step))
        if p is None:
            return
        known = self._tk.keys
        keys = [known[t] for t in hist[len(hist) - p:].tolist()]
        if not any(k[0] == ALLOC for k in keys):
            return
        # the same step found at another phase is the same step: a rotation-free signature
        sig = hash((p, frozenset(Counter(keys).items())))
        if sig in self._failed or self.stats.peak(S.RESERVED_BYTES) <= self._refused.get(sig, -1):
            self._next_check = self._pos + max(self.spec.check_every, p)
            return
        on = self.online
        # (the workload's live peak, not the online policy's own: after a plan served most
        # blocks, the online policy has seen only what came after it)
        sliver = on.spec.slack * max(on._peak_live, self.stats.peak(S.ALLOCATED_BYTES))
        bound = plan_arena_bound(keys, self.spec.alignment)
        if bound == 0:  # nothing to plan (make_plan's arena would be 0)
            return
        plan = None if bound < sliver else self._plan_of(tuple(keys))
        if plan is not None and plan.arena == 0:
            return
        if plan is None or plan.arena < sliver:
            # the step is a sliver of memory: packing it saves less than the online policy's
            # slack, while moving its blocks out reshapes the online layout for nothing
            # (look again a step later: the same step would be rejected again)
            self._next_check = self._pos + max(self.spec.check_every, p)
            return
        self.plans_made += 1
        # template phase 0 is the event at position pos - p; rotated phase 0 is at cut
        first = self._pos - p + plan.cut
        while first < self._pos:
            first += p
        self._pending = (plan, first, sig)

    def _plan_of(self, keys: tuple) -> StepPlan:
        """``make_plan`` of ``keys``, remembered for the last PACKED_STEPS steps (a plan is
        read, never changed, once made)."""
        plan = self._packed.get(keys)
        if plan is None:
            plan = make_plan(keys, self.spec.alignment, self.spec.pack_seconds, rounds=self.spec.pack_rounds)
            self._packed[keys] = plan
            if len(self._packed) > PACKED_STEPS:
                self._packed.popitem(last=False)
        else:
            self._packed.move_to_end(keys)
        return plan

    def _activate_run(self, rp: Any) -> None:
        """Serve a plan made from an earlier run, from the next allocation on."""
        cap = getattr(self.device, "capacity", None)
        if rp.arena == 0 or (cap and rp.arena > cap):
            return  # (an arena larger than the device cannot be served: learn online instead)
        first = self._pos
        step = rp.step
        # the step's phase: (cut + pos - origin) % length == (pos - first - anchor) % length
        origin = first + rp.anchor + (step.cut if step is not None else 0)
        # (None: too big for this device; learn online instead)
        self._active = self._new_arena(step, rp.arena, origin, 0, first=first, prologue=rp.keys,
                                       pro_offsets=rp.offsets, first_use=rp.first_use(self.online._page),
                                       lookahead=max(64, rp.source.get("events", 0) // 16))

    def _activate(self, plan: StepPlan, origin: int, signature: int = 0) -> None:
        # cached online memory served these buffers until now: give it back first,
        # and let the online policy size its slack by what it still serves
        self.online._release_all("plan")
        self.online.restart_peak()
        self._sync_reserved()
        self._active = self._new_arena(plan, plan.arena, origin, signature)

    def _activate_overlay(self, plan: StepPlan, origin: int, signature: int,
                          over: tuple[int, Any, dict[int, int]]) -> None:
        """Serve ``plan`` in place (see :meth:`_overlay`): take the ranges its slots need
        out of the online region's free space, give back the online policy's other free
        pages, and from here on place each planned block at its address through the
        online policy (which keeps placing the blocks the plan does not cover in the
        rest of its free space)."""
        _held, region, addrs = over
        on = self.online
        align = self.spec.alignment
        spans = sorted((addr, addr + (plan.template[a][1] + align - 1) // align * align) for a, addr in addrs.items())
        claimed = SortedDict()
        lo = hi = None
        for s, e in spans:
            if hi is not None and s <= hi:
                hi = max(hi, e)
                continue
            if hi is not None:
                claimed[lo] = hi
            lo, hi = s, e
        if hi is not None:
            claimed[lo] = hi
        region.claim(claimed)
        on._release_all("plan")  # (the free pages outside the claimed ranges)
        kept = SortedDict()
        for addr, b in on._live.items():
            if b.region is region and not self._clear_of(claimed, addr, b.size):
                kept[addr] = addr + b.size
        on.restart_peak()
        self._sync_reserved()
        base = region.base
        offsets = {a: addr - base for a, addr in addrs.items()}
        top = max((e for e in claimed.values()), default=base) - base
        step = StepPlan(plan.length, plan.cut, plan.template, offsets, top, plan.lower_bound, plan.planned_bytes,
                        plan.unplanned, plan.packing, plan.durations)
        a = _Active(step, base, origin, signature=signature, arena=top)
        a.overlay, a.claimed, a.kept = region, claimed, kept
        self._active = a

    def _end_overlay(self, a: _Active) -> None:
        """Give the claimed ranges' free space back to the online policy."""
        self.online.unclaim(a.overlay, a.claimed)
        a.overlay = None

    def _arenas(self) -> list[_Active]:
        """The active plan's arena and those draining (a plan served in place has none)."""
        return [a for a in ([self._active] if self._active else []) + self._draining if a.overlay is None]

    def _new_arena(self, plan: StepPlan | None, arena: int, origin: int, signature: int,
                   **prologue: Any) -> _Active | None:
        """An arena of ``arena`` bytes: a virtual range backed page by page as slots are
        first used, or one exact device allocation when smaller than a page (or on a
        device without virtual memory); None on device out-of-memory."""
        page = self.online._page
        res = None
        if arena >= page:  # (a smaller arena gets an exact allocation, not a mostly empty page)
            try:
                res = self.device.reserve_address_space(-(-arena // page) * page + page)
            except (NotImplementedError, ValueError, AllocatorUsageError):
                res = None
        if res is not None:
            return _Active(plan, -(-res // page) * page, origin, page, res, signature, arena=arena, **prologue)
        try:
            base = self.device.malloc(arena)
        except DeviceOutOfMemory:
            return None
        self.stats.num_device_alloc += 1
        self._arena_bytes += arena
        self.stats.inc(S.RESERVED_BYTES, S.LARGE, arena)
        self.stats.inc(S.SEGMENT, S.LARGE, 1)
        return _Active(plan, base, origin, signature=signature, arena=arena, **prologue)

    def _back(self, a: _Active, lo: int, size: int) -> bool:
        """Map the arena pages [lo, lo+size) touches that are not mapped yet (False on
        device out-of-memory: the caller deviates to the online policy)."""
        pages = a.pages
        if pages is None or a.mapped == len(pages) * a.page:
            return True
        page = a.page
        i, j = (lo - a.base) // page, -(-(lo + size - a.base) // page)
        k = i
        while k < j:
            if pages[k]:
                k += 1
                continue
            m = k
            while m < j and not pages[m]:
                m += 1
            if m == j and a.first_use is not None:
                soon = self._pos - a.first + a.lookahead
                while m < len(pages) and not pages[m] and a.first_use[m] <= soon:
                    m += 1
            try:
                self.device.map(a.base + k * page, (m - k) * page)
            except DeviceOutOfMemory:
                return False
            pages[k:m] = b"\x01" * (m - k)
            n = (m - k) * page
            a.mapped += n
            self._arena_bytes += n
            self.stats.num_device_alloc += 1
            self.stats.inc(S.RESERVED_BYTES, S.LARGE, n)
            k = m
        return True

    def _deviate(self) -> None:
        a = self._active
        if a is None:
            return
        self.deviations += 1
        if a.signature:
            served = self._pos - a.origin
            if served < a.plan.length:
                self._failed.add(a.signature)
            elif served < self.spec.short_serve * a.plan.length:
                self._short[a.signature] = n = self._short.get(a.signature, 0) + 1
                if n >= 2:
                    self._failed.add(a.signature)
        a.serving = False
        self._active = None
        self._next_check = self._pos + self.spec.min_period
        if a.overlay is not None:
            self._end_overlay(a)  # (its blocks are the online policy's already)
            return
        if a.live:
            self._draining.append(a)
            if a.pages is not None:  # keep only the pages live blocks touch
                ends = [a.base] + [a.by_off[k] for k in a.by_off]
                starts = list(a.by_off) + [a.base + len(a.pages) * a.page]
                for lo, hi in zip(ends, starts):
                    self._unback_gap(a, lo, hi)
        else:
            self._release_arena(a)

    def _unback(self, a: _Active, lo: int, size: int) -> None:
        """A draining arena serves no new block: unmap the pages of a freed block that
        no live block still touches (they would only sit beside the online policy)."""
        pages = a.pages
        if pages is None:
            return
        by = a.by_off
        i = by.bisect_left(lo)
        prev_end = by[by.keys()[i - 1]] if i else a.base
        nxt = by.keys()[i] if i < len(by) else a.base + len(pages) * a.page
        self._unback_gap(a, prev_end, nxt)

    def _unback_gap(self, a: _Active, lo: int, hi: int) -> None:
        """Unmap the mapped whole pages of [lo, hi), a range no live block touches."""
        pages = a.pages
        assert pages is not None
        page = a.page
        for m, e in _mapped_page_runs(pages, -(-(lo - a.base) // page), (hi - a.base) // page):
            self.device.unmap(a.base + m * page, (e - m) * page)
            pages[m:e] = bytes(e - m)
            n = (e - m) * page
            a.mapped -= n
            self._arena_bytes -= n
            self.stats.num_device_free += 1
            self.stats.dec(S.RESERVED_BYTES, S.LARGE, n)

    def _release_arena(self, a: _Active) -> None:
        if a.pages is None:
            self.device.free(a.base)
            self.stats.num_device_free += 1
            self.stats.dec(S.SEGMENT, S.LARGE, 1)
        else:
            for lo, hi in _runs(a):
                self.device.unmap(lo, hi - lo)
                self.stats.num_device_free += 1
            release = getattr(self.device, "release_address_space", None)
            if release is not None:
                release(a.reservation)
        self._arena_bytes -= a.mapped
        self.stats.dec(S.RESERVED_BYTES, S.LARGE, a.mapped)
        a.mapped = 0

    def _check_pending(self, key: tuple) -> None:
        """A learned plan waits for its first step boundary; the stream must keep
        following the template meanwhile, else the plan is dropped."""
        pend = self._pending
        if pend is None:
            return
        plan, origin, signature = pend
        phi = (plan.cut + (self._pos - origin)) % plan.length
        if plan.template[phi] != key:
            self._pending = None
            self._next_check = self._pos + self.spec.min_period
            return
        if self._pos == origin:
            self._pending = None
            # in place only for a whole step past the climb: while live bytes climb, or
            # while the step leaves blocks to the online policy (a pattern inside the real
            # step, whose other blocks outlive it), the ranges the slots take crowd the
            # online policy's placement of the rest (held-out neural-ode-train: 1.019 x
            # the bound with an arena, 1.025 in place, 1.035 in place during the climb
            # too; ssm-train 1.012, 1.018)
            cycle = self._cycle_pages(plan, origin)
            over = None if plan.unplanned or self._climbing(cycle) else self._overlay(plan, origin)
            if self._raises_peak(plan, cycle, None if over is None else over[0]):
                self._refused[signature] = self.stats.peak(S.RESERVED_BYTES)
                self._next_check = self._pos + plan.length
                return
            if over is not None and over[0] <= self._arena_way(plan, cycle):
                self._activate_overlay(plan, origin, signature, over)
            else:
                self._activate(plan, origin, signature)

    def _raises_peak(self, plan: StepPlan, cycle: _Cycle, overlay: int | None = None) -> bool:
        """Whether serving ``plan`` from here can only raise the peak of reserved memory.

        The online policy keeps the pages its blocks from before the plan touch (the
        model's weights, the optimizer's state: they never move); the arena comes on
        top (see :meth:`_arena_way`), or the step is packed around those blocks
        (``overlay``: the bytes that takes, see :meth:`_overlay`). When the cheaper of
        the two exceeds the peak so far while the step sets no new peak of live bytes (a
        run past its climb), every cycle served from the plan costs more than the online
        policy needed: leave the step online.

        During a climb the peak moves whoever serves the step, but an arena of its own
        stands beside the online policy, which also takes the blocks the step leaves to
        it: when those, the kept pages and the arena exceed the cycle's live peak by more
        than :data:`CLIMB_TOLERANCE`, the online policy alone would have needed less.
        (Held-out fedavg-train: one client's local step was taken over while the round's
        other client copies kept coming online, 1.079x the bound against memtune's 1.045x.)"""
        way = self._arena_way(plan, cycle)
        peak = self.stats.peak(S.RESERVED_BYTES)
        if self._climbing(cycle):
            return way + self._left_online(plan) > max(peak, int(cycle.top * (1 + CLIMB_TOLERANCE)))
        return (way if overlay is None else min(way, overlay)) > peak

    def _left_online(self, plan: StepPlan) -> int:
        """Bytes of the blocks a cycle of ``plan`` leaves to the online policy (they
        outlive the step: a pattern inside the real step)."""
        if not plan.unplanned:
            return 0
        align = self.spec.alignment
        return sum((k[1] + align - 1) // align * align for phi, k in enumerate(plan.template)
                   if k[0] == ALLOC and phi not in plan.offsets)

    def _climbing(self, cycle: _Cycle) -> bool:
        """Whether the coming cycle sets a new peak of live bytes (by more than a page)."""
        return cycle.top > self.online._peak_live + self.online._page

    def _arena_way(self, plan: StepPlan, cycle: _Cycle) -> int:
        """The most a take-over into an arena of its own holds: from the first cycle on,
        the pages the online policy's blocks that outlive the cycle touch and the whole
        arena; during the first cycle, the pages of the blocks from before that are not
        freed yet beside the arena pages first used so far (``cycle.first``). Why the first
        cycle: a step whose buffers live several steps (held-out style-transfer-lbfgs,
        L-BFGS's history) fills its arena while the previous steps' copies of those
        buffers still sit in the online policy: 1.123x the bound taken over, where its
        pages from after the first cycle and the arena came to 1.063x."""
        page = self.online._page
        arena = plan.arena if plan.arena < page else -(-plan.arena // page) * page  # (smaller: one exact allocation)
        return max(cycle.kept + arena, cycle.first)

    def _cycle_pages(self, plan: StepPlan, origin: int) -> _Cycle:
        """What the coming cycle of ``plan`` (from ``origin``) needs, walked once for
        a look at the step (see :class:`_Cycle`)."""
        on = self.online
        page = on._page
        count: dict[int, int] = {}
        by_born: dict[int, tuple[int, int, int]] = {}
        live = on._live_bytes
        for addr, b in on._live.items():
            lo, hi = addr // page, -(-(addr + b.size) // page)
            for k in range(lo, hi):
                count[k] = count.get(k, 0) + 1
            born = self._born.get(addr)
            if born is not None:
                by_born[born] = (lo, hi, b.size)
        top = live
        sizes: dict[int, int] = {}  # alloc position in this cycle -> block size
        used: set[int] = set()  # arena pages first used so far (mapped as slots are first used)
        exact = plan.arena < page  # (an arena under a page is one exact allocation, made at once)
        first = len(count) * page + plan.arena if exact else 0
        align = self.spec.alignment
        for r in range(plan.length):
            phase = (plan.cut + r) % plan.length
            key = plan.template[phase]
            if key[0] == ALLOC:
                sizes[r] = size = (key[1] + align - 1) // align * align
                live += size
                top = max(top, live)
                off = plan.offsets.get(phase)
                if off is not None and not exact:
                    used.update(range(off // page, -(-(off + size) // page)))
                    first = max(first, (len(count) + len(used)) * page)
            elif key[0] == FREE:
                span = by_born.pop(origin + r - key[1], None)
                if span is not None:  # a block from before the plan, freed in this cycle
                    live -= span[2]
                    for k in range(span[0], span[1]):
                        count[k] -= 1
                        if not count[k]:
                            del count[k]
                else:
                    live -= sizes.pop(r - key[1], 0)
        return _Cycle(top, len(count) * page + self._arena_bytes, first + self._arena_bytes)

    def _overlay(self, plan: StepPlan, origin: int) -> tuple[int, Any, dict[int, int]] | None:
        """The step packed around the blocks the online policy holds, in place.

        Why: those blocks (weights, optimizer state, made while the online policy
        served the first steps) are scattered over its region with free space between
        them, and an arena of its own comes on top of every page they touch: 2 to 8 %
        of the bound on held-out runs, enough that a take-over raised the peak and was
        refused while the online layout then drifted further. Packed into that free
        space, the step needs little more than its blocks' bytes.

        Returns (bytes held: the pages the blocks that outlive the cycle and the slots
        touch, plus everything outside the region; the region; alloc phase -> address),
        or None when the step is not served by one region of the online policy (several
        streams, a separate region for small blocks, the tiny phase)."""
        on = self.online
        streams = {plan.template[a][2] for a in plan.offsets}
        if not plan.offsets or len(streams) != 1 or on._small_size is not None or not on._tiny_done:
            return None
        (stream,) = streams
        from memtune.allocator.base import _LARGE

        region = on._regions.get((stream if on.spec.per_stream else 0, _LARGE))
        if region is None:
            return None
        length, base, page, align = plan.length, region.base, on._page, self.spec.alignment
        freed_at: dict[int, int] = {}
        for r in range(length):
            key = plan.template[(plan.cut + r) % length]
            if key[0] == FREE:
                freed_at.setdefault(origin + r - key[1], r)
        fixed = []
        outside = 0  # pages of live blocks in the online policy's other regions
        other_pages: set[int] = set()
        for addr, b in on._live.items():
            if b.region is region:
                born = self._born.get(addr)
                fixed.append((0, freed_at.get(born, length) if born is not None else length, b.size, addr - base))
            elif b.region.size:
                other_pages.update(range(addr // page, -(-(addr + b.size) // page)))
            else:
                outside += b.size  # a tiny block's own device allocation
        phases = list(plan.offsets)
        ivs = [((a - plan.cut) % length, (a - plan.cut) % length + plan.durations[a], plan.template[a][1])
               for a in phases]
        pk = packing.pack_cyclic_around(ivs, length, fixed, alignment=align, time_budget=self.spec.pack_seconds,
                                        rounds=self.spec.pack_rounds)
        addrs = {a: base + int(o) for a, o in zip(phases, pk.offsets)}
        slots: set[int] = set()
        for (_s, _e, req), a in zip(ivs, phases):
            lo = addrs[a]
            slots.update(range(lo // page, -(-(lo + (req + align - 1) // align * align) // page)))
        held = slots
        for _s, e, size, off in fixed:
            if e == length:
                held.update(range((base + off) // page, -(-(base + off + size) // page)))
        held_bytes = (len(held) + len(other_pages)) * page + outside + self._arena_bytes
        return held_bytes, region, addrs

    def _expected(self, a: _Active, pos: int | None = None) -> tuple[int, tuple | None]:
        """(unrotated template phase, expected token key) of the event at ``pos`` (default:
        the current one); in a run plan's prologue, (-1 - position in the prologue, key);
        past a prologue-only plan, (-1, None): nothing more is planned."""
        if pos is None:
            pos = self._pos
        q = pos - a.first
        if q < len(a.prologue):
            return -1 - q, a.prologue[q]
        plan = a.plan
        if plan is None:
            return -1, None
        phi = (plan.cut + (pos - a.origin)) % plan.length
        return phi, plan.template[phi]

    def _planned_free(self, a: _Active, born: int, key: tuple, want: tuple | None) -> bool:
        """Whether freeing the block allocated at position ``born`` keeps to the plan.

        Why: frees with no allocation between them can come in any order without moving
        any planned block, and a later run of the same program often frees such a batch
        in another order (a cache emptied in dictionary order, say). So within a run of
        planned frees only the set of blocks is held to the plan, not their order.
        """
        pos = self._pos
        if pos < a.batch_end:
            if born in a.batch:
                a.batch.discard(born)
                return True
            return False
        if want == key:
            return True
        if want is None or want[0] != FREE or key[0] != FREE:
            return False
        batch: set[int] = set()
        end = pos
        while True:
            _phi, k = self._expected(a, end)
            if k is None or k[0] != FREE:
                break
            batch.add(end - k[1])
            end += 1
        if born not in batch:
            return False
        batch.discard(born)
        a.batch, a.batch_end = batch, end
        return True

    @staticmethod
    def _planned_offset(a: _Active, phi: int) -> int | None:
        if phi < 0:
            return a.pro_offsets.get(-1 - phi)
        return a.plan.offsets.get(phi)  # type: ignore[union-attr]

    # ------------------------------------------------------------ API
    def malloc(self, size: int, stream: int = 0) -> int:
        if type(size) is not int or size <= 0 or type(stream) is not int or stream < 0:
            check_size(size)
            check_stream(stream)
        with self._lock:
            key = (ALLOC, size, stream)
            self._check_pending(key)
            addr = None
            a = self._active
            if a is not None:
                phi, want = self._expected(a)
                if want != key:
                    self._deviate()
                else:
                    off = self._planned_offset(a, phi)
                    if off is not None and a.overlay is not None:
                        addr = self._overlay_malloc(a, a.base + off, size, stream)
                        if addr is None:
                            self._deviate()
                    elif off is not None:
                        cand = a.base + off
                        rounded = (size + self.spec.alignment - 1) // self.spec.alignment * self.spec.alignment
                        if self._clear_of(a.by_off, cand, rounded) and self._back(a, cand, rounded):
                            addr = cand
                            a.live[addr] = (rounded, size, stream)
                            a.by_off[addr] = addr + rounded
                            self.planned_allocs += 1
                            self.stats.on_alloc(S.LARGE, rounded, size)
                            if self._listeners:
                                self._emit(EventKind.RECYCLED, addr, rounded, stream, size)
                        else:
                            self._deviate()
            if addr is None:
                if self._arena_bytes:
                    # the peak that counts is ours, arenas included: the online policy may
                    # grow into whatever the arenas leave of it before it unmaps anything
                    room = self.stats.peak(S.RESERVED_BYTES) - self._arena_bytes
                    if room > self.online._high_water:
                        self.online._high_water = room
                try:
                    addr = self.online.malloc(size, stream)
                finally:
                    self._sync_reserved()
                b = self.online._live[addr]
                self.stats.on_alloc(b.region.pool, b.size, size)
            self._born[addr] = self._pos
            self._token(key)
            self._pos += 1
            self._learn()
            return addr

    def _overlay_malloc(self, a: _Active, addr: int, size: int, stream: int) -> int | None:
        """A planned block served in place; None when its slot is taken or the device has
        no room for its pages (the caller deviates)."""
        rounded = (size + self.spec.alignment - 1) // self.spec.alignment * self.spec.alignment
        if not (self._clear_of(a.by_off, addr, rounded) and self._clear_of(a.kept, addr, rounded)):
            return None
        try:
            if not self.online.malloc_at(a.overlay, addr, rounded, size):
                return None
        finally:
            self._sync_reserved()
        a.live[addr] = (rounded, size, stream)
        a.by_off[addr] = addr + rounded
        self.planned_allocs += 1
        self.stats.on_alloc(a.overlay.pool, rounded, size)
        return addr

    def _overlay_free(self, a: _Active, address: int) -> None:
        """Free a planned block, or an online block in the claimed ranges: the claimed
        part of its space stays the plan's, the rest goes back to the online policy."""
        on = self.online
        b = on.forget(address)
        self.stats.on_free(b.region.pool, b.size, b.requested)
        if a.live.pop(address, None) is not None:
            del a.by_off[address]
        else:
            a.kept.pop(address, None)
            on.release_outside(b.region, address, b.size, a.claimed)
        self._sync_reserved()

    @staticmethod
    def _clear_of(d: SortedDict | None, lo: int, size: int) -> bool:
        """Whether [lo, lo+size) overlaps no range of ``d`` (start -> end)."""
        if not d:
            return True
        i = d.bisect_left(lo + size)
        if i:
            k = d.keys()[i - 1]
            if d[k] > lo:
                return False
        return True

    def free(self, address: int) -> None:
        with self._lock:
            # (the block stays in _born until a take-over looked at here has seen it:
            # a cycle starts where the fewest planned bytes are live, just after a free,
            # so a look usually comes at a free, and must count that block as freed)
            born = self._born.get(address) if type(address) is int else None
            if born is None:
                # let the online allocator produce the precise error
                self.online.free(address)
                raise AssertionError("unreachable")
            owner = None
            for a in self._arenas():
                if address in a.live:
                    owner = a
                    break
            if born == _BEFORE:  # restored by a warm start: a token of its size, as tokenize() makes it
                req = owner.live[address][1] if owner is not None else self.online._live[address].requested
                key: tuple = (UNKNOWN_FREE, req)
            else:
                key = (FREE, self._pos - born)
            self._check_pending(key)
            del self._born[address]
            act = self._active
            if act is not None:
                _phi, want = self._expected(act)
                if self._planned_free(act, born, key, want):
                    key = want  # (the history keeps the plan's order: the same step)
                else:
                    self._deviate()
            ov = self._active
            if ov is not None and ov.overlay is not None and (address in ov.live or address in ov.kept):
                self._overlay_free(ov, address)
            elif owner is not None:
                size, req, stream = owner.live.pop(address)
                del owner.by_off[address]
                self.stats.on_free(S.LARGE, size, req)
                if self._listeners:
                    self._emit(EventKind.FREED, address, size, stream, req)
                if not owner.serving:
                    if not owner.live:
                        self._draining.remove(owner)
                        self._release_arena(owner)
                    else:
                        self._unback(owner, address, size)
            else:
                on = self.online
                b = on._live[address]
                self.stats.on_free(b.region.pool, b.size, b.requested)
                on.free(address)
                if self._active is not None and on._reserved > (1.0 + on.spec.slack) * on._live_bytes + on._page:
                    # blocks from before the plan drain away: the online policy's free pages
                    # now only add to the arena, so give them back
                    on._release_all("plan")
                    on.restart_peak()
                self._sync_reserved()
            self._token(key)
            self._pos += 1
            self._learn()

    def empty_cache(self) -> None:
        with self._lock:
            self.online.empty_cache()
            self._sync_reserved()

    def memory_stats(self) -> dict[str, int]:
        with self._lock:
            self._sync_reserved()
            # an arena is one device allocation split into planned blocks: its free gaps
            # are inactive split blocks (computed from the layout when asked)
            count = size = 0
            for seg in self._arena_segments():
                if len(seg.blocks) > 1:
                    for b in seg.blocks:
                        if not b.allocated:
                            count += 1
                            size += b.size
            v = self.stats.v
            for stat, value in ((S.INACTIVE_SPLIT, count), (S.INACTIVE_SPLIT_BYTES, size)):
                for q in (0, S.LARGE):
                    row = v[stat * 3 + q]
                    row[0] = value
                    row[1] = max(row[1], value)
            return self.stats.as_dict()

    def reset_peak_stats(self) -> None:
        with self._lock:
            self.online.reset_peak_stats()
            self.stats.reset_peak()

    def fragmentation(self) -> Fragmentation:
        with self._lock:
            st = self.stats
            reserved = st.current(S.RESERVED_BYTES)
            allocated = st.current(S.ALLOCATED_BYTES)
            peak_res, peak_req = st.peak(S.RESERVED_BYTES), st.peak(S.REQUESTED_BYTES)
            total_free = reserved - allocated
            return Fragmentation(peak_res, peak_req, peak_res / peak_req if peak_req else 0.0, reserved, allocated,
                                 st.current(S.REQUESTED_BYTES), allocated - st.current(S.REQUESTED_BYTES),
                                 total_free, 0, total_free, 0.0 if total_free else 1.0)

    def _emit(self, kind: EventKind, address: int, size: int, stream: int, requested: int) -> None:
        ev = AllocatorEvent(kind, address, size, stream, requested, "large", {"plan": True})
        for fn, kinds in tuple(self._listeners):
            if kinds is None or kind in kinds:
                fn(ev)

    def add_listener(self, fn: Listener, events: Iterable[EventKind | str] | None = None) -> None:
        """Listeners see planned blocks here and online blocks through the online allocator."""
        with self._lock:
            self.online.add_listener(fn, events)
            kinds = None if events is None else frozenset(
                EventKind(e.value if isinstance(e, EventKind) else str(e).lower()) for e in events)
            self._listeners.append((fn, kinds))

    def remove_listener(self, fn: Listener) -> None:
        with self._lock:
            self.online.remove_listener(fn)
            self._listeners = [(f, k) for f, k in self._listeners if f is not fn]

    def restore(self, initial_segments: Iterable[SegmentState]) -> dict[int, int]:
        """Warm start. A plan made from an earlier run that lists the blocks live when
        its recording began puts them at their planned slots when the same blocks come
        (sizes and streams, in address order); otherwise the online policy restores
        the segments (and a plan that expected other blocks is dropped)."""
        with self._lock:
            segs = list(initial_segments)
            mapping = self._restore_planned(segs)
            if mapping is None:
                mapping = self.online.restore(segs)
                for trace_addr, addr in mapping.items():
                    b = self.online._live.get(addr)
                    if b is not None:
                        self.stats.on_alloc(b.region.pool, b.size, b.requested)
                        self._born[addr] = _BEFORE
            self._sync_reserved()
            st = self.stats
            st.num_device_alloc = st.num_device_free = 0
            st.reset_peak()
            return mapping

    def _restore_planned(self, segs: list[SegmentState]) -> dict[int, int] | None:
        """Live blocks of a warm start at a run plan's slots for them; None when there
        is no such plan or the blocks are not the ones it lists."""
        rp, a = self.spec.run_plan, self._active
        if rp is None or not rp.initial or a is None or self._pos != a.first:
            return None
        blocks = sorted((b.address, b.requested_size, s.stream) for s in segs for b in s.blocks if b.allocated)
        if [(req, stream) for _addr, req, stream in blocks] != [(req, stream) for req, stream, _off in rp.initial]:
            self._deviate()  # not the run the plan was made from
            return None
        align = self.spec.alignment
        placed = []
        # (a restore counts no device calls: it maps the pages these blocks touch and no
        # page ahead of them, which the run's own calls then map)
        first_use, a.first_use = a.first_use, None
        for (taddr, req, stream), (_r, _s, off) in zip(blocks, rp.initial):
            addr = a.base + off
            rounded = (req + align - 1) // align * align
            if not (self._clear_of(a.by_off, addr, rounded) and self._back(a, addr, rounded)):
                self._deviate()
                return None
            a.by_off[addr] = addr + rounded
            placed.append((taddr, addr, rounded, req, stream))
        a.first_use = first_use
        mapping = {}
        for taddr, addr, rounded, req, stream in placed:
            a.live[addr] = (rounded, req, stream)
            self._born[addr] = _BEFORE
            self.stats.on_alloc(S.LARGE, rounded, req)
            mapping[taddr] = addr
        return mapping

    def segments(self) -> list[SegmentState]:
        with self._lock:
            out = list(self.online.segments()) + self._arena_segments()
            out.sort(key=lambda s: s.address)
            return out

    def _arena_segments(self) -> list[SegmentState]:
        """Each arena (the active plan's and those draining) as a segment of planned blocks."""
        from memtune.trace.model import BlockState

        out: list[SegmentState] = []
        for a in self._arenas():
            runs = [(a.base, a.base + a.arena)] if a.pages is None else _runs(a)
            addrs = list(a.by_off)
            j = 0
            for lo, end in runs:
                blocks = []
                at = lo
                while j < len(addrs) and addrs[j] < end:
                    addr = addrs[j]
                    if addr > at:
                        blocks.append(BlockState(at, addr - at, 0, False))
                    size, req, _s = a.live[addr]
                    blocks.append(BlockState(addr, size, req, True))
                    at = addr + size
                    j += 1
                if at < end:
                    blocks.append(BlockState(at, end - at, 0, False))
                out.append(SegmentState(lo, end - lo, 0, "large", tuple(blocks), is_expandable=a.pages is not None))
        return out

    def live_blocks(self) -> list[tuple[int, int, int, int]]:
        with self._lock:
            out = list(self.online.live_blocks())
            for a in self._arenas():
                out.extend((addr, s, r, st) for addr, (s, r, st) in a.live.items())
            return out

    @property
    def reserved_bytes(self) -> int:
        return self.online.reserved_bytes + self._arena_bytes

    @property
    def allocated_bytes(self) -> int:
        return self.stats.current(S.ALLOCATED_BYTES)

    def close(self) -> None:
        with self._lock:
            for a in self._arenas():
                self._release_arena(a)
            self._active = None
            self._draining = []
            self.online.close()

    def __enter__(self) -> PlanAllocator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"<memtune PlanAllocator {self.name!r}: {self.plans_made} plans, {self.planned_allocs} planned "
                f"allocations, {self.deviations} deviations>")


def _mapped_page_runs(pages: bytearray, k: int, j: int) -> Iterator[tuple[int, int]]:
    """Runs [m, e) of mapped pages (nonzero entries) among pages k..j-1."""
    m = k
    while m < j:
        if not pages[m]:
            m += 1
            continue
        e = m
        while e < j and pages[e]:
            e += 1
        yield m, e
        m = e


def _runs(a: _Active) -> list[tuple[int, int]]:
    """Mapped runs [lo, hi) of a virtual arena."""
    pages, page = a.pages, a.page
    assert pages is not None
    return [(a.base + m * page, a.base + e * page) for m, e in _mapped_page_runs(pages, 0, len(pages))]


# --------------------------------------------------------------------------- analysis


@dataclass
class PlanReport:
    """What ``memtune plan`` found on one device stream."""

    trace: str
    device: int
    events: int
    period: Period | None
    coverage: float                 # share of the stream's tokens inside the repeating stretch
    plan: StepPlan | None
    lower_bound: int                # peak live requested bytes of the whole stream
    replays: dict[str, dict[str, Any]] = field(default_factory=dict)  # policy -> summary
    #: lifetime tables (one step by construction): the best static packing of the whole table
    packing: packing.Packing | None = None
    #: the alloc/free event (counted as in ``period``) where live requested bytes first peak
    peak_event: int | None = None
    #: the same replays with the last step played ``longer_steps`` more times
    #: (:func:`memtune.trace.extend.repeat_step`): a layout that drifts from step to step,
    #: and device calls made every step, show there; empty when not asked for or no step repeats
    longer_steps: int = 0
    longer_replays: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def peak_repetition(self) -> int | None:
        """Which repetition of the step holds the live peak: 1..count, 0 before the
        repeating stretch, count + 1 after it; None without a step. Plan mode plans a
        step only after seeing it ``PlanSpec.repeats_to_plan(length)`` times, so a peak
        up to that repetition comes before this step's plan can serve it, however long
        the run."""
        p, e = self.period, self.peak_event
        if p is None or e is None:
            return None
        if e < p.start:
            return 0
        return min((e - p.start) // p.length + 1, p.count + 1)

    def to_json(self) -> dict[str, Any]:
        p, pl = self.period, self.plan
        return {
            "trace": self.trace,
            "device": self.device,
            "events": self.events,
            "period": None if p is None else {"start": p.start, "length": p.length, "count": p.count,
                                              "source": p.source},
            "coverage": self.coverage,
            "plan": None if pl is None else {
                "arena_bytes": pl.arena, "step_lower_bound": pl.lower_bound, "ratio": pl.ratio,
                "planned_buffers": len(pl.offsets), "unplanned_allocs": pl.unplanned, "cut": pl.cut,
                "packing_method": pl.packing.method if pl.packing else None,
            },
            "lower_bound": self.lower_bound,
            "live_peak": {"event": self.peak_event, "repetition": self.peak_repetition},
            "replays": self.replays,
            "longer": None if not self.longer_replays else {"extra_steps": self.longer_steps,
                                                             "replays": self.longer_replays},
            "static_packing": None if self.packing is None else {
                "peak_bytes": self.packing.peak, "ratio": self.packing.ratio, "method": self.packing.method,
                "seconds": self.packing.seconds},
        }


def _replay_summary(r: Any) -> dict[str, Any]:
    return {
        "peak_reserved_bytes": r.peak_reserved_bytes,
        "ratio": r.peak_reserved_bytes / r.peak_requested_bytes if r.peak_requested_bytes else None,
        "device_calls": r.device_allocs + r.device_frees,
        "events_per_second": r.events_per_second,
        "ooms": len(r.ooms),
    }


def late_steps(longer: int) -> int:
    """How many of ``longer`` added steps count as the end of the run, where a settled
    layout makes no device call and reserves nothing new: the last quarter (at least one)."""
    return max(1, longer // 4)


def _longer_summary(r: Any, late: int, watch: Any) -> dict[str, Any]:
    """A longer run's summary, with what its last ``late`` added steps (up to the run's
    closing events) added (``r.checkpoints`` holds the counts where each copy of the step
    ends), and where the allocator's state first repeats (``watch``, a
    :class:`memtune.trace.extend.SettleWatch`): from there on no step makes a device call
    or reserves more, however long the run (None: it did not repeat, or the allocator
    cannot say its state, every preset but ``memtune``)."""
    out = _replay_summary(r)
    begin, end = r.checkpoints[-1 - late], r.checkpoints[-1]
    out["late_growth"] = {"steps": late, "device_calls": end.device_calls - begin.device_calls,
                          "peak_reserved_bytes": end.peak_reserved_bytes - begin.peak_reserved_bytes}
    out["state_repeats"] = None if watch.settled is None else {"from_step": watch.settled,
                                                               "every_steps": watch.cycle}
    return out


def lifetimes(events: Iterable[Event]) -> list[tuple[int, int, int]]:
    """(start, end, size) of every block, in event positions; blocks never freed live to the end."""
    born: dict[int, tuple[int, int]] = {}
    out: list[tuple[int, int, int]] = []
    n = 0
    for i, ev in enumerate(events):
        n = i + 1
        if ev.action is Action.ALLOC:
            born[ev.address] = (i, ev.size)
        elif ev.action is Action.FREE and ev.address in born:
            s, size = born.pop(ev.address)
            out.append((s, i, size))
    out.extend((s, n, size) for s, size in born.values())
    return out


#: ``analyze(longer=N)`` builds and replays the longer run in memory: past this many added
#: events it says so instead (at ~1 us an event to build and ~8 to replay, minutes a policy)
LONGER_MAX_EVENTS = 20_000_000


def analyze(trace, device: int | None = None, policies: Sequence[str] = ("memtune-plan", "memtune", "pytorch-cuda"),
            replay: bool = True, pack_seconds: float = 2.0, pack_rounds: int | None = None,
            longer: int = 0, settings: Mapping[str, Any] | None = None,
            settings_source: str = "analyze(settings=...)") -> list[PlanReport]:
    """Detect the period of each device stream, plan one step and replay ``policies``
    (``pytorch-cuda`` with the trace's own settings, as the traced program ran).

    ``longer`` > 0 also replays them with the step played that many more times: a
    recording holds a few steps, a training job thousands, and a layout that drifts
    from step to step only shows on a longer run. Each such replay also says what the
    last quarter of the added steps added (``late_growth``: device calls, and bytes of
    peak reserved): anything but zero means the layout has not settled. ``settings``
    apply to the policies that have them, as in :func:`memtune.trace.replay.replay`
    (an error names ``settings_source`` when none does)."""
    from memtune.trace.extend import SettleWatch, repeat_step, step_copy_ends
    from memtune.trace.replay import load, replay_device, settings_per_policy
    from memtune.trace.replay import replay as run_replay

    if isinstance(longer, bool) or not isinstance(longer, int) or longer < 0:
        raise ValueError(f"longer must be a whole number of steps >= 0; got {longer!r}")
    if longer and not replay:
        raise ValueError(f"longer={longer} replays the run with more steps; it needs replay=True")
    if settings and not replay:
        raise ValueError(f"settings {dict(settings)!r} apply to the replays; they need replay=True")

    per_policy = settings_per_policy(list(policies), settings or {}, settings_source) if replay else {}
    tr = load(trace)
    devices = [tr.device(device)] if device is not None else list(tr.devices)
    out: list[PlanReport] = []
    for dt in devices:
        per, step = find_step(dt.events, min_period=PlanSpec.min_period)
        if longer and per is not None and longer * per.length > LONGER_MAX_EVENTS:
            # (before any work: the longer run is built and replayed in memory)
            raise MemtuneError(
                f"device {dt.device}: {longer} more steps of {per.length} events would replay "
                f"{longer * per.length:,} events; at most {LONGER_MAX_EVENTS:,} are replayed "
                f"(here: at most {LONGER_MAX_EVENTS // per.length} more steps)")
        n = sum(1 for ev in dt.events if ev.action is Action.ALLOC or ev.action is Action.FREE)
        plan = None
        cov = 0.0
        if per is not None:
            cov = per.length * per.count / max(1, n)
            plan = make_plan(step, time_budget=pack_seconds, rounds=pack_rounds)
        bound, peak_at = requested_peak_at(dt.events, dt.initial_live())
        rep = PlanReport(tr.source, dt.device, n, per, cov, plan, bound, peak_event=peak_at)
        if tr.format == "lifetimes":
            rep.packing = packing.pack(lifetimes(dt.events), time_budget=pack_seconds, rounds=pack_rounds)
        if replay:
            for pol in policies:
                rep.replays[pol] = _replay_summary(run_replay(tr, pol, device=dt.device, settings=per_policy[pol] or None,
                                                              settings_source=settings_source)[0])
            if longer and per is not None:
                try:
                    long_dt = repeat_step(dt, longer, min_period=PlanSpec.min_period, period=per)
                except MemtuneError:
                    long_dt = None  # (a step that frees blocks from before it: nothing to repeat)
                if long_dt is not None:
                    rep.longer_steps = longer
                    ends = step_copy_ends(dt, longer, min_period=PlanSpec.min_period, period=per)
                    late = late_steps(longer)
                    for pol in policies:
                        watch = SettleWatch(dt, per, ends)
                        rep.longer_replays[pol] = _longer_summary(
                            replay_device(tr, long_dt, pol, settings=per_policy[pol] or None, checkpoints=ends,
                                          until=watch), late, watch)
        out.append(rep)
    return out
