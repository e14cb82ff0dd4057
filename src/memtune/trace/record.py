"""Record a real PyTorch program's allocations as a memtune trace.

Two entry points share one :class:`Recorder`:

* ``with memtune.record("trace.jsonl.gz") as rec: ...`` in Python, and
* ``python -m memtune.trace.record --out trace.jsonl.gz -- train.py ARGS`` (what
  ``memtune record`` runs in a child process), which runs the script unchanged
  under the recorder, saves the trace and exits with the script's exit code.

CPU: the hook is ``torch.profiler`` with ``profile_memory=True``. PyTorch's CPU
allocator reports every allocation and free to the active profiler with the
pointer, the signed size and its own running total. We read those records
straight from the profiler's result tree (no Chrome-trace round trip) and turn
them into a :class:`DeviceTrace` (device -1, as the profiler numbers the CPU).
The profiler runs with its op callbacks limited to the program's own
``record_function`` ranges (:class:`_CpuProfiler`): the allocator reports memory
to the profiler's state directly, not through ops, so the records are the same
as with every op recorded, without the op records that took gigabytes on long
runs of small ops (``python benchmarks/run.py record``).

CUDA: the caching allocator's own history (``torch.cuda.memory._record_memory_history``
without stack context, then a snapshot read by memtune's snapshot reader). The
profiler's CUDA records carry rounded block sizes; the history has the
requested sizes, the real segment events and, for memory already in use, the
state at start. (Not exercised on this project's CPU-only CI.)

What the profiler cannot see, and how it shows up in the trace:

* CPU memory allocated before recording began and freed during it: PyTorch's
  CPU allocator reports such frees only for blocks a previous profiling session
  saw. Frees of addresses this recording never saw allocated are dropped and
  counted in ``DeviceTrace.skipped["free_before_recording"]``.
* Allocations made on Python threads other than the one that started the
  recorder (and its autograd/intra-op helpers) are not reported by PyTorch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Sequence

from memtune.errors import ConfigError, MemtuneError
from memtune.trace.model import Action, DeviceTrace, Event, Trace

#: Values ``devices`` / ``--device`` accept. "all" means CPU plus CUDA where present.
DEVICE_CHOICES = ("cpu", "cuda", "all")
#: Device index of the CPU stream (the profiler's own ``Device Id`` for CPU events).
CPU_DEVICE = -1
#: ``Trace.format`` of a recorded trace.
RECORD_FORMAT = "memtune-record"
#: How far ahead (in records) a free stamped after the reuse of its address is looked for.
REORDER_WINDOW = 256
#: Exit code of the bootstrap when memtune itself (not the script) failed.
EXIT_MEMTUNE_ERROR = 2


def _require_torch() -> ModuleType:
    try:
        import torch
    except ImportError as e:
        raise MemtuneError(
            "recording needs PyTorch, which is not installed in this Python "
            f"({sys.executable}): {e}. Install it with: pip install 'memtune[torch]'"
        ) from None
    return torch


def normalize_devices(devices: str | Iterable[str]) -> tuple[str, ...]:
    """``"all"`` / ``("cpu",)`` / ``"cpu,cuda"`` -> a tuple of "cpu" and/or "cuda".

    "all" is CPU plus CUDA when this machine has it; naming "cuda" explicitly on
    a machine without it is an error (the recording would silently be empty).
    """
    items = [devices] if isinstance(devices, str) else list(devices)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(
                f"devices: {item!r} is not a device name; accepted: {', '.join(DEVICE_CHOICES)}",
                variable="devices",
            )
        for part in item.split(","):
            name = part.strip().lower()
            if name not in DEVICE_CHOICES:
                raise ConfigError(
                    f"devices: unknown device {part.strip()!r}; accepted: {', '.join(DEVICE_CHOICES)}",
                    variable="devices",
                )
            names.append(name)
    if not names:
        raise ConfigError(f"devices: empty; accepted: {', '.join(DEVICE_CHOICES)}", variable="devices")
    torch = _require_torch()
    cuda_ok = bool(torch.cuda.is_available())
    out: list[str] = []
    for name in names:
        wanted = ["cpu", "cuda"] if name == "all" else [name]
        for w in wanted:
            if w == "cuda" and not cuda_ok:
                if name == "all":
                    continue
                raise ConfigError(
                    "devices: 'cuda' was requested but this PyTorch sees no CUDA device "
                    f"(torch {torch.__version__}, torch.cuda.is_available() is False); "
                    "use 'cpu' or 'all' (CPU plus CUDA where present)",
                    variable="devices",
                )
            if w not in out:
                out.append(w)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class RawAllocation:
    """One allocation record as PyTorch's profiler reported it."""

    time_ns: int
    address: int
    delta: int  # bytes: positive for an allocation, negative for a free
    total_allocated: int  # the reporting allocator's running total after this call
    total_reserved: int
    device: int  # CPU_DEVICE for the CPU, else the CUDA device index
    device_type: str  # "cpu" or "cuda"


