"""PyTorch's caching-allocator configuration string (``PYTORCH_CUDA_ALLOC_CONF`` /
``PYTORCH_ALLOC_CONF``), parsed as c10/core/AllocatorConfig.cpp and
c10/cuda/CUDAAllocatorConfig.cpp parse it, but strictly typed."""

from __future__ import annotations

import re
from typing import Any

from memtune.config import allow_names, declare, rule, watch_prefix
from memtune.config.registry import REGISTRY, Variable
from memtune.config.types import Bool, Enum, Float, Int, InvalidValue, Option, OptionList, VarType

GROUP = "pytorch"

#: roundup_power2_divisions applies per power-of-two interval from 1 MiB to 64 GiB:
#: interval i covers sizes in [2^i MiB, 2^(i+1) MiB); the last one everything above.
ROUNDUP_INTERVALS = 16
_MB = 1024 * 1024


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class RoundupDivisions(VarType):
    """``roundup_power2_divisions``: one power of two for every size, or a list
    ``[256:1,512:2,>:8]`` of interval (MiB, a power of two) -> divisions (a power of
    two, or 0 = no extra rounding); ``>`` sets every interval after the last one named.

    Normalized to a tuple of ``ROUNDUP_INTERVALS`` ints: entry ``i`` is the number
    of divisions for sizes in ``[2^i, 2^(i+1))`` MiB (the last entry: everything
    larger). As in PyTorch, intervals before the first one named take its value
    and intervals skipped between two named ones stay 0 (no extra rounding).
    """

    name = "roundup divisions"

    def parse(self, raw: str) -> tuple[int, ...]:
        text = raw.strip().replace(" ", "")
        if not text.startswith("["):
            if not re.fullmatch(r"[0-9]+", text):
                raise InvalidValue("not a power of two or a [interval:divisions,...] list", accepted=self.accepted())
            n = int(text)
            if not _is_pow2(n):
                raise InvalidValue("the divisions must be a power of two", accepted=self.accepted())
            return (n,) * ROUNDUP_INTERVALS
        if not text.endswith("]"):
            raise InvalidValue("a list must end with ']'", accepted=self.accepted())
        body = text[1:-1]
        if not body:
            raise InvalidValue("empty list", accepted=self.accepted())
        pairs: list[tuple[str, int]] = []
        for item in body.split(","):
            interval, sep, div_text = item.partition(":")
            if not sep or not re.fullmatch(r"[0-9]+", div_text):
                raise InvalidValue(f"{item!r} is not interval:divisions", accepted=self.accepted())
            pairs.append((interval, int(div_text)))
        return self.from_pairs(pairs)

    def from_pairs(self, pairs: list[tuple[str, int]]) -> tuple[int, ...]:
        """Validated (interval MiB or ``">"``, divisions) pairs -> the per-interval
        tuple, with c10's fill rules. The one expansion of the list form: the
        snapshot reader's ``allocator_settings`` mapping comes through here too."""
        result = [0] * ROUNDUP_INTERVALS
        first = True
        last_index = 0
        for interval, div in pairs:
            interval = str(interval).strip()
            if div != 0 and not _is_pow2(div):
                raise InvalidValue(f"divisions {div} is not a power of two (or 0)", accepted=self.accepted())
            if interval == ">":
                for i in range(last_index + 1, ROUNDUP_INTERVALS):
                    result[i] = div
                continue
            if not re.fullmatch(r"[0-9]+", interval) or not _is_pow2(int(interval)):
                raise InvalidValue(f"interval {interval!r} is not a power of two (MiB) or '>'", accepted=self.accepted())
            index = min(int(interval).bit_length() - 1, ROUNDUP_INTERVALS - 1)
            if first:
                for i in range(index):
                    result[i] = div
                first = False
            result[index] = div
            last_index = index
        return tuple(result)

    def convert(self, value: Any) -> tuple[int, ...]:
        if isinstance(value, bool):
            raise InvalidValue("expected divisions, got bool", accepted=self.accepted())
        if isinstance(value, int):
            return self.parse(str(value))
        if isinstance(value, (tuple, list)) and len(value) == ROUNDUP_INTERVALS and all(
            isinstance(v, int) and not isinstance(v, bool) and (v == 0 or _is_pow2(v)) for v in value
        ):
            return tuple(value)
        if isinstance(value, str):
            return self.parse(value)
        raise InvalidValue(f"expected divisions, got {value!r}", accepted=self.accepted())

    def format(self, value: Any) -> str:
        if value is None:
            return ""
        values = tuple(value)
        if len(set(values)) == 1:
            return str(values[0]) if values[0] else "[1:0,>:0]"  # PyTorch rejects a bare 0
        parts = [f"{1 << i}:{v}" for i, v in enumerate(values)]
        return "[" + ",".join(parts) + "]"

    def accepted(self) -> str:
        return (
            "a power of two (divisions for every size), or a list [interval:divisions,...,>:divisions] "
            "with intervals in MiB that are powers of two and divisions that are powers of two or 0"
        )

    def describe(self) -> str:
        return "power of two or [MiB:divisions,...] list"


