"""Longer runs: ``memtune.trace.extend.repeat_step`` (a recorded run with its step played
N more times) against the event-by-event algorithm it replaced, kept here as the
baseline and measured in the same run on the same device stream. Both outputs are
checked equal.

Both look the step up with ``find_step`` first, a cost that does not grow with N; the
table shows it, and the ratio of what is left once it is taken out.

    python benchmarks/run.py extend [--quick]
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "benchmarks" / "heldout"
SHARED = Path(os.environ.get("MEMTUNE_SHARED_TRACES", REPO.parent / "shared" / "traces"))

#: (trace, extra steps, extra steps with --quick). LONG_RUN_STEPS in bench_policy.py is 200.
CASES = [
    (HELDOUT / "ssm-train.jsonl.gz", 300, 30),
    (HELDOUT / "gru-lm-train.jsonl.gz", 200, 20),
    (HELDOUT / "vgg-train.jsonl.gz", 1000, 100),
    (SHARED / "pytorch-snapshot-warm-emptycache.pickle", 2000, 200),  # segment events inside the step
]


def reference_repeat_step(dt, extra_steps: int, *, min_period: int = 2):
    """repeat_step before it was made fast (commit 7c0fc3d): one event at a time."""
    from memtune.errors import MemtuneError
    from memtune.trace.model import Action, Event
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
    out = []
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


def timed(fn, repeat: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeat):
        out = None  # (the last run's output is freed before the next is timed)
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(quick: bool) -> None:
    import memtune
    import memtune.trace.plan as plan
    from memtune.trace.extend import repeat_step

    real_find_step = plan.find_step
    repeat = 1 if quick else 2
    print(f"{'trace':40s} {'step':>6s} {'extra':>6s} {'events out':>11s} {'find_step':>10s} "
          f"{'reference':>10s} {'repeat_step':>12s} {'ratio':>6s} {'w/o find_step':>14s}")
    ratios, build_ratios = [], []
    for path, extra, extra_quick in CASES:
        if not path.exists():
            print(f"{path.name[:40]:40s} (not on this machine: skipped; MEMTUNE_SHARED_TRACES names the folder)")
            continue
        n = extra_quick if quick else extra
        dt = memtune.load_trace(path, lenient=True).devices[0]
        fs, found = timed(lambda: real_find_step(dt.events), repeat)
        per = found[0]
        # end to end: each call looks its step up
        ref_s, ref = timed(lambda: reference_repeat_step(dt, n), repeat)
        ref_events = ref.events
        del ref
        new_s, new = timed(lambda: repeat_step(dt, n), repeat)
        assert new.events == ref_events, f"{path.name}: repeat_step differs from the reference"
        out_events = len(new.events)
        del new, ref_events
        # the rest: find_step answers from what it found above
        plan.find_step = lambda events, min_period=2: found  # (both look it up in plan at each call)
        try:
            ref_b, _ = timed(lambda: reference_repeat_step(dt, n), repeat)
            new_b, _ = timed(lambda: repeat_step(dt, n), repeat)
        finally:
            plan.find_step = real_find_step
        ratio, build = ref_s / new_s, ref_b / new_b
        ratios.append(ratio)
        build_ratios.append(build)
        print(f"{path.name[:40]:40s} {per.length:>6,d} {n:>6,d} {out_events:>11,d} {fs:>9.2f}s "
              f"{ref_s:>9.2f}s {new_s:>11.2f}s {ratio:>5.1f}x {build:>13.1f}x "
              f"({ref_b:.2f}s / {new_b:.2f}s)", flush=True)
    if ratios:
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        gb = math.exp(sum(map(math.log, build_ratios)) / len(build_ratios))
        print(f"\nrepeat_step vs the event-by-event reference (geometric mean over {len(ratios)} runs): "
              f"{gm:.1f}x faster end to end; {gb:.1f}x once the step is found (find_step, which both "
              f"call once, answering from a cache)")
