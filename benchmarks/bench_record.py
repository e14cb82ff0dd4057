"""Recording overhead (issue 4, "Record").

    python benchmarks/run.py record            # full run
    python benchmarks/run.py record --quick    # smoke run

1. ``memtune.record()`` around a small PyTorch CPU training loop (MLP and a
   TransformerEncoder step) vs the same loop unrecorded, in the same process:
   ratio = recorded time / plain time (includes building the trace at the end).
   For reference, the same loop under ``torch.profiler.profile(profile_memory=True)``
   alone (the hook memtune uses), so the ratio memtune adds on top is visible.
2. ``TraceRecorder`` on a memtune allocator: a malloc/free loop with the
   recorder attached vs without: ratio = recorded / bare.
3. Peak memory of recording a run of many small ops: the held-out
   ``paged-kv-serve`` of ``scripts/capture_demo_traces.py`` (continuous batching
   over a paged KV pool; ~116k ops, ~19k allocations) unrecorded, recorded the
   previous way (``profiler_trace=True``: ``torch.profiler.profile`` records every
   op and its result is kept) and recorded as ``memtune.record()`` now does (op
   records off), each in its own process so peaks do not mix (peak RSS from
   ``getrusage``). Checks the two recordings hold the same events. The previous
   way's peak varies from run to run (0.7-2.4 GB seen for the default 24
   requests, 19.6 GB for 96): most of it is glibc heap the op records fragment.

Each timing is the best of several repeats, alternating variants, after a
warm-up run; absolute times on a shared 2-core machine are noise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
#: recording modes of the memory benchmark, in the order they run
MEMORY_MODES = {"plain": "not recorded", "ops": "recorded, previous way", "default": "recorded, now"}


def _best(fns: dict[str, Callable[[], None]], repeats: int) -> dict[str, float]:
    best = {k: float("inf") for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeats):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def _torch_workloads(quick: bool) -> dict[str, Callable[[], None]]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))
    mlp_opt = torch.optim.Adam(mlp.parameters())
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    enc_opt = torch.optim.AdamW(enc.parameters())
    s = torch.randn(8, 32, 128)
    steps = 10 if quick else 40

    def mlp_loop() -> None:
        for _ in range(steps):
            mlp_opt.zero_grad()
            nn.functional.cross_entropy(mlp(x), y).backward()
            mlp_opt.step()

    def enc_loop() -> None:
        for _ in range(max(2, steps // 4)):
            enc_opt.zero_grad()
            enc(s).square().mean().backward()
            enc_opt.step()

    return {"mlp": mlp_loop, "transformer": enc_loop}


def bench_torch(quick: bool) -> None:
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("record: torch not installed; skipping the PyTorch recording benchmark")
        return
    import memtune

    repeats = 2 if quick else 5
    for name, loop in _torch_workloads(quick).items():
        events = [0]

        def recorded() -> None:
            with memtune.record() as rec:
                loop()
            events[0] = len(rec.trace.devices[0].events) if rec.trace.devices else 0

        def profiler_only() -> None:
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False):
                loop()

        t = _best({"plain": loop, "profiler": profiler_only, "memtune.record": recorded}, repeats)
        print(
            f"record/{name:<12} plain {t['plain'] * 1e3:8.1f} ms  torch.profiler {t['profiler'] * 1e3:8.1f} ms "
            f"({t['profiler'] / t['plain']:.2f}x)  memtune.record {t['memtune.record'] * 1e3:8.1f} ms "
            f"({t['memtune.record'] / t['plain']:.2f}x plain, {t['memtune.record'] / t['profiler']:.2f}x profiler; "
            f"{events[0]} events, {events[0] / t['memtune.record']:,.0f} events/s)"
        )
    del torch


def bench_allocator(quick: bool) -> None:
    import numpy as np

    import memtune
    from memtune.allocator.recording import record_allocator

    rng = np.random.default_rng(0)
    n = 5_000 if quick else 40_000
    sizes = [int(s) for s in rng.integers(1, 8 << 20, n)]

    def loop(alloc) -> None:
        live: list[int] = []
        for i, size in enumerate(sizes):
            live.append(alloc.malloc(size))
            if len(live) > 32 or i % 3 == 0:
                alloc.free(live.pop(0))
        for a in live:
            alloc.free(a)

    def bare() -> None:
        loop(memtune.allocator("pytorch-cuda", capacity="80GiB"))

    def recorded() -> None:
        a = memtune.allocator("pytorch-cuda", capacity="80GiB")
        record_allocator(a)
        loop(a)

    t = _best({"bare": bare, "recorded": recorded}, 2 if quick else 3)
    print(
        f"record/allocator    bare {t['bare'] * 1e3:8.1f} ms  with TraceRecorder {t['recorded'] * 1e3:8.1f} ms "
        f"({t['recorded'] / t['bare']:.2f}x; {2 * n / t['recorded']:,.0f} calls/s recorded)"
    )


def _events_digest(trace) -> str:
    """What a rerun reproduces: plan mode's tokens (each allocation's size and stream, each
    free's distance back to its allocation), hashed."""
    from memtune.trace.plan import tokenize

    toks, keys = tokenize(trace.devices[0].events)
    return hashlib.sha256(repr([keys[t] for t in toks.tolist()]).encode()).hexdigest()[:16]


