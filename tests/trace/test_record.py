"""memtune.record(): the in-process recorder of PyTorch allocations."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import memtune  # noqa: E402
from memtune.errors import ConfigError, MemtuneError  # noqa: E402
from memtune.trace.model import Action  # noqa: E402
from memtune.trace.record import CPU_DEVICE, RawAllocation, normalize_devices, trace_from_allocations  # noqa: E402

pytestmark = pytest.mark.torch


def _check_consistent(events) -> None:
    """Every free names a live block with the size it was allocated with."""
    live: dict[int, int] = {}
    for i, e in enumerate(events):
        if e.action is Action.ALLOC:
            assert e.address not in live, f"event {i}: alloc of live address {e.address:#x}"
            assert e.size > 0
            live[e.address] = e.size
        elif e.action is Action.FREE:
            assert live.pop(e.address) == e.size, f"event {i}: free size differs from its alloc"


def test_record_sees_known_tensor_allocations():
    sizes = (1_000_003, 2_500_000, 123_457)
    with memtune.record() as rec:
        a = torch.empty(sizes[0], dtype=torch.uint8)
        b = torch.empty(sizes[1], dtype=torch.uint8)
        del a
        c = torch.empty(sizes[2], dtype=torch.uint8)
        del b, c
    assert rec.trace is not None and not rec.active
    dev = rec.trace.device(CPU_DEVICE)
    assert dev.framework == "cpu"
    allocs = [e for e in dev.events if e.action is Action.ALLOC]
    frees = [e for e in dev.events if e.action is Action.FREE]
    assert [e.size for e in allocs] == list(sizes)
    # freed in program order: a, then b and c
    assert [e.size for e in frees] == [sizes[0], sizes[1], sizes[2]]
    assert dev.peak_requested_bytes() == max(sizes[0] + sizes[1], sizes[1] + sizes[2])
    _check_consistent(dev.events)
    times = [e.time_us for e in dev.events]
    assert all(t is not None and t >= 0 for t in times) and times == sorted(times)


def test_record_training_step_is_consistent_and_matches_profiler_total():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
    with memtune.record() as rec:
        for _ in range(3):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    dev = rec.trace.device(CPU_DEVICE)
    _check_consistent(dev.events)
    assert sum(e.action is Action.ALLOC for e in dev.events) > 20
    prof = rec.trace.metadata["profiler"][str(CPU_DEVICE)]
    # PyTorch's own running total counts from what was allocated when recording began;
    # every free in this step is of a block allocated inside it (or not reported at all).
    if not dev.skipped.get("free_before_recording"):
        assert dev.peak_requested_bytes() == prof["peak_total_allocated"] - prof["allocated_at_start"]


def test_record_writes_a_trace_that_loads_back(tmp_path: Path):
    out = tmp_path / "step.jsonl.gz"
    with memtune.record(out, metadata={"workload": "unit"}) as rec:
        t = torch.ones(1000, 1000)
        u = t.clone()
        del t, u
    assert out.exists() and out.stat().st_size > 0
    loaded = memtune.load_trace(out)
    [dev] = loaded.devices
    orig = rec.trace.device(CPU_DEVICE)
    assert dev.device == orig.device
    assert [(e.action, e.address, e.size) for e in dev.events] == [(e.action, e.address, e.size) for e in orig.events]
    assert dev.peak_requested_bytes() == orig.peak_requested_bytes() == 2 * 4_000_000


def test_drops_frees_of_blocks_allocated_before_recording():
    raws = [
        RawAllocation(10, 0xA0, -64, 100, 0, CPU_DEVICE, "cpu"),  # allocated before recording
        RawAllocation(20, 0xB0, 32, 132, 0, CPU_DEVICE, "cpu"),
        RawAllocation(30, 0xB0, -32, 100, 0, CPU_DEVICE, "cpu"),
    ]
    trace = trace_from_allocations(raws)
    [dev] = trace.devices
    assert [(e.action, e.address, e.size) for e in dev.events] == [(Action.ALLOC, 0xB0, 32), (Action.FREE, 0xB0, 32)]
    assert dev.skipped == {"free_before_recording": 1}
    assert [e.time_us for e in dev.events] == [0.01, 0.02]


def test_repairs_a_free_stamped_after_the_reuse_of_its_address():
    # Two threads: block X freed and its address immediately reused; the free's
    # timestamp landed just after the new allocation.
    raws = [
        RawAllocation(1, 0x10, 100, 100, 0, CPU_DEVICE, "cpu"),
        RawAllocation(5, 0x10, 40, 40, 0, CPU_DEVICE, "cpu"),
        RawAllocation(5, 0x10, -100, 40, 0, CPU_DEVICE, "cpu"),
        RawAllocation(9, 0x10, -40, 0, 0, CPU_DEVICE, "cpu"),
    ]
    [dev] = trace_from_allocations(raws).devices
    assert [(e.action, e.size) for e in dev.events] == [
        (Action.ALLOC, 100), (Action.FREE, 100), (Action.ALLOC, 40), (Action.FREE, 40)
    ]
    assert dev.skipped == {"free_reordered": 1}
    _check_consistent(dev.events)


def test_bad_devices_are_clear_errors():
    with pytest.raises(ConfigError, match=r"unknown device 'tpu'.*accepted: cpu, cuda, all"):
        memtune.record(devices=("tpu",))
    assert normalize_devices("all")[0] == "cpu"
    assert normalize_devices("cpu,cpu") == ("cpu",)
    if not torch.cuda.is_available():
        assert normalize_devices("all") == ("cpu",)
        with pytest.raises(ConfigError, match="'cuda' was requested but this PyTorch sees no CUDA device"):
            memtune.record(devices="cuda")


def test_missing_output_directory_fails_before_recording(tmp_path: Path):
    with pytest.raises(MemtuneError, match=r"output directory .*nope does not exist"):
        memtune.record(tmp_path / "nope" / "t.jsonl.gz")


def test_nested_recording_is_refused_and_the_outer_one_survives():
    with memtune.record() as outer:
        with pytest.raises(MemtuneError, match="a torch profiler is already active"):
            memtune.record().start()
        x = torch.empty(4096, dtype=torch.uint8)
        del x
    sizes = [e.size for e in outer.trace.devices[0].events if e.action is Action.ALLOC]
    assert 4096 in sizes


def test_cuda_history_snapshot_becomes_time_shifted_device_traces(shared_trace_path):
    """The CUDA path (memory history -> snapshot -> device traces), on a real snapshot."""
    from memtune.trace.record import cuda_devices_from_snapshot

    path = shared_trace_path("pytorch-snapshot-warm-emptycache.pickle")
    reference = memtune.load_trace(path)
    first_us = min(e.time_us for d in reference.devices for e in d.events if e.time_us is not None)
    devices = cuda_devices_from_snapshot(path, t0_ns=int(first_us * 1000))
    assert [d.device for d in devices] == [d.device for d in reference.devices]
    for got, ref in zip(devices, reference.devices):
        assert got.is_warm == ref.is_warm and got.initial_segments == ref.initial_segments
        assert [(e.action, e.address, e.size) for e in got.events] == [(e.action, e.address, e.size) for e in ref.events]
        timed = [(g.time_us, r.time_us) for g, r in zip(got.events, ref.events) if r.time_us is not None]
        assert timed and all(abs(g - (r - first_us)) < 1.0 for g, r in timed)
        assert min(g for g, _ in timed) >= -1.0
        assert got.peak_requested_bytes() == ref.peak_requested_bytes()


def test_the_cuda_history_api_memtune_calls_exists_in_this_torch():
    """No GPU here: at least the calls Recorder makes bind to this torch's API."""
    import inspect

    sig = inspect.signature(torch.cuda.memory._record_memory_history)
    sig.bind("all", context=None, stacks="python", clear_history=True)
    sig.bind(None)
    inspect.signature(torch.cuda.memory._dump_snapshot).bind("x.pickle")