class _CpuProfiler:
    """torch's profiler reporting CPU allocations, with op records off unless ``with_ops``.

    The profiler keeps a record of every op until it stops (hundreds of bytes
    each, and a result tree built from them at the end); interleaved with the
    program's tensors in glibc's heap, those long-lived blocks keep freed tensor
    memory from being reused or returned, so a recording of many small ops
    peaked at gigabytes where the program alone needs 0.5 GB. The CPU allocator
    reports each allocation and free to the profiler's thread-local state, not
    through an op, so enabling the profiler with op callbacks for ``USER_SCOPE``
    only (the program's own ``record_function`` ranges: few) gives the same
    memory records without the per-op ones. ``torch.profiler.profile`` has no
    such switch, hence ``torch.autograd._enable_profiler`` and its ``scopes``.

    ``with_ops`` (or a torch without those entry points) is the previous way:
    ``torch.profiler.profile`` as is, its result kept after :meth:`stop` for
    :meth:`export`. Otherwise the result is only returned, so the caller can
    drop it as soon as it has read it.
    """

    def __init__(self, with_ops: bool = False):
        self.with_ops = with_ops
        self._profile: Any = None  # the torch.profiler.profile of the with-ops path

    def start(self) -> None:
        torch = _require_torch()
        scoped = None if self.with_ops else _scoped_profiler_api(torch)
        if scoped is None:
            from torch.profiler import ProfilerActivity, profile

            self.with_ops = True
            self._profile = profile(
                activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False, with_stack=False
            )
            self._profile.__enter__()
            return
        prepare, enable, config, activities, scopes = scoped
        prepare(config, activities)
        torch.autograd.profiler._run_on_profiler_start()  # what torch.profiler sets: "a profiler is on"
        try:
            enable(config, activities, scopes)
        except BaseException:
            torch.autograd.profiler._run_on_profiler_stop()
            raise

    def stop(self) -> Any:
        """Stop the profiler and return its result (torch's ``_ProfilerResult``)."""
        torch = _require_torch()
        if self._profile is not None:
            self._profile.__exit__(None, None, None)
            return self._profile.profiler.kineto_results
        try:
            return torch.autograd._disable_profiler()
        finally:
            torch.autograd.profiler._run_on_profiler_stop()

    def export(self, path: str | os.PathLike[str]) -> None:
        """The profiler's own Chrome trace; only the with-ops path keeps what it needs."""
        if self._profile is None:
            raise MemtuneError(
                "export_profiler_trace: the profiler's result was not kept; create the recorder "
                "with profiler_trace=True (memtune record --profiler-trace) to export it"
            )
        self._profile.export_chrome_trace(str(path))


def _scoped_profiler_api(torch: ModuleType) -> tuple[Any, Any, Any, set[Any], set[Any]] | None:
    """torch's lower-level profiler entry points, configured as ``profile(activities=[CPU],
    profile_memory=True)`` would, with op callbacks for ``USER_SCOPE`` only; None if absent."""
    try:
        from torch._C._profiler import (
            ProfilerActivity,
            ProfilerConfig,
            ProfilerState,
            RecordScope,
            _ExperimentalConfig,
        )

        autograd = torch.autograd
        prepare, enable = autograd._prepare_profiler, autograd._enable_profiler
        # what start() and stop() call besides, looked up now: a torch without them falls back before recording
        later = (
            autograd._disable_profiler,
            autograd.profiler._run_on_profiler_start,
            autograd.profiler._run_on_profiler_stop,
        )
        if not all(callable(f) for f in later):
            return None
        # state, record_shapes, profile_memory, with_stack, with_flops, with_modules, experimental config
        config = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
    except (ImportError, AttributeError, TypeError):
        return None
    return prepare, enable, config, {ProfilerActivity.CPU}, {RecordScope.USER_SCOPE}


