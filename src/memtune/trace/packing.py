"""Offline static packing of buffer lifetimes (dynamic storage allocation, DSA).

Given buffers ``(start, end, size)`` live on the half-open interval ``[start, end)``,
choose an offset for each so that buffers live at the same time never share bytes,
minimising the *peak*: the highest ``offset + size``. The peak of live bytes is a
lower bound no packing can beat; a packing at that bound wastes nothing.

The problem is NP-hard. We run a few strong greedy heuristics and keep the best,
then spend what is left of a time budget on an improvement pass:

* **best fit by size** (TFLite's ``GreedyBySize``; also the usual first step of
  idealloc-style placers): largest buffers first, each into the smallest gap left
  by already placed, time-overlapping buffers, else on top of them;
* **lowest offset first** (the first leaf of google/minimalloc's search): always
  place next the unplaced buffer that can sit lowest, ties broken by a static
  order (size, then lifetime), so every buffer rests on what is below it
  (:func:`pack_cyclic` and :func:`pack_around` run it too, as the rule
  ``canonical``, beside best fit and first fit in each order);
* **improvement**: re-run the greedy with the buffers that touch the current
  peak promoted to the front (they are the ones to place better), plus a few
  seeded random perturbations of the best order; keep any strict improvement.

All heavy lifting is vectorised with numpy so pangu-2.6B (18,692 buffers,
12 M overlapping pairs) packs in a few seconds. :func:`pack_cyclic` packs a
repeating step, where buffers may wrap around the step boundary (plan mode).

The greedy placements compare each buffer only with the buffers it meets in time
(listed once per packing, see "greedy placement" below), not with every buffer
placed before it, unless most buffers meet a large share of the others; their
offsets are exactly those of the all-pairs versions they replaced.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from memtune.errors import TraceError
from memtune.trace.placement import _Layout, _place_canonical, _place_cyclic

Interval = tuple[int, int, int]  # (start, end, size)

#: Names of the heuristics :func:`pack` can run, in the order it tries them.
METHODS = ("lowest-offset-size", "best-fit-size", "lowest-offset-lifetime", "best-fit-area")
#: The placement rules :func:`pack_cyclic` and :func:`pack_around` try with each order,
#: in this order: the smallest gap that holds the buffer, the lowest such gap (both
#: taking the buffers in the order given), and minimalloc's canonical greedy (the order
#: only breaks ties; see :func:`_place_canonical`).
CYCLIC_RULES = ("best-fit", "lowest-offset", "canonical")


@dataclass
class Packing:
    """Offsets for every buffer and how good they are."""

    offsets: np.ndarray          # int64, one per input buffer (same order)
    peak: int                    # max(offset + size) over the buffers (the arena size)
    lower_bound: int             # peak of live bytes: no packing can do better
    method: str                  # heuristic that found this packing
    seconds: float = 0.0
    tried: dict[str, int] = field(default_factory=dict)  # method -> peak it reached
    rounds: int = 0              # improvement rounds run

    @property
    def ratio(self) -> float:
        """peak / lower bound (1.0 is optimal)."""
        return self.peak / self.lower_bound if self.lower_bound else 1.0


def _as_arrays(intervals: Iterable[Sequence[int]] | np.ndarray, alignment: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate and convert to int64 arrays; sizes rounded up to ``alignment``."""
    if alignment < 1:
        raise ValueError(f"packing alignment must be a positive number of bytes; got {alignment}")
    arr = np.asarray(intervals if isinstance(intervals, np.ndarray) else list(intervals), dtype=np.int64)
    if arr.size == 0:
        arr = arr.reshape(0, 3)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"intervals must be (start, end, size) triples; got an array of shape {arr.shape}")
    lo, hi, size = arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()
    bad = np.flatnonzero((size < 0) | (hi < lo))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"buffer {i} is invalid: start={lo[i]}, end={hi[i]}, size={size[i]}; "
            "a buffer needs end >= start and size >= 0 (live on [start, end))"
        )
    if alignment > 1:
        size = (size + alignment - 1) // alignment * alignment
    return lo, hi, size


