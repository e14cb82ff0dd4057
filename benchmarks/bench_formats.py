"""Reading speed of every trace format, as a ratio to a bare parse of the same file.

For each shared trace (and its memtune JSON Lines conversion) this times
``memtune.load_trace`` and, in the same run, the bare parse a reader cannot
avoid: the restricted unpickle alone (snapshots), gzip + ``json.load``
(profiler traces), ``csv.reader`` (CSV) and ``json.loads`` per line (JSON Lines).
"ratio" = reader time / bare time: the price of validation, ordering and
warm-state reconstruction.

Then the JSON Lines reader on the held-out recordings (benchmarks/heldout), reading each
file's events in one decode (as ``load_trace`` does) against reading it line by line
(the baseline, the same run): every trace checked equal, "speedup" = line by line / at once.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMTUNE_SHARED_TRACES", REPO.parent / "shared" / "traces"))


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _bare(path: Path, fmt: str) -> Callable[[], object]:
    from memtune.trace.formats.safe_pickle import safe_load

    if fmt == "pytorch-snapshot":
        return lambda: safe_load(path)
    if fmt == "torch-profiler":
        def parse_json() -> object:
            opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
            with opener(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        return parse_json
    if fmt == "memtune-jsonl":
        def parse_lines() -> object:
            opener = gzip.open if str(path).endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                return [json.loads(line) for line in f]
        return parse_lines

    def parse_csv() -> object:
        with open(path, newline="") as f:
            return list(csv.reader(f))
    return parse_csv


def main(quick: bool) -> None:
    from memtune.trace.formats import detect_format, load_trace, save_trace

    if not SHARED.is_dir():
        print(f"shared traces not found at {SHARED}; nothing to measure", file=sys.stderr)
        return
    repeat = 1 if quick else 3
    files = sorted(p for p in SHARED.iterdir() if p.name != "README.md")
    if quick:
        files = [p for p in files if p.stat().st_size < 1_000_000] or files[:1]
    print(f"{'trace':48} {'format':17} {'events':>8} {'reader ev/s':>12} {'bare ev/s':>12} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        jobs: list[tuple[str, Path]] = [(p.name, p) for p in files]
        # The JSON Lines reader on a conversion of the largest snapshot.
        biggest = max((p for p in files if p.suffix == ".pickle"), key=lambda p: p.stat().st_size, default=None)
        if biggest is not None:
            out = Path(tmp) / (biggest.stem + ".jsonl")
            save_trace(load_trace(biggest), out)
            jobs.append((out.name + " (converted)", out))
        for name, path in jobs:
            fmt = detect_format(path)
            trace = load_trace(path)
            events = sum(len(d.events) for d in trace.devices)
            t_reader = _best(lambda: load_trace(path), repeat)
            t_bare = _best(_bare(path, fmt), repeat)
            print(
                f"{name[:48]:48} {fmt:17} {events:8d} {events / t_reader:12,.0f} {events / t_bare:12,.0f} "
                f"{t_reader / t_bare:6.2f}",
                flush=True,
            )

    _at_once_vs_line_by_line(quick)


def _at_once_vs_line_by_line(quick: bool) -> None:
    from unittest.mock import patch

    from memtune.trace.formats import jsonl, load_trace

    paths = sorted((REPO / "benchmarks" / "heldout").glob("*.jsonl.gz"))
    paths = paths[::12] if quick else paths
    at_once = line_by_line = 0.0
    events = 0
    for path in paths:
        t0 = time.perf_counter()
        fast = load_trace(path)
        t1 = time.perf_counter()
        with patch.object(jsonl, "_read_regular", lambda *_a: None):
            slow = load_trace(path)
        t2 = time.perf_counter()
        assert fast.devices == slow.devices and fast.metadata == slow.metadata, path.name
        at_once, line_by_line = at_once + t1 - t0, line_by_line + t2 - t1
        events += sum(len(d.events) for d in fast.devices)
    print(f"\nJSON Lines, {len(paths)} held-out recordings, {events:,} events: at once {events / at_once:,.0f} ev/s, "
          f"line by line {events / line_by_line:,.0f} ev/s, speedup {line_by_line / at_once:.2f}x", flush=True)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
