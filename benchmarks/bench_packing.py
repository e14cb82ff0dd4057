"""The packer's greedy placements (``memtune.trace.placement``, used by
``memtune.trace.packing``) against the all-pairs versions they replaced
(tests/reference_algorithms.py), the baseline, measured in the same run on the same inputs.
Every Packing is checked equal to the baseline's.

* the packings memtune-plan makes replaying held-out runs (its step packed by ``pack`` and
  ``pack_cyclic``, and ``pack_cyclic_around`` the blocks the online policy holds when it
  takes a step over), captured from the replays themselves;
* the replays as a whole (with the baseline placements, then these), whose results must
  be the same;
* larger steps: superres-train's step repeated 5 times (20,750 buffers);
* dense steps, where most buffers meet a large share of the others and the placements
  test every pair as the baseline did, only faster (placed buffers kept by offset, buffers
  still to place compacted): a transformer-like step (pack_cyclic), and PanGu 2.6B's
  lifetime table (18,692 tensors, ~7 % of all pairs meet; ``pack``), read from the shared
  traces (../shared/traces, or where MEMTUNE_SHARED_TRACES names) when present.

    python benchmarks/run.py packing [--quick]
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator
from unittest.mock import patch

import numpy as np

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "benchmarks" / "heldout"
SHARED = Path(os.environ.get("MEMTUNE_SHARED_TRACES", REPO.parent / "shared" / "traces"))
#: a real dense step: the lifetime table of a PanGu 2.6B training step (never copied here)
PANGU = SHARED / "lifetimes-pangu-2.6b.csv"
TRACES = ["moco-train", "superres-train", "ddpm-train"]
#: the step played several times in a row for a larger one (its pack_cyclic runs all 12
#: placements: no packing of it ends within 1/1024 of the bound)
REPEATED = "superres-train"
#: the packings measured one by one: the largest call of each of these per replay
CALLS = ("pack", "pack_cyclic", "pack_cyclic_around")


def _references():
    """tests/reference_algorithms.py (the tests' references too), imported by its path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reference_algorithms", REPO / "tests" / "reference_algorithms.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def baseline(refs) -> Iterator[None]:
    """The pack functions, placing with the all-pairs versions (which take no layout)."""
    from memtune.trace import packing

    def place_cyclic(*args, layout=None, **kwargs):
        return refs.reference_place_cyclic(*args, **kwargs)

    def place_canonical(*args, layout=None, **kwargs):
        return refs.reference_place_canonical(*args, **kwargs)

    def best_fit(lo, hi, size, order, layout=None):
        return refs.reference_best_fit(lo, hi, size, order)

    with patch.multiple(packing, _place_cyclic=place_cyclic, _place_canonical=place_canonical, _best_fit=best_fit):
        yield


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeat):
        out = None
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def same(a, b) -> bool:
    return (np.array_equal(a.offsets, b.offsets) and a.offsets.dtype == b.offsets.dtype
            and (a.peak, a.lower_bound, a.method, a.tried) == (b.peak, b.lower_bound, b.method, b.tried))


def captured_calls(trace) -> dict[str, tuple[tuple, dict]]:
    """The largest call of each of :data:`CALLS` while memtune-plan replays the trace."""
    from memtune.trace import packing
    from memtune.trace.replay import replay_device

    seen: dict[str, tuple[int, tuple, dict]] = {}
    real = {name: getattr(packing, name) for name in CALLS}

    def spy(name: str):
        def call(*args, **kwargs):
            args = (list(args[0]), *args[1:])
            if len(args[0]) > seen.get(name, (0,))[0]:
                seen[name] = (len(args[0]), args, kwargs)
            return real[name](*args, **kwargs)
        return call

    with patch.multiple(packing, **{name: spy(name) for name in CALLS}):
        replay_device(trace, dataclasses.replace(trace.devices[0], settings={}), "memtune-plan")
    return {name: (args, kwargs) for name, (_n, args, kwargs) in seen.items()}


def repeated_step(args: tuple, kwargs: dict, times: int) -> tuple[tuple, dict]:
    """A pack_cyclic step played ``times`` times in a row, as one cycle."""
    intervals, length = np.asarray(list(args[0]), dtype=np.int64), args[1]
    rows = np.concatenate([intervals + np.array([r * length, r * length, 0]) for r in range(times)])
    return ([tuple(r) for r in rows.tolist()], length * times), kwargs


def transformer_step(layers: int, seed: int = 0) -> tuple[list[tuple[int, int, int]], int]:
    """A step where each layer's forward keeps activations until its backward, among short
    temporaries: most buffers meet a large share of the others."""
    rng = np.random.default_rng(seed)
    sizes = np.array([1, 2, 4, 8, 16, 32]) << 20
    out: list[tuple[int, int, int]] = []
    t, kept = 0, []
    for _ in range(layers):
        mine = []
        for j in range(12):
            if j % 3 == 0:
                mine.append((t, int(rng.choice(sizes))))
            else:
                out.append((t, t + int(rng.integers(1, 4)), int(rng.choice(sizes))))
            t += 1
        kept.append(mine)
    for layer in reversed(range(layers)):
        for _ in range(12):
            out.append((t, t + int(rng.integers(1, 5)), int(rng.choice(sizes))))
            t += 1
        out.extend((s, t, size) for s, size in kept[layer])
    length = t + 4
    out.append((length - 2, length + 3, 64 << 20))  # one across the cut
    return out, length


