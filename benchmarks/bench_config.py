"""Cost of reading a configuration variable, as a ratio to a bare ``os.environ.get``.

Targets (issue 2): a read-once variable <= 2x, a dynamic variable <= 5x. Both
variables are set in the environment so every read does the same work as the
baseline (look the name up) plus memtune's own (override scope, late-change
check, cached parse). Each measurement is the best of several repeats.
"""

from __future__ import annotations

import os
import timeit

READ_ONCE = "MXNET_GPU_MEM_POOL_TYPE"
DYNAMIC = "MEMTUNE_DEBUG_ALLOCATOR"


def _best(stmt, number: int, repeat: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


def main(quick: bool) -> None:
    from memtune import config

    number, repeat = (20_000, 3) if quick else (200_000, 7)
    saved = {n: os.environ.get(n) for n in (READ_ONCE, DYNAMIC)}
    os.environ[READ_ONCE] = "Round"
    os.environ[DYNAMIC] = "ALLOCATIONS|RECYCLES"
    try:
        config.reset_for_tests()
        get = config.get
        environ_get = os.environ.get
        assert get(READ_ONCE) == "Round" and get(DYNAMIC) == 6  # first reads: parse, freeze, cache
        base = _best(lambda: environ_get(READ_ONCE), number, repeat)
        once = _best(lambda: get(READ_ONCE), number, repeat)
        base2 = _best(lambda: environ_get(DYNAMIC), number, repeat)
        dyn = _best(lambda: get(DYNAMIC), number, repeat)
        with config.override(MEMTUNE_DEBUG_ALLOCATOR=2):
            over = _best(lambda: get(DYNAMIC), number, repeat)
        base = min(base, base2)
        print(f"os.environ.get (baseline)      {base * 1e9:8.1f} ns/read")
        print(f"config.get read-once           {once * 1e9:8.1f} ns/read   ratio {once / base:5.2f}x  (target <= 2x)")
        print(f"config.get dynamic             {dyn * 1e9:8.1f} ns/read   ratio {dyn / base:5.2f}x  (target <= 5x)")
        print(f"config.get inside override()   {over * 1e9:8.1f} ns/read   ratio {over / base:5.2f}x")
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v
        config.reset_for_tests()


if __name__ == "__main__":
    main(quick=False)
