"""The algorithms that faster versions replaced, kept as references.

``reference_repeat_step`` (event by event) and ``reference_detect_period`` (every period's
runs measured), as of commit 7c0fc3d: tests/trace/test_extend_reference.py and
tests/plan/test_detect_period_reference.py check that the fast versions give the same
results; benchmarks/bench_extend.py measures these as the baselines.

``reference_place_cyclic``, ``reference_place_canonical`` and ``reference_best_fit``, the
packer's greedy placements (memtune.trace.packing's ``_place_cyclic``, ``_place_canonical``
and ``_best_fit``) as of commit c4b8c3e: each placement compares the buffer with every
buffer placed before it (all pairs). ``reference_place_canonical`` is not copied here: it is
memtune.trace.placement's ``_place_canonical_all_pairs``, the algorithm of c4b8c3e, which the
packer keeps where its dense placement cannot place (keys past int64, negative sizes or offsets).
tests/plan/test_packing_reference.py checks that the fast versions give the same offsets;
benchmarks/bench_packing.py measures these as the baselines.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from memtune.errors import MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event
from memtune.trace.placement import _place_canonical_all_pairs as reference_place_canonical
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