def allocations_from_profiler(kineto_results: Any) -> list[RawAllocation]:
    """Every allocation record in a finished profiler result, in time order."""
    torch = _require_torch()
    from torch._C._profiler import _EventType

    out: list[tuple[int, int, RawAllocation]] = []
    stack = list(kineto_results.experimental_event_tree())
    pop, extend, allocation = stack.pop, stack.extend, _EventType.Allocation
    seq = 0
    while stack:
        ev = pop()
        if ev.tag == allocation:
            f = ev.extra_fields
            dev = f.device
            dtype = dev.type if isinstance(dev, torch.device) else str(dev).split(":")[0]
            index = CPU_DEVICE if dtype == "cpu" else (dev.index or 0)
            out.append(
                (
                    ev.start_time_ns,
                    f.id if f.id is not None else seq,
                    RawAllocation(
                        time_ns=int(ev.start_time_ns),
                        address=int(f.ptr),
                        delta=int(f.alloc_size),
                        total_allocated=int(f.total_allocated),
                        total_reserved=int(f.total_reserved),
                        device=index,
                        device_type=dtype,
                    ),
                )
            )
            seq += 1
            continue  # allocation records have no children
        extend(ev.children)
    out.sort(key=lambda t: (t[0], t[1]))
    return [r for _, _, r in out]


