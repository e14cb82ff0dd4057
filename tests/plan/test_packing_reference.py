"""The packer's greedy placements against the all-pairs versions they replaced
(tests/reference_algorithms.py).

``_place_cyclic`` (best fit, lowest offset), ``_place_canonical`` and ``_best_fit`` compare
each buffer only with the buffers it meets in time, place runs of buffers at once, merge
the fixed buffers into ranges, and share what they list across the placements of one
packing (a ``_Layout``); steps where most buffers meet most others go to the dense
placements (every pair tested: the placed buffers kept by offset, the buffers still to
place compacted). Every offset must be the reference's exactly, and so every Packing of
``pack``, ``pack_cyclic``, ``pack_cyclic_around`` and ``pack_around``: random steps that
wrap around the cycle, fixed buffers, sizes 0, ties, every order and rule, with the
internal limits shrunk so that every path runs (listing a block at a time, lists not
kept, chunks of two parts, short runs, dense passes of one or three buffers, compaction
after every placement); dense steps; and the real steps and fixed blocks of held-out
traces.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import memtune
from memtune.trace import packing, placement, runplan
from memtune.trace.plan import find_step, make_plan
from memtune.trace.replay import replay_device
from reference_algorithms import reference_best_fit, reference_place_canonical, reference_place_cyclic

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "benchmarks" / "heldout"  # (not a set kept unseen in a directory of its own)

#: internal limits: as shipped, and shrunk so that small inputs take every path
KNOBS = [
    {},
    {"_DENSE": float("inf")},  # never the dense placements
    {"_DENSE": float("inf"), "_CHUNK": 2, "_PAIRS_PER_BLOCK": 8, "_PAIRS_KEPT": 0, "_RUN": 2},
    {"_DENSE": float("inf"), "_CHUNK": 3, "_PAIRS_PER_BLOCK": 40, "_RUN": 3},
    # always the dense placements: one buffer a pass and arrays compacted after every
    # placement, then passes of three (buffers that meet others of their pass)
    {"_DENSE": -1.0, "_ROWS": 1, "_COMPACT": 1},
    {"_DENSE": -1.0, "_ROWS": 3, "_COMPACT": 2},
]


@contextmanager
def knobs(values: dict) -> Iterator[None]:
    with patch.multiple(placement, **values) if values else patch.object(placement, "_RUN", placement._RUN):
        yield


@contextmanager
def reference_placements() -> Iterator[None]:
    """The pack functions, placing with the reference algorithms."""
    with patch.multiple(packing,
                        _place_cyclic=lambda *a, layout=None, **k: reference_place_cyclic(*a, **k),
                        _place_canonical=lambda *a, layout=None, **k: reference_place_canonical(*a, **k),
                        _best_fit=lambda lo, hi, size, order, layout=None: reference_best_fit(lo, hi, size, order)):
        yield


def same_packing(got: packing.Packing, want: packing.Packing) -> None:
    assert got.offsets.dtype == want.offsets.dtype
    np.testing.assert_array_equal(got.offsets, want.offsets)
    assert (got.peak, got.lower_bound, got.method, got.tried, got.rounds) == \
        (want.peak, want.lower_bound, want.method, want.tried, want.rounds)


# --------------------------------------------------------------------------- random steps

SIZES = (0, 512, 512, 1024, 1536, 4096, 5000)  # zero sizes, and equal sizes that tie


@st.composite
def steps(draw, fixed: bool = True, odd: bool = False):
    """Placement inputs on a cycle: buffers live on one part or two (wrapping around),
    optionally buffers fixed beforehand (any parts, offsets that tie and overlap); with
    ``odd``, parts that are empty or backwards anywhere (the rules' test still applies)."""
    length = draw(st.integers(1, 30))
    n = draw(st.integers(0, 45))
    lo1, hi1, lo2, hi2, size = [], [], [], [], []
    for _ in range(n):
        start = draw(st.integers(0, length - 1))
        end = start + draw(st.integers(1, length))
        lo1.append(start)
        hi1.append(min(end, length))
        lo2.append(0)
        hi2.append(max(end - length, 0))
        size.append(draw(st.sampled_from(SIZES)))
    k = draw(st.integers(0, 8)) if fixed else 0
    off0 = [0] * n
    for _ in range(k):
        a = draw(st.integers(0, length))
        lo1.append(a)
        hi1.append(draw(st.integers(a, length)))
        two = draw(st.booleans())
        lo2.append(0)
        hi2.append(draw(st.integers(0, length)) if two else 0)
        size.append(draw(st.sampled_from(SIZES)))
        off0.append(draw(st.sampled_from((0, 0, 512, 1024, 3000, 8192))))
    if odd:
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, n + k - 1)) if n + k else None
            if i is None:
                break
            which = draw(st.sampled_from(["first", "second"]))
            a, b = draw(st.integers(-3, length + 3)), draw(st.integers(-3, length + 3))
            (lo1 if which == "first" else lo2)[i] = a
            (hi1 if which == "first" else hi2)[i] = b
    arr = [np.array(x, dtype=np.int64) for x in (lo1, hi1, lo2, hi2, size, off0)]
    placed0 = np.zeros(n + k, dtype=bool)
    placed0[n:] = draw(st.lists(st.booleans(), min_size=k, max_size=k)) if k else []
    # the buffers to place: a permutation of some of the others
    free = [i for i in range(n)]
    chosen = draw(st.lists(st.sampled_from(free), unique=True, max_size=n)) if n else []
    if draw(st.booleans()):
        chosen = free  # everything, in a packer's order below
        lo, hi, sz = arr[0][:n], arr[1][:n], arr[4][:n]
        dur = np.where(arr[3][:n] > 0, hi - lo + arr[3][:n], hi - lo)
        orders = [np.lexsort((lo, -dur, -sz)), np.lexsort((lo, -sz, -dur)), np.lexsort((-sz, lo)),
                  np.lexsort((lo, -sz, -(sz * dur)))]
        chosen = list(orders[draw(st.integers(0, 3))])
    return (*arr, placed0, np.array(chosen, dtype=np.int64))