def main(quick: bool) -> None:
    import memtune
    from memtune.trace import packing
    from memtune.trace.replay import replay_device

    refs = _references()
    repeat = 1 if quick else 3
    print(f"{'input':48s} {'buffers':>8s} {'fixed':>6s} {'baseline':>9s} {'now':>8s} {'ratio':>6s}  same")
    ratios: list[float] = []
    dense_ratios: list[float] = []
    replay_ratios: list[float] = []

    def measure(label: str, fn: Callable[[], object], buffers: int, fixed: int, dense: bool = False) -> None:
        with baseline(refs):
            ref_s, want = timed(fn, repeat)
        new_s, got = timed(fn, repeat)
        ok = same(got, want)
        ratio = ref_s / new_s
        (dense_ratios if dense else ratios).append(ratio)
        print(f"{label:48s} {buffers:>8,d} {fixed:>6,d} {ref_s:>8.3f}s {new_s:>7.3f}s {ratio:>5.1f}x  "
              f"{'yes' if ok else 'NO: the offsets differ'}", flush=True)
        assert ok, f"{label}: the packing differs from the baseline's"

    largest_cyclic: tuple[tuple, dict] | None = None
    for name in TRACES:
        trace = memtune.load_trace(HELDOUT / f"{name}.jsonl.gz", lenient=True)
        dt = dataclasses.replace(trace.devices[0], settings={})
        calls = captured_calls(trace)
        for fn_name in CALLS:
            if fn_name not in calls:
                continue
            args, kwargs = calls[fn_name]
            fixed = len(list(args[2])) if fn_name == "pack_cyclic_around" else 0
            fn = getattr(packing, fn_name)
            measure(f"{name} {fn_name}", lambda: fn(*args, **kwargs), len(args[0]), fixed)
            if fn_name == "pack_cyclic" and name == REPEATED:
                largest_cyclic = (args, kwargs)
        # the whole replay
        with baseline(refs):
            ref_s, want = timed(lambda: replay_device(trace, dt, "memtune-plan"), 1)
        new_s, got = timed(lambda: replay_device(trace, dt, "memtune-plan"), 1)
        ok = (got.peak_reserved_bytes, got.device_allocs, got.device_frees) == \
            (want.peak_reserved_bytes, want.device_allocs, want.device_frees)
        replay_ratios.append(ref_s / new_s)
        print(f"{name + ' memtune-plan replay':48s} {'':>8s} {'':>6s} {ref_s:>8.3f}s {new_s:>7.3f}s "
              f"{ref_s / new_s:>5.1f}x  {'yes' if ok else 'NO: the replays differ'}", flush=True)
        assert ok, f"{name}: the replay differs from the baseline's"

    # larger steps (one measurement each: the baseline takes seconds to minutes)
    repeat = 1
    if largest_cyclic is not None:
        times = 2 if quick else 5
        base = len(largest_cyclic[0][0])
        args, kwargs = repeated_step(*largest_cyclic, times)
        measure(f"a step of {base:,d} buffers repeated {times} times: pack_cyclic",
                lambda: packing.pack_cyclic(*args, **kwargs), len(args[0]), 0)
    layers = 150 if quick else 400
    step, length = transformer_step(layers)
    measure(f"dense: transformer-like step ({layers} layers): pack_cyclic",
            lambda: packing.pack_cyclic(step, length, alignment=512, rounds=0), len(step), 0, dense=True)
    if PANGU.exists():
        table = packing.read_lifetimes_csv(PANGU)
        measure("dense: PanGu 2.6B lifetime table: pack", lambda: packing.pack(table, rounds=0), len(table), 0,
                dense=True)
    else:
        print(f"{'dense: PanGu 2.6B lifetime table: pack':48s} (not on this machine: skipped; "
              f"MEMTUNE_SHARED_TRACES names the folder)")

    def geomean(values: list[float]) -> float:
        return math.exp(sum(map(math.log, values)) / len(values))

    print(f"\npackings vs the all-pairs baseline (geometric mean over {len(ratios)} inputs): "
          f"{geomean(ratios):.1f}x faster; dense steps ({len(dense_ratios)}): {geomean(dense_ratios):.1f}x faster; "
          f"every packing the same")
    if replay_ratios:
        gr = math.exp(sum(map(math.log, replay_ratios)) / len(replay_ratios))
        print(f"memtune-plan replays with them: {gr:.1f}x faster (geometric mean over {len(replay_ratios)} runs); "
              f"the same results")