@dataclass
class _StreamBuilder:
    """Turns one device's raw records into consistent alloc/free events."""

    device: int
    events: list[Event] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    peak_total_allocated: int = 0
    peak_total_reserved: int = 0
    baseline_allocated: int | None = None

    def build(self, raws: Sequence[RawAllocation], t0_ns: int) -> None:
        live: dict[int, int] = {}
        pending = list(raws)
        consumed: set[int] = set()
        for i, r in enumerate(pending):
            if self.baseline_allocated is None:
                self.baseline_allocated = r.total_allocated - r.delta
            self.peak_total_allocated = max(self.peak_total_allocated, r.total_allocated)
            self.peak_total_reserved = max(self.peak_total_reserved, r.total_reserved)
            if i in consumed:
                continue
            t_us = (r.time_ns - t0_ns) / 1000.0
            if r.delta > 0:
                if r.address in live:
                    # Two threads raced: the free of the previous block at this
                    # address was stamped just after this allocation. Emit it first.
                    j = next(
                        (
                            k
                            for k in range(i + 1, min(len(pending), i + 1 + REORDER_WINDOW))
                            if k not in consumed and pending[k].address == r.address and pending[k].delta < 0
                        ),
                        None,
                    )
                    if j is not None:
                        consumed.add(j)
                        self._count("free_reordered")
                    else:
                        self._count("implicit_free")
                    self.events.append(Event(Action.FREE, r.address, live.pop(r.address), 0, t_us))
                live[r.address] = r.delta
                self.events.append(Event(Action.ALLOC, r.address, r.delta, 0, t_us))
            elif r.delta < 0:
                size = live.pop(r.address, None)
                if size is None:
                    self._count("free_before_recording")
                    continue
                self.events.append(Event(Action.FREE, r.address, size, 0, t_us))

    def _count(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def trace_from_allocations(
    raws: Sequence[RawAllocation],
    *,
    devices: Sequence[str] = ("cpu",),
    source: str = "memtune.record()",
    metadata: dict[str, Any] | None = None,
    t0_ns: int | None = None,
) -> Trace:
    """Build a memtune :class:`Trace` (one stream per device) from profiler records."""
    by_device: dict[int, list[RawAllocation]] = {}
    for r in raws:
        if r.device_type in devices:
            by_device.setdefault(r.device, []).append(r)
    if t0_ns is None:
        t0_ns = min((r.time_ns for r in raws), default=0)
    device_traces: list[DeviceTrace] = []
    profiler_meta: dict[str, dict[str, int]] = {}
    for dev in sorted(by_device):
        b = _StreamBuilder(dev)
        b.build(by_device[dev], t0_ns)
        is_cpu = dev == CPU_DEVICE
        device_traces.append(
            DeviceTrace(
                device=dev,
                events=b.events,
                settings=_cuda_settings() if not is_cpu else {},
                framework="cpu" if is_cpu else "pytorch-cuda",
                capacity=None if is_cpu else _cuda_capacity(dev),
                skipped=b.skipped,
            )
        )
        profiler_meta[str(dev)] = {
            "peak_total_allocated": b.peak_total_allocated,
            "peak_total_reserved": b.peak_total_reserved,
            "allocated_at_start": b.baseline_allocated or 0,
            "records": len(by_device[dev]),
        }
    meta = dict(metadata or {})
    meta["profiler"] = profiler_meta
    return Trace(source=source, format=RECORD_FORMAT, devices=device_traces, metadata=meta)


def _stop_cuda_history(t0_ns: int) -> list[DeviceTrace]:
    """Stop the CUDA allocator's history and turn its snapshot into device traces."""
    import tempfile

    import torch

    with tempfile.TemporaryDirectory(prefix="memtune-record-") as tmp:
        path = Path(tmp) / "cuda_snapshot.pickle"
        try:
            torch.cuda.memory._dump_snapshot(str(path))
        finally:
            torch.cuda.memory._record_memory_history(None)
        return cuda_devices_from_snapshot(path, t0_ns)


def cuda_devices_from_snapshot(path: str | os.PathLike[str], t0_ns: int) -> list[DeviceTrace]:
    """Device traces of a CUDA allocator snapshot, times shifted to microseconds since ``t0_ns``.

    The snapshot reader rebuilds the state at the start of the history (warm
    start) when memory was already in use, so frees of older blocks replay.
    """
    from dataclasses import replace

    from memtune.trace.formats.pytorch_snapshot import read

    snapshot = read(path)
    t0_us = t0_ns / 1000.0
    out = []
    for d in snapshot.devices:
        d.events = [e if e.time_us is None else replace(e, time_us=e.time_us - t0_us) for e in d.events]
        out.append(d)
    return out


def _cuda_settings() -> dict[str, Any]:
    return {k: os.environ[k] for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") if k in os.environ}


def _cuda_capacity(index: int) -> int | None:
    try:
        import torch

        return int(torch.cuda.get_device_properties(index).total_memory)
    except Exception:  # capacity is optional information; never fail a recording on it
        return None


class Recorder:
    """Records every allocation and free PyTorch makes while active.

    Use as a context manager (``memtune.record()`` returns one) or call
    :meth:`start` / :meth:`stop`. After it stops, :attr:`trace` holds the
    recording; if ``path`` was given the trace is also saved there in memtune's
    JSON Lines format.

    ``profiler_trace``: keep torch's profiler result, op events included, for
    :meth:`export_profiler_trace` (how every recording ran before). The trace is
    the same either way; this costs hundreds of bytes per op until the recorder
    is dropped, gigabytes on long runs of small ops (see :class:`_CpuProfiler`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        devices: str | Iterable[str] = ("cpu",),
        metadata: dict[str, Any] | None = None,
        profiler_trace: bool = False,
    ):
        # absolute now: the recorded program may change directory before we save
        self.path = Path(path).absolute() if path is not None else None
        if self.path is not None:
            check_output_path(self.path)
        self.devices = normalize_devices(devices)
        self.metadata = dict(metadata or {})
        self.profiler_trace = profiler_trace
        self.trace: Trace | None = None
        self._prof: _CpuProfiler | None = None
        self._cuda = False
        self._started = False
        self._t0_ns = 0
        self._wall_start = 0.0

    @property
    def active(self) -> bool:
        return self._started and self.trace is None

    def start(self) -> "Recorder":
        if self._started:
            raise MemtuneError("this recorder was already started; create a new memtune.record() for a new recording")
        torch = _require_torch()
        if "cpu" in self.devices:
            if torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled():
                raise MemtuneError(
                    "cannot start recording: a torch profiler is already active in this process "
                    "(PyTorch allows one at a time); stop it, or record outside it"
                )
            self._prof = _CpuProfiler(with_ops=self.profiler_trace)
        self._wall_start = time.time()
        self._t0_ns = time.time_ns()
        if "cuda" in self.devices:
            # The CUDA caching allocator's own history: requested sizes, segment
            # events and the state at start (the profiler reports rounded blocks).
            torch.cuda.memory._record_memory_history("all", context=None, stacks="python", clear_history=True)
            self._cuda = True
        if self._prof is not None:
            self._prof.start()
        self._started = True
        return self

    def stop(self) -> Trace:
        """Stop recording, build :attr:`trace` and save it to ``path`` if one was given."""
        if not self._started:
            raise MemtuneError("this recorder was never started")
        if self.trace is not None:
            return self.trace
        import torch

        raws: list[RawAllocation] = []
        if self._prof is not None:
            # read, then let go of, the profiler's result before the trace is built
            raws = allocations_from_profiler(self._prof.stop())
        cuda_devices: list[DeviceTrace] = []
        if self._cuda:
            cuda_devices = _stop_cuda_history(self._t0_ns)
        meta = {
            "recorder": "memtune.record",
            "torch_version": str(torch.__version__),
            "python": sys.version.split()[0],
            "devices": list(self.devices),
            "started_unix": round(self._wall_start, 3),
            "duration_s": round(time.time() - self._wall_start, 3),
            **self.metadata,
        }
        source = str(self.path) if self.path is not None else "memtune.record()"
        t0 = min([self._t0_ns, *(r.time_ns for r in raws[:1])])
        trace = trace_from_allocations(raws, devices=("cpu",), source=source, metadata=meta, t0_ns=t0)
        del raws  # the events hold what is needed; do not keep a second copy through the save
        trace.devices.extend(cuda_devices)
        self.trace = trace
        if self.path is not None:
            from memtune.trace.formats import save_trace

            save_trace(self.trace, self.path)
        return self.trace

    def export_profiler_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the profiler's own Chrome trace of the recorded window (for cross-checks).

        Needs ``profiler_trace=True``. Its ``[memory]`` events are the records the
        trace was built from.
        """
        if self.trace is None:
            raise MemtuneError("export_profiler_trace: the recorder has not stopped yet")
        if self._prof is None:
            raise MemtuneError("export_profiler_trace: the CPU was not recorded, so no profiler ran")
        self._prof.export(path)

    def __enter__(self) -> "Recorder":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()

    def summary(self) -> str:
        """One line per device: events and peak requested bytes."""
        from memtune.units import format_bytes

        if self.trace is None:
            return "recording not finished"
        lines = []
        for d in self.trace.devices:
            name = "cpu" if d.device == CPU_DEVICE else f"cuda:{d.device}"
            n_alloc = sum(1 for e in d.events if e.action is Action.ALLOC)
            lines.append(
                f"{name}: {len(d.events)} events ({n_alloc} allocations), "
                f"peak requested {format_bytes(d.peak_requested_bytes())}"
            )
        return "; ".join(lines) if lines else "no allocations recorded"


def record(
    path: str | os.PathLike[str] | None = None,
    *,
    devices: str | Iterable[str] = ("cpu",),
    metadata: dict[str, Any] | None = None,
    profiler_trace: bool = False,
) -> Recorder:
    """Record PyTorch's allocations while the ``with`` block runs.

    >>> with memtune.record("step.jsonl.gz") as rec:   # doctest: +SKIP
    ...     train_one_step()
    >>> rec.trace.devices[0].peak_requested_bytes()     # doctest: +SKIP

    ``devices``: "cpu" (default), "cuda", or "all" (CPU plus CUDA where present).
    ``profiler_trace``: keep the profiler's result for :meth:`Recorder.export_profiler_trace`
    (costs memory on long runs; see :class:`Recorder`).
    """
    return Recorder(path, devices=devices, metadata=metadata, profiler_trace=profiler_trace)


def check_output_path(path: Path) -> None:
    """Fail before a long run, not after it, when the trace could not be written."""
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise MemtuneError(f"output path {path} is a directory; give a file name such as {path / 'trace.jsonl.gz'}")
    if not parent.is_dir():
        raise MemtuneError(f"output directory {parent} does not exist (for output file {path})")
    if not os.access(parent, os.W_OK):
        raise MemtuneError(f"output directory {parent} is not writable (for output file {path})")


# --------------------------------------------------------------------------------------------
# Bootstrap: ``python -m memtune.trace.record --out PATH [--device D] -- TARGET ARGS...``
# TARGET is ``SCRIPT.py``, ``-m MODULE`` or ``-c CODE``, exactly as after ``python``.


@dataclass
class Target:
    kind: str  # "script", "module" or "code"
    value: str
    args: list[str]

    def describe(self) -> list[str]:
        head = {"script": [self.value], "module": ["-m", self.value], "code": ["-c", self.value]}[self.kind]
        return head + self.args


def parse_target(argv: Sequence[str]) -> Target:
    if not argv:
        raise MemtuneError("no program to run: give a script (train.py ARGS), -m MODULE or -c CODE after --")
    first = argv[0]
    if first in ("-m", "-c"):
        if len(argv) < 2:
            raise MemtuneError(f"{first} needs an argument (a module name for -m, code for -c)")
        return Target("module" if first == "-m" else "code", argv[1], list(argv[2:]))
    if first.startswith("-"):
        raise MemtuneError(f"unsupported option {first!r} before the script; expected SCRIPT, -m MODULE or -c CODE")
    script = Path(first)
    if not script.exists():
        raise MemtuneError(f"script not found: {first} (working directory {os.getcwd()})")
    if script.is_dir():
        main_py = script / "__main__.py"
        if not main_py.exists():
            raise MemtuneError(f"{first} is a directory without __main__.py; give a Python script")
    return Target("script", first, list(argv[1:]))


def run_target(target: Target) -> int:
    """Run ``target`` as ``__main__`` like ``python`` would; return its exit code."""
    import runpy

    try:
        if target.kind == "script":
            sys.argv = [target.value, *target.args]
            script = Path(target.value)
            sys.path[0] = str(script.resolve().parent) if script.is_file() else target.value
            runpy.run_path(target.value, run_name="__main__")
        elif target.kind == "module":
            sys.argv = [target.value, *target.args]
            runpy.run_module(target.value, run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *target.args]
            code = compile(target.value, "<string>", "exec")
            module = ModuleType("__main__")
            previous = sys.modules.get("__main__")
            sys.modules["__main__"] = module
            try:
                exec(code, module.__dict__)
            finally:
                if previous is not None:
                    sys.modules["__main__"] = previous
    except SystemExit as e:
        return _exit_code(e.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException:  # the script's own failure: report it like python does
        traceback.print_exc()
        return 1
    return 0


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """The child-process bootstrap ``memtune record`` runs."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        cut = argv.index("--")
        own, rest = argv[:cut], argv[cut + 1 :]
    else:
        own, rest = argv, []
    parser = argparse.ArgumentParser(
        prog="python -m memtune.trace.record",
        description="Run a Python program under memtune's recorder and save its allocations.",
    )
    parser.add_argument("--out", "-o", required=True, help="trace file to write (.jsonl or .jsonl.gz)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or all (default cpu)")
    parser.add_argument(
        "--profiler-trace",
        default=None,
        help="also write the profiler's own Chrome trace here (the profiler then records ops too, "
        "which costs memory on long runs)",
    )
    parser.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    opts = parser.parse_args(own)
    profiler_trace = Path(opts.profiler_trace).absolute() if opts.profiler_trace else None
    try:
        target = parse_target(rest)
        recorder = Recorder(
            opts.out,
            devices=opts.device,
            metadata={"command": target.describe(), "cwd": os.getcwd()},
            profiler_trace=profiler_trace is not None,
        )
    except MemtuneError as e:
        print(f"memtune record: error: {e}", file=sys.stderr)
        return EXIT_MEMTUNE_ERROR
    try:
        recorder.start()
    except MemtuneError as e:
        print(f"memtune record: error: {e}", file=sys.stderr)
        return EXIT_MEMTUNE_ERROR
    rc = run_target(target)  # never raises: the script's failures become its exit code
    recorder.metadata["exit_code"] = rc
    try:
        recorder.stop()
        if profiler_trace is not None:
            recorder.export_profiler_trace(profiler_trace)
    except MemtuneError as e:
        print(f"memtune record: error: could not save the trace: {e}", file=sys.stderr)
        return rc or EXIT_MEMTUNE_ERROR
    if not opts.quiet:
        print(f"memtune record: wrote {opts.out}: {recorder.summary()}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
