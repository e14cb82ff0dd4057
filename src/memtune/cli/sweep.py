"""``memtune sweep``: traces x presets x settings, in parallel, ranked."""

from __future__ import annotations

import shlex
import sys

import click

from memtune.cli._common import (BYTES, compute_bounds, console, echo_json, flatten, pack_rounds_option,
                                 pack_seconds_option, parse_grid, result_rows)


@click.command()
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--policy", "-p", "policies", multiple=True, default=("all",), show_default=True,
              help="Presets to sweep: names, comma-separated lists, or 'all'. Repeatable.")
@click.option("--grid", "grids", multiple=True, metavar="KEY=V1,V2",
              help="A setting and the values to try, e.g. --grid expandable_segments=True,False "
                   "--grid max_split_size_mb=64,128,256. Applies to the presets that accept KEY. Repeatable.")
@click.option("--capacity", type=BYTES, default=None,
              help="Device capacity (e.g. 24GiB): shows which combinations fit without OOM.")
@click.option("--device", type=int, default=None, help="Replay only this device of each trace.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Parallel worker processes (default: CPU count).")
@click.option("--executor", type=click.Choice(["process", "dask", "serial"]), default="process", show_default=True,
              help="process: a local process pool; dask: an existing Dask cluster (--scheduler); serial: in process.")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://10.0.0.1:8786.")
@click.option("--lenient", is_flag=True, help="Skip and count inconsistent trace events instead of failing.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="Write report.html, PNG timelines and results.json into this directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the ranked results as JSON.")
@pack_seconds_option()
@pack_rounds_option()
def sweep(traces, policies, grids, capacity, device, jobs, executor, scheduler, lenient, report_dir, as_json,
          pack_seconds, pack_rounds):
    """Replay every TRACE under every preset x setting combination and rank them.

    Example: memtune sweep a.pickle b.json.gz --policy pytorch-cuda
    --grid expandable_segments=True,False --grid max_split_size_mb=128,512 --capacity 24GiB
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from memtune.trace.sweep import fitting, ranked
    from memtune.trace.sweep import sweep as run_sweep

    grid = parse_grid(grids)
    err = console(stderr=True)
    with Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("sweep", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        results = run_sweep(
            list(traces), flatten(policies), grid, capacity=capacity, device=device, jobs=jobs,
            executor=executor, scheduler=scheduler, timeline=bool(report_dir), lenient=lenient, progress=progress,
        )
    results = ranked(results)
    bounds = compute_bounds(results, pack_seconds, lenient, pack_rounds)
    report_path = None
    if report_dir:
        from memtune.report.html import write_report

        command = "memtune sweep " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else None
        report_path = write_report(results, report_dir, title="memtune sweep", command=command, bounds=bounds)
    fits = fitting(results)
    if as_json:
        rows = []
        rank, prev = 0, None
        for r, row in zip(results, result_rows(results, bounds)):
            key = (r.trace, r.device)
            rank = rank + 1 if key == prev else 1
            prev = key
            rows.append({**row, "rank": rank, "fits": not r.ooms})
        echo_json(rows)
        return
    from memtune.report.advice import advice_lines, advise
    from memtune.report.tables import oom_lines, summary_table

    out = console()
    out.print(summary_table(results, title=f"Sweep: {len(results)} replays, ranked (no OOM first, then peak reserved)",
                            ranked=True, show_trace=True))
    for b in bounds:
        out.print(b.line(), highlight=False, markup=False)
    if capacity is not None:
        from memtune.units import format_bytes

        configs = len({r.label for r in results})
        out.print(f"{len(fits)} of {configs} configurations fit in {format_bytes(capacity)} on every trace/device:",
                  highlight=False)
        for label, n in fits:
            out.print(f"  {label}", highlight=False, markup=False)
        for line in oom_lines(results):
            out.print(f"  OOM: {line}", highlight=False, markup=False)
    for line in advice_lines(advise(results)):
        out.print(line, highlight=False, markup=False)
    if report_path:
        out.print(f"Report: {report_path}", highlight=False)
