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

Each measurement is the best of several repeats, alternating variants, after a
warm-up run; absolute times on a shared 2-core machine are noise.
"""

from __future__ import annotations

import time
from typing import Callable


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


def main(quick: bool) -> None:
    bench_torch(quick)
    bench_allocator(quick)


if __name__ == "__main__":
    import sys

    main("--quick" in sys.argv)
