"""The algorithms that faster versions replaced (as of commit 7c0fc3d), kept as references.

``reference_repeat_step`` (event by event) and ``reference_detect_period`` (every period's
runs measured). tests/trace/test_extend_reference.py and tests/plan/test_detect_period_reference.py
check that the fast versions give the same results; benchmarks/bench_extend.py measures these
as the baselines.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from memtune.errors import MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event
from memtune.trace.plan import Period


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