def _layout(lo1, hi1, lo2, hi2, size, off0, placed0, order) -> packing._Layout:
    return packing._Layout(lo1, hi1, lo2, hi2, size, off0, np.flatnonzero(placed0), np.unique(order))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps(), st.sampled_from(range(len(KNOBS))), st.booleans())
def test_placements_are_the_reference(step, knob, with_fixed):
    lo1, hi1, lo2, hi2, size, off0, placed0, order = step
    if not with_fixed:
        placed0 = np.zeros_like(placed0)
    with knobs(KNOBS[knob]):
        layout = _layout(lo1, hi1, lo2, hi2, size, off0, placed0, order)
        for best_fit in (True, False):
            want = reference_place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0,
                                          placed0=placed0)
            got = packing._place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0, placed0=placed0)
            np.testing.assert_array_equal(got, want)
            # on a layout shared by the placements of a packing (its lists kept for the next rule)
            got = packing._place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0,
                                        placed0=placed0, layout=layout)
            np.testing.assert_array_equal(got, want)
        want = reference_place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0)
        np.testing.assert_array_equal(packing._place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0,
                                                               placed0=placed0), want)
        np.testing.assert_array_equal(packing._place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0,
                                                               placed0=placed0, layout=layout), want)
        np.testing.assert_array_equal(placement._place_canonical_all_pairs(order, lo1, hi1, lo2, hi2, size, off0=off0,
                                                                          placed0=placed0), want)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps(odd=True), st.sampled_from(range(len(KNOBS))))
