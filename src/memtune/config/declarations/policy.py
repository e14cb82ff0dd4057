"""Knobs of memtune's own allocation policy (presets ``memtune`` and ``memtune-plan``).

Read when an allocator is created; explicit settings (``memtune.allocator("memtune",
slack=0.01)``, ``--set slack=0.01``) override them. See
:mod:`memtune.allocator.arena` (online policy) and :mod:`memtune.trace.plan`
(plan mode) for what each one trades.
"""

from __future__ import annotations

from memtune.config import declare, rule
from memtune.config.registry import Variable
from memtune.config.types import Bytes, Enum, Float, Int, Path, SizeOrFraction

GROUP = "memtune"
REFERENCE = "src/memtune/allocator/arena.py, src/memtune/trace/plan.py"

declare(
    Variable(
        name="MEMTUNE_PAGE_SIZE",
        type=Bytes(min=512),
        default=2 * 1024 * 1024,
        doc="Granularity at which memtune maps device memory into its virtual regions (CUDA's VMM "
        "granularity is 2 MiB). Must be a power of two of at least 512 B. Smaller pages track live "
        "memory more closely; real GPUs cannot go below 2 MiB.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_SLACK",
        type=Float(min=0.0, max=1.0),
        default=0.02,
        doc="How far reserved memory may exceed the highest live bytes seen (0.02 = 2 %) before memtune "
        "unmaps free pages to make room for a new mapping. 0 = unmap as soon as anything is free (more "
        "device calls); larger values trade memory for fewer device calls.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_MOVE_SLACK",
        type=Float(min=0.0, max=1.0),
        default=0.04,
        doc="Below the live peak, how far reserved memory may exceed the highest live bytes seen (0.04 = 4 %) "
        "before memtune moves pages: unmaps free pages elsewhere to map them where a request needs them. A "
        "repeating step whose layout needs a little more room than MEMTUNE_SLACK would otherwise move pages "
        "every step, at two device calls each. Values under MEMTUNE_SLACK act as MEMTUNE_SLACK. Plan mode "
        "(memtune-plan) keeps MEMTUNE_SLACK for the steps it serves online unless this variable (or its "
        "setting move_slack) is set: it aims at 2 % of the live peak.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_CLIMB_CHUNKS",
        type=Float(min=0.0, max=64.0),
        default=2.0,
        doc="While live bytes climb past an earlier peak, how many growth chunks (see MEMTUNE_GROWTH) reserved "
        "memory may exceed MEMTUNE_SLACK by before memtune unmaps free pages (on the run's first climb, only once "
        "it has made eight unmaps: its end is often the run's peak; memtune-plan's online steps count from the "
        "whole peak and get none). A climb's peak keeps rising, so pages "
        "unmapped to stay within the slack of it are mapped again a few requests later, two device calls each. "
        "Larger values save more of those calls but hold up to that "
        "many chunks more where a climb that sets the run's peak stops. 0 = the slack alone.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_GROWTH",
        type=Float(min=0.0, max=1.0),
        default=1 / 16,
        doc="When a region must grow, memtune maps at least this share of the peak live bytes (at most "
        "MEMTUNE_GROWTH_MAX), so a burst of small allocations costs one device call; a request larger than "
        "that gets just its own pages.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_GROWTH_MAX",
        type=Bytes(),
        default=20 * 1024 * 1024,
        doc="Upper bound of the bytes mapped at once when a region grows for small requests (see MEMTUNE_GROWTH).",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_GROWTH_MIN",
        type=Bytes(),
        default=6 * 1024 * 1024,
        doc="Lower bound of the bytes mapped at once when a region grows (the default is capped at a lower "
        "MEMTUNE_GROWTH_MAX; a value set above it is an error, as it could never apply). Early in "
        "a run the peak live bytes so far are a small part of what the run needs, and a share of them "
        "(MEMTUNE_GROWTH) would cost a device call every few requests on the way up; past a live peak of "
        "MEMTUNE_GROWTH_MIN / MEMTUNE_GROWTH (96 MiB by default) the floor changes nothing. Plan mode "
        "(memtune-plan) maps no floor for the steps it serves online unless this variable (or its setting "
        "growth_min) is set: it aims at 2 % of the live peak, which a floor would overshoot on a small workload.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_SMALL_SIZE",
        type=Bytes(),
        default=0,
        doc="Requests up to this size get their own virtual region per stream, apart from larger ones. "
        "0 = one region per stream, where small blocks fill the holes large blocks leave.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_FIT",
        type=Enum("best", "first"),
        default="best",
        doc="Which free hole a request takes among those that fit. best: the smallest (lowest address "
        "on ties), which packs a short run tighter, until MEMTUNE_FIRST_FIT_AFTER turns it to first fit. "
        "first: the lowest address from the start, whose layout of a repeating step settles sooner on a "
        "long run, so device calls stop growing; `memtune plan TRACE --longer N` says whether memtune's "
        "layout still grows late in a run.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_FIRST_FIT_AFTER",
        type=Int(min=0),
        default=20_000,
        doc="With MEMTUNE_FIT=best: when memtune still moves pages (unmaps free pages below the live peak "
        "to map them where a request needs them) more than this many mallocs and frees after live bytes "
        "last reached a new peak, it switches to first fit for the rest of the run. A long run's "
        "repeating step then settles into one layout and device calls stop growing, while a short run "
        "keeps best fit's tighter packing. 0 = never switch.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_TRIM_BUDGET",
        type=Float(min=0.0),
        default=1.0,
        doc="Unmap calls made to stay within MEMTUNE_SLACK are limited to this many per map call made for "
        "requests (net of those unmaps, plus a few), so a repeating workload cannot churn pages and device "
        "calls stay within a small factor of an allocator that never gives memory back. 0 never unmaps to "
        "stay within the slack (only on OOM and empty_cache); larger values track live memory more tightly "
        "at the cost of device calls.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_HIGH_WATERMARK",
        type=SizeOrFraction(),
        default=0,
        doc="Hard limit of memtune's reserved memory: a byte size (16GiB) or a share of the device (90%). "
        "Past it, free pages are unmapped and the request retried before OutOfMemoryError. 0 = the device's "
        "capacity is the only limit.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_PLAN_GROWTH",
        type=Float(min=0.0, max=1.0),
        default=1 / 64,
        doc="Plan mode (memtune-plan): MEMTUNE_GROWTH for the steps served online (while a step is learned, "
        "and after a deviation). A growth chunk mapped at the run's peak overshoots it by up to this share, "
        "and plan mode aims at 2 %; the extra device calls fall in the learning steps, which a long run "
        "pays once.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_PLAN_MIN_PERIOD",
        type=Int(min=2),
        default=4,
        doc="Plan mode (memtune-plan): the shortest repeating step, in allocation events, worth planning.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_PLAN_MAX_PERIOD",
        type=Int(min=2),
        default=32768,
        doc="Plan mode (memtune-plan): the longest repeating step, in allocation events, looked for. "
        "Memory for the learning history grows with it.",
        group=GROUP,
        reference=REFERENCE,
    )
)

