"""The ``memtune`` command. Subcommands load lazily so ``memtune --help`` is fast
and a subcommand's heavy imports (matplotlib, torch) cost only when used."""

from __future__ import annotations

import importlib
import sys

import click

from memtune.errors import MemtuneError

# subcommand -> ("module:attribute" of a click command or group, one-line help).
# The help lines live here so `memtune --help` imports no subcommand.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("memtune.cli.demo:demo", "Replay bundled real traces under every preset; write a report."),
    "env": ("memtune.cli.env:env", "Show, check, explain and document configuration variables."),
    "replay": ("memtune.cli.replay:replay", "Replay a trace under one or all allocator presets."),
    "sweep": ("memtune.cli.sweep:sweep", "Replay traces x presets x settings in parallel and rank them."),
    "plan": ("memtune.cli.plan:plan", "Learn a repeating step and pack it offline (plan mode)."),
    "convert": ("memtune.cli.convert:convert", "Convert any supported trace to memtune's JSON Lines format."),
    "record": ("memtune.cli.record:record", "Run a PyTorch script and record its allocations."),
    "presets": ("memtune.cli.replay:presets", "List allocator presets and their settings."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = SUBCOMMANDS.get(name)
        if entry is None:
            return None
        module_name, _, attr = entry[0].partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx, args):  # type: ignore[override]
        name = args[0] if args else None
        if name is not None and name not in SUBCOMMANDS and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, SUBCOMMANDS, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            ctx.fail(f"no such command {name!r}.{hint} Commands: {', '.join(sorted(SUBCOMMANDS))}")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memtune")
def cli() -> None:
    """memtune: tune, replay and compare deep-learning caching allocators.

    Start with `memtune demo`. See `memtune COMMAND --help` for each command.
    """


def main(argv: list[str] | None = None) -> int:
    """Console entry point: memtune's own errors print as one clear line, exit 2."""
    try:
        rv = cli.main(args=argv, prog_name="memtune", standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except MemtuneError as e:
        click.echo(f"memtune: error: {e}", err=True)
        return 2
    except BrokenPipeError:
        return 0
    # In non-standalone mode click returns ctx.exit()'s code (commands return None).
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
