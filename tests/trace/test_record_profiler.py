"""How memtune.record() runs torch's profiler: memory records on, op records off.

The recorder's memory use on long runs of small ops rests on two facts checked
here: the profiler enabled with op callbacks for USER_SCOPE only keeps no record
per op, and it reports exactly the allocation records the full profiler (the
previous way, still used for ``profiler_trace=True``) reports, so the traces are
the same event for event.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import memtune  # noqa: E402
import memtune.trace.record as record_module  # noqa: E402
from memtune.errors import MemtuneError  # noqa: E402
from memtune.trace.model import Action  # noqa: E402
from memtune.trace.record import CPU_DEVICE, _CpuProfiler, allocations_from_profiler  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture
def one_thread():
    """One intra-op thread, as the capture script runs: the same allocations on every run."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


class _Scale(torch.autograd.Function):
    """A Python backward: the autograd engine calls back into Python while recording."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 + x * 0


def _workload(steps: int = 3) -> list[torch.Tensor]:
    """A small training loop with what a recording must follow: autograd, a Python backward,
    checkpointed recomputation, a user record_function range, blocks that outlive a step,
    shapes that change every step. Returns blocks the caller frees (after recording)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.Adam(model.parameters())
    kept: list[torch.Tensor] = []
    for step in range(steps):
        x = torch.randn(16 + 8 * step, 32)
        with torch.profiler.record_function("memtune-test-step"):
            h = torch.utils.checkpoint.checkpoint(model[0], x, use_reentrant=False)
            out = model[2](_Scale.apply(model[1](h)))
        loss = out.square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept.append(torch.empty(1000 + step))  # 4000 + 4 * step bytes: freed two steps later, or by the caller
        if len(kept) > 2:
            kept.pop(0)
    return kept


def _canonical(events) -> list[tuple[str, int, int]]:
    """What is the same on every run: order, action, size, and which allocation each free ends."""
    live: dict[int, int] = {}
    out = []
    for i, e in enumerate(events):
        if e.action is Action.ALLOC:
            live[e.address] = i
            out.append(("alloc", e.size, i))
        elif e.action is Action.FREE:
            out.append(("free", e.size, live.pop(e.address)))
    return out


def _walk(result):
    """Every event of a finished profiler result's tree."""
    stack = list(result.experimental_event_tree())
    while stack:
        ev = stack.pop()
        stack.extend(ev.children)
        yield ev


def _op_names(result) -> Counter:
    from torch._C._profiler import _EventType

    return Counter(ev.name for ev in _walk(result) if ev.tag == _EventType.TorchOp)


def _n_allocations(result) -> int:
    from torch._C._profiler import _EventType

    return sum(1 for ev in _walk(result) if ev.tag == _EventType.Allocation)


def _profile(with_ops: bool):
    prof = _CpuProfiler(with_ops=with_ops)
    prof.start()
    try:
        _workload()
    finally:
        result = prof.stop()
    return result


def test_profiler_without_ops_keeps_only_allocations_and_user_ranges(one_thread):
    _workload()  # warm-up: one-time allocations (lazy inits) happen here, unrecorded
    full = _profile(with_ops=True)
    lean = _profile(with_ops=False)
    # the previous way keeps a record for every op (hundreds here; 116k for paged-kv-serve)
    assert sum(_op_names(full).values()) > 200
    # now: only the program's own ranges (ours, and the optimizer's step) are op records
    assert _op_names(lean) == {
        "memtune-test-step": 3,
        "Optimizer.zero_grad#Adam.zero_grad": 3,
        "Optimizer.step#Adam.step": 3,
    }
    # ... and the very same allocation records
    a, b = allocations_from_profiler(full), allocations_from_profiler(lean)
    assert len(a) == len(b) == _n_allocations(full) == _n_allocations(lean) > 100
    fields = lambda r: (r.delta, r.total_allocated, r.total_reserved, r.device, r.device_type)  # noqa: E731
    assert [fields(r) for r in a] == [fields(r) for r in b]
    assert [r.time_ns for r in b] == sorted(r.time_ns for r in b)


