"""Step plans (``memtune.trace.plan.make_plan``) with the linear packer run only where it
could win, against running it always (the baseline, measured in the same run on the same
steps). Every plan is checked equal to the baseline's: arena, cut, offsets and method.

make_plan packs a step both ways when buffers live across its cut: the linear packer
(those buffers held for the whole cycle) and the cyclic one, and keeps the lower. The
cyclic packer runs first; where it packs below the floor of every linear packing (the
aligned live peak with those buffers held whole) the linear packer, and its improvement
rounds, cannot win and are not run. The baseline patches that floor to 0, so the linear
packer always runs, as before.

The steps: the held-out runs whose shapes stay fixed (benchmarks/heldout), each detected
as plan mode does, packed with the improvement rounds the tests give a step (200; fewer
with --quick) and with none, as plan mode packs online.

    python benchmarks/run.py step_plans [--quick]
"""

from __future__ import annotations

import statistics
import time
from unittest.mock import patch

#: the runs --quick packs (a few seconds each with 20 rounds)
QUICK = ("dcrnn-traffic-train", "evoformer-pair-train", "vae-train", "raft-flow-train")


def _runs():
    """The fixed-shape held-out runs of benchmarks/heldout/manifest.toml, in its order."""
    from bench_policy import _heldout_runs  # (benchmarks/ is the path run.py runs from)

    return [r for r in _heldout_runs() if r.fixed_shapes and r.set != "demo"]


def _plan(step, rounds: int, always_linear: bool):
    from memtune.trace import packing
    from memtune.trace.plan import make_plan

    start = time.perf_counter()
    if always_linear:
        with patch.object(packing, "aligned_live_peak", lambda *_a, **_k: 0):
            plan = make_plan(step, time_budget=120.0, rounds=rounds)
    else:
        plan = make_plan(step, time_budget=120.0, rounds=rounds)
    return time.perf_counter() - start, plan


def _same(a, b) -> bool:
    return (a.arena, a.cut, a.offsets, a.packing and a.packing.method) == \
        (b.arena, b.cut, b.offsets, b.packing and b.packing.method)


def main(quick: bool) -> None:
    import memtune
    from memtune.trace.plan import PlanSpec, find_step

    runs = [r for r in _runs() if r.name in QUICK] if quick else _runs()
    for rounds in ((20,) if quick else (200, 0)):
        print(f"\nimprovement rounds: {rounds}")
        print(f"{'run':34s} {'buffers':>8s} {'always linear':>14s} {'as made':>9s} {'ratio':>6s}")
        base_total = new_total = 0.0
        ratios = []
        for run in runs:
            per, step = find_step(memtune.load_trace(run.path).devices[0].events, min_period=PlanSpec.min_period)
            if per is None:
                continue
            base_s, want = _plan(step, rounds, always_linear=True)
            new_s, got = _plan(step, rounds, always_linear=False)
            assert _same(got, want), f"{run.name}: the plan differs from the baseline's"
            base_total += base_s
            new_total += new_s
            ratios.append(base_s / new_s)
            print(f"{run.name[:34]:34s} {len(want.offsets):>8,d} {base_s:>13.2f}s {new_s:>8.2f}s "
                  f"{base_s / new_s:>5.1f}x", flush=True)
        gm = statistics.geometric_mean(ratios)
        print(f"{len(ratios)} steps, {rounds} rounds: {base_total:.1f} s always linear, {new_total:.1f} s as made "
              f"({base_total / new_total:.2f}x in all, geometric mean {gm:.2f}x); every plan the same")