def lower_bound(intervals: Iterable[Sequence[int]] | np.ndarray) -> int:
    """Peak of live bytes over time (buffers live on ``[start, end)``)."""
    lo, hi, size = _as_arrays(intervals, 1)
    return _live_peak(lo, hi, size)


def _live_peak(lo: np.ndarray, hi: np.ndarray, size: np.ndarray) -> int:
    keep = (hi > lo) & (size > 0)
    if not keep.any():
        return 0
    lo, hi, size = lo[keep], hi[keep], size[keep]
    times = np.concatenate([hi, lo])
    delta = np.concatenate([-size, size])
    # At equal times frees come first (half-open intervals): sort by (time, delta).
    order = np.lexsort((delta, times))
    return int(np.cumsum(delta[order]).max())


def aligned_live_peak(intervals: Iterable[Sequence[int]], alignment: int = 1) -> int:
    """The live peak of buffers ``(start, end, size)`` with sizes rounded up to ``alignment``:
    no packing of them (:func:`pack`'s peak) is lower."""
    lo, hi, size = _as_arrays(intervals, alignment)
    return _live_peak(lo, hi, size)


def peak_of(intervals: Iterable[Sequence[int]] | np.ndarray, offsets: Sequence[int] | np.ndarray) -> int:
    lo, hi, size = _as_arrays(intervals, 1)
    off = np.asarray(offsets, dtype=np.int64)
    live = (hi > lo) & (size > 0)
    return int((off[live] + size[live]).max()) if live.any() else 0


def conflicts(intervals: Iterable[Sequence[int]] | np.ndarray, offsets: Sequence[int] | np.ndarray, limit: int = 10) -> list[tuple[int, int]]:
    """Pairs of buffers that are live at the same time and overlap in space.

    Checks every pair blockwise with numpy (fine for tens of thousands of buffers).
    """
    lo, hi, size = _as_arrays(intervals, 1)
    off = np.asarray(offsets, dtype=np.int64)
    if off.shape != lo.shape:
        raise ValueError(f"{len(off)} offsets for {len(lo)} buffers")
    if (off < 0).any():
        i = int(np.flatnonzero(off < 0)[0])
        raise ValueError(f"buffer {i} has a negative offset {off[i]}")
    idx = np.flatnonzero((hi > lo) & (size > 0))
    lo, hi, size, off = lo[idx], hi[idx], size[idx], off[idx]
    end = off + size
    found: list[tuple[int, int]] = []
    block = 1024
    for s in range(0, len(lo), block):
        e = min(s + block, len(lo))
        m = (lo[None, :] < hi[s:e, None]) & (hi[None, :] > lo[s:e, None])
        m &= (off[None, :] < end[s:e, None]) & (end[None, :] > off[s:e, None])
        rows, cols = np.nonzero(m)
        for r, c in zip(rows, cols):
            a, b = s + int(r), int(c)
            if a < b:
                found.append((int(idx[a]), int(idx[b])))
                if len(found) >= limit:
                    return found
    return found


# --------------------------------------------------------------------------- heuristics


def _best_fit(lo: np.ndarray, hi: np.ndarray, size: np.ndarray, order: np.ndarray,
              layout: _Layout | None = None) -> np.ndarray:
    """Place buffers in ``order``; each into the smallest gap among placed buffers
    that overlap it in time (lowest address on ties), else on top of them:
    :func:`_place_cyclic`'s best fit, with empty second parts where no first part
    starts before them (``layout``: :func:`_linear_layout`'s)."""
    if layout is None:
        edge = np.full(len(lo), lo.min() if len(lo) else 0, dtype=np.int64)
        layout = _Layout(lo, hi, edge, edge, size, np.zeros(len(lo), dtype=np.int64), np.zeros(0, dtype=np.int64),
                         np.arange(len(lo)))
    return _place_cyclic(order, lo, hi, layout.lo2, layout.hi2, size, best_fit=True, layout=layout)


