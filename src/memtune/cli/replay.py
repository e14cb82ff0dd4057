"""``memtune replay`` and ``memtune presets``."""

from __future__ import annotations

import shlex
import sys

import click

from memtune.cli._common import (BYTES, compute_bounds, console, echo_json, flatten, pack_rounds_option,
                                 pack_seconds_option, parse_set, result_rows)


@click.command()
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@click.option("--policy", "-p", "policies", multiple=True, default=("pytorch-cuda",), show_default=True,
              help="Allocator preset, a comma-separated list, or 'all' (every preset). Repeatable.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="An allocator setting overriding the trace's own, e.g. max_split_size_mb=128 or "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. Repeatable.")
@click.option("--capacity", type=BYTES, default=None,
              help="Device capacity (e.g. 80GiB). Default: the capacity the trace reveals (its OOM), else unlimited.")
@click.option("--device", type=int, default=None, help="Replay only this device of the trace.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per device and policy.")
@click.option("--timeline", is_flag=True, help="With --json: include downsampled memory timelines.")
@click.option("--lenient", is_flag=True, help="Skip and count inconsistent events instead of failing.")
@click.option("--chrome-trace", "chrome_path", type=click.Path(dir_okay=False), default=None,
              help="Write a Chrome/Perfetto trace with allocated/reserved counter tracks per policy.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="Write report.html, PNG timelines and results.json into this directory.")
@pack_seconds_option()
@pack_rounds_option()
def replay(trace, policies, sets, capacity, device, as_json, timeline, lenient, chrome_path, report_dir, pack_seconds,
           pack_rounds):
    """Replay TRACE (any supported format) under one or all allocator presets.

    Prints peak requested / allocated / reserved bytes, peak reserved over the
    lower bound (peak requested), device calls and OOMs for every device in the
    trace; for a lifetime table, also the best static packing found. Example:

        memtune replay snapshot.pickle --policy all --capacity 24GiB
    """
    from memtune.trace.replay import replay as run_replay

    settings = parse_set(sets)
    want_timeline = bool(timeline or chrome_path or report_dir)
    results = run_replay(
        trace, flatten(policies), settings=settings or None, capacity=capacity, device=device,
        timeline=want_timeline, lenient=lenient, timeline_points=5000 if chrome_path else 1000,
        settings_source="--set",
    )
    command = "memtune replay " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else None
    if chrome_path:
        from memtune.report.chrome import write_chrome_trace

        write_chrome_trace(results, chrome_path)
    bounds = compute_bounds(results, pack_seconds, lenient, pack_rounds)
    report_path = None
    if report_dir:
        from memtune.report.html import write_report

        report_path = write_report(results, report_dir, title=f"memtune replay: {trace}", command=command,
                                   bounds=bounds)
    if as_json:
        rows = result_rows(results, bounds)
        if timeline:
            for row, r in zip(rows, results):
                row["timeline"] = r.to_json(timeline=True).get("timeline")
        echo_json(rows)
        return
    from memtune.report.tables import oom_lines, summary_table

    out = console()
    out.print(summary_table(results, title=f"Replay of {trace}", show_trace=False if device is not None else None))
    for b in bounds:
        out.print(b.line(), highlight=False, markup=False)
    for line in oom_lines(results):
        out.print(f"[red]OOM[/red] {line}", highlight=False)
    for r in results:
        if r.skipped:
            skipped = ", ".join(f"{k}: {v}" for k, v in sorted(r.skipped.items()))
            out.print(f"device {r.device}, {r.label}: skipped/tolerated trace entries: {skipped}", highlight=False)
            break
    if len({r.policy for r in results}) > 1 or settings:
        from memtune.report.advice import advice_lines, advise

        for line in advice_lines(advise(results)):
            out.print(line, highlight=False, markup=False)
    if chrome_path:
        out.print(f"Chrome/Perfetto trace: {chrome_path}", highlight=False)
    if report_path:
        out.print(f"Report: {report_path}", highlight=False)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def presets(as_json):
    """List allocator presets, the framework each reproduces, and their settings."""
    rows = preset_rows()
    if as_json:
        echo_json(rows)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(title="memtune allocator presets", header_style="bold", show_lines=True)
    table.add_column("preset", no_wrap=True)
    table.add_column("reproduces", overflow="fold", ratio=1)
    table.add_column("settings: name (variable) = current value", overflow="fold", ratio=2)
    for row in rows:
        settings = "\n".join(
            f"{s['name']} ({s['variable']}) = {s['current']}" if s.get("variable") else f"{s['name']} = {s['current']}"
            for s in row["settings"]) or "-"
        table.add_row(row["preset"], Text(row["reproduces"]), Text(settings))
    console().print(table)


def preset_rows() -> list[dict]:
    """Every preset with what it reproduces and its settings: name, the variable
    that configures it, its current value (environment or default) and doc."""
    import memtune
    from memtune.report.advice import framework_of

    rows = []
    for name in memtune.presets():
        reproduces, settings = framework_of(name), []
        try:
            from memtune.allocator.presets import get

            info = get(name)
            reproduces = info.reproduces
            for s in info.settings:
                if not _modelled(s.config_key):
                    continue  # accepted because the framework accepts it, but no effect in memtune
                settings.append({"name": s.name, "variable": s.config_key, "current": _current(s.config_key),
                                 "doc": s.doc})
        except ImportError:
            pass
        rows.append({"preset": name, "reproduces": reproduces, "settings": settings})
    return rows


def _modelled(config_key: str | None) -> bool:
    """False for option-list keys declared with ``effect=False`` (accepted, not modelled)."""
    if not config_key or ":" not in config_key:
        return True
    from memtune import config

    var_name, _, key = config_key.partition(":")
    for var in config.variables():
        if var.name == var_name:
            option = getattr(var.type, "options", {}).get(key)
            return option is None or getattr(option, "effect", True)
    return True


def _current(config_key: str | None):
    """The value a new allocator would take from the environment (or the default)."""
    if not config_key:
        return None
    from memtune import config
    from memtune.trace.replay import _json_safe

    var, _, key = config_key.partition(":")
    try:
        value = config.get(var)
    except Exception as e:  # a bad environment value: show the problem, not a traceback
        return f"<invalid: {e}>"
    if key and isinstance(value, dict):
        value = value.get(key)
    return _json_safe(value)
