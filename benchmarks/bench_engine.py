"""Allocator engine speed: replay events per second for every preset on the shared
PyTorch snapshots, as a ratio to a bare loop (in the same run) that only tracks
live bytes per event. ``pytorch-cuda`` runs with each snapshot's own settings;
the other presets with their defaults.

    python benchmarks/run.py engine [--quick]
"""

from __future__ import annotations

import time
from pathlib import Path

import memtune
from memtune.devices.simulated import SimulatedDevice
from memtune.errors import OutOfMemoryError
from memtune.trace.model import Action

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
CAPACITY = 1 << 50


def _ops(dt):
    """(kind, trace address, size, stream) for the replayed events; empty_cache where the
    real allocator freed segments outside an OOM."""
    ops = []
    prev = None
    for e in dt.events:
        if e.action is Action.SEGMENT_FREE and prev is not Action.SEGMENT_FREE:
            ops.append((2, 0, 0, 0))
        prev = e.action
        if e.action is Action.ALLOC:
            ops.append((0, e.address, e.size, e.stream))
        elif e.action is Action.FREE:
            ops.append((1, e.address, e.size, e.stream))
    return ops


def bare(ops, initial_live) -> float:
    start = time.perf_counter()
    live = {a: s for a, s, _ in initial_live}
    current = sum(live.values())
    peak = current
    for kind, addr, size, _stream in ops:
        if kind == 0:
            live[addr] = size
            current += size
            if current > peak:
                peak = current
        elif kind == 1:
            s = live.pop(addr, None)
            if s is not None:
                current -= s
    return time.perf_counter() - start


def own_settings(dt, preset: str) -> dict[str, str]:
    """The snapshot's PYTORCH_CUDA_ALLOC_CONF, for the preset that recorded it."""
    conf = (dt.settings or {}).get("PYTORCH_CUDA_ALLOC_CONF") if preset == "pytorch-cuda" else None
    if not isinstance(conf, str):
        return {}
    return dict(item.split(":", 1) for item in conf.split(",") if ":" in item)


def replay(preset, dt, ops) -> tuple[float, int]:
    alloc = memtune.allocator(preset, device=SimulatedDevice(CAPACITY), **own_settings(dt, preset))
    mapping = alloc.restore(dt.initial_segments) if dt.initial_segments else {}
    live = {t: mapping[t] for t, _s, _st in dt.initial_live()}
    malloc, free, empty = alloc.malloc, alloc.free, alloc.empty_cache
    start = time.perf_counter()
    for kind, addr, size, stream in ops:
        if kind == 0:
            try:
                live[addr] = malloc(size, stream)
            except OutOfMemoryError:
                pass
        elif kind == 1:
            a = live.pop(addr, None)
            if a is not None:
                free(a)
        else:
            empty()
    seconds = time.perf_counter() - start
    peak = alloc.memory_stats()["reserved_bytes.all.peak"]
    alloc.close()
    return seconds, peak


def main(quick: bool) -> None:
    names = sorted(p.name for p in TRACES.glob("pytorch-snapshot-*.pickle"))
    if not names:
        print(f"no shared snapshots under {TRACES}; nothing to measure")
        return
    if quick:
        names = [n for n in names if "cold-small" in n or "finetune" in n]
    presets = memtune.allocator.presets()
    repeats = 1 if quick else 3
    print(f"{'trace':42} {'dev':>3} {'events':>7} {'preset':15} {'events/s':>10} {'bare ev/s':>11} {'ratio':>7} "
          f"{'peak reserved':>15}")
    totals: dict[str, list[float]] = {p: [0.0, 0.0] for p in presets}
    for name in names:
        trace = memtune.load_trace(TRACES / name)
        for dt in trace.devices:
            ops = _ops(dt)
            if not ops:
                continue
            base = min(bare(ops, dt.initial_live()) for _ in range(repeats))
            for preset in presets:
                best = None
                peak = 0
                for _ in range(repeats):
                    secs, peak = replay(preset, dt, ops)
                    best = secs if best is None else min(best, secs)
                assert best is not None
                totals[preset][0] += len(ops)
                totals[preset][1] += best
                print(f"{name:42} {dt.device:>3} {len(ops):>7} {preset:15} {len(ops) / best:>10.0f} "
                      f"{len(ops) / base:>11.0f} {best / base:>7.1f} {peak:>15,}", flush=True)
    print("\nper preset over all traces: events/s")
    for preset, (n, secs) in totals.items():
        print(f"  {preset:15} {n / secs:>10.0f}")


if __name__ == "__main__":
    import sys

    main(quick="--quick" in sys.argv)
