"""Longer runs read where the step's copies end: ``memtune.trace.extend.replay_longer_run``
(the replay stops once memtune's state repeats) against replaying the whole longer run
(``repeat_step`` then ``replay_device`` with a checkpoint at each count), the baseline,
measured in the same run on the same stream. Both answers are checked equal.

The cases span what the stop can do: a run whose state repeats within the first try's
copies, one that repeats only later (the whole run is built, and replayed up to there), and
one whose state does not repeat within the run (the first try is wasted: the ratio is
below 1).

    python benchmarks/run.py longer [--quick]
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

HELDOUT = Path(__file__).resolve().parents[0] / "heldout"

#: (run, extra steps read, and with --quick). Measured at 3a38e62 (tests/plan/test_longer_runs.py's
#: 200 and 300): vgg-train's state repeats within 32 copies, xlstm-lm-train's from copy 35,
#: raft-flow-train's from 49, evoformer-pair-train's not within 300.
CASES = [
    ("vgg-train", (200, 300), (20, 40)),
    ("xlstm-lm-train", (200, 300), (40, 60)),
    ("raft-flow-train", (200, 300), (60, 80)),
    ("evoformer-pair-train", (200, 300), (20, 40)),
]


def main(quick: bool) -> None:
    import memtune
    from memtune.trace.extend import repeat_step, replay_longer_run, step_copy_ends
    from memtune.trace.plan import find_step
    from memtune.trace.replay import replay_device

    print(f"{'run':24s} {'extra':>9s} {'settled':>8s} {'replayed':>9s} {'whole run':>10s} {'stopped':>9s} {'ratio':>6s}")
    ratios = []
    for name, counts, quick_counts in CASES:
        counts = quick_counts if quick else counts
        tr = memtune.load_trace(HELDOUT / f"{name}.jsonl.gz")
        dt = dataclasses.replace(tr.devices[0], settings={})
        per = find_step(dt.events)[0]
        t = time.perf_counter()
        ends = step_copy_ends(dt, max(counts), period=per)
        whole = replay_device(tr, repeat_step(dt, max(counts), period=per), "memtune",
                              checkpoints=[ends[k] for k in counts])
        base_s = time.perf_counter() - t
        t = time.perf_counter()
        got = replay_longer_run(tr, dt, "memtune", list(counts), period=per)
        new_s = time.perf_counter() - t
        assert [got.checkpoints[k] for k in counts] == whole.checkpoints, f"{name}: the stopped replay differs"
        ratios.append(base_s / new_s)
        print(f"{name:24s} {'/'.join(map(str, counts)):>9s} {str(got.settled):>8s} {got.replayed:>9d} "
              f"{base_s:>9.2f}s {new_s:>8.2f}s {base_s / new_s:>5.2f}x", flush=True)
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\nreplay_longer_run vs the whole longer run's replay (geometric mean over {len(ratios)} runs): "
          f"{gm:.2f}x the speed (above 1: faster), the same counts")
