"""The ``memtune`` command. Subcommands load lazily so ``memtune --help`` is fast
and a subcommand's heavy imports (matplotlib, torch) cost only when used."""

from __future__ import annotations

import importlib
import sys

import click

from memtune.errors import MemtuneError

# subcommand -> "module:attribute" of a click command or group
SUBCOMMANDS: dict[str, str] = {
    "env": "memtune.cli.env:env",
    "replay": "memtune.cli.replay:replay",
    "convert": "memtune.cli.convert:convert",
    "record": "memtune.cli.record:record",
    "sweep": "memtune.cli.sweep:sweep",
    "plan": "memtune.cli.plan:plan",
    "demo": "memtune.cli.demo:demo",
    "presets": "memtune.cli.replay:presets",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, _, attr = target.partition(":")
        return getattr(importlib.import_module(module_name), attr)

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
