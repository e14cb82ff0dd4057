"""Rich tables of replay results (the terminal view of a replay, sweep or demo)."""

from __future__ import annotations

from typing import Iterable, Sequence

from rich.table import Table
from rich.text import Text

from memtune.trace.model import device_name
from memtune.trace.replay import ReplayResult, trace_label
from memtune.units import format_bytes


def oom_text(r: ReplayResult) -> str:
    """"none", or the count and the first OOM's event index, size and time."""
    if not r.ooms:
        return "none"
    o = r.ooms[0]
    t = o.get("time_s")
    when = f", t=+{t:.3f} s" if t is not None else ""
    return f"{len(r.ooms)} (first: event {o['event_index']}, {format_bytes(o['size'])}{when})"


def ratio_text(r: ReplayResult) -> str:
    """Peak reserved over the lower bound (peak live requested bytes), e.g. "1.010"."""
    if not r.peak_requested_bytes:
        return "-"
    return f"{r.peak_reserved_bytes / r.peak_requested_bytes:.3f}"


def rank_key(r: ReplayResult) -> tuple:
    """Rank: configurations that never OOM first, then by peak reserved, then device calls."""
    return (len(r.ooms) > 0, len(r.ooms), r.peak_reserved_bytes, r.device_allocs + r.device_frees)


def summary_table(results: Sequence[ReplayResult], *, title: str | None = None, ranked: bool = False,
                  show_trace: bool | None = None) -> Table:
    """One row per result; human units. ``ranked`` sorts within each trace/device."""
    rows = list(results)
    if show_trace is None:
        show_trace = len({(r.trace, r.device) for r in rows}) > 1 or len(rows) == 1
    if ranked:
        order = {}
        for r in rows:
            order.setdefault((r.trace, r.device), len(order))
        rows.sort(key=lambda r: (order[(r.trace, r.device)], rank_key(r)))
    table = Table(title=title, header_style="bold", show_lines=False)
    if show_trace:
        table.add_column("trace", overflow="fold")
        table.add_column("dev", justify="right")
    if ranked:
        table.add_column("#", justify="right")
    table.add_column("policy", overflow="fold")
    table.add_column("events", justify="right")
    table.add_column("peak requested", justify="right")
    table.add_column("peak allocated", justify="right")
    table.add_column("peak reserved", justify="right")
    table.add_column("÷ bound", justify="right")
    table.add_column("device allocs/frees", justify="right")
    table.add_column("OOMs", overflow="fold")
    table.add_column("events/s", justify="right")
    rank = 0
    prev = None
    for r in rows:
        key = (r.trace, r.device)
        rank = rank + 1 if key == prev else 1
        prev = key
        cells = []
        if show_trace:
            cells += [trace_label(r.trace), "cpu" if r.device == -1 else str(r.device)]
        if ranked:
            cells.append(str(rank))
        cells += [
            r.label,
            f"{r.events:,}",
            format_bytes(r.peak_requested_bytes),
            format_bytes(r.peak_allocated_bytes),
            format_bytes(r.peak_reserved_bytes),
            ratio_text(r),
            f"{r.device_allocs:,}/{r.device_frees:,}",
            oom_text(r),
            f"{r.events_per_second:,.0f}",
        ]
        style = "red" if r.ooms else None
        # Text cells: labels like "pytorch-cuda[expandable_segments=True]" are not rich markup.
        table.add_row(*(Text(c) for c in cells), style=style)
    return table


def oom_lines(results: Iterable[ReplayResult]) -> list[str]:
    """One sentence per result that hit OOM: where it first failed."""
    out = []
    for r in results:
        if r.ooms:
            o = r.ooms[0]
            t, t_us = o.get("time_s"), o.get("time_us")
            when = f" at t=+{t:.3f} s into the trace (time_us {t_us:.0f})" if t is not None else ""
            cap = f" on a {format_bytes(r.capacity)} device" if r.capacity else ""
            out.append(
                f"{trace_label(r.trace)} {device_name(r.device)}, {r.label}{cap}: {len(r.ooms)} OOM(s); first at event "
                f"{o['event_index']} (alloc of {format_bytes(o['size'])}, {o['size']:,} B){when}"
            )
    return out
