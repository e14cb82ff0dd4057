"""The one entry point for memtune's benchmarks.

    python benchmarks/run.py            # every benchmark
    python benchmarks/run.py replay     # those whose name contains "replay"
    python benchmarks/run.py --quick    # smaller workloads (a smoke run)
    python benchmarks/run.py policy --jobs 2   # its traces on two processes

Each ``benchmarks/bench_*.py`` defines ``main(quick: bool) -> None``. Every
benchmark measures its own baseline in the same run and prints a ratio:
absolute times on shared 2-core machines are noise. A benchmark whose ``main``
also takes ``jobs`` spreads its independent work over that many processes; each
ratio is still measured within one process, its baseline beside it.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover() -> dict[str, Path]:
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def _positive(text: str) -> int:
    """An argparse ``type``: a whole number >= 1 (argparse names the option in its error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="run only benchmarks whose name contains one of these")
    parser.add_argument("--quick", action="store_true", help="smaller workloads, for a smoke run")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--jobs", type=_positive, default=1, metavar="N",
                        help="processes for the benchmarks that spread their work (default 1)")
    args = parser.parse_args(argv)
    found = discover()
    if args.list:
        print("\n".join(found))
        return 0
    chosen = {n: p for n, p in found.items() if not args.names or any(s in n for s in args.names)}
    if not chosen:
        print(f"no benchmark matches {args.names}; available: {', '.join(found)}", file=sys.stderr)
        return 2
    for name, path in chosen.items():
        spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # (worker processes look its functions up by name)
        spec.loader.exec_module(module)
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        if "jobs" in inspect.signature(module.main).parameters:
            module.main(quick=args.quick, jobs=args.jobs)
        else:
            if args.jobs > 1:
                print(f"(--jobs: {name} runs in one process; only benchmarks whose main takes jobs spread)",
                      file=sys.stderr, flush=True)
            module.main(quick=args.quick)
        print(f"(benchmark {name} took {time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
