"""PNG timelines of requested, allocated and reserved bytes (matplotlib, Agg).

Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot), so
nothing global changes and plotting is safe in worker processes. Axes use human
units (KiB/MiB/GiB) chosen from the data.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from memtune.report.tables import ratio_text
from memtune.trace.model import device_name
from memtune.trace.replay import ReplayResult, trace_label

_UNITS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024), ("B", 1))


def human_unit(max_bytes: float) -> tuple[str, int]:
    """The largest binary unit in which ``max_bytes`` is at least 1 (GiB for 3e9)."""
    for name, div in _UNITS:
        if max_bytes >= div:
            return name, div
    return "B", 1


def _x(r: ReplayResult) -> tuple[list[float], str]:
    tl = r.timeline
    assert tl is not None
    if tl.has_time:
        return [float(t) for t in tl.time_s], "time since trace start (s)"
    return [float(i) for i in tl.event_index], "event index"


def _step(ax, x, y, **kw):
    ax.step(x, y, where="post", **kw)


def plot_comparison(results: Sequence[ReplayResult], path: str | Path, *, title: str | None = None) -> Path:
    """One trace/device: reserved bytes of every configuration, plus the requested
    lower bound, on one axis. Returns the path written."""
    from matplotlib.figure import Figure

    results = [r for r in results if r.timeline is not None and len(r.timeline)]
    path = Path(path)
    fig = Figure(figsize=(11, 5.2), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    top = max([max(r.timeline.reserved) for r in results] + [max(r.timeline.requested) for r in results] + [1])
    unit, div = human_unit(top)
    cmap = _colors(len(results))
    xlabel = "event index"
    n = len(results)
    for i, (color, r) in enumerate(zip(cmap, results)):
        x, xlabel = _x(r)
        # Earlier lines are drawn wider, so identical timelines still show as halos.
        width = 1.2 + 2.4 * (n - 1 - i) / max(n - 1, 1)
        _step(ax, x, [v / div for v in r.timeline.reserved], color=color, linewidth=width,
              label=f"{r.label}: peak {_fmt(r.peak_reserved_bytes)}")
    if results:
        ref = results[0]
        x, xlabel = _x(ref)
        _step(ax, x, [v / div for v in ref.timeline.requested], color="black", linewidth=1.2, linestyle="--",
              label=f"requested (lower bound): peak {_fmt(ref.peak_requested_bytes)}")
        for r in results:
            if r.capacity:
                ax.axhline(r.capacity / div, color="red", linestyle=":", linewidth=1,
                           label=f"device capacity {_fmt(r.capacity)}")
                break
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"reserved bytes ({unit})")
    caps = [r.capacity for r in results if r.capacity]
    ax.set_ylim(0, max([top] + caps[:1]) / div * 1.05)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or (f"Reserved memory per policy: {trace_label(results[0].trace)} {device_name(results[0].device)}"
                           if results else "Reserved memory per policy"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.savefig(path, format="png")
    return path


def plot_panels(results: Sequence[ReplayResult], path: str | Path, *, title: str | None = None,
                columns: int = 2) -> Path:
    """Small multiples, one panel per configuration, each with requested,
    allocated and reserved bytes (shared y axis, so panels compare at a glance)."""
    from matplotlib.figure import Figure

    results = [r for r in results if r.timeline is not None and len(r.timeline)]
    path = Path(path)
    n = max(1, len(results))
    cols = min(columns, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(6.0 * cols, 2.6 * rows + 0.9), dpi=100, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
    top = max([max(r.timeline.reserved) for r in results] + [max(r.timeline.requested) for r in results] + [1])
    unit, div = human_unit(top)
    for i, ax in enumerate(a for row in axes for a in row):
        if i >= len(results):
            ax.set_visible(False)
            continue
        r = results[i]
        x, xlabel = _x(r)
        tl = r.timeline
        _step(ax, x, [v / div for v in tl.reserved], color="#d62728", linewidth=1.5, label="reserved")
        _step(ax, x, [v / div for v in tl.allocated], color="#1f77b4", linewidth=1.3, label="allocated")
        _step(ax, x, [v / div for v in tl.requested], color="black", linewidth=1.0, linestyle="--", label="requested")
        for o in r.ooms[:50]:
            ox = o.get("time_s") if tl.has_time else o.get("event_index")
            if ox is not None:
                ax.axvline(ox, color="orange", alpha=0.5, linewidth=0.8)
        ax.set_title(f"{r.label}\npeak reserved {_fmt(r.peak_reserved_bytes)} = {ratio_text(r)} x the bound"
                     + (f", {len(r.ooms)} OOM" if r.ooms else ""), fontsize=9)
        ax.set_ylim(0, top / div * 1.05)
        ax.grid(True, alpha=0.3)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=8)
        if i == 0:
            ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(title or (f"Requested, allocated and reserved bytes: {trace_label(results[0].trace)} device "
                           f"{results[0].device}" if results else "Memory timelines"), fontsize=11)
    fig.savefig(path, format="png")
    return path


def _fmt(n: int) -> str:
    from memtune.units import format_bytes

    return format_bytes(n)


def _colors(n: int) -> list:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]
