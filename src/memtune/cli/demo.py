"""``memtune demo``: the README's main command. No arguments, no network: replay
the small real traces bundled with memtune under every preset, print the
comparison, and write an HTML report."""

from __future__ import annotations

import contextlib
import importlib.resources
import os
import time
from pathlib import Path

import click

import memtune
from memtune.cli._common import console
from memtune.errors import MemtuneError

DEFAULT_OUT = "memtune-demo-report"
TRACE_SUFFIXES = (".jsonl.gz", ".jsonl", ".pickle", ".json.gz", ".csv")
#: Configurations the demo tries besides every preset's defaults, so the advice can
#: name a real `export` line: PyTorch's most effective knobs, one at a time.
DEMO_EXTRA = (
    ("pytorch-cuda", (("expandable_segments", "True"),)),
    ("pytorch-cuda", (("roundup_power2_divisions", "4"),)),
    ("mxnet-round", (("round_linear_cutoff", "22"),)),
)


def bundled_traces() -> list:
    """The demo traces shipped in ``memtune/data/traces`` (sorted by name)."""
    root = importlib.resources.files("memtune") / "data" / "traces"
    found = []
    if root.is_dir():
        for entry in root.iterdir():
            if entry.is_file() and entry.name.endswith(TRACE_SUFFIXES):
                found.append(entry)
    if not found:
        raise MemtuneError(
            f"no bundled demo traces in {root} (expected *.jsonl.gz files); this memtune installation is "
            "incomplete: reinstall it (pip install memtune), or replay your own trace with "
            "`memtune replay TRACE --policy all`"
        )
    return sorted(found, key=lambda p: p.name)


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=DEFAULT_OUT, show_default=True,
              help="Directory for the report (report.html, PNG timelines, results.json).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: up to 2).")
def demo(out_dir, jobs):
    """Replay the real traces bundled with memtune under every allocator preset,
    print the comparison table and write an HTML report."""
    from memtune.report.advice import advice_lines, advise
    from memtune.report.html import write_report
    from memtune.report.tables import summary_table
    from memtune.trace.replay import trace_label
    from memtune.trace.sweep import ranked, sweep

    start = time.perf_counter()
    out = console()
    with contextlib.ExitStack() as stack:
        paths = [stack.enter_context(importlib.resources.as_file(p)) for p in bundled_traces()]
        out.print(f"Replaying {len(paths)} bundled real trace(s) under every allocator preset: "
                  + ", ".join(trace_label(str(p)) for p in paths), highlight=False)
        from memtune.trace.sweep import Combo

        extra = [Combo(p, s) for p, s in DEMO_EXTRA if p in memtune.presets()]
        results = sweep(paths, "all", jobs=jobs or min(2, os.cpu_count() or 1), timeline=True, extra=extra)
    results = ranked(results)
    out.print(summary_table(results, title="memtune demo: every preset on every bundled trace (best first)",
                            ranked=True, show_trace=True))
    for line in advice_lines(advise(results)):
        out.print(line, highlight=False, markup=False)
    path = write_report(results, out_dir, title="memtune demo", command="memtune demo")
    out.print(f"Report written to {Path(path).resolve()} ({time.perf_counter() - start:.1f} s)", highlight=False)
