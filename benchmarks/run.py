"""The one entry point for memtune's benchmarks.

    python benchmarks/run.py            # every benchmark
    python benchmarks/run.py replay     # those whose name contains "replay"
    python benchmarks/run.py --quick    # smaller workloads (a smoke run)

Each ``benchmarks/bench_*.py`` defines ``main(quick: bool) -> None``. Every
benchmark measures its own baseline in the same run and prints a ratio:
absolute times on shared 2-core machines are noise.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover() -> dict[str, Path]:
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="run only benchmarks whose name contains one of these")
    parser.add_argument("--quick", action="store_true", help="smaller workloads, for a smoke run")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
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
        spec.loader.exec_module(module)
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        module.main(quick=args.quick)
        print(f"(benchmark {name} took {time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