def test_placements_are_the_reference_on_odd_parts(step, knob):
    """Parts that are empty or backwards, anywhere: the rules' raw test decides."""
    lo1, hi1, lo2, hi2, size, off0, placed0, order = step
    with knobs(KNOBS[knob]):
        for best_fit in (True, False):
            np.testing.assert_array_equal(
                packing._place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0, placed0=placed0),
                reference_place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0, placed0=placed0))
        want = reference_place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0)
        np.testing.assert_array_equal(
            packing._place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0), want)
        # the fallback the packer keeps for inputs the dense placement refuses, checked on its own
        np.testing.assert_array_equal(
            placement._place_canonical_all_pairs(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0), want)


@settings(max_examples=100, deadline=None)
@given(steps(fixed=True), st.sampled_from(range(len(KNOBS))), st.data())
def test_cyclic_placement_of_an_order_that_repeats_buffers_is_the_reference(step, knob, data):
    """An order naming a buffer twice, or a fixed one (no packer does): each placement is
    one more buffer, as in the reference."""
    lo1, hi1, lo2, hi2, size, off0, placed0, order = step
    if not len(size):
        return
    order = np.array(data.draw(st.lists(st.integers(0, len(size) - 1), max_size=30)), dtype=np.int64)
    with knobs(KNOBS[knob]):
        for best_fit in (True, False):
            np.testing.assert_array_equal(
                packing._place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0, placed0=placed0),
                reference_place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0, placed0=placed0))


@st.composite
def dense_steps(draw):
    """Placement inputs where most buffers meet most others: buffers live for most of a
    cycle (some wrap around it), a few short ones, fixed buffers, sizes 0 and ties."""
    length = draw(st.integers(8, 40))
    n = draw(st.integers(2, 40))
    lo1, hi1, lo2, hi2, size = [], [], [], [], []
    for _ in range(n):
        start = draw(st.integers(0, length - 1))
        live = draw(st.one_of(st.integers(length // 2, length), st.integers(1, 3)))
        end = start + live
        lo1.append(start)
        hi1.append(min(end, length))
        lo2.append(0)
        hi2.append(max(end - length, 0))
        size.append(draw(st.sampled_from(SIZES)))
    k = draw(st.integers(0, 4))
    off0 = [0] * n
    for _ in range(k):
        a = draw(st.integers(0, length - 1))
        lo1.append(a)
        hi1.append(draw(st.integers(a + 1, length)))
        lo2.append(0)
        hi2.append(draw(st.integers(0, a)))
        size.append(draw(st.sampled_from(SIZES)))
        off0.append(draw(st.sampled_from((0, 512, 1024, 3000))))
    arr = [np.array(x, dtype=np.int64) for x in (lo1, hi1, lo2, hi2, size, off0)]
    placed0 = np.zeros(n + k, dtype=bool)
    placed0[n:] = True
    order = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    return (*arr, placed0, order)


@contextmanager
def counting(*names: str) -> Iterator[dict[str, int]]:
    """Count the calls of placement functions (to see which path ran)."""
    calls = dict.fromkeys(names, 0)

    def spy(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    with patch.multiple(placement, **{name: spy(name, getattr(placement, name)) for name in names}):
        yield calls


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dense_steps(), st.sampled_from([{}, {"_ROWS": 1, "_COMPACT": 1}, {"_ROWS": 2, "_COMPACT": 3},
                                       {"_ROWS": 5, "_COMPACT": 2}]), st.booleans())
def test_dense_placements_are_the_reference(step, knob, with_fixed):
    """Steps whose buffers mostly meet take the dense placements (with the shipped limits
    too), passes of one buffer or of several that meet each other: the reference's offsets."""
    lo1, hi1, lo2, hi2, size, off0, placed0, order = step
    if not with_fixed:
        placed0 = np.zeros_like(placed0)
    with knobs(knob), counting("_place_cyclic_dense", "_place_canonical_dense") as calls:
        layout = _layout(lo1, hi1, lo2, hi2, size, off0, placed0, order)
        for best_fit in (True, False):
            want = reference_place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0,
                                          placed0=placed0)
            for lay in (None, layout):
                np.testing.assert_array_equal(
                    packing._place_cyclic(order, lo1, hi1, lo2, hi2, size, best_fit=best_fit, off0=off0,
                                          placed0=placed0, layout=lay), want)
        want = reference_place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0, placed0=placed0)
        for lay in (None, layout):
            np.testing.assert_array_equal(packing._place_canonical(order, lo1, hi1, lo2, hi2, size, off0=off0,
                                                                   placed0=placed0, layout=lay), want)
    assert calls == {"_place_cyclic_dense": 4, "_place_canonical_dense": 2}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10), st.integers(20, 40), st.sampled_from(SIZES[1:])), min_size=2,
                max_size=50), st.sampled_from([1, 512]), st.integers(0, 2))
