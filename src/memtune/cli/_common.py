"""Helpers shared by the replay, sweep and demo commands: ``--set k=v`` parsing,
``--capacity`` with units, ``--grid key=v1,v2`` and JSON output.

Values stay strings here: the allocator validates them through ``memtune.config``,
so a bad ``--set`` value gets exactly the error the environment variable would.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any, Iterable, Sequence

import click

from memtune.errors import MemtuneError

#: Option-list variables whose value is itself ``key:value,key:value``; ``--set
#: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` expands into its keys.
OPTION_LIST_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def parse_set(items: Sequence[str], *, option: str = "--set") -> dict[str, str]:
    """``["k=v", ...]`` -> ``{k: v}``; a ``PYTORCH_CUDA_ALLOC_CONF=a:1,b:2`` item expands to its keys."""
    from memtune.trace.replay import split_option_list

    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise click.BadParameter(
                f"{item!r} is not of the form key=value (e.g. {option} max_split_size_mb=128 or "
                f"{option} PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
                param_hint=option,
            )
        if key in OPTION_LIST_VARS:
            try:
                out.update(split_option_list(value))
            except MemtuneError as e:
                raise click.BadParameter(str(e), param_hint=option) from None
        else:
            out[key] = value.strip()
    return out


def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """``["key=v1,v2", ...]`` -> ``{key: [v1, v2]}``. Commas inside brackets stay in a value."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise click.BadParameter(
                f"{item!r} is not of the form key=v1,v2,... (e.g. --grid expandable_segments=True,False)",
                param_hint="--grid",
            )
        if key in grid:
            raise click.BadParameter(f"--grid {key} is given twice", param_hint="--grid")
        grid[key] = [p for p in _split_top(values) if p]
    return grid


def _split_top(text: str) -> list[str]:
    from memtune.config.types import split_top_level

    try:
        return [item.strip() for item in split_top_level(text)]
    except ValueError as e:
        raise click.BadParameter(f"{text!r}: {e}") from None


class BytesParam(click.ParamType):
    """A byte size with units (``80GiB``, ``512MB``, ``4096``)."""

    name = "SIZE"

    def convert(self, value: Any, param, ctx) -> int:
        if isinstance(value, int):
            return value
        from memtune.units import parse_bytes

        try:
            n = parse_bytes(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if n <= 0:
            self.fail(f"must be positive; got {value!r}", param, ctx)
        return n


BYTES = BytesParam()


def echo_json(data: Any) -> None:
    """Print JSON to stdout (indented, stable key order as built)."""
    click.echo(json.dumps(data, indent=2))


def console(stderr: bool = False):
    """A rich console (stdout by default); wide enough for the summary tables when piped."""
    from rich.console import Console

    import os

    wide = sys.stdout.isatty() or os.environ.get("COLUMNS")
    return Console(stderr=stderr, width=None if wide else 160)


def policy_option(default: str = "pytorch-cuda"):
    return click.option(
        "--policy", "-p", "policies", multiple=True, default=(default,), show_default=True,
        help="Allocator preset, a comma-separated list, or 'all' (every preset). Repeatable.",
    )


def flatten(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return out


def pack_seconds_option(text: str = "Time budget of the best static packing reported for lifetime tables "
                                     "(0 = skip it)."):
    return click.option("--pack-seconds", type=click.FloatRange(0.0, 600.0), default=2.0, show_default=True,
                        help=text)


def pack_rounds_option():
    return click.option(
        "--pack-rounds", type=click.IntRange(min=0), default=None, metavar="N",
        help="Improvement rounds of the packer after its heuristics (default: as many as --pack-seconds "
             "allows). A number gives output that does not depend on the machine's speed.")


def compute_bounds(results, pack_seconds: float, lenient: bool = False, rounds: int | None = None):
    """Each stream's lower bound (and a lifetime table's best static packing), with a
    transient status line on a terminal while the packer runs."""
    from memtune.report.bounds import bounds
    from memtune.trace.replay import trace_label

    err = console(stderr=True)
    with err.status("lower bounds", spinner="dots") if err.is_terminal else contextlib.nullcontext() as status:
        def progress(trace: str) -> None:
            if status is not None:
                status.update(f"best static packing of {trace_label(trace)} (up to {pack_seconds:g} s)")

        return bounds(results, pack_seconds, rounds=rounds, lenient=lenient, progress=progress)


def result_rows(results, bounds) -> list[dict[str, Any]]:
    """JSON rows of results, each with its stream's lower bound, its ratio to it and,
    for lifetime tables, the best static packing."""
    by_stream = {(b.trace, b.device): b for b in bounds}
    rows = []
    for r in results:
        row = r.to_json()
        b = by_stream.get((r.trace, r.device))
        row["lower_bound_bytes"] = r.peak_requested_bytes
        row["ratio_to_bound"] = r.peak_reserved_bytes / r.peak_requested_bytes if r.peak_requested_bytes else None
        row["static_packing"] = None if b is None else b.to_json()["static_packing"]
        rows.append(row)
    return rows