def _lowest_offset(lo: np.ndarray, hi: np.ndarray, size: np.ndarray, rank: np.ndarray,
                   layout: _Layout | None = None) -> np.ndarray:
    """minimalloc's canonical greedy: repeatedly place the unplaced buffer with the
    lowest feasible offset (ties: lowest ``rank``) at that offset (:func:`_place_canonical`
    on intervals that do not wrap; ``layout``: :func:`_linear_layout`'s)."""
    zero = np.zeros_like(lo)
    return _place_canonical(np.argsort(rank, kind="stable"), lo, hi, zero, zero, size, layout=layout)


def _linear_layout(lo: np.ndarray, hi: np.ndarray, size: np.ndarray) -> _Layout:
    """The :class:`_Layout` :func:`pack`'s placements share: buffers live on ``[lo, hi)``
    (times from 0, every buffer live), none fixed; the empty second parts at 0 are where
    no part starts before them, as :func:`_best_fit` wants them."""
    zero = np.zeros(len(lo), dtype=np.int64)
    return _Layout(lo, hi, zero, zero, size, zero, np.zeros(0, dtype=np.int64), np.arange(len(lo)))


def _orders(lo: np.ndarray, hi: np.ndarray, size: np.ndarray) -> dict[str, np.ndarray]:
    length = hi - lo
    return {
        # size desc, then longer first, then earlier start
        "size": np.lexsort((lo, -length, -size)),
        "area": np.lexsort((lo, -size, -(size.astype(np.float64) * length))),
        "lifetime": np.lexsort((lo, -size, -length)),
    }


def _rank_of(order: np.ndarray) -> np.ndarray:
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def _run(method: str, lo: np.ndarray, hi: np.ndarray, size: np.ndarray, orders: dict[str, np.ndarray],
         layout: _Layout | None = None) -> np.ndarray:
    kind, _, key = method.rpartition("-")
    if kind == "best-fit":
        return _best_fit(lo, hi, size, orders[key], layout)
    if kind == "lowest-offset":
        return _lowest_offset(lo, hi, size, _rank_of(orders[key]), layout)
    raise ValueError(f"unknown packing method {method!r}; accepted: {', '.join(METHODS)}")


def _check_knobs(alignment: int, rounds: int | None) -> None:
    """The arguments :func:`pack` and :func:`pack_cyclic` share, checked alike."""
    if alignment < 1:
        raise ValueError(f"packing alignment must be a positive number of bytes; got {alignment}")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0):
        raise ValueError(f"packing rounds must be None (as many as the time budget allows) or an int >= 0; "
                         f"got {rounds!r}")