def test_dense_packings_are_the_reference(rows, alignment, rounds):
    """pack and pack_cyclic of steps whose buffers all meet (with improvement rounds)."""
    length = 40
    with knobs({"_ROWS": 3, "_COMPACT": 2}), counting("_place_cyclic_dense", "_place_canonical_dense") as calls:
        for call in (lambda: packing.pack(rows, alignment=alignment, rounds=rounds, time_budget=60.0),
                     lambda: packing.pack_cyclic(rows, length, alignment=alignment, rounds=rounds)):
            got = call()
            with reference_placements():
                want = call()
            same_packing(got, want)
    assert calls["_place_cyclic_dense"] and calls["_place_canonical_dense"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 40), st.integers(0, 25), st.sampled_from(SIZES)), max_size=60),
       st.sampled_from(range(len(KNOBS))), st.randoms(use_true_random=False))
def test_linear_placements_are_the_reference(rows, knob, rnd):
    """pack's best fit and lowest offset (times may start below 0 here)."""
    lo = np.array([a for a, _d, _s in rows], dtype=np.int64)
    hi = np.array([a + d for a, d, _s in rows], dtype=np.int64)
    size = np.array([s for _a, _d, s in rows], dtype=np.int64)
    order = np.arange(len(rows))
    rnd.shuffle(order)
    with knobs(KNOBS[knob]):
        np.testing.assert_array_equal(packing._best_fit(lo, hi, size, order), reference_best_fit(lo, hi, size, order))
        rank = packing._rank_of(order)
        zero = np.zeros_like(lo)
        np.testing.assert_array_equal(packing._lowest_offset(lo, hi, size, rank),
                                      reference_place_canonical(np.argsort(rank, kind="stable"), lo, hi, zero, zero,
                                                                size))


# --------------------------------------------------------------------------- whole packings


@st.composite
def packer_inputs(draw):
    """(cyclic intervals, cycle length, fixed blocks on the cycle, linear intervals, fixed
    linear blocks) for the four pack functions."""
    length = draw(st.integers(1, 30))
    cyclic = []
    for _ in range(draw(st.integers(0, 40))):
        start = draw(st.integers(0, length - 1))
        cyclic.append((start, start + draw(st.integers(1, length)), draw(st.sampled_from(SIZES))))
    fixed = []
    for _ in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, length))
        fixed.append((start, draw(st.integers(start, length)), draw(st.sampled_from(SIZES)),
                      draw(st.sampled_from((0, 512, 1024, 4096, 9000)))))
    linear = [(a, min(b, length + 3), s) for a, b, s in cyclic]
    fixed_linear = [(a, b + draw(st.integers(0, 3)), s, o) for a, b, s, o in fixed]
    return cyclic, length, fixed, linear, fixed_linear


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packer_inputs(), st.sampled_from([1, 512]), st.sampled_from(range(len(KNOBS))), st.integers(0, 3))
def test_packings_are_the_reference(inputs, alignment, knob, rounds):
    """pack_cyclic, pack_cyclic_around, pack_around and pack: the same Packing (improvement
    rounds included: a count, so the result does not depend on the time taken)."""
    cyclic, length, fixed, linear, fixed_linear = inputs
    calls = [
        lambda: packing.pack_cyclic(cyclic, length, alignment=alignment, rounds=rounds),
        lambda: packing.pack_cyclic_around(cyclic, length, fixed, alignment=alignment, rounds=rounds),
        lambda: packing.pack_around(linear, fixed_linear, alignment=alignment, rounds=rounds),
        lambda: packing.pack(linear, alignment=alignment, rounds=rounds, time_budget=60.0),
    ]
    with knobs(KNOBS[knob]):
        for call in calls:
            got = call()
            with reference_placements():
                want = call()
            same_packing(got, want)