def _memory_child(mode: str, steps: int) -> None:
    """One measurement (a fresh process): run paged-kv-serve in ``mode``, print a JSON line."""
    spec = importlib.util.spec_from_file_location("capture_demo_traces", ROOT / "scripts" / "capture_demo_traces.py")
    assert spec and spec.loader
    capture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(capture)
    import torch

    import memtune

    torch.set_num_threads(1)  # as the capture script: the same op sequence every run
    workload = capture.HELDOUT["paged-kv-serve"]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t = time.perf_counter()
    events, digest = 0, ""
    if mode == "plain":
        workload(steps=steps)
    else:
        with memtune.record(profiler_trace=mode == "ops") as rec:
            workload(steps=steps)
        events, digest = len(rec.trace.devices[0].events), _events_digest(rec.trace)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak": peak, "before": before, "seconds": seconds, "events": events, "digest": digest}))


def bench_memory(quick: bool) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        print("record: torch not installed; skipping the recording memory benchmark")
        return
    import memtune
    from memtune.units import format_bytes

    steps = 6 if quick else 24
    env = dict(os.environ)  # the children import this memtune, not another installed one
    src = str(Path(memtune.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    got: dict[str, dict] = {}
    for mode in MEMORY_MODES:
        proc = subprocess.run(
            [sys.executable, __file__, "--memory-child", mode, str(steps)],
            capture_output=True, text=True, env=env, timeout=900,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"record memory benchmark, mode {mode}: {proc.stderr[-2000:]}")
        got[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    plain = got["plain"]
    for mode, label in MEMORY_MODES.items():
        r = got[mode]
        extra = f"; {r['events']} events, digest {r['digest']}" if r["events"] else ""
        print(
            f"record/memory  paged-kv-serve ({steps} requests) {label:<22} peak RSS {format_bytes(r['peak']):>10} "
            f"({r['peak'] / plain['peak']:.2f}x plain; {format_bytes(r['before'])} after imports)  "
            f"{r['seconds']:6.1f} s ({r['seconds'] / plain['seconds']:.2f}x plain){extra}"
        )
    same = (got["ops"]["events"], got["ops"]["digest"]) == (got["default"]["events"], got["default"]["digest"])
    print(
        f"record/memory  previous way / now: peak RSS {got['ops']['peak'] / got['default']['peak']:.2f}x, "
        f"time {got['ops']['seconds'] / got['default']['seconds']:.2f}x; same events: {'yes' if same else 'NO'}"
    )
    if not same:
        raise RuntimeError("record memory benchmark: the two recordings differ")


def main(quick: bool) -> None:
    bench_torch(quick)
    bench_allocator(quick)
    bench_memory(quick)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory-child"]:
        _memory_child(sys.argv[2], int(sys.argv[3]))
    else:
        main("--quick" in sys.argv)
