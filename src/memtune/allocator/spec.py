"""``PresetSpec``: a policy as a declarative combination of engine parts.

A preset module builds one from its resolved settings; the one engine
(:class:`memtune.allocator.engine.Allocator`) runs any of them. To make a new
policy, build a ``PresetSpec`` from the parts in :mod:`rounding`,
:mod:`pools` and :mod:`limits` (or your own objects with the same one method)
and pass it as ``memtune.allocator(spec)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memtune.allocator.limits import Limits
from memtune.allocator.pools import MiB, PyTorchSegments, PyTorchSplit, SegmentSizing, SplitRule
from memtune.allocator.rounding import PyTorchRounding, Rounding


@dataclass(frozen=True)
class PresetSpec:
    name: str
    rounding: Rounding = field(default_factory=PyTorchRounding)
    #: rounded requests up to this size use the small pool; None = one (large) pool
    small_size: int | None = 1 * MiB
    segments: SegmentSizing = field(default_factory=PyTorchSegments)
    split: SplitRule = field(default_factory=PyTorchSplit)
    #: blocks at least this big are "oversize": never split, and requests below
    #: it may not take them (PyTorch max_split_size); None = unlimited
    max_split_size: int | None = None
    #: an oversize request may take a cached block at most this much larger
    max_non_split_rounding: int = 20 * MiB
    #: reuse only cached blocks of exactly the rounded size (MXNet free lists)
    exact_fit: bool = False
    #: a cached block may be reused for a request at most this much smaller (MPS
    #: oversize rule); None = no bound
    max_reuse_slack: int | None = None
    #: buffer cache over heaps (MPS): freed blocks stay whole as cached buffers, reused
    #: whole unless oversize (``max_reuse_slack``); their space returns to the heap
    #: (merging) only when released; new buffers are sub-allocated from heap space
    buffer_cache: bool = False
    #: merge a freed block with free neighbours in its segment
    merge: bool = True
    #: free blocks are reused only by their own stream
    per_stream: bool = True
    #: keep freed memory cached; False = give whole segments back on free (unpooled)
    cache: bool = True
    #: expandable segments: one growing virtual range per (stream, pool)
    expandable: bool = False
    small_page: int = 2 * MiB
    large_page: int = 20 * MiB
    #: virtual size of an expandable segment, as a multiple of device capacity (c10: 1 1/8)
    expandable_address_factor: float = 1.125
    limits: Limits = field(default_factory=Limits)
    #: when the hard limit refuses memory, release the cache and retry (PyTorch, MPS);
    #: False = fail at once (CuPy's limit check raises before touching its pool)
    release_cache_on_limit: bool = True
    #: the setting an OOM message suggests
    oom_hint: str = ""
    #: resolved settings, for reports and results.json
    settings: dict[str, Any] = field(default_factory=dict)
