"""Replay speed: events per second of ``memtune.replay`` per preset on the shared
traces, as a ratio to a bare loop over the same events that only tracks live
bytes (the least any replay must do). Both are measured in this run.

    python benchmarks/run.py replay [--quick]
"""

from __future__ import annotations

import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMTUNE_SHARED_TRACES", REPO.parent / "shared" / "traces"))

QUICK = ["pytorch-snapshot-cold-small.pickle", "pytorch-snapshot-warm-finetune.pickle", "lifetimes-resnet50.csv"]


def bare_loop(events) -> tuple[int, float]:
    """Live-bytes tracking only: the baseline."""
    from memtune.trace.model import Action

    ALLOC, FREE = Action.ALLOC, Action.FREE
    start = time.perf_counter()
    live: dict[int, int] = {}
    cur = peak = n = 0
    for ev in events:
        a = ev.action
        if a is ALLOC:
            live[ev.address] = ev.size
            cur += ev.size
            if cur > peak:
                peak = cur
            n += 1
        elif a is FREE:
            s = live.pop(ev.address, None)
            if s is not None:
                cur -= s
            n += 1
    return n, time.perf_counter() - start


def best_of(fn, repeat: int):
    best = None
    for _ in range(repeat):
        out = fn()
        if best is None or out[1] < best[1]:
            best = out
    return best


def main(quick: bool) -> None:
    import memtune
    from memtune.trace.replay import replay_device

    if not SHARED.is_dir():
        print(f"shared traces not found at {SHARED}; nothing to measure")
        return
    names = QUICK if quick else sorted(p.name for p in SHARED.iterdir() if p.name != "README.md")
    presets = list(memtune.presets())
    repeat = 1 if quick else 3
    print(f"{'trace':42s} {'dev':>3s} {'events':>7s} {'bare ev/s':>11s}  " + "  ".join(f"{p:>14s}" for p in presets))
    ratios: dict[str, list[float]] = {p: [] for p in presets}
    for name in names:
        trace = memtune.load_trace(SHARED / name, lenient=True)
        for dt in trace.devices:
            n, bare_s = best_of(lambda: bare_loop(dt.events), repeat * 3)
            if n == 0:
                continue
            bare_eps = n / max(bare_s, 1e-9)
            cells = []
            for p in presets:
                r = best_of(lambda: (None, replay_device(trace, dt, p, lenient=True).seconds), repeat)
                eps = n / max(r[1], 1e-9)
                ratio = eps / bare_eps
                ratios[p].append(ratio)
                cells.append(f"{eps:>8,.0f} {ratio:5.3f}")
            print(f"{name[:42]:42s} {dt.device:>3d} {n:>7,d} {bare_eps:>11,.0f}  " + "  ".join(cells))
    print("\nreplay events/s as a fraction of the bare live-bytes loop (geometric mean over streams):")
    for p, rs in ratios.items():
        if rs:
            import math

            gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
            print(f"  {p:16s} {gm:.4f}  (bare loop is {1 / gm:,.0f}x faster)")
