"""memtune sweep: grid expansion, process pool and a real Dask cluster."""

from __future__ import annotations

import random

import pytest

import memtune
from memtune.errors import ConfigError, MemtuneError, UnknownNameError
from memtune.trace.model import Action, DeviceTrace, Event, Trace
from memtune.trace.sweep import Combo, expand, fitting, ranked, sweep

MiB = 1 << 20


def small_trace(seed: int, name: str) -> Trace:
    rng = random.Random(seed)
    events, live = [], []
    for i in range(300):
        if live and rng.random() < 0.45:
            events.append(Event(Action.FREE, live.pop(rng.randrange(len(live)))))
        else:
            live.append(0x1000 + i)
            events.append(Event(Action.ALLOC, 0x1000 + i, rng.choice([rng.randint(1, 1 << 16), rng.randint(MiB, 40 * MiB)]),
                                rng.randrange(2), float(i)))
    return Trace(f"memory://{name}", "memtune-jsonl", [DeviceTrace(0, events), DeviceTrace(1, events[:150])])


def key(r):
    return (r.trace, r.device, r.label, r.peak_requested_bytes, r.peak_allocated_bytes, r.peak_reserved_bytes,
            r.device_allocs, r.device_frees, len(r.ooms))


def test_expand_applies_grid_keys_only_where_accepted():
    combos = expand(["pytorch-cuda", "mxnet-naive"], {"max_split_size_mb": ["64", "256"],
                                                      "expandable_segments": ["True", "False"]})
    torch_combos = [c for c in combos if c.policy == "pytorch-cuda"]
    assert len(torch_combos) == 5 and torch_combos[0] == Combo("pytorch-cuda")  # the defaults come first
    assert Combo("pytorch-cuda", (("max_split_size_mb", "64"), ("expandable_segments", "True"))) in torch_combos
    assert [c for c in combos if c.policy == "mxnet-naive"] == [Combo("mxnet-naive")]


def test_expand_errors():
    with pytest.raises(UnknownNameError, match="nonsense_key"):
        expand(["pytorch-cuda"], {"nonsense_key": ["1"]})
    with pytest.raises(ConfigError, match="max_split_size_mb") as e:
        expand(["pytorch-cuda"], {"max_split_size_mb": ["64", "lots"]})
    # the value's source is the command line's --grid, not the Python API sweep uses inside
    assert "'lots' from --grid: not an integer" in str(e.value) and "memtune.allocator()" not in str(e.value)
    with pytest.raises(UnknownNameError, match="did you mean"):
        expand(["pytorch-cudda"])
    assert {c.policy for c in expand("all")} == set(memtune.presets())


def test_process_pool_matches_serial():
    traces = [small_trace(1, "a"), small_trace(2, "b")]
    grid = {"expandable_segments": ["True", "False"]}
    serial = sweep(traces, ["pytorch-cuda", "cupy"], grid, executor="serial")
    seen = []
    par = sweep(traces, ["pytorch-cuda", "cupy"], grid, jobs=2, executor="process",
                progress=lambda done, total: seen.append((done, total)))
    assert [key(r) for r in par] == [key(r) for r in serial]
    assert len(serial) == 2 * 2 * 4  # traces x devices x (defaults + 2 pytorch combos + cupy)
    assert seen[-1] == (len(serial), len(serial))


def test_capacity_ranking_and_fitting():
    traces = [small_trace(3, "c")]
    results = ranked(sweep(traces, ["pytorch-cuda", "mxnet-round", "mxnet-unpooled"], capacity=60 * MiB,
                           executor="serial"))
    for (t, d) in {(r.trace, r.device) for r in results}:
        group = [r for r in results if (r.trace, r.device) == (t, d)]
        keys = [(bool(r.ooms), len(r.ooms), r.peak_reserved_bytes) for r in group]
        assert keys == sorted(keys)
    fits = {label for label, _ in fitting(results)}
    for r in results:
        if r.ooms:
            assert r.label not in fits


def test_unknown_executor_and_missing_scheduler():
    with pytest.raises(MemtuneError, match="executor"):
        sweep([small_trace(1, "a")], "cupy", executor="threads")
    with pytest.raises(MemtuneError, match="--scheduler"):
        sweep([small_trace(1, "a")], "cupy", executor="dask")


def test_dask_local_cluster_matches_serial():
    distributed = pytest.importorskip("dask.distributed")
    traces = [small_trace(4, "d")]
    serial = sweep(traces, ["pytorch-cuda", "mxnet-naive"], {"max_split_size_mb": ["64", "128"]}, executor="serial")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        results = sweep(traces, ["pytorch-cuda", "mxnet-naive"], {"max_split_size_mb": ["64", "128"]},
                        executor="dask", scheduler=cluster.scheduler_address)
    assert [key(r) for r in results] == [key(r) for r in serial]
    with pytest.raises(MemtuneError, match="Dask scheduler"):
        sweep(traces, "cupy", executor="dask", scheduler="tcp://127.0.0.1:1", connect_timeout=2)
