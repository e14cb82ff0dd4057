"""The algorithms that faster versions replaced, kept as references.

``reference_repeat_step`` (event by event) and ``reference_detect_period`` (every period's
runs measured), as of commit 7c0fc3d: tests/trace/test_extend_reference.py and
tests/plan/test_detect_period_reference.py check that the fast versions give the same
results; benchmarks/bench_extend.py measures these as the baselines.

``reference_place_cyclic``, ``reference_place_canonical`` and ``reference_best_fit``, the
packer's greedy placements (memtune.trace.packing's ``_place_cyclic``, ``_place_canonical``
and ``_best_fit``) as of commit c4b8c3e: each placement compares the buffer with every
buffer placed before it (all pairs). ``reference_place_canonical`` is a frozen copy, with its
own overlap test: the packer's ``_place_canonical_all_pairs`` (the same algorithm, kept where the
dense placement cannot place) now shares that test with the fast placements, so it could not
catch a bug there. tests/plan/test_packing_reference.py checks that the fast versions give the
same offsets;
benchmarks/bench_packing.py measures these as the baselines.

``reference_suffix_period``, plan mode's test for a period ending at the newest token
(memtune.trace.plan's ``suffix_period``) as of commit 9b71e11, before it tested every
candidate period on the last 64 tokens at once: tests/plan/test_plan.py checks that it
finds the same period.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Sequence

import numpy as np

from memtune.errors import MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event
from memtune.trace.plan import Period

__all__ = ["reference_best_fit", "reference_detect_period", "reference_place_canonical", "reference_place_cyclic",
           "reference_repeat_step"]


def reference_repeat_step(dt: DeviceTrace, extra_steps: int, *, min_period: int = 2) -> DeviceTrace:
    """repeat_step as it was before it was made fast (commit 7c0fc3d): one event at a time."""
    if not isinstance(dt, DeviceTrace):
        raise TypeError(f"repeat_step needs a DeviceTrace (one device of a loaded trace, e.g. "
                        f"memtune.load_trace(path).devices[0]); got {type(dt).__name__}")
    for name, value, low in (("extra_steps", extra_steps, 0), ("min_period", min_period, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}; got {value!r}")
    from memtune.trace.plan import FREE, find_step, tokenize

    events = dt.events
    per, _template = find_step(events, min_period=min_period)
    if per is None:
        raise MemtuneError(f"device {dt.device}: no repeating step found in {len(events)} events "
                           f"(no step markers, and no period of at least {min_period} allocations and frees "
                           f"that repeats); there is nothing to repeat")
    at = [i for i, ev in enumerate(events) if ev.action in (Action.ALLOC, Action.FREE)]
    toks, keys = tokenize(events)
    dist = [keys[t][1] if keys[t][0] == FREE else None for t in toks.tolist()]
    last = per.start + (per.count - 1) * per.length
    lo = at[last]
    hi = at[last + per.length] if last + per.length < len(at) else len(events)
    token_at = {i: k for k, i in enumerate(at)}
    span = 1 + max([ev.address + max(ev.size, 1) for ev in events] +
                   [a + max(n, 1) for a, n, _s in dt.initial_live()] + [0])
    base = -(-span // 4096) * 4096
    out: list[Event] = []
    live: dict[int, tuple[int, int, int]] = {}
    q = 0
    parts = [range(lo)] + [range(lo, hi)] * (1 + extra_steps) + [range(hi, len(events))]
    for n, part in enumerate(parts):
        closing = n == len(parts) - 1
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
                    got = live.pop(k - d if closing and k - d < last else q - d, None)
                    want = events[at[k - d]]
                    if got is None or got[1:] != (want.size, want.stream):
                        raise MemtuneError(
                            f"device {dt.device}: the step frees a block allocated {d} allocations and frees "
                            f"before, where the repeated run has no such block (it reaches back before the "
                            f"part of the stream that repeats); cannot repeat this step")
                    out.append(ev if got[0] == ev.address else Event(Action.FREE, got[0], ev.size, ev.stream))
            q += 1
    return dataclasses.replace(dt, events=out)


def reference_detect_period(tokens: Sequence[int] | np.ndarray, min_period: int = 2, max_period: int | None = None,
                            min_count: int = 2) -> Period | None:
    """detect_period as it was before it was made fast (commit 7c0fc3d): every period's runs."""
    a = np.asarray(tokens, dtype=np.int64)
    n = len(a)
    hi = n // min_count if max_period is None else min(max_period, n // min_count)
    found: list[tuple[int, int, int]] = []  # (coverage, p, start)
    for p in range(max(1, min_period), hi + 1):
        m = a[:-p] == a[p:]
        if not m[: n - p].any():
            continue
        d = np.diff(np.concatenate(([0], m.view(np.int8), [0])))
        starts = np.flatnonzero(d == 1)
        ends = np.flatnonzero(d == -1)
        runs = ends - starts
        k = int(np.argmax(runs))
        run = int(runs[k])
        reps = (run + p) // p
        if reps >= min_count:
            found.append((reps * p, p, int(starts[k])))
    if not found:
        return None
    best = max(c for c, _p, _s in found)
    cov, p, s = min((f for f in found if f[0] >= 0.9 * best), key=lambda f: f[1])
    return Period(s, p, cov // p)


def reference_best_fit(lo: np.ndarray, hi: np.ndarray, size: np.ndarray, order: np.ndarray) -> np.ndarray:
    """_best_fit as it was before it was made fast (commit c4b8c3e):

    Place buffers in ``order``; each into the smallest gap among placed buffers
    that overlap it in time (lowest address on ties), else on top of them."""
    n = len(lo)
    off = np.zeros(n, dtype=np.int64)
    p_lo = np.empty(n, dtype=lo.dtype)
    p_hi = np.empty(n, dtype=hi.dtype)
    p_off = np.empty(n, dtype=np.int64)
    p_end = np.empty(n, dtype=np.int64)
    k = 0
    for i in order:
        a, b, sz = lo[i], hi[i], size[i]
        if k:
            m = np.flatnonzero((p_lo[:k] < b) & (p_hi[:k] > a))
        else:
            m = np.empty(0, dtype=np.int64)  # (a module-level m_empty before)
        if m.size == 0:
            o = 0
        else:
            so = p_off[m]
            srt = np.argsort(so, kind="stable")
            so = so[srt]
            se = p_end[m][srt]
            reach = np.maximum.accumulate(se)
            prev = np.empty_like(reach)
            prev[0] = 0
            prev[1:] = reach[:-1]
            gap = so - prev
            fit = np.flatnonzero(gap >= sz)
            if fit.size:
                j = fit[np.argmin(gap[fit])]  # smallest fitting gap; argmin keeps the lowest on ties
                o = int(prev[j])
            else:
                o = int(reach[-1])
        off[i] = o
        p_lo[k], p_hi[k], p_off[k], p_end[k] = a, b, o, o + sz
        k += 1
    return off


def reference_place_cyclic(order: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray,
                           size: np.ndarray, *, best_fit: bool, off0: np.ndarray | None = None,
                           placed0: np.ndarray | None = None) -> np.ndarray:
    """_place_cyclic as it was before it was made fast (commit c4b8c3e):

    Offsets from placing buffers in ``order``: each in the smallest gap below the
    buffers it overlaps in time that holds it (best fit) or the lowest such gap.
    ``placed0`` marks buffers already placed at ``off0`` (they stay there)."""
    n = len(size)
    off = np.zeros(n, dtype=np.int64) if off0 is None else off0.copy()
    pre = np.flatnonzero(placed0) if placed0 is not None else np.zeros(0, dtype=np.int64)
    # every array in placement order, so the buffers placed so far are a prefix: each
    # placement compares against them only, not against all n
    seq = np.concatenate([pre, np.asarray(order, dtype=np.int64)])
    L1, H1, L2, H2, S, OFF = lo1[seq], hi1[seq], lo2[seq], hi2[seq], size[seq], off[seq]
    for k in range(len(pre), len(seq)):
        a1, b1, a2, b2, sz = L1[k], H1[k], L2[k], H2[k], S[k]
        l1, h1, l2, h2 = L1[:k], H1[:k], L2[:k], H2[:k]
        m = ((l1 < b1) & (h1 > a1)) | ((l2 < b1) & (h2 > a1))
        if b2 > a2:
            m |= ((l1 < b2) & (h1 > a2)) | ((l2 < b2) & (h2 > a2))
        idx = np.flatnonzero(m)
        if idx.size == 0:
            o = 0
        else:
            oi = OFF[idx]
            srt = np.argsort(oi, kind="stable")
            so = oi[srt]
            reach = np.maximum.accumulate(so + S[idx][srt])
            prev = np.concatenate(([0], reach[:-1]))
            gap = so - prev
            fit = np.flatnonzero(gap >= sz)
            if not fit.size:
                o = int(reach[-1])
            elif best_fit:
                o = int(prev[fit[np.argmin(gap[fit])]])
            else:
                o = int(prev[fit[0]])
        OFF[k] = o
    off[seq] = OFF
    return off


def reference_place_canonical(order: np.ndarray, lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray,
                              hi2: np.ndarray, size: np.ndarray, *, off0: np.ndarray | None = None,
                              placed0: np.ndarray | None = None) -> np.ndarray:
    """minimalloc's canonical greedy (as packing's ``_lowest_offset``), for buffers live on
    one or two parts of a cycle and around buffers already placed: repeatedly place,
    of the buffers in ``order``, the one that can sit lowest -- on top of every
    buffer placed so far that it overlaps in time, and clear of the ``placed0``
    buffers (fixed at ``off0``) -- ties going to the earliest in ``order``.

    Why: placing buffers in rising offsets makes every buffer rest on what is below
    it, so the buffers live at the busiest time stack without gaps. Taking buffers in
    a fixed order instead (largest first, longest first) leaves gaps under a buffer
    that no later one fills: on the held-out steps, 12 of 47 packings end more than
    1 % above the bound that way, and 4 with this rule too.
    """
    n = len(size)
    off = np.zeros(n, dtype=np.int64) if off0 is None else off0.copy()
    todo = np.asarray(order, dtype=np.int64)
    rank = np.zeros(n, dtype=np.int64)
    rank[todo] = np.arange(len(todo))
    inf = np.iinfo(np.int64).max
    key = np.full(n, inf, dtype=np.int64)  # lowest feasible offset * n + rank; inf = not to place
    key[todo] = rank[todo]
    min_off = np.zeros(n, dtype=np.int64)
    fixed = np.flatnonzero(placed0) if placed0 is not None else np.zeros(0, dtype=np.int64)
    f_lo1, f_hi1, f_lo2, f_hi2 = lo1[fixed], hi1[fixed], lo2[fixed], hi2[fixed]
    f_off, f_top = off[fixed], off[fixed] + size[fixed]

    wraps = bool((hi2 > lo2).any())  # no second parts (lifetime tables, run plans): half the comparisons

    def overlapping(a1: int, b1: int, a2: int, b2: int, l1: np.ndarray, h1: np.ndarray, l2: np.ndarray,
                    h2: np.ndarray) -> np.ndarray:
        m = (l1 < b1) & (h1 > a1)
        if wraps:
            m |= (l2 < b1) & (h2 > a1)
            if b2 > a2:
                m |= ((l1 < b2) & (h1 > a2)) | ((l2 < b2) & (h2 > a2))
        return m

    # per buffer, the fixed buffers it overlaps in time merged into disjoint ranges
    # (starts, ends; both ascending), built when first needed: a buffer is checked
    # against them again each time its lowest offset rises
    taken: dict[int, tuple[list[int], list[int]]] = {}

    def fixed_ranges(i: int) -> tuple[list[int], list[int]]:
        got = taken.get(i)
        if got is None:
            m = overlapping(lo1[i], hi1[i], lo2[i], hi2[i], f_lo1, f_hi1, f_lo2, f_hi2) & (f_top > f_off)
            fo, ft = f_off[m], f_top[m]
            srt = np.argsort(fo, kind="stable")
            fo, reach = fo[srt], np.maximum.accumulate(ft[srt])
            new = np.ones(len(fo), dtype=bool)
            new[1:] = fo[1:] > reach[:-1]  # a range starts where no earlier one reaches
            last = np.append(np.flatnonzero(new)[1:] - 1, len(fo) - 1) if len(fo) else np.zeros(0, dtype=np.int64)
            got = taken[i] = (fo[new].tolist(), reach[last].tolist())
        return got

    for _ in range(len(todo)):
        while True:
            i = int(np.argmin(key))
            o = int(min_off[i])
            if not fixed.size:
                break
            # the lowest offset from o up that clears the fixed buffers it overlaps
            # (raising it keeps the choice canonical: a key only ever grows)
            starts, ends = fixed_ranges(i)
            sz = int(size[i])
            o2 = o
            j = bisect.bisect_right(ends, o2)
            while j < len(starts) and starts[j] < o2 + sz:
                o2 = ends[j]
                j += 1
            if o2 == o:
                break
            min_off[i] = o2
            key[i] = o2 * n + rank[i]
        off[i] = o
        key[i] = inf
        h = o + int(size[i])
        m = np.flatnonzero(overlapping(lo1[i], hi1[i], lo2[i], hi2[i], lo1, hi1, lo2, hi2)
                           & (key != inf) & (min_off < h))
        if m.size:
            min_off[m] = h
            key[m] = h * n + rank[m]
    return off


def reference_suffix_period(tokens: np.ndarray, min_period: int, max_period: int, repeats: int = 2) -> int | None:
    """suffix_period as of commit 9b71e11: each candidate's whole span compared in turn."""
    n = len(tokens)
    hi = min(max_period, n // repeats)
    if hi < min_period:
        return None
    rev = tokens[::-1]
    k = min(8, hi)
    ok = np.ones(hi + 1, dtype=bool)
    ok[:min_period] = False
    for j in range(k):
        seg = rev[j: j + hi + 1]
        ok[: len(seg)] &= seg == rev[j]
    for p in np.flatnonzero(ok):
        p = int(p)
        if p and np.array_equal(tokens[n - repeats * p: n - p], tokens[n - (repeats - 1) * p:]):
            return p
    return None