def _recorded(**kwargs):
    with memtune.record(**kwargs) as rec:
        kept = _workload()
    del kept  # freed after the recording: never freed in it
    return rec


def test_recording_gives_the_events_of_the_previous_way(one_thread):
    _workload()
    before = _recorded(profiler_trace=True)  # torch.profiler.profile with every op, as memtune did before
    now = _recorded()
    old_dev, new_dev = before.trace.device(CPU_DEVICE), now.trace.device(CPU_DEVICE)
    assert len(new_dev.events) > 200
    canonical = _canonical(new_dev.events)
    assert canonical == _canonical(old_dev.events)
    # a block kept from step 0 is freed in step 2, after step 2's kept block was allocated ...
    [first_kept] = [i for kind, size, i in canonical if kind == "alloc" and size == 4000]
    [last_kept] = [i for kind, size, i in canonical if kind == "alloc" and size == 4008]
    [freed_at] = [n for n, (kind, _, i) in enumerate(canonical) if kind == "free" and i == first_kept]
    assert first_kept < last_kept < freed_at
    # ... and the last two are never freed while recording
    assert not [n for n, (kind, _, i) in enumerate(canonical) if kind == "free" and i == last_kept]
    assert new_dev.skipped == old_dev.skipped
    # PyTorch's running total: it counts blocks a recording saw but that were freed while none ran
    # (the kept blocks of the first recording) as still live, so compare it from where each started
    old_prof, new_prof = (r.trace.metadata["profiler"][str(CPU_DEVICE)] for r in (before, now))
    assert new_prof["records"] == old_prof["records"] == len(new_dev.events)
    rise = lambda p: p["peak_total_allocated"] - p["allocated_at_start"]  # noqa: E731
    assert rise(new_prof) == rise(old_prof) == new_dev.peak_requested_bytes()
    assert new_dev.peak_requested_bytes() == old_dev.peak_requested_bytes()
    times = [e.time_us for e in new_dev.events]
    assert times == sorted(times) and times[0] >= 0


def test_falls_back_to_the_full_profiler_when_torch_lacks_the_scoped_entry_points(one_thread, monkeypatch):
    _workload()
    reference = _recorded()
    monkeypatch.setattr(record_module, "_scoped_profiler_api", lambda torch: None)
    fallback = _recorded()
    assert fallback._prof.with_ops  # ran as torch.profiler.profile, result kept
    assert _canonical(fallback.trace.devices[0].events) == _canonical(reference.trace.devices[0].events)


def test_profiler_result_is_kept_only_when_asked_for(tmp_path: Path):
    rec = _recorded()
    with pytest.raises(MemtuneError, match=r"profiler_trace=True"):
        rec.export_profiler_trace(tmp_path / "lean.json")
    assert not (tmp_path / "lean.json").exists()

    kept = _recorded(profiler_trace=True)
    kept.export_profiler_trace(tmp_path / "full.json")
    events = json.loads((tmp_path / "full.json").read_text())["traceEvents"]
    memory = [e for e in events if e.get("name") == "[memory]" and e["args"]["Device Type"] == 0]
    assert len(memory) == len(kept.trace.devices[0].events) + sum(kept.trace.devices[0].skipped.values())
    assert sum(1 for e in events if e.get("cat") == "cpu_op") > 100  # the ops are there, as before


def test_the_profiler_is_off_after_recording_even_when_the_block_raised():
    with pytest.raises(ValueError, match="inside the recording"):
        with memtune.record() as rec:
            x = torch.ones(4096, dtype=torch.uint8)
            raise ValueError("inside the recording")
    assert 4096 in [e.size for e in rec.trace.devices[0].events if e.action is Action.ALLOC]
    del x
    assert not torch.autograd.profiler._is_profiler_enabled
    assert not torch._C._autograd._profiler_enabled()
    # torch's own profiler, and another recording, can start now
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        torch.ones(10).sum()
    with memtune.record() as again:
        y = torch.empty(777, dtype=torch.uint8)
        del y
    assert [e.size for e in again.trace.devices[0].events if e.action is Action.ALLOC] == [777]
