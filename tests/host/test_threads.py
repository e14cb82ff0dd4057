"""Many threads allocating and dropping arrays at once; frees from finalizers on any thread."""

from __future__ import annotations

import gc
import threading

import numpy as np

import memtune
from memtune.allocator.events import EventKind
from memtune.interop.numpy import host_arrays

MiB = 1 << 20


def test_many_threads_allocate_fill_and_drop(host_allocator):
    alloc = host_allocator()
    errors: list[BaseException] = []
    handoff: list[np.ndarray] = []  # arrays made on one thread, dropped on another
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def work(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            barrier.wait()
            for i in range(150):
                n = int(rng.integers(1, 2 * MiB))
                a = memtune.empty(n, np.uint8, allocator=alloc)
                a[:] = seed
                b = memtune.zeros(int(rng.integers(1, 4096)), np.float64, allocator=alloc)
                # nobody else may have been handed this memory while we hold it
                assert (a == seed).all() and not b.any()
                if i % 10 == 0:
                    with lock:
                        handoff.append(a[::7])
                        if len(handoff) > 4:
                            handoff.pop(0)  # dropped by whichever thread gets here
                del a, b
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    handoff.clear()
    gc.collect()
    host_arrays().drain()
    stats = alloc.memory_stats()
    assert stats["allocation.all.current"] == 0
    assert stats["allocated_bytes.all.current"] == 0
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 6 * 150 * 2


def test_array_dropped_on_another_thread_frees_its_block(host_allocator):
    alloc = host_allocator()
    box = [memtune.empty(MiB, np.uint8, allocator=alloc)]
    assert alloc.memory_stats()["allocation.all.current"] == 1
    t = threading.Thread(target=box.clear)
    t.start()
    t.join()
    host_arrays().drain()
    assert alloc.memory_stats()["allocation.all.current"] == 0


def test_drop_inside_a_listener_is_deferred_not_reentrant(host_allocator):
    """A listener runs while the engine holds its lock mid-operation; an array dying
    there must not re-enter the engine. Its free is queued and completed next."""
    alloc = host_allocator()
    victim = [memtune.empty(MiB, np.uint8, allocator=alloc)]
    seen: list[int] = []

    def listener(ev):
        if ev.kind == EventKind.ALLOCATED and victim:
            victim.clear()  # last reference dies inside the engine's malloc
            seen.append(host_arrays().pending)

    alloc.add_listener(listener)
    other = memtune.empty(64 * MiB, np.uint8, allocator=alloc)  # needs a new segment -> ALLOCATED
    alloc.remove_listener(listener)
    assert seen == [1]  # queued while the engine was busy ...
    assert host_arrays().pending == 0  # ... and completed as soon as the call returned
    assert alloc.memory_stats()["allocation.all.current"] == 1
    del other


def test_arrays_in_reference_cycles_are_freed_by_gc(host_allocator):
    alloc = host_allocator()

    class Node:
        pass

    for _ in range(20):
        n = Node()
        n.self = n
        n.data = memtune.empty(MiB, np.uint8, allocator=alloc)
    del n
    gc.collect()
    host_arrays().drain()
    assert alloc.memory_stats()["allocation.all.current"] == 0


def test_interpreter_shutdown_with_live_arrays_is_clean(tmp_path):
    """Arrays alive at exit (globals, other threads, cycles, torch-free) must not crash or warn."""
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(
        "import threading, numpy as np, memtune\n"
        "keep = [memtune.empty(1 << 20, np.uint8) for _ in range(5)]\n"
        "class Node: pass\n"
        "n = Node(); n.me = n; n.data = memtune.zeros(1000)\n"
        "def worker():\n"
        "    global late\n"
        "    late = memtune.empty((100, 100))\n"
        "    local = memtune.empty(1 << 16, np.uint8)\n"
        "t = threading.Thread(target=worker); t.start(); t.join()\n"
        "alloc = memtune.allocator('pytorch-cuda', device=memtune.HostMemory())\n"
        "own = memtune.empty(12345, allocator=alloc)\n"
        "daemon = threading.Thread(target=lambda: [memtune.empty(4096, np.uint8) for _ in range(10**9)], daemon=True)\n"
        "daemon.start()\n"
        "print('done')\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
