"""``memtune record -o trace.jsonl.gz -- python train.py ARGS...``

Runs the program unchanged in a child Python process under memtune's recorder
(``python -m memtune.trace.record``), so the user's script, its ``sys.argv``,
``__main__`` and exit code are exactly what ``python train.py ARGS`` gives.
The child saves the trace; this command returns the script's exit code.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import click

from memtune.errors import MemtuneError

_PYTHON_NAME = re.compile(r"^python[0-9.]*(\.exe)?$", re.IGNORECASE)
#: Interpreter options that take a separate argument (``-W error``, ``-X dev``).
_OPTS_WITH_ARG = {"-W", "-X", "--check-hash-based-pycs"}


@dataclass
class ChildCommand:
    interpreter: str
    interpreter_options: list[str]
    target: list[str]  # SCRIPT ARGS | -m MODULE ARGS | -c CODE ARGS


def split_command(command: Sequence[str]) -> ChildCommand:
    """``python -u train.py --lr 1`` -> interpreter, its options, and the target with its args.

    A bare ``train.py ARGS`` runs under this Python. Anything that is not a Python
    program (``torchrun``, ``bash``) is refused with a clear message.
    """
    if not command:
        raise MemtuneError("no program given: use memtune record -o trace.jsonl.gz -- python train.py ARGS...")
    first = command[0]
    if first.endswith(".py"):
        return ChildCommand(sys.executable, [], list(command))
    if not _PYTHON_NAME.match(Path(first).name):
        raise MemtuneError(
            f"memtune record runs Python programs; {first!r} is not a Python interpreter. "
            "Use: memtune record -o trace.jsonl.gz -- python train.py ARGS... (or -- train.py ARGS...)"
        )
    interpreter = shutil.which(first) or (first if Path(first).exists() else None)
    if interpreter is None:
        raise MemtuneError(f"Python interpreter {first!r} not found on PATH")
    opts: list[str] = []
    rest = list(command[1:])
    while rest:
        arg = rest[0]
        if arg in ("-m", "-c") or not arg.startswith("-") or arg == "-":
            break
        if arg.startswith("-m") or arg.startswith("-c"):  # -mpkg / -cCODE glued forms
            rest = [arg[:2], arg[2:], *rest[1:]]
            break
        opts.append(rest.pop(0))
        if arg in _OPTS_WITH_ARG and rest:
            opts.append(rest.pop(0))
    if not rest or rest[0] == "-":
        raise MemtuneError(
            "no script to record after the interpreter: give a script (python train.py ARGS), "
            "-m MODULE or -c CODE; an interactive session or stdin cannot be recorded"
        )
    return ChildCommand(interpreter, opts, rest)


def _same_python(interpreter: str) -> bool:
    try:
        return os.path.samefile(interpreter, sys.executable)
    except OSError:
        return False


def build_child(cmd: ChildCommand, out: Path, device: str, profiler_trace: Path | None) -> tuple[list[str], dict[str, str]]:
    argv = [cmd.interpreter, *cmd.interpreter_options, "-m", "memtune.trace.record", "--out", str(out), "--device", device]
    if profiler_trace is not None:
        argv += ["--profiler-trace", str(profiler_trace)]
    argv += ["--", *cmd.target]
    env = dict(os.environ)
    if not _same_python(cmd.interpreter):
        # Another interpreter may not have memtune installed; let it find this copy.
        import memtune

        root = str(Path(memtune.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return argv, env


@click.command(
    "record",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("-o", "--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Trace file to write (memtune JSON Lines; .gz compresses).")
@click.option("--device", type=click.Choice(["cpu", "cuda", "all"], case_sensitive=False), default="cpu",
              show_default=True, help="Which allocations to record; 'all' is CPU plus CUDA where present.")
@click.option("--profiler-trace", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write torch.profiler's own Chrome trace of the run (for cross-checking); "
                   "the profiler then records every op too, which costs memory on long runs.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary line.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_context
def record(ctx: click.Context, out: Path, device: str, profiler_trace: Path | None, quiet: bool,
           command: tuple[str, ...]) -> None:
    """Run a PyTorch program unchanged and record every allocation and free.

    \b
        memtune record -o trace.jsonl.gz -- python train.py --epochs 1
        memtune record -o trace.jsonl.gz --device all -- python -m mypkg.train

    The program's output and exit code are its own; the trace replays with
    `memtune replay trace.jsonl.gz --policy all`.
    """
    from memtune.trace.record import check_output_path, parse_target

    check_output_path(out)
    if profiler_trace is not None:
        if device.lower() == "cuda":
            raise click.BadParameter("needs the CPU recorded (the profiler runs for CPU recording); "
                                     "use --device all", param_hint="--profiler-trace")
        check_output_path(profiler_trace)
    cmd = split_command(command)
    if cmd.target[0] not in ("-m", "-c"):
        parse_target(cmd.target)  # a missing script is reported here, before anything starts
    if _same_python(cmd.interpreter):
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            raise MemtuneError(
                f"memtune record needs PyTorch, which is not installed in {sys.executable}; "
                "install it with: pip install 'memtune[torch]'"
            )
    argv, env = build_child(cmd, out, device.lower(), profiler_trace)
    if quiet:
        argv.insert(argv.index("--"), "--quiet")
    try:
        proc = subprocess.Popen(argv, env=env)
    except OSError as e:
        raise MemtuneError(f"cannot start {cmd.interpreter}: {e.strerror or e}") from None
    while True:
        try:
            rc = proc.wait()
            break
        except KeyboardInterrupt:  # the child got the same SIGINT; let it save and exit
            continue
    ctx.exit(rc if rc >= 0 else 128 - rc)
