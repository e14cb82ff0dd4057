"""Plan mode's learning: ``memtune.trace.plan.suffix_period`` (is there a period ending at the
newest token?) against the version it replaced (tests/reference_algorithms.py), the baseline,
measured in the same run on the same token histories. Both answers are checked equal.

Plan mode asks it every ``PlanSpec.check_every`` events while it learns, as ``_learn`` does:
once with ``min_repeats`` repetitions and, when nothing repeated that often, once more for a
long step seen ``long_step_repeats`` times. Here every history is the run's whole prefix (plan
mode keeps at most 8 x ``max_period`` tokens, more than any of these runs has). On a stream
whose tokens recur without a period (pointnet2-seg-train's drawn point counts), hundreds of
candidate periods pass the first filter, which is where the two versions differ.

    python benchmarks/run.py learn [--quick]
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "benchmarks" / "heldout"

#: (trace, its events used with --quick)
CASES = [
    (HELDOUT / "rerun" / "pointnet2-seg-train.jsonl.gz", 40_000),  # shapes follow the data
    (HELDOUT / "rerun" / "sam-prompt-train.jsonl.gz", 40_000),  # shapes follow the data
    (HELDOUT / "xlstm-lm-train.jsonl.gz", 40_000),  # a fixed step of 34,766 events
]


def _reference_suffix_period():
    spec = importlib.util.spec_from_file_location("reference_algorithms", REPO / "tests" / "reference_algorithms.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_suffix_period


def _learning_checks(find, tokens, spec) -> tuple[float, list]:
    """Seconds and answers of plan mode's checks every ``check_every`` tokens, with ``find``."""
    long_repeats = spec.repeats_to_plan(spec.long_step)
    out = []
    start = time.perf_counter()
    for n in range(spec.check_every, len(tokens) + 1, spec.check_every):
        hist = tokens[:n]
        p = find(hist, spec.min_period, spec.max_period, spec.min_repeats)
        if p is None and long_repeats < spec.min_repeats:
            p = find(hist, max(spec.min_period, spec.long_step), spec.max_period, long_repeats)
        out.append(p)
    return time.perf_counter() - start, out


def main(quick: bool) -> None:
    import memtune
    from memtune.trace.plan import PlanSpec, suffix_period, tokenize

    reference = _reference_suffix_period()
    spec = PlanSpec()
    print(f"{'trace':44s} {'events':>8s} {'checks':>7s} {'reference':>10s} {'suffix_period':>14s} {'ratio':>6s}")
    ratios = []
    for path, quick_events in CASES:
        events = memtune.load_trace(path).devices[0].events
        if quick:
            events = events[:quick_events]
        tokens = tokenize(events)[0]
        ref_s, want = _learning_checks(reference, tokens, spec)
        new_s, got = _learning_checks(suffix_period, tokens, spec)
        assert got == want, f"{path.name}: suffix_period differs from the reference"
        ratios.append(ref_s / new_s)
        label = ("rerun/" if path.parent.name == "rerun" else "") + path.name
        print(f"{label[:44]:44s} {len(events):>8,d} {len(got):>7,d} {ref_s:>9.2f}s {new_s:>13.2f}s "
              f"{ref_s / new_s:>5.1f}x", flush=True)
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\nsuffix_period vs the reference (geometric mean over {len(ratios)} runs): {gm:.1f}x faster, "
          f"the same period at every check")
