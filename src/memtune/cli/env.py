"""``memtune env``: show, check, explain and document configuration variables.

Nothing here reads a variable (no read-once variable gets frozen by looking at it).
"""

from __future__ import annotations

import sys

import click

from memtune import config
from memtune.config import docs as config_docs
from memtune.config.registry import REGISTRY


def _console():  # rich is imported only by the commands that draw tables
    from rich.console import Console

    return Console(soft_wrap=False, width=None if sys.stdout.isatty() else 160)


@click.group("env", context_settings={"help_option_names": ["-h", "--help"]})
def env() -> None:
    """Show, check, explain and document configuration variables."""


@env.command("show")
@click.option("--group", "groups", multiple=True, help="Only these groups (memtune, pytorch, mps, mxnet, megengine, cupy).")
@click.option("--set-only", is_flag=True, help="Only variables not at their default.")
def show(groups: tuple[str, ...], set_only: bool) -> None:
    """A table of every variable: value, source and read-once marker."""
    from rich.table import Table

    known_groups = sorted({v.group for v in config.variables()})
    for g in groups:
        if g not in known_groups:
            raise click.BadParameter(f"unknown group {g!r}; groups: {', '.join(known_groups)}", param_hint="--group")
    table = Table(title="memtune configuration", show_lines=False)
    table.add_column("Variable", style="bold", no_wrap=True)
    table.add_column("Value", overflow="fold")
    table.add_column("Source", overflow="fold")
    table.add_column("Read", no_wrap=True)
    for var in config.variables():
        if groups and var.group not in groups:
            continue
        info = config.explain(var.name)
        if set_only and info.source == "default" and not info.problem:
            continue
        value = info.display if not info.problem or info.value is not None else f"[red]invalid: {info.env_value!r}[/red]"
        read = "once" if var.read_once else "dynamic"
        if var.read_once and info.frozen:
            read += f" (read at {info.read_at})"
        source = info.source if not info.problem else f"{info.source} [red]({info.problem})[/red]"
        table.add_row(var.name, value or "(empty)", source, read)
    _console().print(table)


@env.command("check")
def check() -> None:
    """Every problem (misspellings, bad values, late changes, conflicts); exit 1 if any."""
    problems = config.check()
    if not problems:
        click.echo("ok")
        return
    click.echo(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in the memtune configuration:")
    for p in problems:
        click.echo(f"  - {p.message}")
    click.get_current_context().exit(1)


@env.command("explain")
@click.argument("name")
def explain(name: str) -> None:
    """Value, source, read-once state, default and meaning of NAME."""
    info = config.explain(name)  # unknown name -> UnknownNameError with suggestions
    click.echo(str(info))
    var = REGISTRY.variable(name)
    if var.reference:
        click.echo(f"  reference: {var.reference}")
    click.echo(f"  accepted:  {var.type.accepted()}")


@env.command("docs")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(config_docs.FORMATS),
    default="markdown",
    show_default=True,
    help="Output format.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
def docs(fmt: str, output: str | None) -> None:
    """The reference page of every variable (defaults from the declarations, not the environment)."""
    text = config_docs.render(fmt)
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)
