"""Sweeps: every trace x preset x setting combination, replayed in parallel.

Work is cut into chunks (one trace, several device/configuration pairs) so each
worker unpickles a trace once per chunk. Executors: ``serial`` (in process),
``process`` (:class:`concurrent.futures.ProcessPoolExecutor`) and ``dask`` (an
existing ``dask.distributed`` cluster given by its scheduler address; the trace
is scattered to the workers once).
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from memtune.errors import ConfigError, MemtuneError, UnknownNameError
from memtune.trace.model import Trace
from memtune.trace import replay as _replay
from memtune.trace.replay import (
    DEFAULT_TIMELINE_POINTS,
    ReplayResult,
    load,
    replay_device,
    resolve_policies,
)

EXECUTORS = ("process", "dask", "serial")


@dataclass(frozen=True)
class Combo:
    """One allocator configuration of a sweep: a preset and explicit settings."""

    policy: str
    settings: tuple[tuple[str, str], ...] = ()

    @property
    def settings_dict(self) -> dict[str, str]:
        return dict(self.settings)


def _rejects(policy: str, key: str, value: Any) -> Exception | None:
    """Build ``policy`` with ``key=value`` on a small device; return the error, if any."""
    from memtune.allocator import presets

    try:
        presets.resolve(policy, {key: value}, 1 << 30, source="--grid")  # errors name --grid, not the API
        alloc, _ = _replay.make_allocator(policy, 1 << 30, {key: value})
        close = getattr(alloc, "close", None)
        if close:
            close()
    except (ConfigError, TypeError) as e:
        return e
    return None


def expand(policies: str | Sequence[str], grid: Mapping[str, Sequence[str]] | None = None) -> list[Combo]:
    """Every (preset, settings) combination of ``policies`` x ``grid``.

    A grid key applies to the presets that accept it (e.g. ``max_split_size_mb``
    to ``pytorch-cuda`` only); other presets run once without it. Every preset also
    runs with its defaults (no explicit settings), the baseline for the advice. A
    key no preset accepts, or a value a preset rejects, is an error naming both.
    """
    names = resolve_policies(policies)
    known = set(_all_presets())
    unknown = [n for n in names if n not in known]
    if unknown:
        import difflib

        hints = {n: difflib.get_close_matches(n, known, n=2) for n in unknown}
        hint = "; ".join(f"{n!r}" + (f" (did you mean {', '.join(h)}?)" if h else "") for n, h in hints.items())
        raise UnknownNameError(f"unknown policy {hint}; presets: {', '.join(sorted(known))}, or 'all'")
    grid = {k: list(v) for k, v in (grid or {}).items()}
    combos: list[Combo] = []
    used: dict[str, list[str]] = {k: [] for k in grid}
    rejected: dict[str, list[str]] = {k: [] for k in grid}
    for name in names:
        keys = []
        for key, values in grid.items():
            err = _rejects(name, key, values[0]) if values else None
            if isinstance(err, UnknownNameError) or isinstance(err, TypeError):
                rejected[key].append(f"{name}: {err}")
                continue
            if err is not None:
                raise ConfigError(f"--grid {key}={values[0]} for policy {name!r}: {err}") from None
            for v in values[1:]:
                err = _rejects(name, key, v)
                if err is not None:
                    raise ConfigError(f"--grid {key}={v} for policy {name!r}: {err}") from None
            keys.append(key)
            used[key].append(name)
        # The preset's defaults always run too: the baseline every saving is measured against.
        combos.append(Combo(name))
        for values in itertools.product(*(grid[k] for k in keys)) if keys else ():
            combos.append(Combo(name, tuple(zip(keys, values))))
    unused = [k for k, v in used.items() if not v]
    if unused:
        details = "; ".join(f"{k}: " + " | ".join(rejected[k][:3]) for k in unused)
        raise UnknownNameError(f"grid setting(s) {', '.join(unused)} apply to none of the policies "
                               f"{', '.join(names)} ({details})")
    return list(dict.fromkeys(combos))


def _all_presets() -> list[str]:
    return _replay.presets()


def _run_chunk(trace: Trace, items: Sequence[tuple[int, Combo]], capacity: int | None, timeline: bool,
               lenient: bool, timeline_points: int) -> list[ReplayResult]:
    """Worker entry point: replay some (device, combo) pairs of one trace."""
    out = []
    for device, combo in items:
        dt = trace.device(device)
        out.append(replay_device(trace, dt, combo.policy, settings=combo.settings_dict or None, capacity=capacity,
                                 timeline=timeline, lenient=lenient, timeline_points=timeline_points))
    return out


def _chunks(items: list, n_chunks: int) -> list[list]:
    n_chunks = max(1, min(n_chunks, len(items)))
    size = math.ceil(len(items) / n_chunks)
    return [items[i:i + size] for i in range(0, len(items), size)]


def sweep(
    traces: Iterable[Trace | str | os.PathLike],
    policies: str | Sequence[str] = "all",
    grid: Mapping[str, Sequence[str]] | None = None,
    *,
    capacity: int | str | None = None,
    device: int | None = None,
    jobs: int | None = None,
    executor: str = "process",
    scheduler: str | None = None,
    timeline: bool = False,
    lenient: bool = False,
    timeline_points: int = DEFAULT_TIMELINE_POINTS,
    progress: Callable[[int, int], None] | None = None,
    connect_timeout: float = 20.0,
    extra: Sequence[Combo] = (),
) -> list[ReplayResult]:
    """Replay every trace x device x (preset, settings) combination; return results
    in input order (trace, device, combination). ``extra`` adds explicit
    combinations to those of ``policies`` x ``grid``. ``progress(done, total)`` is
    called as replays finish. ``capacity`` is bytes or a size such as ``"24GiB"``."""
    if executor not in EXECUTORS:
        raise MemtuneError(f"executor {executor!r} is not known; accepted: {', '.join(EXECUTORS)}")
    if executor == "dask" and not scheduler:
        raise MemtuneError("--executor dask needs --scheduler ADDRESS (e.g. tcp://10.0.0.1:8786) of a running "
                           "Dask cluster")
    combos = list(dict.fromkeys([*expand(policies, grid), *extra]))
    loaded = [load(t, lenient=lenient) for t in traces]
    if not loaded:
        raise MemtuneError("no trace given to sweep")
    work: list[tuple[int, list[tuple[int, Combo]]]] = []
    for ti, tr in enumerate(loaded):
        devs = [tr.device(device).device] if device is not None else [d.device for d in tr.devices]
        work.append((ti, [(d, c) for d in devs for c in combos]))
    total = sum(len(items) for _, items in work)
    jobs = max(1, jobs or os.cpu_count() or 1)
    order = {(ti, d, c): i for ti, items in work for i, (d, c) in enumerate(items)}
    from memtune.trace.replay import parse_capacity

    args = (parse_capacity(capacity), timeline, lenient, timeline_points)

    # Cut each trace's work into chunks: enough to keep every worker busy.
    per_trace = max(1, math.ceil(jobs * 3 / len(work)))
    chunks = [(ti, chunk) for ti, items in work for chunk in _chunks(items, per_trace)]

    done = 0
    results: list[tuple[tuple, ReplayResult]] = []

    def collect(ti: int, chunk: list, rs: list[ReplayResult]) -> None:
        nonlocal done
        for (d, c), r in zip(chunk, rs):
            results.append(((ti, order[(ti, d, c)]), r))
        done += len(rs)
        if progress:
            progress(done, total)

    if executor == "serial" or (executor == "process" and (jobs == 1 or len(chunks) == 1)):
        for ti, chunk in chunks:
            collect(ti, chunk, _run_chunk(loaded[ti], chunk, *args))
    elif executor == "process":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # forkserver: workers start from a clean process, never from a fork of a parent
        # whose threads (a progress bar, a Dask client, the caller's own) may hold locks.
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx) as pool:
            futs = {pool.submit(_run_chunk, loaded[ti], chunk, *args): (ti, chunk) for ti, chunk in chunks}
            try:
                for fut in as_completed(futs):
                    ti, chunk = futs[fut]
                    collect(ti, chunk, fut.result())
            except BaseException:
                for f in futs:
                    f.cancel()
                raise
    else:
        _run_dask(scheduler, loaded, chunks, args, collect, connect_timeout)
    results.sort(key=lambda kv: kv[0])
    return [r for _, r in results]


def _run_dask(scheduler: str, loaded: list[Trace], chunks, args, collect, connect_timeout: float) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:  # pragma: no cover - depends on the install
        raise MemtuneError("--executor dask needs dask.distributed: pip install 'memtune[dask]'") from None
    try:
        client = Client(scheduler, timeout=connect_timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise MemtuneError(f"cannot connect to the Dask scheduler at {scheduler!r}: {e}") from None
    try:
        handles = {ti: client.scatter(loaded[ti], broadcast=False, hash=False) for ti in {ti for ti, _ in chunks}}
        futs = {}
        for ti, chunk in chunks:
            f = client.submit(_run_chunk, handles[ti], chunk, *args, pure=False)
            futs[f] = (ti, chunk)
        with client.as_current():
            for fut in as_completed(list(futs)):
                ti, chunk = futs[fut]
                collect(ti, chunk, fut.result())
    finally:
        client.close()


def ranked(results: Sequence[ReplayResult]) -> list[ReplayResult]:
    """Results grouped by trace/device (first-seen order), best first within each."""
    from memtune.report.tables import rank_key

    order: dict[tuple, int] = {}
    for r in results:
        order.setdefault((r.trace, r.device), len(order))
    return sorted(results, key=lambda r: (order[(r.trace, r.device)], rank_key(r)))


def fitting(results: Sequence[ReplayResult]) -> list[tuple[str, int]]:
    """Configurations (label, streams) that never OOM on any trace/device they ran on."""
    by: dict[str, list[ReplayResult]] = {}
    for r in results:
        by.setdefault(r.label, []).append(r)
    return [(label, len(rs)) for label, rs in by.items() if not any(r.ooms for r in rs)]