declare(
    Variable(
        name="MEMTUNE_PLAN_FILE",
        type=Path(),
        default=None,
        doc="Plan mode (memtune-plan): a plan made from an earlier run of the same program (`memtune plan "
        "TRACE --save PLAN.json`). It is served from the first allocation while the run follows the "
        "recorded sequence, so the run's first steps -- where live bytes usually peak -- are planned too; "
        "at the first deviation plan mode falls back to the online policy and learns as usual. Unset = "
        "learn online only. Read when a memtune-plan allocator is created.",
        group=GROUP,
        reference=REFERENCE,
    )
)


@rule("MEMTUNE_PAGE_SIZE")
def _page_power_of_two(page: int) -> str | None:
    """The page size must be a power of two (mapping granularity)."""
    if page <= 0 or page & (page - 1):
        return f"MEMTUNE_PAGE_SIZE ({page}) must be a power of two, e.g. 2MiB"
    return None


@rule("MEMTUNE_PLAN_MIN_PERIOD", "MEMTUNE_PLAN_MAX_PERIOD")
def _plan_periods(lo: int, hi: int) -> str | None:
    """The shortest planned period may not exceed the longest."""
    if lo > hi:
        return f"MEMTUNE_PLAN_MIN_PERIOD ({lo}) exceeds MEMTUNE_PLAN_MAX_PERIOD ({hi})"
    return None
