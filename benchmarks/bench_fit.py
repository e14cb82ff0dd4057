"""MEMTUNE_FIT: best fit (the default) against first fit, on the held-out runs.

For each fixed-shape held-out run (benchmarks/heldout/manifest.toml), memtune with
``fit=best`` and with ``fit=first`` replays the run as recorded, and with its step
played more times (memtune.trace.extend.repeat_step; one replay, read where the last
quarter of the added steps begins and ends). Printed per run: peak reserved / lower
bound and device calls, the calls made in that last quarter (0: the layout has
settled), and first fit's replay speed as a ratio to best fit's, both measured here.

    python benchmarks/run.py fit [--quick]
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from bench_policy import HELDOUT_RUNS, LONG_RUNS  # benchmarks/run.py runs with benchmarks/ on sys.path

FITS = ("best", "first")
EXTRA_STEPS = 100
QUICK = ("cnn-train", "vgg-train", "transe-train")
REPEATS = 3


def _fastest(fn, repeats: int):
    """(result, seconds) of the fastest of ``repeats`` calls."""
    best = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        took = time.perf_counter() - t
        if best is None or took < best[1]:
            best = (out, took)
    return best


def main(quick: bool) -> None:
    import memtune
    from memtune.errors import MemtuneError
    from memtune.trace.extend import repeat_step, step_copy_ends
    from memtune.trace.plan import find_step, late_steps
    from memtune.trace.replay import replay_device

    extra = 20 if quick else EXTRA_STEPS
    late = late_steps(extra)
    runs = [HELDOUT_RUNS[name] for name in LONG_RUNS if not quick or name in QUICK]
    print(f"{len(runs)} runs; recorded, and {extra} more steps (calls in the last {late} of them)")
    print(f"{'run':28s} | {'best fit: recorded / longer / late calls':>42s} | "
          f"{'first fit: recorded / longer / late calls':>43s} | first/best speed")
    summary: dict[str, dict[str, list]] = {f: {"rec": [], "long": [], "calls": [], "settled": []} for f in FITS}
    speed: list[float] = []
    for run in runs:
        tr = memtune.load_trace(run.path)
        dt = dataclasses.replace(tr.devices[0], settings={})
        bound = dt.peak_requested_bytes()
        per = find_step(dt.events)[0]
        try:
            longer = repeat_step(dt, extra, period=per)
        except MemtuneError:
            print(f"{run.name:28s} | its step cannot be repeated (repeat_step refuses it)")
            continue
        ends = step_copy_ends(dt, extra, period=per)
        at = [ends[extra - late], ends[extra]]
        cells, seconds = [], {}
        for fit in FITS:
            rec, seconds[fit] = _fastest(lambda: replay_device(tr, dt, "memtune", settings={"fit": fit}), REPEATS)
            lng = replay_device(tr, longer, "memtune", settings={"fit": fit}, checkpoints=at)
            grew = lng.checkpoints[1].device_calls - lng.checkpoints[0].device_calls
            s = summary[fit]
            s["rec"].append(rec.peak_reserved_bytes / bound)
            s["long"].append(lng.peak_reserved_bytes / bound)
            s["calls"].append(lng.device_allocs + lng.device_frees)
            s["settled"].append(grew == 0)
            cells.append(f"{rec.peak_reserved_bytes / bound:.3f} {rec.device_allocs + rec.device_frees:4d} calls / "
                         f"{lng.peak_reserved_bytes / bound:.3f} {lng.device_allocs + lng.device_frees:4d} / {grew:+4d}")
        speed.append(seconds["best"] / seconds["first"])
        print(f"{run.name[:28]:28s} | {cells[0]:>42s} | {cells[1]:>43s} | {speed[-1]:.2f}x", flush=True)
    print()
    gm = statistics.geometric_mean
    for fit in FITS:
        s = summary[fit]
        n = len(s["rec"])
        print(f"fit={fit}: recorded: peak/bound geomean {gm(s['rec']):.3f}, within 1.05x "
              f"{sum(x <= 1.05 for x in s['rec'])}/{n}; {extra} more steps: geomean {gm(s['long']):.3f}, "
              f"within 1.05x {sum(x <= 1.05 for x in s['long'])}/{n}, calls geomean {gm(s['calls']):.0f}, "
              f"settled (no call in the last {late} steps) {sum(s['settled'])}/{n}")
    print(f"first fit's replay speed / best fit's, recorded runs (geomean): {gm(speed):.2f}x "
          f"(min {min(speed):.2f}x)")
