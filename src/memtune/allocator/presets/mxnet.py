"""``mxnet-naive``, ``mxnet-round``, ``mxnet-unpooled``: MXNet's GPU storage managers
(src/storage/pooled_storage_manager.h).

Pooled managers keep exact-size free lists: a request takes a cached buffer of
exactly its rounded size or gets a new cudaMalloc of that size; nothing is split
or merged, and streams are not distinguished. Before a cudaMalloc that would
leave less than ``MXNET_GPU_MEM_POOL_RESERVE`` percent of the device free, the
whole pool is released; on a failed cudaMalloc too, then it retries once.
Unpooled calls cudaMalloc/cudaFree for every request. ``mxnet`` (not listed)
picks one by ``MXNET_GPU_MEM_POOL_TYPE``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from memtune.allocator.limits import Limits
from memtune.allocator.pools import ExactSegments, NeverSplit
from memtune.allocator.presets import PresetInfo, Setting
from memtune.allocator.rounding import Exact, MXNetNaive, MXNetRound
from memtune.allocator.spec import PresetSpec

PAGE = "MXNET_GPU_MEM_POOL_PAGE_SIZE"
LARGE = "MXNET_GPU_MEM_LARGE_ALLOC_ROUND_SIZE"
CUTOFF = "MXNET_GPU_MEM_POOL_ROUND_LINEAR_CUTOFF"
RESERVE = "MXNET_GPU_MEM_POOL_RESERVE"
TYPE = "MXNET_GPU_MEM_POOL_TYPE"

_ALL = {
    "page_size": (PAGE, "Round requests up to this many bytes (and pool by that size)."),
    "large_alloc_round_size": (LARGE, "Naive: above this size round to multiples of it."),
    "round_linear_cutoff": (CUTOFF, "Round: powers of two up to 2^cutoff, then multiples of 2^cutoff."),
    "reserve": (RESERVE, "Percent of device memory to keep free: release the pool before going below it."),
}
_USES = {
    "Naive": ("page_size", "large_alloc_round_size", "reserve"),
    "Round": ("page_size", "round_linear_cutoff", "reserve"),
    "Unpooled": (),
}


def _settings(kind: str) -> tuple[Setting, ...]:
    return tuple(Setting(k, _ALL[k][0], _ALL[k][1], aliases=(_ALL[k][0],)) for k in _USES[kind])


def env_settings(kind: str) -> dict[str, Any]:
    from memtune import config

    return {k: config.get(_ALL[k][0]) for k in _USES[kind]}


def _reserve_percent(value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    for attr in ("percent", "value"):
        if hasattr(value, attr):
            return int(getattr(value, attr))
    return int(value)


def build(kind: str, settings: dict[str, Any], capacity: int, explicit: frozenset[str]) -> PresetSpec:
    name = f"mxnet-{kind.lower()}"
    hint = f"{TYPE}=Round or a smaller {RESERVE}"
    if kind == "Unpooled":
        return PresetSpec(name=name, rounding=Exact(), small_size=None, segments=ExactSegments(),
                          split=NeverSplit(), merge=False, per_stream=False, cache=False, oom_hint="", settings={})
    page = int(settings["page_size"])
    if kind == "Naive":
        rounding = MXNetNaive(page_size=page, large_alloc_round_size=int(settings["large_alloc_round_size"]))
    else:
        rounding = MXNetRound(cutoff=int(settings["round_linear_cutoff"]), page_size=page)
    return PresetSpec(
        name=name,
        rounding=rounding,
        small_size=None,
        segments=ExactSegments(),
        split=NeverSplit(),
        exact_fit=True,
        merge=False,
        per_stream=False,
        limits=Limits(reserve_percent=_reserve_percent(settings["reserve"])),
        oom_hint=hint,
        settings=dict(settings),
    )


def _info(kind: str, hidden_name: str | None = None) -> PresetInfo:
    return PresetInfo(
        name=hidden_name or f"mxnet-{kind.lower()}",
        reproduces=f"MXNet {kind} GPU storage manager (src/storage/pooled_storage_manager.h)",
        settings=_settings(kind),
        env=partial(env_settings, kind),
        build=partial(build, kind),
        hidden=hidden_name is not None,
    )


def _by_type_env() -> dict[str, Any]:
    from memtune import config

    kind = config.get(TYPE)
    return {"_kind": kind, **env_settings(kind)}


def _by_type_build(settings: dict[str, Any], capacity: int, explicit: frozenset[str]) -> PresetSpec:
    kind = settings.pop("_kind")
    return build(kind, {k: v for k, v in settings.items() if k in _USES[kind]}, capacity, explicit)


PRESETS = (
    _info("Naive"),
    _info("Round"),
    _info("Unpooled"),
    PresetInfo(
        name="mxnet",
        reproduces=f"MXNet's GPU storage manager chosen by {TYPE}",
        settings=tuple({s.name: s for k in _USES for s in _settings(k)}.values()),
        env=_by_type_env,
        build=_by_type_build,
        hidden=True,
    ),
)
