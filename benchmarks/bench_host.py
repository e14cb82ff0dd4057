"""Host memory: memtune's pool vs numpy's default allocator, jemalloc and mimalloc (issue 5).

    python benchmarks/run.py host            # full run
    python benchmarks/run.py host --quick    # smoke run

Workloads (identical code for every variant; only where array memory comes from differs):
  churn      allocate float32 arrays of 1-256 MB (log-uniform sizes), fill them, drop them
  normalise  a numpy image pipeline: uint8 batch -> float32, subtract mean, divide by std,
             NHWC -> NCHW copy; every large temporary is a fresh array
  matmul     blocked matrix product C = A @ B with a fresh temporary per block product

Variants, each in its own subprocess so peak RSS (VmHWM) is its own:
  numpy            plain numpy as users run it: glibc malloc, no tuning variables, numpy's
                   default hugepage advice. This is the baseline of every ratio.
  numpy+jemalloc   LD_PRELOAD of Debian's libjemalloc2
  numpy+mimalloc   LD_PRELOAD of Debian's libmimalloc2.0
  memtune:<preset> memtune.empty() from the default host allocator with
                   MEMTUNE_HOST_ALLOCATOR=<preset>

The set-up installs the two libraries with apt-get when they are missing and says so
when it cannot; a variant whose library is absent is reported as missing, never faked.
Every worker checks /proc/self/maps to prove its preloaded library is really in use.

Fairness on virtual machines: in a microVM the first touch of guest memory the VM has
never used costs a host-side fault (measured here: ~14 s for the first 3 GiB, ~1 s for
the next). Without care, whichever variant first grows into fresh guest memory pays for
the hypervisor, not for its allocator. The set-up therefore touches more memory than any
variant peaks at before measuring, and full runs repeat every measurement in rotated
order, reporting the median time and the largest peak RSS.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIBS = {"jemalloc": "libjemalloc.so*", "mimalloc": "libmimalloc.so*"}
PACKAGES = {"jemalloc": "libjemalloc2", "mimalloc": "libmimalloc2.0"}
WORKLOADS = ("churn", "normalise", "matmul")
#: passes of each workload per worker: the first is "cold", the median of the rest "steady"
PASSES = {True: 3, False: 4}
MB = 1 << 20


# ---------------------------------------------------------------- workloads
# Each workload is (prepare, run): inputs are made once per worker, outside the timed
# region, so only the work whose temporaries the allocators serve is timed.
def _prep_churn(quick: bool):
    import numpy as np

    rng = np.random.default_rng(0)
    count = 30 if quick else 80
    return np.exp(rng.uniform(np.log(1 * MB), np.log(256 * MB), count)).astype(np.int64) // 4


def _churn(alloc, sizes) -> None:
    import numpy as np

    for i, n in enumerate(sizes):
        a = alloc((int(n),), np.float32)
        a.fill(i)  # touches every page
        del a


def _prep_normalise(quick: bool):
    import numpy as np

    rng = np.random.default_rng(1)
    batches = [rng.integers(0, 256, (b, 224, 224, 3), dtype=np.uint8) for b in (32, 64, 48)]
    return batches, 6 if quick else 24


def _normalise(alloc, inputs) -> None:
    import numpy as np

    batches, steps = inputs
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    for step in range(steps):
        batch = batches[step % len(batches)]
        x = alloc(batch.shape, np.float32)
        np.multiply(batch, np.float32(1 / 255), out=x)
        t = alloc(batch.shape, np.float32)
        np.subtract(x, mean, out=t)
        del x
        np.divide(t, std, out=t)
        out = alloc((batch.shape[0], 3, 224, 224), np.float32)
        np.copyto(out, t.transpose(0, 3, 1, 2))
        del t
        float(out[:, :, ::16, ::16].sum())  # consume the result
        del out


def _prep_matmul(quick: bool):
    import numpy as np

    rng = np.random.default_rng(2)
    n, bs = (1024, 256) if quick else (2048, 512)
    return rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32), bs


def _matmul(alloc, inputs) -> None:
    import numpy as np

    a, b, bs = inputs
    n = a.shape[0]
    c = alloc((n, n), np.float32)
    c.fill(0)
    for i in range(0, n, bs):
        for k in range(0, n, bs):
            tmp = alloc((bs, n), np.float32)
            np.matmul(a[i : i + bs, k : k + bs], b[k : k + bs, :], out=tmp)
            c[i : i + bs] += tmp
            del tmp
    del c


WORKLOAD_FUNCS = {"churn": (_prep_churn, _churn), "normalise": (_prep_normalise, _normalise),
                  "matmul": (_prep_matmul, _matmul)}


def _vm(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _worker(variant: str, workload: str, quick: bool) -> dict:
    """Run one workload under one variant in this process; return time and peak RSS."""
    import numpy as np

    loaded = ""
    if variant in LIBS:
        with open("/proc/self/maps") as f:
            maps = f.read()
        loaded = next((p for p in maps.split() if f"lib{variant}" in p), "")
        if not loaded:
            raise SystemExit(f"{variant} was preloaded but is not mapped into the process")
    if variant.startswith("memtune:"):
        import memtune

        alloc = memtune.empty
        alloc((1,), np.float32)  # build the default allocator outside the timed region
    else:
        alloc = np.empty
    prepare, fn = WORKLOAD_FUNCS[workload]
    inputs = prepare(quick)
    rss0 = _vm("VmRSS")
    passes = []
    for _ in range(PASSES[quick]):
        start = time.perf_counter()
        fn(alloc, inputs)
        passes.append(time.perf_counter() - start)
    steady = sorted(passes[1:])
    result = {"variant": variant, "workload": workload, "cold": passes[0], "seconds": steady[len(steady) // 2],
              "passes": passes, "peak_rss": _vm("VmHWM"), "start_rss": rss0, "library": loaded}
    if variant.startswith("memtune:"):
        stats = memtune.memory_stats()
        result["reserved_peak"] = stats.get("reserved_bytes.all.peak", 0)
        result["device_allocs"] = stats.get("num_device_alloc", 0)
    return result


# ---------------------------------------------------------------- set-up
def _find(lib: str) -> str | None:
    for pattern in (f"/usr/lib/*/{LIBS[lib]}", f"/usr/lib/{LIBS[lib]}", f"/usr/local/lib/{LIBS[lib]}"):
        hits = sorted(glob.glob(pattern), key=len)
        if hits:
            return hits[0]
    return None


def _setup_libraries() -> dict[str, str | None]:
    """Locate jemalloc and mimalloc, installing them with apt-get when missing."""
    found = {lib: _find(lib) for lib in LIBS}
    missing = [lib for lib, path in found.items() if path is None]
    if missing:
        pkgs = [PACKAGES[m] for m in missing]
        apt = shutil.which("apt-get")
        prefix = [] if os.geteuid() == 0 else (["sudo", "-n"] if shutil.which("sudo") else None)
        if apt is None or prefix is None:
            print(f"set-up: cannot install {', '.join(pkgs)} (no apt-get, or not root and no sudo)")
        else:
            print(f"set-up: installing {' '.join(pkgs)} with apt-get ...", flush=True)
            cmd = [*prefix, apt, "install", "-y", "-qq", *pkgs]
            ok = subprocess.run(cmd, capture_output=True, text=True)
            if ok.returncode != 0:
                subprocess.run([*prefix, apt, "update", "-qq"], capture_output=True)
                ok = subprocess.run(cmd, capture_output=True, text=True)
            if ok.returncode != 0:
                print(f"set-up: apt-get install failed: {ok.stderr.strip()[-300:]}")
        found = {lib: _find(lib) for lib in LIBS}
    for lib, path in found.items():
        print(f"set-up: {lib}: {path or 'MISSING - its variant is not measured'}")
    return found


def _warm_machine(gib: float) -> None:
    """Touch ``gib`` GiB once so no variant pays the VM's first-touch cost (see the docstring)."""
    code = (
        "import numpy as np, time\n"
        f"t = time.perf_counter(); a = np.ones({int(gib * (1 << 30))}, np.uint8); del a\n"
        "print(f'{time.perf_counter() - t:.1f}')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    took = out.stdout.strip() or f"failed: {out.stderr.strip()[-200:]}"
    print(f"set-up: touched {gib:g} GiB of memory once before measuring ({took} s)")


def _run_worker(variant: str, workload: str, quick: bool, libs: dict[str, str | None]) -> dict | None:
    env = dict(os.environ)
    for k in [k for k in env if k.startswith(("MEMTUNE_", "MALLOC_", "LD_PRELOAD"))]:
        del env[k]  # the baseline must be numpy exactly as users run it
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = "1"  # same for all
    if variant in LIBS:
        if not libs.get(variant):
            return None
        env["LD_PRELOAD"] = libs[variant]
    if variant.startswith("memtune:"):
        env["MEMTUNE_HOST_ALLOCATOR"] = variant.split(":", 1)[1]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", variant, "--workload", workload]
    if quick:
        cmd.append("--quick")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"  {variant} / {workload}: FAILED: {tail[0]}")
        return {"variant": variant, "workload": workload, "error": tail[0]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _presets() -> list[str]:
    try:
        import memtune

        from memtune.config.declarations.memtune import HOST_POLICIES

        skipped = [p for p in memtune.presets() if p not in HOST_POLICIES]
        if skipped:
            print(f"set-up: not measured (MEMTUNE_HOST_ALLOCATOR does not offer them): {', '.join(skipped)}")
        return [p for p in memtune.presets() if p in HOST_POLICIES]
    except Exception as e:  # the engine is another package; say so rather than hide it
        print(f"set-up: cannot list memtune presets ({type(e).__name__}: {e}); measuring 'memtune' only")
        return ["memtune"]


def main(quick: bool) -> None:
    libs = _setup_libraries()
    presets = _presets()
    if quick:
        presets = [p for p in presets if p in ("memtune", "pytorch-cuda")] or presets[:1]
    variants = ["numpy", *LIBS, *[f"memtune:{p}" for p in presets]]
    rounds = 1 if quick else 2
    _warm_machine(2 if quick else 3)
    runs: dict[tuple[str, str], list[dict]] = {}
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[: r % len(variants)]  # rotate: no fixed position
        for workload in WORKLOADS:
            for variant in order:
                res = _run_worker(variant, workload, quick, libs)
                if res is not None:
                    runs.setdefault((variant, workload), []).append(res)
                    if "error" not in res:
                        print(f"  round {r + 1} {workload:9s} {variant:22s} passes "
                              + " ".join(f"{t:.3f}" for t in res["passes"])
                              + f" s, VmHWM {res['peak_rss'] / MB:.0f} MB", flush=True)
    results: dict[tuple[str, str], dict | None] = {}
    for key, lst in runs.items():
        failed = [x for x in lst if "error" in x]
        if failed:
            results[key] = failed[0]
            continue
        times = sorted(x["seconds"] for x in lst)
        colds = sorted(x["cold"] for x in lst)
        merged = dict(lst[0])
        merged["seconds"] = times[len(times) // 2]
        merged["cold"] = colds[len(colds) // 2]
        merged["peak_rss"] = max(x["peak_rss"] for x in lst)
        merged["grown"] = max(x["peak_rss"] - x["start_rss"] for x in lst)
        results[key] = merged
    print(f"{rounds} round(s) x {PASSES[quick]} passes per worker. steady = median time of passes 2..n "
          "(the speed-up in brackets is the cold first pass, pool growth included); "
          "peak RSS = largest VmHWM (growth during the workload in brackets)")
    _print_table(variants, results)


def _print_table(variants: list[str], results: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Host memory: speed-up vs numpy default (higher is better) and peak RSS (VmHWM)")
    table.add_column("variant")
    for w in WORKLOADS:
        table.add_column(f"{w} steady", justify="right")
        table.add_column(f"{w} speed-up (cold)", justify="right")
        table.add_column(f"{w} peak RSS", justify="right")
    for variant in variants:
        row = [f"numpy+{variant}" if variant in LIBS else variant]
        for w in WORKLOADS:
            r, base = results.get((variant, w)), results.get(("numpy", w))
            if r is None:
                row += ["missing", "-", "-"]
            elif "error" in r:
                row += ["failed", "-", "-"]
            else:
                speed = base["seconds"] / r["seconds"]
                cold = base["cold"] / r["cold"]
                rss = f"{r['peak_rss'] / MB:.0f} MB {r['peak_rss'] / base['peak_rss']:.0%} (+{r['grown'] / MB:.0f})"
                row += [f"{r['seconds']:.3f} s", f"{speed:.2f}x ({cold:.2f}x)", rss]
        table.add_row(*row)
    Console(width=220).print(table)
    _print_targets(variants, results)


def _print_targets(variants: list[str], results: dict) -> None:
    """The issue's targets, checked on the churn workload for the default preset."""
    base = results.get(("numpy", "churn"))
    mt = results.get(("memtune:memtune", "churn"))
    if not base or not mt or "error" in mt:
        print("targets: memtune:memtune churn not measured")
        return
    speed = base["seconds"] / mt["seconds"]
    cold = base["cold"] / mt["cold"]
    print(f"target churn >= 2.5x faster than numpy default: steady {speed:.2f}x -> "
          f"{'met' if speed >= 2.5 else 'NOT met'} (cold first pass: {cold:.2f}x)")
    for name in LIBS:
        lib = f"numpy+{name}"
        r = results.get((name, "churn"))
        if r and "error" not in r:
            ok = mt["seconds"] <= r["seconds"]
            print(f"target no slower than {lib}: steady memtune {mt['seconds']:.3f} s vs {r['seconds']:.3f} s -> "
                  f"{'met' if ok else 'NOT met'} (cold: {mt['cold']:.3f} s vs {r['cold']:.3f} s)")
        else:
            print(f"target no slower than {lib}: {lib} missing, not compared")
    ratio = mt["peak_rss"] / base["peak_rss"]
    print(f"target churn peak RSS <= 110% of default: {ratio:.0%} -> {'met' if ratio <= 1.10 else 'NOT met'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--workload", required=True, choices=WORKLOADS)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(json.dumps(_worker(args.worker, args.workload, args.quick)))
