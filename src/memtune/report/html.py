"""The report directory: ``report.html`` (one self-contained offline file: inline
CSS, PNGs embedded as base64, no scripts, no CDN), the PNG timelines next to it,
and ``results.json`` with every number (and the timelines) for tools.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import re
from pathlib import Path
from typing import Any, Sequence

from memtune.trace.model import device_name
from memtune.report.advice import Advice, advise
from memtune.report.bounds import Bound
from memtune.report.tables import oom_text, rank_key, ratio_text
from memtune.trace.replay import ReplayResult, trace_label
from memtune.units import format_bytes

#: At most this many configurations per trace/device in the plots (best first,
#: the framework defaults always included), so plots stay readable after big sweeps.
MAX_PLOTTED = 10

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin-top:1.2em}
.meta{color:#666;font-size:.9em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em;width:100%}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:right;vertical-align:top}
th{background:#f3f3f3} td.l,th.l{text-align:left}
tr.oom td{background:#fff0f0} tr.best td{background:#f0fff0}
pre.export{background:#1e1e1e;color:#e6e6e6;padding:.6em .8em;border-radius:4px;margin:.2em 0;white-space:pre-wrap}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
.note{color:#555;font-size:.9em}
"""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "trace"


def _e(text: Any) -> str:
    return html.escape(str(text))


def _plot_selection(rs: Sequence[ReplayResult]) -> list[ReplayResult]:
    ranked = sorted(rs, key=rank_key)
    keep = ranked[:MAX_PLOTTED]
    for r in ranked[MAX_PLOTTED:]:
        if not r.overrides and r not in keep:  # framework defaults stay visible
            keep.append(r)
    return keep