def pack(
    intervals: Iterable[Sequence[int]] | np.ndarray,
    *,
    alignment: int = 1,
    time_budget: float = 2.0,
    methods: Sequence[str] | None = None,
    seed: int = 0,
    rounds: int | None = None,
) -> Packing:
    """Pack buffers ``(start, end, size)`` (live on ``[start, end)``) into one arena.

    Sizes are rounded up to ``alignment`` (so every offset is a multiple of it).
    Every heuristic in ``methods`` runs once (with ``rounds`` None, the later ones
    are skipped once the budget is spent); the improvement pass then runs
    ``rounds`` rounds (None = as many as fit), within what is left of
    ``time_budget`` seconds. Give ``rounds`` for results that do not vary with the
    machine's load: they then depend only on the input and ``seed`` (as long as the
    time budget does not stop the improvement rounds).
    """
    t0 = time.perf_counter()
    _check_knobs(alignment, rounds)
    lo_all, hi_all, requested = _as_arrays(intervals, 1)
    size_all = requested if alignment == 1 else (requested + alignment - 1) // alignment * alignment
    n_all = len(lo_all)
    methods = tuple(methods) if methods is not None else METHODS
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown packing method {m!r}; accepted: {', '.join(METHODS)}")
    # Buffers that are never live (empty lifetime or size 0) take offset 0 and no space.
    idx = np.flatnonzero((hi_all > lo_all) & (size_all > 0))
    offsets = np.zeros(n_all, dtype=np.int64)
    lb = _live_peak(lo_all, hi_all, requested)  # of requested bytes: alignment is waste too
    if idx.size == 0:
        return Packing(offsets, 0, lb, "empty", time.perf_counter() - t0)
    # Compress times to ranks: smaller integers, same order.
    times, inv = np.unique(np.concatenate([lo_all[idx], hi_all[idx]]), return_inverse=True)
    lo = inv[: idx.size].astype(np.int32)
    hi = inv[idx.size :].astype(np.int32)
    size = size_all[idx]
    orders = _orders(lo, hi, size)
    layout = _linear_layout(lo, hi, size)  # built once for every placement below
    # no packing of the aligned sizes beats their live peak: stop there (with 8-byte
    # buffers and 512-byte alignment, the requested-bytes bound is never reachable)
    floor = max(lb, _live_peak(lo, hi, size))

    best_off: np.ndarray | None = None
    best_peak = None
    best_method = ""
    tried: dict[str, int] = {}
    for m in methods:
        if rounds is None and best_off is not None and time.perf_counter() - t0 > time_budget:
            break
        off = _run(m, lo, hi, size, orders, layout)
        peak = int((off + size).max())
        tried[m] = peak
        if best_peak is None or peak < best_peak:
            best_off, best_peak, best_method = off, peak, m
            if peak <= floor:
                break
    assert best_off is not None and best_peak is not None

    # Improvement: promote the buffers that reach the peak, or perturb the order.
    rng = np.random.default_rng(seed)
    kind = best_method.rpartition("-")[0]
    order = orders[best_method.rpartition("-")[2]].copy()
    step = 0
    while best_peak > floor and (rounds is None or step < rounds) and time.perf_counter() - t0 < time_budget:
        step += 1
        if step % 2 == 1:
            top = np.flatnonzero(best_off + size >= best_peak - (best_peak - floor) // 2)
            # Everything live while the peak buffers are live is what competes with them.
            t_lo, t_hi = lo[top].min(), hi[top].max()
            hot = np.flatnonzero((lo < t_hi) & (hi > t_lo))
            hot_set = np.zeros(len(lo), dtype=bool)
            hot_set[hot] = True
            cand = np.concatenate([order[hot_set[order]], order[~hot_set[order]]])
            if rng.random() < 0.5:
                # shuffle mildly within the hot block: swap a few neighbours
                h = int(hot.size)
                for _ in range(max(1, h // 20)):
                    a = int(rng.integers(0, h))
                    b = min(h - 1, a + int(rng.integers(1, 4)))
                    cand[a], cand[b] = cand[b], cand[a]
        else:
            cand = order.copy()
            n = len(cand)
            for _ in range(max(1, n // 50)):
                a = int(rng.integers(0, n))
                b = min(n - 1, a + int(rng.integers(1, 8)))
                cand[a], cand[b] = cand[b], cand[a]
        if kind == "best-fit":
            off = _best_fit(lo, hi, size, cand, layout)
        else:
            off = _lowest_offset(lo, hi, size, _rank_of(cand), layout)
        peak = int((off + size).max())
        if peak < best_peak:
            best_off, best_peak, order = off, peak, cand
            best_method = f"{kind}-improved"
    tried.setdefault(best_method, best_peak)
    offsets[idx] = best_off
    return Packing(offsets, best_peak, lb, best_method, time.perf_counter() - t0, tried, step)


def read_lifetimes_csv(path: str | Path) -> list[Interval]:
    """Read a lifetime table (CSV ``id,lower,upper,size``; buffer live on ``[lower, upper)``)."""
    path = Path(path)
    out: list[Interval] = []
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            need = {"lower", "upper", "size"}
            if reader.fieldnames is None or not need <= set(reader.fieldnames):
                raise TraceError(f"expected a CSV header with columns id,lower,upper,size; got {reader.fieldnames}", path=str(path))
            for line, row in enumerate(reader, start=2):
                try:
                    lo, hi, sz = int(row["lower"]), int(row["upper"]), int(row["size"])
                except (TypeError, ValueError):
                    raise TraceError(f"lower, upper and size must be integers; got {row}", path=str(path), location=f"line {line}") from None
                if sz < 0 or hi < lo:
                    raise TraceError(f"needs size >= 0 and upper >= lower; got {row}", path=str(path), location=f"line {line}")
                out.append((lo, hi, sz))
    except OSError as e:
        raise TraceError(f"cannot read lifetime table: {e.strerror}", path=str(path)) from None
    return out


def _cyclic_live_peak(length: int, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                      size: np.ndarray) -> int:
    """Peak of live bytes around a cycle of buffers live on [lo1, hi1) and [lo2, hi2)."""
    if not len(size) or not length:
        return 0
    two = hi2 > lo2
    delta = np.zeros(length + 1, dtype=np.int64)
    np.add.at(delta, lo1, size)
    np.add.at(delta, hi1, -size)
    np.add.at(delta, lo2, np.where(two, size, 0))
    np.add.at(delta, hi2, np.where(two, -size, 0))
    return int(np.cumsum(delta[:length]).max())


def pack_cyclic(intervals: Iterable[Sequence[int]], length: int, *, alignment: int = 1, time_budget: float = 0.0,
                rounds: int | None = 0, seed: int = 0) -> Packing:
    """Pack buffers on a cycle of ``length`` time units (a repeating step).

    ``(start, end, size)`` with ``0 <= start < length`` and ``end - start <= length``;
    an ``end`` past ``length`` wraps around: the buffer is live on ``[start, length)``
    and ``[0, end - length)`` of every cycle, at one offset. Greedy placement over the
    union of each buffer's live parts, in a few orders (largest first, longest first,
    largest area first, in time order; those across the cut first, see
    :func:`_wrap_first`) and with the three :data:`CYCLIC_RULES` (best
    fit: the smallest gap that holds the buffer; lowest offset: the lowest such gap;
    canonical: minimalloc's greedy, the buffer that can sit lowest next, the order
    breaking ties): the best result wins, and the search stops
    at one within 1/1024 of the floor (the live peak of the aligned sizes). Then, as in
    :func:`pack`, up to ``rounds`` improvement rounds (None = as many as fit) within
    ``time_budget`` seconds perturb the winning order (swaps; the buffers that reach
    the peak placed earlier) and keep what lowers the peak, until one is within 1/1024
    of the floor. The lower bound is the peak of live bytes around the cycle.
    """
    t0 = time.perf_counter()
    arr = np.asarray(list(intervals), dtype=np.int64).reshape(-1, 3)
    n = len(arr)
    _check_knobs(alignment, rounds)
    start, end, req = arr[:, 0], arr[:, 1], arr[:, 2]
    if n and ((start < 0) | (start >= length) | (end <= start) | (end - start > length) | (req < 0)).any():
        i = int(np.flatnonzero((start < 0) | (start >= length) | (end <= start) | (end - start > length) | (req < 0))[0])
        raise ValueError(f"buffer {i} is invalid on a cycle of {length}: start={start[i]}, end={end[i]}, size={req[i]}")
    size = (req + alignment - 1) // alignment * alignment
    wrap = end > length
    lo1, hi1 = start, np.where(wrap, length, end)
    lo2, hi2 = np.where(wrap, 0, 0), np.where(wrap, end - length, 0)
    # lower bound: live bytes around the cycle
    lb = _cyclic_live_peak(length, lo1, hi1, lo2, hi2, req)
    if not n:
        return Packing(np.zeros(0, dtype=np.int64), 0, lb, "cyclic-best-fit", time.perf_counter() - t0)
    # no packing of the aligned sizes beats their live peak around the cycle
    floor = max(lb, _cyclic_live_peak(length, lo1, hi1, lo2, hi2, size))
    dur = end - start
    orders = {"size": np.lexsort((start, -dur, -size)), "duration": np.lexsort((start, -size, -dur)),
              "area": np.lexsort((start, -size, -(size * dur))), "time": np.lexsort((-size, start))}
    if wrap.any():
        orders["wrap"] = _wrap_first(start, dur, size, wrap)

    # what the placements share, built once
    layout = _Layout(lo1, hi1, lo2, hi2, size, np.zeros(n, dtype=np.int64), np.zeros(0, dtype=np.int64), np.arange(n))

    def place(order: np.ndarray, rule: str) -> np.ndarray:
        if rule == "canonical":
            return _place_canonical(order, lo1, hi1, lo2, hi2, size, layout=layout)
        return _place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=rule == "best-fit", layout=layout)

    best_off, best_peak, method, tried, step = _greedy_search(
        place, lambda off: int((off + size).max()), orders, size, floor, rounds, time_budget, t0, seed, "cyclic")
    return Packing(best_off, best_peak, lb, method, time.perf_counter() - t0, tried, step)


def _wrap_first(start: np.ndarray, dur: np.ndarray, size: np.ndarray, wrap: np.ndarray) -> np.ndarray:
    """The buffers live across the cycle's cut first, then the others, each largest first.

    Why: those live across the cut all meet there, so they stack at the bottom, and the
    step's other buffers pack around them. Taken among the rest by size, a few of them
    land high, and the ones placed after them must fit around both of their parts
    (held-out dreamer-rssm-train's step, 79 of 10,380 buffers across the cut: 1.0349 x
    its bound greedily and 1.0345 after 200 improvement rounds; 1.0256 and 1.0255 with
    this order). Tried last, so it changes a packing only where it does better.
    """
    return np.lexsort((start, -dur, -size, ~wrap))


def _greedy_search(place: Callable[[np.ndarray, str], np.ndarray], peak_of: Callable[[np.ndarray], int],
                   orders: dict[str, np.ndarray], size: np.ndarray, floor: int, rounds: int | None,
                   time_budget: float, t0: float, seed: int, prefix: str) -> tuple[np.ndarray, int, str, dict[str, int], int]:
    """The search :func:`pack_cyclic` and :func:`pack_around` share: ``place`` each order
    with each of :data:`CYCLIC_RULES` and keep the lowest peak; then up to ``rounds``
    improvement rounds within ``time_budget`` perturb the winning order (a few swaps;
    buffers that reach the peak placed earlier), placed by the winning rule, and keep
    what lowers it. Returns (offsets, peak, method, tried, rounds run)."""
    tried: dict[str, int] = {}
    best_peak, best_off, method, order, rule = None, None, "", next(iter(orders.values())), CYCLIC_RULES[0]
    # within 1/1024 of the floor no other order, and no improvement round, is worth its
    # time (a greedy placement of a step with thousands of buffers takes a good part of
    # a second)
    good_enough = floor + floor // 1024
    for kind, cand in orders.items():
        for r in CYCLIC_RULES:
            off = place(cand, r)
            peak = peak_of(off)
            m = f"{prefix}-{r}" if kind == "size" else f"{prefix}-{r}-by-{kind}"
            tried[m] = peak
            if best_peak is None or peak < best_peak:
                best_peak, best_off, method, order, rule = peak, off, m, cand, r
            if peak <= good_enough:
                break
        if best_peak <= good_enough:
            break
    assert best_off is not None and best_peak is not None
    rng = np.random.default_rng(seed)
    n = len(order)
    step = 0
    while n and best_peak > good_enough and (rounds is None or step < rounds) and time.perf_counter() - t0 < time_budget:
        step += 1
        cand = order.copy()
        if step % 2:
            # swap a few buffers anywhere in the order
            for _ in range(int(rng.integers(1, 6))):
                a, b = rng.integers(0, n, 2)
                cand[a], cand[b] = cand[b], cand[a]
        else:
            # place a few of the buffers that reach the peak earlier
            top = np.intersect1d(np.flatnonzero(best_off + size >= best_peak - (best_peak - floor) // 2), order)
            if top.size:
                pos = np.flatnonzero(np.isin(cand, rng.choice(top, size=min(top.size, 3), replace=False)))
                for k in pos:
                    j = int(rng.integers(0, k + 1))
                    cand[j:k + 1] = np.roll(cand[j:k + 1], 1)
        off = place(cand, rule)
        peak = peak_of(off)
        if peak < best_peak:
            best_peak, best_off, order = peak, off, cand
            method = method if method.endswith("-improved") else f"{method}-improved"
    tried.setdefault(method, best_peak)
    return best_off, best_peak, method, tried, step


def pack_around(intervals: Iterable[Sequence[int]], fixed: Iterable[Sequence[int]], *, alignment: int = 1,
                time_budget: float = 0.0, rounds: int | None = 0, seed: int = 0) -> Packing:
    """Pack buffers ``(start, end, size)`` around buffers already placed.

    Why: a plan made from an earlier run (:mod:`memtune.trace.runplan`) fixes the
    repeating step's buffers at their cyclic offsets, so that the step can repeat
    for as long as the new run does; the buffers of the first steps must fit around
    them. ``fixed`` holds ``(start, end, size, offset)``. Greedy placement in a few
    orders with the three :data:`CYCLIC_RULES`, then improvement rounds, as :func:`pack_cyclic`. The
    peak and the lower bound count the fixed buffers too; the offsets are the free
    buffers' only.
    """
    t0 = time.perf_counter()
    _check_knobs(alignment, rounds)
    lo_f, hi_f, size_f = _as_arrays(intervals, alignment)
    req_f = _as_arrays(intervals, 1)[2]
    fx = np.asarray(list(fixed), dtype=np.int64).reshape(-1, 4)
    if fx.size and ((fx[:, 1] < fx[:, 0]) | (fx[:, 2] < 0) | (fx[:, 3] < 0)).any():
        i = int(np.flatnonzero((fx[:, 1] < fx[:, 0]) | (fx[:, 2] < 0) | (fx[:, 3] < 0))[0])
        raise ValueError(f"fixed buffer {i} is invalid: start={fx[i, 0]}, end={fx[i, 1]}, size={fx[i, 2]}, "
                         f"offset={fx[i, 3]}; it needs end >= start, size >= 0 and offset >= 0")
    k, n = len(fx), len(lo_f)
    lo = np.concatenate([fx[:, 0], lo_f])
    hi = np.concatenate([fx[:, 1], hi_f])
    size = np.concatenate([fx[:, 2], size_f])
    off0 = np.concatenate([fx[:, 3], np.zeros(n, dtype=np.int64)])
    live = (hi > lo) & (size > 0)
    fixed_top = int((fx[:, 3] + fx[:, 2])[live[:k]].max()) if live[:k].any() else 0
    lb = _live_peak(lo, hi, np.concatenate([fx[:, 2], req_f]))
    floor = max(fixed_top, _live_peak(lo, hi, size))
    free = np.flatnonzero(live[k:]) + k
    if free.size == 0:
        return Packing(np.zeros(n, dtype=np.int64), fixed_top, lb, "fixed", time.perf_counter() - t0)
    dur = hi[free] - lo[free]
    sz = size[free]
    orders = {"size": free[np.lexsort((lo[free], -dur, -sz))], "duration": free[np.lexsort((lo[free], -sz, -dur))],
              "area": free[np.lexsort((lo[free], -sz, -(sz * dur)))], "time": free[np.lexsort((-sz, lo[free]))]}
    zero = np.zeros(k + n, dtype=np.int64)
    placed0 = np.zeros(k + n, dtype=bool)
    placed0[:k] = live[:k]
    layout = _Layout(lo, hi, zero, zero, size, off0, np.flatnonzero(placed0), free)  # shared by the placements

    def place(order: np.ndarray, rule: str) -> np.ndarray:
        if rule == "canonical":
            return _place_canonical(order, lo, hi, zero, zero, size, off0=off0, placed0=placed0, layout=layout)
        return _place_cyclic(order, lo, hi, zero, zero, size, best_fit=rule == "best-fit", off0=off0, placed0=placed0,
                             layout=layout)

    def peak_of(off: np.ndarray) -> int:
        return max(fixed_top, int((off[free] + size[free]).max()))

    best_off, best_peak, method, tried, step = _greedy_search(
        place, peak_of, orders, size, floor, rounds, time_budget, t0, seed, "around")
    return Packing(best_off[k:].copy(), best_peak, lb, method, time.perf_counter() - t0, tried, step)


def pack_cyclic_around(intervals: Iterable[Sequence[int]], length: int, fixed: Iterable[Sequence[int]], *,
                       alignment: int = 1, time_budget: float = 0.0, rounds: int | None = 0,
                       seed: int = 0) -> Packing:
    """Pack a repeating step's buffers (as :func:`pack_cyclic`) around buffers already placed.

    Why: when plan mode takes a step over in the middle of a run, the blocks the
    online policy holds (weights, optimizer state) stay where they are, scattered
    with free space between them. Packing the step into that free space, instead of
    into a separate arena on top of the pages those blocks touch, saves the free
    part of those pages (2 to 8 % of the bound on the held-out runs). ``fixed`` holds
    ``(start, end, size, offset)`` with ``0 <= start <= end <= length``: a block live
    from ``start`` to ``end`` of the first cycle (``end == length``: every cycle).
    The peak and the lower bound count the fixed buffers too; the offsets are the
    step's buffers' only.
    """
    t0 = time.perf_counter()
    _check_knobs(alignment, rounds)
    arr = np.asarray(list(intervals), dtype=np.int64).reshape(-1, 3)
    fx = np.asarray(list(fixed), dtype=np.int64).reshape(-1, 4)
    start, end, req = arr[:, 0], arr[:, 1], arr[:, 2]
    bad = (start < 0) | (start >= length) | (end <= start) | (end - start > length) | (req < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"buffer {i} is invalid on a cycle of {length}: start={start[i]}, end={end[i]}, size={req[i]}")
    fbad = (fx[:, 0] < 0) | (fx[:, 1] < fx[:, 0]) | (fx[:, 1] > length) | (fx[:, 2] < 0) | (fx[:, 3] < 0)
    if fbad.any():
        i = int(np.flatnonzero(fbad)[0])
        raise ValueError(f"fixed buffer {i} is invalid on a cycle of {length}: start={fx[i, 0]}, end={fx[i, 1]}, "
                         f"size={fx[i, 2]}, offset={fx[i, 3]}; it needs 0 <= start <= end <= {length}, size >= 0 "
                         "and offset >= 0")
    k, n = len(fx), len(arr)
    wrap = end > length
    lo1 = np.concatenate([fx[:, 0], start])
    hi1 = np.concatenate([fx[:, 1], np.where(wrap, length, end)])
    lo2 = np.zeros(k + n, dtype=np.int64)
    hi2 = np.concatenate([np.zeros(k, dtype=np.int64), np.where(wrap, end - length, 0)])
    size = np.concatenate([fx[:, 2], (req + alignment - 1) // alignment * alignment])
    off0 = np.concatenate([fx[:, 3], np.zeros(n, dtype=np.int64)])
    live = (hi1 > lo1) & (size > 0)
    fixed_top = int((fx[:, 3] + fx[:, 2])[live[:k]].max()) if live[:k].any() else 0

    lb = _cyclic_live_peak(length, lo1, hi1, lo2, hi2, np.concatenate([fx[:, 2], req]))
    floor = max(fixed_top, _cyclic_live_peak(length, lo1, hi1, lo2, hi2, size))
    free = np.flatnonzero(live[k:]) + k
    if free.size == 0:
        return Packing(np.zeros(n, dtype=np.int64), fixed_top, lb, "fixed", time.perf_counter() - t0)
    placed0 = np.zeros(k + n, dtype=bool)
    placed0[:k] = live[:k]
    dur = (end - start)[free - k]
    sz = size[free]
    st = start[free - k]
    orders = {"size": free[np.lexsort((st, -dur, -sz))], "duration": free[np.lexsort((st, -sz, -dur))],
              "area": free[np.lexsort((st, -sz, -(sz * dur)))], "time": free[np.lexsort((-sz, st))]}
    if wrap[free - k].any():
        orders["wrap"] = free[_wrap_first(st, dur, sz, wrap[free - k])]

    layout = _Layout(lo1, hi1, lo2, hi2, size, off0, np.flatnonzero(placed0), free)  # shared by the placements

    def place(order: np.ndarray, rule: str) -> np.ndarray:
        if rule == "canonical":
            return _place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0, layout=layout)
        return _place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=rule == "best-fit", off0=off0,
                             placed0=placed0, layout=layout)

    def peak_of(off: np.ndarray) -> int:
        return max(fixed_top, int((off[free] + size[free]).max()))

    best_off, best_peak, method, tried, step = _greedy_search(
        place, peak_of, orders, size, floor, rounds, time_budget, t0, seed, "cyclic-around")
    return Packing(best_off[k:].copy(), best_peak, lb, method, time.perf_counter() - t0, tried, step)