NO_EFFECT = "Accepted (PyTorch accepts it), no effect in memtune."

OPTIONS: dict[str, Option] = {
    "max_split_size_mb": Option(
        Int(min=20),
        None,
        "Blocks at least this large are never split; a smaller request may not take a cached block this "
        "large (limits fragmentation of big blocks). Unset = unlimited (every block may be split). "
        "PyTorch requires >= 20.",
        unit="MiB",
        default_doc="unset (unlimited)",
    ),
    "max_non_split_rounding_mb": Option(
        Int(min=20),
        20,
        "An oversize request (>= max_split_size) may take a cached block at most this much larger than "
        "itself. PyTorch requires >= 20.",
        unit="MiB",
    ),
    "garbage_collection_threshold": Option(
        Float(min=0.0, max=1.0, max_exclusive=True),
        0.0,
        "When reserved memory exceeds this share of the allowed maximum, free unsplit cached large blocks "
        "(oldest first, by look-up age) before asking the device. 0 = off.",
    ),
    "roundup_power2_divisions": Option(
        RoundupDivisions(),
        (0,) * ROUNDUP_INTERVALS,
        "Round request sizes up to the next 1/N step of their power-of-two interval (1200 B with N=4 -> "
        "1280 B). One N for all sizes, or per interval from 1 MiB up: [256:1,512:2,>:8]. 0 = plain "
        "512-byte rounding. Normalized to 16 per-interval divisions (1 MiB ... >= 32 GiB).",
        default_doc="0 (off)",
    ),
    "expandable_segments": Option(
        Bool(),
        False,
        "One growing virtual segment per stream and pool into which pages are mapped (2 MiB small, "
        "20 MiB large) instead of many fixed segments; cuts fragmentation.",
    ),
    "backend": Option(
        Enum("native", "cudaMallocAsync"),
        "native",
        "native = the caching allocator; cudaMallocAsync = CUDA's stream-ordered allocator, which ignores "
        "max_split_size_mb, roundup_power2_divisions and garbage_collection_threshold.",
    ),
    "release_lock_on_cudamalloc": Option(Bool(), False, NO_EFFECT + " Releases the allocator lock around cudaMalloc.", effect=False),
    "release_lock_on_hipmalloc": Option(Bool(), False, NO_EFFECT + " ROCm spelling of release_lock_on_cudamalloc.", effect=False),
    "pinned_use_cuda_host_register": Option(
        Bool(), False, NO_EFFECT + " Pinned host memory via malloc + cudaHostRegister instead of cudaHostAlloc.", effect=False),
    "pinned_use_hip_host_register": Option(Bool(), False, NO_EFFECT + " ROCm spelling of pinned_use_cuda_host_register.", effect=False),
    "pinned_num_register_threads": Option(
        Int(min=1, max=128, power_of_two=True), 1, NO_EFFECT + " Threads used by pinned_use_cuda_host_register.", effect=False),
    "pinned_use_background_threads": Option(
        Bool(), False, NO_EFFECT + " Process pinned-memory events on a background thread.", effect=False),
    "pinned_reserve_segment_size_mb": Option(
        Int(min=0), 0, NO_EFFECT + " Pre-reserve a pinned host segment of this size.", unit="MiB", effect=False),
    "pinned_free_catch_all": Option(Bool(), False, NO_EFFECT, effect=False),
    "graph_capture_record_stream_reuse": Option(
        Bool(), False, NO_EFFECT + " Reuse blocks freed during CUDA-graph capture across streams.", effect=False),
    "per_process_memory_fraction": Option(
        Float(min=0.0, max=1.0),
        1.0,
        "Cap the memory this process may reserve at this share of the device, as "
        "torch.cuda.set_per_process_memory_fraction does; allocations past it fail early. The garbage collector "
        "(garbage_collection_threshold) acts only under such a cap, as in PyTorch."),
    "throw_on_cudamalloc_oom": Option(Bool(), False, NO_EFFECT, effect=False),
}