def write_report(
    results: Sequence[ReplayResult],
    out_dir: str | Path,
    *,
    title: str = "memtune report",
    command: str | None = None,
    bounds: Sequence[Bound] = (),
) -> Path:
    """Write ``report.html``, the PNGs and ``results.json`` into ``out_dir``; return
    the path of ``report.html``. Results need timelines for the plots (replay with
    ``timeline=True``); results without one are tabulated but not plotted.
    ``bounds`` (:func:`memtune.report.bounds.bounds`) add each stream's best static
    packing."""
    from memtune.report.plots import plot_comparison, plot_panels

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    advice = advise(results)

    groups: dict[tuple[str, int], list[ReplayResult]] = {}
    for r in results:
        groups.setdefault((r.trace, r.device), []).append(r)

    images: dict[tuple[str, int], list[tuple[str, Path]]] = {}
    used: set[str] = set()
    for (trace, device), rs in groups.items():
        plotted = [r for r in _plot_selection(rs) if r.timeline is not None and len(r.timeline)]
        if not plotted:
            continue
        base = _slug(f"{trace_label(trace)}-dev{device}")
        while base in used:
            base += "_"
        used.add(base)
        name = trace_label(trace)
        cmp_path = plot_comparison(plotted, out / f"{base}-reserved.png",
                                   title=f"Reserved memory per policy: {name}, {device_name(device)}")
        pan_path = plot_panels(plotted, out / f"{base}-timelines.png",
                               title=f"Requested, allocated and reserved bytes per policy: {name}, {device_name(device)}")
        images[(trace, device)] = [("Reserved bytes of every policy against the requested lower bound", cmp_path),
                                   ("Requested, allocated and reserved bytes, one panel per policy", pan_path)]

    generated = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (out / "results.json").write_text(json.dumps({
        "format": "memtune-results",
        "version": 1,
        "title": title,
        "command": command,
        "generated": generated,
        "results": [r.to_json(timeline=True) for r in results],
        "advice": [a.to_json() for a in advice],
        "bounds": [b.to_json() for b in bounds],
    }, indent=1))

    by_stream = {(b.trace, b.device): b for b in bounds}
    page = _render(results, groups, images, advice, by_stream, title=title, command=command, generated=generated)
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _render(results, groups, images, advice: list[Advice], bounds: dict[tuple[str, int], Bound], *, title, command,
            generated) -> str:
    from memtune import __version__

    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">memtune {_e(__version__)} &middot; generated {_e(generated)}'
        + (f" &middot; <code>{_e(command)}</code>" if command else "")
        + f" &middot; {len(groups)} trace/device stream(s), {len(results)} replay(s)</p>",
        '<p class="note">Peak requested is the peak of live bytes the program asked for: no allocator that never '
        "moves data can reserve less: it is the lower bound, and reserved / bound is each policy's peak reserved over "
        "it. For lifetime tables, the best static packing is what an offline planner that knows every lifetime "
        "reaches. Device allocs/frees count "
        "the allocator's calls to the device (cudaMalloc/cudaFree or page maps).</p>",
    ]
    # Advice first: it is what the reader came for.
    parts.append('<h2 id="advice">What to set</h2>')
    if advice:
        parts.append('<table class="advice"><tr><th class="l">framework</th><th class="l">best setting found</th>'
                     "<th>peak reserved (best)</th><th class=\"l\">default</th><th>peak reserved (default)</th>"
                     "<th>saves</th><th>trace/device streams</th></tr>")
        for a in advice:
            exports = "\n".join(a.exports) if a.exports else "# no change: the defaults are the best found"
            note = f'<div class="note">{_e(a.note)}</div>' if a.note else ""
            ooms = f" ({a.best_ooms} OOM)" if a.best_ooms else ""
            d_ooms = f" ({a.default_ooms} OOM)" if a.default_ooms else ""
            parts.append(
                f'<tr><td class="l">{_e(a.framework)}</td><td class="l"><pre class="export">{_e(exports)}</pre>'
                f'<code>{_e(a.python)}</code>{note}</td>'
                f"<td>{_e(format_bytes(a.best_reserved_bytes))}{_e(ooms)}</td><td class=\"l\">{_e(a.default_label)}</td>"
                + (f"<td>{_e(format_bytes(a.default_reserved_bytes))}{_e(d_ooms)}</td>"
                   + (f"<td><b>avoids {a.default_ooms - a.best_ooms} OOM(s)</b></td>" if a.default_ooms > a.best_ooms
                      else f"<td><b>{_e(format_bytes(a.saved_bytes))}</b><br>{a.saved_bytes:,} B</td>") if a.has_default
                   else "<td>&ndash;</td><td>&ndash;</td>")
                + f"<td>{a.replays}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>No results.</p>")

    parts.append('<h2 id="results">Results</h2>')
    for (trace, device), rs in groups.items():
        rs_sorted = sorted(rs, key=rank_key)
        parts.append(f"<h3>{_e(trace_label(trace))}, {_e(device_name(device))}</h3>")
        r0 = rs_sorted[0]
        meta = [f"source <code>{_e(trace)}</code>"]
        if r0.trace_format:
            meta.append(f"format {_e(r0.trace_format)}")
        if r0.framework:
            meta.append(f"recorded by {_e(r0.framework)}")
        meta.append(f"{r0.events:,} replayed events")
        meta.append(f"lower bound (peak requested) {_e(format_bytes(r0.peak_requested_bytes))}")
        b = bounds.get((trace, device))
        if b is not None and b.packing is not None:
            meta.append(f"best static packing {_e(format_bytes(b.packing.peak))} = {b.packing.ratio:.4f} x the bound "
                        f"({_e(b.packing.method)})")
        if r0.initial_reserved_bytes:
            meta.append(f"warm start: {_e(format_bytes(r0.initial_reserved_bytes))} reserved at trace start")
        if r0.capacity:
            meta.append(f"device capacity {_e(format_bytes(r0.capacity))}")
        parts.append(f'<p class="meta">{" &middot; ".join(meta)}</p>')
        parts.append(
            '<table class="results"><tr><th>#</th><th class="l">policy</th><th>peak requested</th><th>peak allocated</th>'
            "<th>peak reserved</th><th>reserved / bound</th><th>device allocs/frees</th><th class=\"l\">OOMs</th><th>events/s</th></tr>"
        )
        for i, r in enumerate(rs_sorted, 1):
            cls = "oom" if r.ooms else ("best" if i == 1 else "")
            parts.append(
                f'<tr class="{cls}"><td>{i}</td><td class="l">{_e(r.label)}</td>'
                f"<td>{_e(format_bytes(r.peak_requested_bytes))}</td><td>{_e(format_bytes(r.peak_allocated_bytes))}</td>"
                f"<td>{_e(format_bytes(r.peak_reserved_bytes))}</td><td>{ratio_text(r)}</td>"
                f"<td>{r.device_allocs:,}/{r.device_frees:,}</td><td class=\"l\">{_e(oom_text(r))}</td>"
                f"<td>{r.events_per_second:,.0f}</td></tr>"
            )
        parts.append("</table>")
        for alt, png in images.get((trace, device), []):
            data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
            parts.append(f'<img alt="{_e(alt)}" title="{_e(alt)}" src="data:image/png;base64,{data}">')
    parts.append("</body></html>")
    return "\n".join(parts)


def load_results(path: str | Path) -> list[ReplayResult]:
    """Read the results back from a report's ``results.json``."""
    data = json.loads(Path(path).read_text())
    return [ReplayResult.from_json(d) for d in data.get("results", [])]
