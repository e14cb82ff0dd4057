"""Rounding strategies: the size a request occupies in the allocator.

Each strategy is a small frozen object with ``round(size) -> int``; presets pick
one. They are exact ports of the frameworks' rules (sources named per class).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

MB = 1 << 20

#: PyTorch's power-of-two division intervals: index i covers sizes in [2^(20+i), 2^(21+i)),
#: the first also everything below 1 MiB and the last everything above.
ROUNDUP_INTERVALS = 16


class Rounding(Protocol):
    name: str

    def round(self, size: int) -> int: ...


def _round_up(size: int, multiple: int) -> int:
    return (size + multiple - 1) // multiple * multiple


@dataclass(frozen=True)
class Exact:
    """No rounding at all (sizes as requested)."""

    name: str = "exact"

    def round(self, size: int) -> int:
        return size


@dataclass(frozen=True)
class Multiple:
    """Round up to a multiple of ``unit`` (CuPy: 512 B, ``_round_size`` in memory.pyx)."""

    unit: int = 512
    name: str = "multiple"

    def round(self, size: int) -> int:
        u = self.unit
        return (size + u - 1) // u * u


def normalize_divisions(value: object) -> tuple[int, ...]:
    """PyTorch ``roundup_power2_divisions`` in any accepted form -> 16 per-interval values.

    Accepts one number (every interval), PyTorch's text form (``"4"``,
    ``"[256:1,>:8]"``), a sequence of 16 numbers, or a mapping
    from interval start in MB (``1, 2, 4, ... 32768``, or ``">"`` for every
    interval after the last one named) to a number of divisions, as PyTorch's
    ``[256:1,512:2,>:8]`` list form and a snapshot's ``allocator_settings`` use.
    Intervals below the first named one take its value (PyTorch's rule).
    """
    from memtune.config.declarations.pytorch import RoundupDivisions

    if value is None:
        return (0,) * ROUNDUP_INTERVALS
    if isinstance(value, bool):
        raise ValueError(f"roundup_power2_divisions must be a number, a list or a mapping; got {value!r}")
    if isinstance(value, int):
        return (int(value),) * ROUNDUP_INTERVALS
    if isinstance(value, str):
        return RoundupDivisions().parse(value)
    if isinstance(value, dict) or hasattr(value, "items"):
        items = list(value.items())  # type: ignore[attr-defined]
    else:
        seq = list(value)  # type: ignore[call-overload]
        if len(seq) == ROUNDUP_INTERVALS and all(isinstance(v, int) and not isinstance(v, bool) for v in seq):
            return tuple(int(v) for v in seq)
        items = [tuple(p) for p in seq]
    return RoundupDivisions().from_pairs([(str(k), int(d)) for k, d in items])


def divisions_to_text(divisions: Sequence[int]) -> str:
    """The 16 per-interval values in PyTorch's list syntax (round-trips through normalize)."""
    if len(set(divisions)) == 1:
        return str(divisions[0])
    return "[" + ",".join(f"{1 << i}:{d}" for i, d in enumerate(divisions)) + "]"


def _roundup_power2_next_division(size: int, divisions: int) -> int:
    # c10 roundup_power2_next_division
    if size & (size - 1) == 0:
        return size
    power2_floor = 1 << (size.bit_length() - 1)
    step = power2_floor >> (divisions.bit_length() - 1)
    if step == 0:
        return power2_floor << 1
    floor = size & ~(step - 1)
    return size if floor == size else floor + step


@dataclass(frozen=True)
class PyTorchRounding:
    """c10 ``round_size``: 512 B minimum and multiples, or the next 1/N step of the
    size's power-of-two interval when ``roundup_power2_divisions`` gives N > 1."""

    divisions: tuple[int, ...] = (0,) * ROUNDUP_INTERVALS
    min_block: int = 512
    name: str = "pytorch"
    _any: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        if len(self.divisions) != ROUNDUP_INTERVALS:
            raise ValueError(f"need {ROUNDUP_INTERVALS} per-interval division values; got {len(self.divisions)}")
        for d in self.divisions:
            if d < 0 or (d and d & (d - 1)):
                raise ValueError(f"roundup_power2_divisions values must be 0 or a power of two; got {d}")
        object.__setattr__(self, "_any", any(d > 1 for d in self.divisions))

    def divisions_for(self, size: int) -> int:
        index = size.bit_length() - 1 - 20
        if index < 0:
            index = 0
        elif index >= ROUNDUP_INTERVALS:
            index = ROUNDUP_INTERVALS - 1
        return self.divisions[index]

    def round(self, size: int) -> int:
        mb = self.min_block
        if size < mb:
            return mb
        if self._any:
            d = self.divisions_for(size)
            if d > 1 and size > mb * d:
                return _roundup_power2_next_division(size, d)
        return (size + mb - 1) // mb * mb


@dataclass(frozen=True)
class MXNetNaive:
    """MXNet Naive pool: round to the page size, and above ``large_alloc_round_size``
    to multiples of it (``RoundAllocSize`` in pooled_storage_manager.h)."""

    page_size: int = 4096
    large_alloc_round_size: int = 2 * MB
    name: str = "mxnet-naive"

    def round(self, size: int) -> int:
        size = _round_up(size, self.page_size)
        if size > self.large_alloc_round_size:
            size = _round_up(size, self.large_alloc_round_size)
        return size


@dataclass(frozen=True)
class MXNetRound:
    """MXNet Round pool: powers of two (at least the page size) up to 2^cutoff, then
    multiples of 2^cutoff (``get_bucket``/``get_size`` in pooled_storage_manager.h)."""

    cutoff: int = 24
    page_size: int = 4096
    name: str = "mxnet-round"

    def round(self, size: int) -> int:
        log_size = (size - 1).bit_length() if size > 1 else 0  # ceil(log2(size))
        if log_size > self.cutoff:
            return _round_up(size, 1 << self.cutoff)
        return max(1 << log_size, self.page_size)