#: Keys the cudaMallocAsync backend ignores (PyTorch warns when they are combined).
NATIVE_ONLY = ("max_split_size_mb", "roundup_power2_divisions", "garbage_collection_threshold")

_PRECEDENCE = (
    "PyTorch reads PYTORCH_ALLOC_CONF first and ignores PYTORCH_CUDA_ALLOC_CONF when both are set; "
    "memtune does the same."
)

watch_prefix("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
allow_names(GROUP, "PYTORCH_HIP_ALLOC_CONF")

declare(
    Variable(
        name="PYTORCH_ALLOC_CONF",
        type=OptionList(OPTIONS),
        default=None,
        doc="PyTorch's caching-allocator settings for every accelerator (the newer name of "
        "PYTORCH_CUDA_ALLOC_CONF): comma-separated key:value pairs, e.g. "
        "max_split_size_mb:128,expandable_segments:True. " + _PRECEDENCE + " Read once, when the allocator starts.",
        read_once=True,
        group=GROUP,
        reference="c10/core/AllocatorConfig.h, c10/cuda/CUDAAllocatorConfig.h",
    )
)

declare(
    Variable(
        name="PYTORCH_CUDA_ALLOC_CONF",
        type=OptionList(OPTIONS),
        default=None,
        doc="PyTorch's CUDA caching-allocator settings (the older name; same keys as PYTORCH_ALLOC_CONF). "
        + _PRECEDENCE
        + " Read once, when the allocator starts.",
        read_once=True,
        group=GROUP,
        reference="c10/cuda/CUDAAllocatorConfig.cpp; docs: notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf",
    )
)


def alloc_conf() -> tuple[dict[str, Any], str]:
    """The effective PyTorch allocator settings and the variable they came from,
    with PyTorch's precedence (PYTORCH_ALLOC_CONF wins over PYTORCH_CUDA_ALLOC_CONF).
    Reads (and so freezes) both variables."""
    new = REGISTRY.get("PYTORCH_ALLOC_CONF")
    old = REGISTRY.get("PYTORCH_CUDA_ALLOC_CONF")
    _, new_source = REGISTRY.peek("PYTORCH_ALLOC_CONF")
    if new_source != "default":
        return new, "PYTORCH_ALLOC_CONF"
    _, old_source = REGISTRY.peek("PYTORCH_CUDA_ALLOC_CONF")
    if old_source != "default":
        return old, "PYTORCH_CUDA_ALLOC_CONF"
    return new, "default"


@rule("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")
def _both_names(new: dict[str, Any], old: dict[str, Any]) -> str | None:
    """When both names are set to different settings, PYTORCH_CUDA_ALLOC_CONF is ignored."""
    defaults = OptionList(OPTIONS).defaults()
    if new != defaults and old != defaults and new != old:
        return "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF are both set and differ; " + _PRECEDENCE
    return None


def _async_ignores(name: str, conf: dict[str, Any]) -> str | None:
    if conf.get("backend") != "cudaMallocAsync":
        return None
    ignored = [k for k in NATIVE_ONLY if conf.get(k) != OPTIONS[k].default]
    if ignored:
        return f"{name}: backend:cudaMallocAsync ignores {', '.join(ignored)}"
    return None


@rule("PYTORCH_ALLOC_CONF")
def _async_new(conf: dict[str, Any]) -> str | None:
    """backend:cudaMallocAsync ignores the native allocator's tuning keys."""
    return _async_ignores("PYTORCH_ALLOC_CONF", conf)


@rule("PYTORCH_CUDA_ALLOC_CONF")
def _async_old(conf: dict[str, Any]) -> str | None:
    """backend:cudaMallocAsync ignores the native allocator's tuning keys."""
    return _async_ignores("PYTORCH_CUDA_ALLOC_CONF", conf)
