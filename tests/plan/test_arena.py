"""memtune's online policy (ArenaAllocator): invariants under random use, the
failure path, warm starts, and the behaviours its design promises."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from sortedcontainers import SortedDict

from memtune.allocator.arena import FITS, ArenaAllocator, ArenaSpec, _BestFit, _FirstFit, _Region
from memtune.allocator.base import _LARGE
from memtune.allocator.events import EventKind
from memtune.allocator.limits import Limits
from memtune.devices.simulated import SimulatedDevice
from memtune.errors import AllocatorUsageError, OutOfMemoryError
from memtune.trace.model import BlockState, SegmentState

KiB, MiB = 1 << 10, 1 << 20
PAGE = 64 * KiB  # small pages so random workloads cross page boundaries often


def make(capacity: int = 1 << 40, **kw) -> tuple[ArenaAllocator, SimulatedDevice]:
    dev = SimulatedDevice(capacity)
    kw.setdefault("page", PAGE)
    kw.setdefault("growth_max", 4 * PAGE)
    return ArenaAllocator(ArenaSpec(**kw), dev), dev


def check_invariants(a: ArenaAllocator, dev: SimulatedDevice, expected: dict[int, tuple[int, int]]) -> None:
    """expected: address -> (requested, stream) of every block the test holds."""
    live = sorted((addr, size, req, stream) for addr, size, req, stream in a.live_blocks())
    assert {x[0]: (x[2], x[3]) for x in live} == expected
    # no two live blocks overlap
    for (a1, s1, *_), (a2, *_rest) in zip(live, live[1:]):
        assert a1 + s1 <= a2
    # every live block lies inside mapped device memory (or is a tiny device allocation)
    segs = a.segments()
    for addr, size, _req, _s in live:
        assert any(seg.address <= addr and addr + size <= seg.address + seg.total_size for seg in segs), hex(addr)
    # segments tile, and the statistics equal a recomputation from scratch
    for seg in segs:
        assert sum(b.size for b in seg.blocks) == seg.total_size
    stats = a.memory_stats()
    assert stats["allocated_bytes.all.current"] == sum(x[1] for x in live)
    assert stats["requested_bytes.all.current"] == sum(x[2] for x in live)
    assert stats["allocation.all.current"] == len(live)
    reserved = stats["reserved_bytes.all.current"]
    assert reserved == sum(s.total_size for s in segs) == a.reserved_bytes == dev.counters.bytes_in_use
    assert reserved >= stats["allocated_bytes.all.current"]
    assert stats["reserved_bytes.all.peak"] >= reserved


class ArenaMachine(RuleBasedStateMachine):
    @initialize(small=st.sampled_from([None, 4 * KiB]), slack=st.sampled_from([0.0, 0.02, 0.5]),
                budget=st.sampled_from([0.0, 1.0, 100.0]), fit=st.sampled_from(FITS),
                after=st.sampled_from([0, 4, 20_000]))
    def setup(self, small, slack, budget, fit, after):
        self.a, self.dev = make(small_size=small, slack=slack, trim_budget=budget, fit=fit, first_fit_after=after)
        self.held: dict[int, tuple[int, int]] = {}

    @rule(size=st.one_of(st.integers(1, 4 * KiB), st.integers(1, 5 * PAGE)), stream=st.integers(0, 2))
    def malloc(self, size, stream):
        before = self.a.memory_stats()
        addr = self.a.malloc(size, stream)
        assert addr not in self.held
        self.held[addr] = (size, stream)
        after = self.a.memory_stats()
        if after["allocated_bytes.all.peak"] == before["allocated_bytes.all.peak"]:
            # past the live peak, growth chunks stay within the highest reserved so far:
            # a new high is at most the pages the request itself touches
            grew = after["reserved_bytes.all.peak"] - before["reserved_bytes.all.peak"]
            assert grew <= -(-size // PAGE) * PAGE + PAGE, (grew, size)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def free(self, data):
        addr = data.draw(st.sampled_from(sorted(self.held)))
        self.a.free(addr)
        del self.held[addr]

    @rule()
    def empty_cache(self):
        self.a.empty_cache()

    @invariant()
    def consistent(self):
        if hasattr(self, "a"):
            check_invariants(self.a, self.dev, self.held)

    def teardown(self):
        if hasattr(self, "a"):
            for addr in list(self.held):
                self.a.free(addr)
            self.a.empty_cache()
            assert self.a.memory_stats()["reserved_bytes.all.current"] == 0
            assert self.dev.counters.bytes_in_use == 0
            self.a.close()


TestArenaMachine = ArenaMachine.TestCase
TestArenaMachine.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)


def run_fragmenting(**kw) -> tuple[int, int]:
    a, dev = make(**kw)
    live = []
    peak_live = cur = 0
    for i in range(400):
        size = (1 + (i * 7919) % 13) * 40 * KiB
        live.append((a.malloc(size), size))
        cur += size
        peak_live = max(peak_live, cur)
        if len(live) > 20:
            addr, s = live.pop((i * 31) % len(live))
            a.free(addr)
            cur -= s
    return a.memory_stats()["reserved_bytes.all.peak"], peak_live


def test_reserved_tracks_the_live_peak_within_the_slack():
    """A fragmenting workload: reserved stays within (1 + slack) x peak live plus the
    partial pages at the edges of free holes (at most two per hole; <= 21 holes),
    and well below what best fit alone (never unmapping) strands."""
    tight, peak_live = run_fragmenting(page=64 * KiB, slack=0.02, trim_budget=100.0, growth_max=0)
    never, _ = run_fragmenting(page=64 * KiB, slack=0.02, trim_budget=0.0, trim_base=0, growth_max=0)
    assert tight <= 1.02 * peak_live + 2 * 21 * 64 * KiB, (tight, peak_live)
    assert tight < never


def test_repeating_workload_stops_making_device_calls():
    """After a few steps of the same allocation pattern no device call is made:
    the budget stops unmap/map churn."""
    a, dev = make(page=64 * KiB, slack=0.0)

    def step():
        held = [a.malloc(s) for s in (300 * KiB, 70 * KiB, 500 * KiB, 130 * KiB)]
        a.free(held[1])
        held.append(a.malloc(200 * KiB))
        for h in held[::-1]:
            if h != held[1]:
                a.free(h)

    for _ in range(20):
        step()
    calls = dev.counters.maps + dev.counters.unmaps
    for _ in range(50):
        step()
    assert dev.counters.maps + dev.counters.unmaps == calls


def test_a_growth_floor_maps_the_first_climb_in_fewer_calls_and_keeps_the_unmap_budget():
    """On the way up from nothing a chunk of 1/16 of the live peak so far is smaller than
    the requests, so the top grows by a request a call; growth_min maps at least that
    much a call. The maps it saves still count for the unmap budget (growth without the
    floor would have made them), so the floor does not cut the unmaps allowed later."""
    def climb(growth_min: int) -> tuple[ArenaAllocator, SimulatedDevice]:
        a, dev = make(page=PAGE, growth=1 / 16, growth_max=64 * PAGE, growth_min=growth_min)
        for _ in range(256):
            a.malloc(3 * PAGE)
        return a, dev

    none, dev0 = climb(0)
    floor, dev1 = climb(8 * PAGE)
    assert dev1.counters.maps < 0.8 * dev0.counters.maps
    assert floor._maps >= none._maps == dev0.counters.maps  # the budget's count of maps
    peak = lambda a: a.memory_stats()["reserved_bytes.all.peak"]  # noqa: E731
    assert peak(floor) <= peak(none) + 8 * PAGE


def test_a_later_climb_maps_chunks_of_what_it_adds_not_of_the_whole_peak():
    """A step that rises past the live peak set long before (more than climb_pause
    mallocs and frees ago) starts a new climb: its chunks are a share of the live bytes
    it added, not of the whole peak, so less is left mapped above the top when the new
    peak is reached. With climb_pause=0 every chunk is a share of the whole peak. (What
    is left depends on where the last chunk ends, so later climbs of 16 to 47 pages.)"""
    def over(climb_pause: int, pages: int) -> int:
        """Pages reserved above the live peak, at the peak of a later climb of ``pages``."""
        a, dev = make(page=PAGE, growth=1 / 4, growth_max=1 << 30, slack=0.0, climb_pause=climb_pause)
        held = [a.malloc(PAGE) for _ in range(64)]  # the first climb: 64 pages live
        a.free(held.pop())
        for _ in range(100):  # a pause: churn below the live peak
            a.free(a.malloc(PAGE // 2))
        for _ in range(pages + 1):  # a later step, a page at a time
            held.append(a.malloc(PAGE))
        stats = a.memory_stats()
        assert stats["allocated_bytes.all.peak"] == (64 + pages) * PAGE
        return (stats["reserved_bytes.all.peak"] - stats["allocated_bytes.all.peak"]) // PAGE

    climbs = [over(100, n) for n in range(16, 48)]
    whole = [over(0, n) for n in range(16, 48)]
    assert all(c <= n // 4 + 1 for c, n in zip(climbs, range(16, 48))), climbs
    assert 2 * sum(climbs) < sum(whole), (climbs, whole)


def test_below_the_live_peak_pages_move_only_past_the_move_slack():
    """A request below the live peak that fits no mapped hole maps new pages at the top.
    Within 1 + move_slack x the live peak it keeps the free pages elsewhere mapped (a
    repeating step would use them again); with move_slack=0 (and slack 0) it moves them:
    unmaps free pages to stay at the live peak."""
    def run(move_slack: float) -> tuple[int, int]:
        a, dev = make(page=PAGE, growth=0.0, growth_max=0, slack=0.0, move_slack=move_slack)
        held = [a.malloc(n * PAGE) for n in (2, 1, 2, 1, 94)]  # 100 pages live
        a.free(held[0])
        a.free(held[2])  # two mapped holes of 2 pages; 96 pages live
        a.malloc(3 * PAGE)  # fits neither: 3 new pages at the top, 99 live
        return a.reserved_bytes, dev.counters.unmaps

    assert run(0.04) == (103 * PAGE, 0)
    reserved, unmaps = run(0.0)
    assert unmaps >= 1 and reserved <= 101 * PAGE, (reserved, unmaps)


def test_a_move_unmaps_only_what_the_slack_requires():
    """Below the live peak, a request that fits no hole moves pages: it unmaps free runs
    until reserved memory is back within 1 + move_slack x the live peak, not down to the
    live peak itself (each of those unmaps is a device call, and a repeating step maps
    the pages again). Each unmap still gives back its whole free run."""
    def run(only_needed: bool) -> tuple[int, int]:
        a, dev = make(page=PAGE, growth=0.0, growth_max=0, slack=0.0, move_slack=0.04,
                      move_only_needed=only_needed)
        held = [a.malloc(n * PAGE) for n in (1, 2, 1, 2, 1, 2, 1, 90)]  # 100 pages live
        for k in (1, 3, 5):
            a.free(held[k])  # three mapped holes of 2 pages; 94 pages live
        a.malloc(3 * PAGE)  # fits no hole: at the top, within 104 pages reserved
        assert (a.reserved_bytes, dev.counters.unmaps) == (103 * PAGE, 0)
        a.malloc(3 * PAGE)  # 106 pages would be past 104: a move, 100 pages live
        return a.reserved_bytes, dev.counters.unmaps

    assert run(True) == (104 * PAGE, 1)
    assert run(False) == (100 * PAGE, 3)
    assert make()[0].spec.move_only_needed is True


def test_climb_chunks_keep_a_later_climb_from_unmapping_what_it_maps_again():
    """Each layer of a forward pass keeps an activation (the live peak climbs) and frees a
    temporary. Within the slack alone, a climb unmaps the temporaries' free pages and maps
    them again a layer later; with ``climb_chunks`` growth chunks of room a climb past an
    earlier peak makes fewer device calls, and holds at most that many chunks (plus the
    top's own chunk) over the live peak. (The run's first climb gets no room here: see
    the next test.)"""
    def run(chunks: float) -> tuple[int, int, int, int]:
        a, dev = make(page=PAGE, growth=1 / 16, growth_max=1 << 30, slack=0.0, climb_chunks=chunks,
                      first_climb_unmaps=1 << 30)

        def climb(layers: int) -> None:
            for i in range(layers):
                temp = a.malloc((3 + i % 5) * PAGE)
                a.malloc(2 * PAGE)
                a.free(temp)

        climb(40)
        first = dev.counters.maps + dev.counters.unmaps
        for _ in range(60):  # a pause (climb_pause mallocs and frees): the next rise is a new climb
            a.free(a.malloc(PAGE))
        climb(60)
        stats = a.memory_stats()
        return (first, dev.counters.maps + dev.counters.unmaps, stats["reserved_bytes.all.peak"],
                stats["allocated_bytes.all.peak"])

    (first0, calls0, reserved0, live), (first2, calls2, reserved2, live2) = run(0.0), run(2.0)
    assert live == live2 and first0 == first2
    assert calls2 < calls0, (calls0, calls2)
    chunk = -(-live // 16 // PAGE) * PAGE
    for chunks, reserved in ((0, reserved0), (2, reserved2)):
        assert reserved - live <= (chunks + 1) * chunk + PAGE, (chunks, reserved, live)
    assert make()[0].spec.climb_chunks == 2.0


def test_the_first_climb_gets_room_once_it_has_churned():
    """The run's first climb gets the ``climb_chunks`` room only once it has made
    ``first_climb_unmaps`` unmaps to stay within the slack: its end is often the run's
    peak, where the room would stay reserved, so a first climb that unmaps little keeps
    the slack alone, and one that churns saves the calls from then on."""
    def run(chunks: float, after: int) -> tuple[int, list[int], int]:
        a, dev = make(page=PAGE, growth=1 / 16, growth_max=1 << 30, slack=0.0, climb_chunks=chunks,
                      first_climb_unmaps=after)
        calls = []
        for i in range(40):  # one climb: each layer keeps an activation and frees a temporary
            temp = a.malloc((3 + i % 5) * PAGE)
            a.malloc(2 * PAGE)
            a.free(temp)
            calls.append(dev.counters.maps + dev.counters.unmaps)
        return dev.counters.unmaps, calls, a.memory_stats()["reserved_bytes.all.peak"]

    slack_only, never, from_start = run(0.0, 0), run(2.0, 1 << 30), run(2.0, 0)
    assert never == slack_only  # no room until the climb has made that many unmaps
    unmaps = slack_only[0]
    assert unmaps >= 8, unmaps  # the climb churns within the slack alone
    assert from_start[1][-1] < slack_only[1][-1], (from_start[1][-1], slack_only[1][-1])
    # with room after half of those unmaps: the slack alone until the room starts, fewer calls in all
    half = run(2.0, unmaps // 2)
    start = next(i for i, c in enumerate(half[1]) if c != slack_only[1][i])
    assert start > 0 and half[1][-1] < slack_only[1][-1], (start, half[1][-1], slack_only[1][-1])
    assert make()[0].spec.first_climb_unmaps == 8


def test_past_the_live_peak_the_top_grows_by_the_request_only():
    """A step whose request lands at the top below the live peak (no hole fits it)
    maps the pages it needs and no growth chunk past the highest reserved so far:
    reserved stays at the live peak, step after step (a chunk there would be
    unmapped for the next request elsewhere and mapped again a step later)."""
    a, dev = make(page=PAGE, growth=0.25, growth_max=1 << 30, slack=0.0)
    for _ in range(3):
        x, y, w = a.malloc(6 * PAGE), a.malloc(6 * PAGE), a.malloc(4 * PAGE)  # live peak: 16 pages
        a.free(w)
        a.free(x)
        z = a.malloc(7 * PAGE)  # too big for x's hole: at the top, 13 pages live
        a.free(y)
        a.free(z)
    stats = a.memory_stats()
    assert stats["allocated_bytes.all.peak"] == 16 * PAGE
    assert stats["reserved_bytes.all.peak"] == 16 * PAGE


def test_past_the_budget_one_unmap_that_gives_back_a_large_share_is_still_made():
    """With the unmap budget spent (here: none at all), a request that would grow the
    region by a large share of the live peak while as much sits free elsewhere gets one
    unmap (trim_large), where the region would otherwise grow by the whole block."""
    def run(trim_large: float) -> tuple[int, int]:
        a, dev = make(page=PAGE, trim_budget=0.0, trim_base=0, trim_large=trim_large, growth=0.0, slack=0.0)
        big = a.malloc(10 * PAGE)
        a.malloc(PAGE)  # keeps big's hole below the top
        a.free(big)
        a.malloc(12 * PAGE)  # fits no hole: at the top, 12 new pages
        return a.memory_stats()["reserved_bytes.all.peak"], dev.counters.unmaps

    assert run(0.0) == (23 * PAGE, 0)
    assert run(1 / 8) == (14 * PAGE, 1)  # the hole's pages but the region's first, which stays mapped


def test_tiny_footprint_uses_exact_device_allocations():
    a, dev = make(page=2 * MiB)
    x = a.malloc(8)
    a.free(x)
    y = a.malloc(8)  # the cached allocation is reused
    assert y == x
    assert a.memory_stats()["reserved_bytes.all.peak"] == 512
    assert dev.counters.mallocs == 1 and dev.counters.maps == 0
    big = a.malloc(3 * MiB)  # past one page: pages from here on
    assert dev.counters.maps >= 1
    a.free(big)
    a.free(y)
    a.empty_cache()
    assert a.reserved_bytes == 0 and dev.counters.bytes_in_use == 0



def test_tiny_phase_ends_when_exact_allocations_would_cost_more_calls_than_a_page():
    """Exact allocations are cached per size, so a tiny workload of many sizes would
    pay a device call per size where one page serves them all: after ``tiny_allocs``
    exact allocations (or past ``tiny_share`` of a page), pages take over."""
    a, dev = make(page=2 * MiB)
    sizes = [512 * (k + 1) for k in range(10)]  # 27.5 KiB in ten sizes: under 1/32 of a page
    held = [a.malloc(n) for n in sizes]
    assert dev.counters.mallocs == 2  # the first two sizes, exactly
    assert dev.counters.maps == 1     # the other eight: one page
    assert a.reserved_bytes == 512 + 1024 + 2 * MiB
    for h in held:
        a.free(h)
    again = [a.malloc(n) for n in sizes]  # the same sizes again: no new device call
    assert (dev.counters.mallocs, dev.counters.maps) == (2, 1)
    for h in again:
        a.free(h)
    # a footprint past 1/32 of a page is no longer tiny, however few the sizes
    b, dev_b = make(page=2 * MiB)
    b.malloc(64 * KiB)
    assert dev_b.counters.mallocs == 0 and dev_b.counters.maps == 1

def test_oom_releases_free_pages_then_fails_cleanly():
    a, dev = make(capacity=1 * MiB, page=64 * KiB, slack=10.0, trim_budget=0.0)
    held = [a.malloc(128 * KiB) for _ in range(6)]
    for h in held[::2]:
        a.free(h)  # 384 KiB free, but in 128 KiB holes (still mapped: slack is huge)
    before = (a.memory_stats()["allocated_bytes.all.current"], sorted(a.live_blocks()))
    big = a.malloc(384 * KiB)  # fits only after the free pages are unmapped and mapped again
    a.free(big)
    with pytest.raises(OutOfMemoryError) as e:
        a.malloc(2 * MiB)
    msg = str(e.value)
    assert "out of memory" in msg and "2.00 MiB" in msg and "1.00 MiB" in msg
    assert e.value.requested == 2 * MiB and e.value.capacity == 1 * MiB
    assert (a.memory_stats()["allocated_bytes.all.current"], sorted(a.live_blocks())) == before
    assert a.memory_stats()["num_ooms"] == 1
    x = a.malloc(64 * KiB)  # still usable
    a.free(x)


def test_hard_limit_is_enforced():
    a, dev = make(capacity=1 << 30, page=64 * KiB,
                  limits=Limits(hard_limit=512 * KiB, hard_limit_setting="MEMTUNE_HIGH_WATERMARK"))
    a.malloc(400 * KiB)
    with pytest.raises(OutOfMemoryError, match="MEMTUNE_HIGH_WATERMARK"):
        a.malloc(200 * KiB)
    assert a.reserved_bytes <= 512 * KiB


def test_soft_limit_unmaps_free_pages_whatever_the_budget():
    a, dev = make(page=64 * KiB, slack=1.0, trim_budget=0.0, trim_base=0, growth_max=0,
                  limits=Limits(soft_limit=1280 * KiB))
    held = [a.malloc(256 * KiB) for _ in range(5)]
    a.free(held[1])
    a.free(held[3])  # two 256 KiB holes, mapped; no budget to unmap them
    a.malloc(512 * KiB)  # fits no hole: 1.75 MiB would be mapped, above the soft limit
    assert a.reserved_bytes <= 1280 * KiB
    assert a.memory_stats()["num_device_free"] >= 1


def test_bad_frees_and_sizes_are_clear_errors_and_change_nothing():
    a, dev = make()
    x = a.malloc(1000)
    snap = a.memory_stats()
    with pytest.raises(AllocatorUsageError, match="unknown address"):
        a.free(12345)
    with pytest.raises(AllocatorUsageError, match="not the start of an allocation"):
        a.free(x + 8)
    a.free(x)
    with pytest.raises(AllocatorUsageError, match="already freed|unknown"):
        a.free(x)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(AllocatorUsageError, match="size"):
            a.malloc(bad)  # type: ignore[arg-type]
    with pytest.raises(AllocatorUsageError, match="stream"):
        a.malloc(10, stream=-1)
    assert a.memory_stats()["num_ooms"] == snap["num_ooms"]


def test_events_and_listeners():
    a, dev = make(page=64 * KiB)
    seen = []
    a.add_listener(lambda ev: seen.append(ev.kind))
    x = a.malloc(100 * KiB)
    a.free(x)
    y = a.malloc(100 * KiB)
    a.free(y)
    a.empty_cache()
    assert seen[:2] == [EventKind.SEGMENT_MAP, EventKind.ALLOCATED]
    assert EventKind.RECYCLED in seen and EventKind.FREED in seen
    assert EventKind.SEGMENT_UNMAP in seen and EventKind.RELEASED in seen


def test_restore_places_every_live_block():
    a, dev = make(page=64 * KiB)
    segs = [
        SegmentState(0x1000000, 3 * 4096, 0, "large", (
            BlockState(0x1000000, 4096, 4000, True), BlockState(0x1001000, 4096, 0, False),
            BlockState(0x1002000, 4096, 100, True))),
        SegmentState(0x2000000, 8192, 1, "small", (BlockState(0x2000000, 8192, 8192, True),)),
    ]
    mapping = a.restore(segs)
    assert set(mapping) == {0x1000000, 0x1002000, 0x2000000}
    blocks = {addr: (req, s) for addr, _size, req, s in a.live_blocks()}
    assert blocks[mapping[0x1000000]] == (4000, 0) and blocks[mapping[0x2000000]] == (8192, 1)
    stats = a.memory_stats()
    assert stats["num_device_alloc"] == 0 and stats["requested_bytes.all.current"] == 4000 + 100 + 8192
    for addr in mapping.values():
        a.free(addr)


def test_threads_keep_the_invariants():
    a, dev = make(page=64 * KiB)
    errors = []

    def work(seed: int) -> None:
        try:
            held = []
            for i in range(600):
                if held and (i * seed) % 3 == 0:
                    a.free(held.pop((i * 7) % len(held)))
                else:
                    held.append(a.malloc(1 + (i * seed * 9973) % (200 * KiB), stream=seed % 2))
            for h in held:
                a.free(h)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    check_invariants(a, dev, {})
    a.empty_cache()
    assert a.reserved_bytes == 0


def test_spec_validation_names_the_problem():
    with pytest.raises(ValueError, match="page must be a positive multiple of alignment"):
        ArenaSpec(page=1000)
    with pytest.raises(ValueError, match="slack must be >= 0"):
        ArenaSpec(slack=-1)
    with pytest.raises(ValueError, match="fit must be one of best, first; got 'worst'"):
        ArenaSpec(fit="worst")
    with pytest.raises(ValueError, match="move_only_needed must be True or False; got 1"):
        ArenaSpec(move_only_needed=1)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 63), st.integers(1, 1 << 22)), max_size=120),
       asks=st.lists(st.integers(1, 1 << 22), min_size=1, max_size=8), limit=st.sampled_from([4, _BestFit.LIMIT]))
def test_each_fit_index_finds_the_hole_its_rule_names(ops, asks, limit):
    """Against a scan of every hole: best fit, the smallest that fits (lowest start on
    ties); first fit, the lowest start that fits; None when no hole fits. (Best fit's
    index is a plain list up to ``limit`` holes, a SortedList past it.)"""
    holes: dict[int, int] = {}
    best, first = _BestFit(limit), _FirstFit(holes)
    for add, slot, size in ops:
        start = slot << 23  # slots far enough apart that holes never overlap
        if add and start not in holes:
            holes[start] = size
            best.add(size, start)
            first.add(size, start)
        elif not add and start in holes:
            n = holes.pop(start)
            best.remove(n, start)
            first.remove(n, start)
        assert len(first) == len(best) == len(holes)
        for want in asks:
            fits = [(n, a) for a, n in holes.items() if n >= want]
            assert best.take(want) == (min(fits)[1] if fits else None)
            assert first.take(want) == (min(a for _n, a in fits) if fits else None)
    # an index built from the holes as they stand (a switch to first fit mid-run)
    # finds what the one kept up to date finds
    rebuilt = _FirstFit(dict(holes))
    assert len(rebuilt) == len(holes)
    for want in asks:
        assert rebuilt.take(want) == first.take(want)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(1, 6)), max_size=80),
       asks=st.lists(st.tuples(st.integers(0, 45), st.integers(1, 8)), min_size=1, max_size=6))
def test_mapped_runs_are_the_pages_mapped_merged(ops, asks):
    """A region's mapped runs against a set of pages: every map and unmap keeps them disjoint,
    sorted and merged where they touch, and ``unmapped_runs`` / ``next_mapped_start`` read
    them right."""
    r = _Region(0, 64 * PAGE, 0, _LARGE)
    pages: set[int] = set()
    for add, first, n in ops:
        span = set(range(first, first + n))
        if add and not span & pages:
            r.mapped.add(first * PAGE, (first + n) * PAGE)
            pages |= span
        elif not add and span <= pages:
            run = next((s, e) for s, e in r.mapped.items() if s <= first * PAGE < e)
            if (first + n) * PAGE <= run[1]:  # an unmap lies inside one run
                r.mapped.remove(first * PAGE, (first + n) * PAGE)
                pages -= span
        runs = r.mapped.items()
        assert runs == sorted(runs) and all(e1 < s2 for (_s1, e1), (s2, _e2) in zip(runs, runs[1:])), runs
        assert {p for s, e in runs for p in range(s // PAGE, e // PAGE)} == pages
        for lo, n in asks:
            want = sorted(set(range(lo, lo + n)) - pages)
            got = [p for a, b in r.unmapped_runs(lo * PAGE, (lo + n) * PAGE) for p in range(a // PAGE, b // PAGE)]
            assert got == want
            assert r.next_mapped_start(lo * PAGE) == min((s for s, _e in runs if s >= lo * PAGE), default=r.end)


def test_first_fit_takes_the_lowest_hole_that_fits_and_best_fit_the_smallest():
    """Holes of 1, 4 and 2 MiB, in address order: a 2 MiB request goes to the 4 MiB hole
    under first fit (the lowest that fits) and to the 2 MiB one under best fit."""
    got = {}
    for fit in FITS:
        a, _dev = make(tiny_share=0.0, page=2 * MiB, fit=fit)
        blocks = [a.malloc(n * MiB) for n in (1, 1, 4, 1, 2, 1)]
        for i in (0, 2, 4):
            a.free(blocks[i])
        got[fit] = (a.malloc(2 * MiB), blocks)
        a.close()
    addr, blocks = got["first"]
    assert addr == blocks[2]
    addr, blocks = got["best"]
    assert addr == blocks[4]


def test_best_fit_turns_to_first_fit_when_pages_still_move_long_after_the_live_peak():
    """first_fit_after: a move (an unmap below the live peak) made more than that many
    mallocs and frees after live bytes last peaked switches every region to first fit,
    once and for good; 0 never switches. The blocks stay where they are."""
    def run(after: int) -> tuple[ArenaAllocator, int | None]:
        a, dev = make(first_fit_after=after, slack=0.0)
        live: dict[int, int] = {}
        peak = clock = peak_clock = 0
        switched_at = None
        for i in range(400):
            size = (1 + (i * 7919) % 13) * 40 * KiB
            live[a.malloc(size)] = size
            clock += 1
            if a.memory_stats()["allocated_bytes.all.peak"] > peak:
                peak, peak_clock = a.memory_stats()["allocated_bytes.all.peak"], clock
            if len(live) > 20:
                addr = list(live)[(i * 31) % len(live)]
                a.free(addr)
                del live[addr]
                clock += 1
            if switched_at is None and a.fit == "first":
                switched_at = clock - peak_clock
                assert all(isinstance(r.free_index, _FirstFit) for r in a._regions.values())
            check_invariants(a, dev, {addr: (n, 0) for addr, n in live.items()})
        return a, switched_at

    never, none = run(0)
    assert none is None and never.fit == "best"
    for after in (5, 200):
        a, since_peak = run(after)
        assert a.fit == "first" and since_peak is not None and since_peak > after, (after, since_peak)
    with pytest.raises(ValueError, match="first_fit_after must be >= 0; got -1"):
        ArenaSpec(first_fit_after=-1)


class ClaimMachine(RuleBasedStateMachine):
    """Plan mode serving a step in place (PlanAllocator._overlay): ranges of a region
    are claimed out of its free space, blocks are placed in them by address
    (malloc_at) and freed without giving their space back (forget), and the space is
    handed back at the end (unclaim). The online policy keeps serving requests around
    the claimed ranges, and never inside them."""

    @initialize()
    def setup(self):
        self.a, self.dev = make(tiny_share=0.0)
        self.held: dict[int, tuple[int, int]] = {}
        self.claimed = SortedDict()
        self.a.free(self.a.malloc(512))  # the stream's region exists from here on
        self.region = self.a._regions[(0, _LARGE)]

    def _in_claimed(self, addr: int, size: int) -> bool:
        return any(lo < addr + size and addr < hi for lo, hi in self.claimed.items())

    @rule(size=st.one_of(st.integers(1, 4 * KiB), st.integers(1, 3 * PAGE)))
    def malloc(self, size):
        addr = self.a.malloc(size)
        assert not self._in_claimed(addr, -(-size // 512) * 512), hex(addr)
        self.held[addr] = (size, 0)

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def free(self, data):
        addr = data.draw(st.sampled_from(sorted(self.held)))
        size = -(-self.held.pop(addr)[0] // 512) * 512
        if self._in_claimed(addr, size):
            self.a.forget(addr)
            self.a.release_outside(self.region, addr, size, self.claimed)
        else:
            self.a.free(addr)

    @precondition(lambda self: not self.claimed)
    @rule(cuts=st.lists(st.integers(0, 64), min_size=2, max_size=8, unique=True))
    def claim(self, cuts):
        # disjoint ranges (in 512-byte units) from the region's base to past its top;
        # they may hold live blocks, as the ranges of a plan packed around them do
        span = (self.region.top - self.region.base) // 512 + 4 * PAGE // 512
        cuts = sorted(self.region.base + c * span // 64 * 512 for c in cuts)
        ranges = SortedDict()
        for lo, hi in zip(cuts[::2], cuts[1::2]):
            if hi > lo:
                ranges[lo] = hi
        self.region.claim(ranges)
        self.claimed = ranges

    @precondition(lambda self: self.claimed)
    @rule(data=st.data())
    def malloc_at(self, data):
        lo = data.draw(st.sampled_from(list(self.claimed)))
        hi = self.claimed[lo]
        at = lo + data.draw(st.integers(0, (hi - lo) // 512 - 1)) * 512
        size = data.draw(st.integers(1, (hi - at) // 512)) * 512
        if any(a < at + size and at < a + -(-s // 512) * 512 for a, (s, _st) in self.held.items()):
            return  # a plan's slot never holds a live block
        assert self.a.malloc_at(self.region, at, size, size)
        self.held[at] = (size, 0)

    @precondition(lambda self: self.claimed)
    @rule()
    def unclaim(self):
        self.a.unclaim(self.region, self.claimed)
        self.claimed = SortedDict()

    @invariant()
    def consistent(self):
        if not hasattr(self, "a"):
            return
        check_invariants(self.a, self.dev, self.held)
        r = self.region
        for lo, hi in self.claimed.items():  # claimed space is no hole, and below the top
            assert hi <= r.top
            assert not any(a < hi and lo < a + n for a, n in r.holes.items())
        for a, n in r.holes.items():  # holes hold no live block
            assert not any(b < a + n and a < b + -(-s // 512) * 512 for b, (s, _st) in self.held.items())

    def teardown(self):
        if hasattr(self, "a"):
            self.unclaim()
            for addr in list(self.held):
                self.a.free(addr)
            self.a.empty_cache()
            assert self.a.memory_stats()["reserved_bytes.all.current"] == 0
            assert self.dev.counters.bytes_in_use == 0
            assert self.region.top == self.region.base and not self.region.holes  # all of it merged back


TestClaimMachine = ClaimMachine.TestCase
TestClaimMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


def test_forgetting_an_unknown_block_is_a_clear_error_and_changes_nothing():
    a, dev = make()
    x = a.malloc(3 * KiB)
    before = a.memory_stats()
    with pytest.raises(AllocatorUsageError):
        a.forget(x + 512)
    assert a.memory_stats() == before
    check_invariants(a, dev, {x: (3 * KiB, 0)})
