"""``memtune convert IN OUT``: any supported trace to memtune's JSON Lines format."""

from __future__ import annotations

import click

from memtune.trace.formats import FORMATS, load_trace, save_trace
from memtune.units import format_bytes


@click.command("convert")
@click.argument("source", metavar="IN", type=click.Path(dir_okay=False, path_type=str))
@click.argument("target", metavar="OUT", type=click.Path(dir_okay=False, writable=True, path_type=str))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(FORMATS)),
    default=None,
    help="Format of IN (default: detected from the content).",
)
@click.option("--lenient", is_flag=True, help="Skip inconsistent entries (counted in the output) instead of failing.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing on success.")
def convert(source: str, target: str, fmt: str | None, lenient: bool, quiet: bool) -> None:
    """Convert the trace IN to memtune JSON Lines in OUT (gzip if OUT ends in .gz).

    IN may be a PyTorch snapshot pickle, a torch.profiler Chrome trace, an RMM
    log, a lifetime table or a memtune trace; gzip input is handled transparently.
    """
    trace = load_trace(source, format=fmt, lenient=lenient)
    save_trace(trace, target)
    if quiet:
        return
    click.echo(f"{source} ({trace.format}) -> {target} (memtune-jsonl)")
    for d in trace.devices:
        warm = f", warm: {format_bytes(d.initial_reserved_bytes())} reserved at start" if d.is_warm else ""
        skipped = ", skipped: " + ", ".join(f"{k}={v}" for k, v in sorted(d.skipped.items())) if d.skipped else ""
        click.echo(
            f"  device {d.device}: {len(d.events)} events, framework {d.framework or 'unknown'}, "
            f"peak requested {format_bytes(d.peak_requested_bytes())}{warm}{skipped}"
        )
