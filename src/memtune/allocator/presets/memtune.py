"""``memtune`` and ``memtune-plan``: memtune's own policies.

``memtune`` is the online policy of :mod:`memtune.allocator.arena`: one virtual
region per stream, best fit with coalescing, pages mapped on demand and
unmapped lazily (with hysteresis and a device-call budget), so reserved memory
tracks the peak of live bytes within ``MEMTUNE_SLACK``.

``memtune-plan`` adds plan mode (:mod:`memtune.trace.plan`): it learns a
repeating step online, packs it offline and serves later steps from one arena,
falling back to the online policy when the sequence deviates.

Both are declared from ``MEMTUNE_*`` variables (config/declarations/policy.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from memtune.allocator.arena import ArenaSpec
from memtune.allocator.limits import Limits
from memtune.allocator.presets import PresetInfo, Setting
from memtune.errors import ConfigError

SETTINGS = (
    Setting("page_size", "MEMTUNE_PAGE_SIZE", "Mapping granularity (power of two; CUDA: 2 MiB).",
            aliases=("MEMTUNE_PAGE_SIZE", "page")),
    Setting("slack", "MEMTUNE_SLACK", "Reserved may exceed the live peak by this share before pages are unmapped.",
            aliases=("MEMTUNE_SLACK",)),
    Setting("move_slack", "MEMTUNE_MOVE_SLACK", "Below the live peak, reserved may exceed it by this share before "
            "pages move (at least slack).", aliases=("MEMTUNE_MOVE_SLACK",)),
    Setting("climb_chunks", "MEMTUNE_CLIMB_CHUNKS", "While live bytes climb to a new peak, reserved may exceed the "
            "slack by this many growth chunks before pages are unmapped.", aliases=("MEMTUNE_CLIMB_CHUNKS",)),
    Setting("growth", "MEMTUNE_GROWTH", "Extra share of the live peak mapped when a region grows.",
            aliases=("MEMTUNE_GROWTH",)),
    Setting("growth_max", "MEMTUNE_GROWTH_MAX", "Upper bound of the extra bytes mapped when a region grows.",
            aliases=("MEMTUNE_GROWTH_MAX",)),
    Setting("growth_min", "MEMTUNE_GROWTH_MIN", "Lower bound of the bytes mapped when a region grows (at most "
            "growth_max).", aliases=("MEMTUNE_GROWTH_MIN",)),
    Setting("small_size", "MEMTUNE_SMALL_SIZE", "Requests up to this size get their own region (0 = one region).",
            aliases=("MEMTUNE_SMALL_SIZE",)),
    Setting("fit", "MEMTUNE_FIT", "Which free hole a request takes: best (the smallest that fits) or first "
            "(the lowest address).", aliases=("MEMTUNE_FIT",)),
    Setting("first_fit_after", "MEMTUNE_FIRST_FIT_AFTER", "Best fit turns to first fit when pages still move this "
            "many mallocs and frees after the live peak (0 = never).", aliases=("MEMTUNE_FIRST_FIT_AFTER",)),
    Setting("trim_budget", "MEMTUNE_TRIM_BUDGET", "Device calls allowed for unmapping hot pages, per region growth.",
            aliases=("MEMTUNE_TRIM_BUDGET",)),
    Setting("high_watermark", "MEMTUNE_HIGH_WATERMARK", "Hard limit of reserved memory (bytes or share; 0 = none).",
            aliases=("MEMTUNE_HIGH_WATERMARK", "limit")),
)
PLAN_SETTINGS = SETTINGS + (
    Setting("plan_growth", "MEMTUNE_PLAN_GROWTH",
            "MEMTUNE_GROWTH for the steps plan mode serves online (learning, deviations).",
            aliases=("MEMTUNE_PLAN_GROWTH",)),
    Setting("min_period", "MEMTUNE_PLAN_MIN_PERIOD", "Shortest repeating step (events) worth planning.",
            aliases=("MEMTUNE_PLAN_MIN_PERIOD",)),
    Setting("max_period", "MEMTUNE_PLAN_MAX_PERIOD", "Longest repeating step (events) looked for.",
            aliases=("MEMTUNE_PLAN_MAX_PERIOD",)),
    Setting("plan_file", "MEMTUNE_PLAN_FILE", "A plan made from an earlier run (memtune plan TRACE --save), "
            "served from the first allocation.", aliases=("MEMTUNE_PLAN_FILE",)),
)


def env_settings() -> dict[str, Any]:
    from memtune import config

    return {s.name: config.get(s.config_key) for s in SETTINGS if s.config_key}


def env_plan_settings() -> dict[str, Any]:
    from memtune import config

    return {s.name: config.get(s.config_key) for s in PLAN_SETTINGS if s.config_key}


def _was_set(name: str) -> bool:
    """Whether variable ``name`` has a value other than its declared default (environment,
    memtune.config or a scoped override)."""
    from memtune import config

    return config.explain(name).source != "default"


def _limit(value: Any, capacity: int) -> int | None:
    if value is None:
        return None
    resolve = getattr(value, "resolve", None)
    n = int(resolve(capacity) or 0) if resolve is not None else int(value)
    return n or None


def build(settings: dict[str, Any], capacity: int, explicit: frozenset[str], name: str = "memtune") -> ArenaSpec:
    page = int(settings["page_size"])
    if page < 512 or page & (page - 1):
        raise ConfigError(f"page_size (MEMTUNE_PAGE_SIZE) = {page}: must be a power of two of at least 512 B, "
                          "e.g. 2MiB", variable="MEMTUNE_PAGE_SIZE")
    small = int(settings["small_size"]) or None
    limit = _limit(settings.get("high_watermark"), capacity)
    floor, ceiling = int(settings["growth_min"]), int(settings["growth_max"])
    if floor > ceiling and ("growth_min" in explicit or _was_set("MEMTUNE_GROWTH_MIN")):
        # (a default floor above a lowered growth_max is capped, as documented; a floor
        # someone set that could never apply is a mistake worth naming)
        raise ConfigError(f"growth_min (MEMTUNE_GROWTH_MIN) = {floor} exceeds growth_max (MEMTUNE_GROWTH_MAX) = "
                          f"{ceiling}: a region grows by at most growth_max, so this floor would never apply; "
                          "expected growth_min <= growth_max (raise MEMTUNE_GROWTH_MAX too)",
                          variable="MEMTUNE_GROWTH_MIN")
    resolved = {k: settings[k] for k in ("page_size", "slack", "move_slack", "climb_chunks", "growth", "growth_max",
                                         "growth_min", "small_size", "fit", "first_fit_after", "trim_budget")}
    resolved["high_watermark"] = limit or 0
    return ArenaSpec(
        name=name,
        page=page,
        small_size=small,
        slack=float(settings["slack"]),
        move_slack=float(settings["move_slack"]),
        climb_chunks=float(settings["climb_chunks"]),
        growth=float(settings["growth"]),
        growth_max=ceiling,
        growth_min=floor,
        trim_budget=float(settings["trim_budget"]),
        fit=str(settings["fit"]),
        first_fit_after=int(settings["first_fit_after"]),
        limits=Limits(hard_limit=limit, hard_limit_setting="MEMTUNE_HIGH_WATERMARK" if limit else None),
        settings=resolved,
    )


def build_plan(settings: dict[str, Any], capacity: int, explicit: frozenset[str]):
    from memtune.trace.plan import PlanSpec

    lo, hi = int(settings["min_period"]), int(settings["max_period"])
    if lo > hi:
        raise ConfigError(f"min_period ({lo}) exceeds max_period ({hi}) (MEMTUNE_PLAN_MIN_PERIOD / "
                          "MEMTUNE_PLAN_MAX_PERIOD)", variable="MEMTUNE_PLAN_MIN_PERIOD")
    # the online steps map smaller growth chunks (plan_growth) unless growth itself was given
    growth = settings["growth"] if "growth" in explicit and "plan_growth" not in explicit else settings["plan_growth"]
    # ... and no floor under them unless one was set (plan mode aims at 2 % of a peak
    # that a floor of a few MiB would overshoot on a small workload)
    floor = settings["growth_min"] if "growth_min" in explicit or _was_set("MEMTUNE_GROWTH_MIN") else 0
    # ... nor a looser slack for moves (the online steps stay within its 2 %). Its chunks
    # (1/64 of the live peak) leave little unused above the top, so they count from the
    # whole peak, not from a climb (1/64 of a climb would cost a call every few requests);
    # and its moves keep the whole budget (a plan, not moves, serves a long run's steps).
    # Counted from the whole peak, every climb is its first, and none gets room for a climb:
    # with room after eight unmaps the shared 2-GPU profiler trace's whole run peaks at 1.0209 x
    # its bound, against 1.0192 (docs/policy-log.md, "Room for a climb")
    moves = settings["move_slack"] if "move_slack" in explicit or _was_set("MEMTUNE_MOVE_SLACK") else 0.0
    online = dataclasses.replace(
        build(dict(settings, growth=growth, growth_min=floor, move_slack=moves), capacity, explicit,
              name="memtune-plan"),
        climb_pause=0, move_budget=1.0, first_climb_unmaps=None)
    resolved = dict(online.settings, plan_growth=growth, min_period=lo, max_period=hi)
    run_plan = None
    path = settings.get("plan_file")
    if path:
        from memtune.errors import PlanFileError
        from memtune.trace import runplan

        try:
            run_plan = runplan.load(path)
        except PlanFileError as e:
            raise ConfigError(f"plan_file (MEMTUNE_PLAN_FILE) = {str(path)!r}: {e}",
                              variable="MEMTUNE_PLAN_FILE") from None
        resolved["plan_file"] = str(path)
    return PlanSpec(name="memtune-plan", online=online, min_period=lo, max_period=hi, run_plan=run_plan,
                    settings=resolved)


PRESETS = (
    PresetInfo(name="memtune", reproduces="memtune's own online policy (virtual regions, pages mapped on demand)",
               settings=SETTINGS, env=env_settings, build=build),
    PresetInfo(name="memtune-plan", reproduces="memtune plus plan mode (learns a repeating step, packs it offline)",
               settings=PLAN_SETTINGS, env=env_plan_settings, build=build_plan),
)
