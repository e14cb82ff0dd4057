"""The event-by-event ``repeat_step`` that ``memtune.trace.extend`` replaced (commit 7c0fc3d).

Kept as the reference: tests/trace/test_extend_reference.py checks the fast version gives
the same runs, and benchmarks/bench_extend.py measures it as the baseline.
"""

from __future__ import annotations

import dataclasses

from memtune.errors import MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event


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