# --------------------------------------------------------------------------- held-out traces

#: held-out runs whose steps the references pack in a few seconds (not a set kept unseen in
#: a directory of its own): steps of 24 to 4,468 buffers
STEP_TRACES = ["moco-train", "ddpm-train", "vgg-train", "gru-lm-train", "vit-train", "gan-train"]


@pytest.fixture(scope="module")
def steps_found() -> dict[str, list[tuple]]:
    return {name: find_step(memtune.load_trace(HELDOUT / f"{name}.jsonl.gz", lenient=True).devices[0].events)[1]
            for name in STEP_TRACES}


@pytest.mark.parametrize("name", STEP_TRACES)
def test_make_plan_is_the_reference_on_held_out_steps(name, steps_found):
    template = steps_found[name]
    assert template, f"{name}: no step found"
    got = make_plan(template, rounds=0)
    with reference_placements():
        want = make_plan(template, rounds=0)
    assert (got.offsets, got.arena, got.length, got.cut) == (want.offsets, want.arena, want.length, want.cut)
    if want.packing is not None:
        same_packing(got.packing, want.packing)


def _captured(monkeypatch, name: str, fn: str, run) -> list[tuple[tuple, dict]]:
    """The calls of packing.<fn> while ``run`` goes."""
    seen: list[tuple[tuple, dict]] = []
    real = getattr(packing, fn)

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(packing, fn, spy)
    run()
    monkeypatch.setattr(packing, fn, real)
    assert seen, f"{name}: no call of {fn}"
    return seen


@pytest.mark.parametrize("name, rounds", [("moco-train", 0), ("moco-train", 2), ("ddpm-train", 0)])
def test_steps_packed_around_the_online_blocks_are_the_reference(name, rounds, monkeypatch):
    """memtune-plan's take-over in place: the step packed around the blocks the online policy
    holds (the last of a replay's own calls, then with the reference placements; with and
    without improvement rounds)."""
    trace = memtune.load_trace(HELDOUT / f"{name}.jsonl.gz", lenient=True)
    dt = dataclasses.replace(trace.devices[0], settings={})
    seen = _captured(monkeypatch, name, "pack_cyclic_around", lambda: replay_device(trace, dt, "memtune-plan"))
    args, kwargs = seen[-1]
    kw = dict(kwargs, rounds=rounds, time_budget=60.0)
    got = packing.pack_cyclic_around(*args, **kw)
    with reference_placements():
        want = packing.pack_cyclic_around(*args, **kw)
    same_packing(got, want)


@pytest.mark.parametrize("name", ["gru-lm-train", "moco-train"])
def test_run_plans_packed_around_their_step_are_the_reference(name, monkeypatch):
    """A plan from an earlier run: its prologue packed around the step (pack_around; with
    no step, around the buffers it never frees)."""
    events = memtune.load_trace(HELDOUT / f"{name}.jsonl.gz", lenient=True).devices[0].events
    seen = _captured(monkeypatch, name, "pack_around",
                     lambda: runplan.make_run_plan(events, rounds=0, time_budget=0.0))
    for args, kwargs in seen:
        for rounds in (0, 3):
            kw = dict(kwargs, rounds=rounds, time_budget=60.0)
            got = packing.pack_around(*args, **kw)
            with reference_placements():
                want = packing.pack_around(*args, **kw)
            same_packing(got, want)
