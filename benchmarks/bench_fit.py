"""Which hole a request takes: memtune's default against best fit alone and first fit.

The default is best fit until pages still move ``MEMTUNE_FIRST_FIT_AFTER`` mallocs and
frees after the live peak, then first fit. For each fixed-shape held-out run
(benchmarks/heldout/manifest.toml), memtune replays the run as recorded, and with its
step played more times (memtune.trace.extend.repeat_step; one replay, read where the
last quarter of the added steps begins and ends), under the default, under best fit
alone (``first_fit_after=0``) and under first fit (``fit=first``). Printed per run:
peak reserved / lower bound and device calls, the calls made in that last quarter
(0: the layout has settled), and first fit's replay speed as a ratio to the
default's, both measured here.

    python benchmarks/run.py fit [--quick]
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from bench_policy import HELDOUT_RUNS, LONG_RUNS  # benchmarks/run.py runs with benchmarks/ on sys.path

#: name -> memtune settings; the first is the default, the baseline of the speed ratio
VARIANTS: dict[str, dict[str, object]] = {
    "default": {},
    "best fit alone": {"first_fit_after": 0},
    "first fit": {"fit": "first"},
}
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
    print(f"{'run':28s} | " + " | ".join(f"{v + ': recorded / longer / late calls':>42s}" for v in VARIANTS)
          + " | first/default speed")
    summary: dict[str, dict[str, list]] = {v: {"rec": [], "long": [], "calls": [], "settled": []} for v in VARIANTS}
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
        for variant, settings in VARIANTS.items():
            rec, seconds[variant] = _fastest(lambda: replay_device(tr, dt, "memtune", settings=settings or None),
                                             REPEATS)
            lng = replay_device(tr, longer, "memtune", settings=settings or None, checkpoints=at)
            grew = lng.checkpoints[1].device_calls - lng.checkpoints[0].device_calls
            s = summary[variant]
            s["rec"].append(rec.peak_reserved_bytes / bound)
            s["long"].append(lng.peak_reserved_bytes / bound)
            s["calls"].append(lng.device_allocs + lng.device_frees)
            s["settled"].append(grew == 0)
            cells.append(f"{rec.peak_reserved_bytes / bound:.3f} {rec.device_allocs + rec.device_frees:4d} calls / "
                         f"{lng.peak_reserved_bytes / bound:.3f} {lng.device_allocs + lng.device_frees:4d} / {grew:+4d}")
        speed.append(seconds["default"] / seconds["first fit"])
        print(f"{run.name[:28]:28s} | " + " | ".join(f"{c:>42s}" for c in cells) + f" | {speed[-1]:.2f}x", flush=True)
    print()
    gm = statistics.geometric_mean
    for variant, settings in VARIANTS.items():
        s = summary[variant]
        n = len(s["rec"])
        given = ", ".join(f"{k}={v}" for k, v in settings.items()) or "no setting"
        print(f"{variant} ({given}): recorded: peak/bound geomean {gm(s['rec']):.3f}, within 1.05x "
              f"{sum(x <= 1.05 for x in s['rec'])}/{n}; {extra} more steps: geomean {gm(s['long']):.3f}, "
              f"within 1.05x {sum(x <= 1.05 for x in s['long'])}/{n}, calls geomean {gm(s['calls']):.0f}, "
              f"settled (no call in the last {late} steps) {sum(s['settled'])}/{n}")
    print(f"first fit's replay speed / the default's, recorded runs (geomean): {gm(speed):.2f}x "
          f"(min {min(speed):.2f}x)")
