"""Longer runs: ``memtune.trace.extend.repeat_step`` (a recorded run with its step played
N more times) against the event-by-event algorithm it replaced (tests/reference_algorithms.py),
the baseline, measured in the same run on the same device stream. Both outputs are
checked equal.

Both look the step up with ``find_step`` first, a cost that does not grow with N; the
table shows it, and the ratio of what is left once it is taken out. ``detect_period``
(find_step's work when a trace has no step markers) is measured against the algorithm it
replaced too.

    python benchmarks/run.py extend [--quick]
"""

from __future__ import annotations

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


def _references():
    """tests/reference_algorithms.py (the tests' references too), imported by its path: the
    event-by-event repeat_step and the every-period detect_period that were replaced."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reference_algorithms", REPO / "tests" / "reference_algorithms.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, repeat: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeat):
        out = None  # (the last run's output is freed before the next is timed)
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(quick: bool) -> None:
    refs = _references()
    reference_repeat_step = refs.reference_repeat_step
    import memtune
    import memtune.trace.plan as plan
    from memtune.trace.extend import repeat_step

    real_find_step = plan.find_step
    repeat = 1 if quick else 2
    print(f"{'trace':40s} {'step':>6s} {'extra':>6s} {'events out':>11s} {'find_step':>10s} "
          f"{'reference':>10s} {'repeat_step':>12s} {'ratio':>6s} {'w/o find_step':>14s}")
    ratios, build_ratios, detect_ratios = [], [], []
    for path, extra, extra_quick in CASES:
        if not path.exists():
            print(f"{path.name[:40]:40s} (not on this machine: skipped; MEMTUNE_SHARED_TRACES names the folder)")
            continue
        n = extra_quick if quick else extra
        dt = memtune.load_trace(path, lenient=True).devices[0]
        fs, found = timed(lambda: real_find_step(dt.events), repeat)
        per = found[0]
        # find_step's own work: detect_period on the step tokens, against the reference
        tokens = plan.step_tokens(dt.events)
        dp_ref, want = timed(lambda: refs.reference_detect_period(tokens, min_period=2), repeat)
        dp_new, got = timed(lambda: plan.detect_period(tokens, min_period=2), repeat)
        assert got == want, f"{path.name}: detect_period differs from the reference"
        detect_ratios.append(dp_ref / dp_new)
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
              f"({ref_b:.2f}s / {new_b:.2f}s); detect_period {dp_ref:.2f}s / {dp_new:.2f}s = "
              f"{dp_ref / dp_new:.1f}x", flush=True)
    if ratios:
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        gb = math.exp(sum(map(math.log, build_ratios)) / len(build_ratios))
        print(f"\nrepeat_step vs the event-by-event reference (geometric mean over {len(ratios)} runs): "
              f"{gm:.1f}x faster end to end; {gb:.1f}x once the step is found (find_step, which both "
              f"call once, answering from a cache)")
        gd = math.exp(sum(map(math.log, detect_ratios)) / len(detect_ratios))
        print(f"detect_period (what find_step runs without step markers) vs the every-period reference: "
              f"{gd:.1f}x faster (geometric mean over {len(detect_ratios)} runs; the same period each time)")
