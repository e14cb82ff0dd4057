"""What no allocator can beat, per trace/device stream of a set of results.

Why: a peak reserved means little alone. The peak of live requested bytes is a
hard lower bound for any allocator that never moves data; for a lifetime table
(every buffer's lifetime known up front) an offline static packing shows how
close a planner that sees the future gets. Reports print both beside the
policies' results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from memtune.trace import packing as _packing
from memtune.trace.model import device_name
from memtune.trace.replay import ReplayResult, trace_label
from memtune.units import format_bytes

#: Formats whose every lifetime is known before replay (static packing applies).
STATIC_FORMATS = ("lifetimes",)


@dataclass(frozen=True)
class Bound:
    """The lower bound of one trace/device stream, and its best static packing if computed."""

    trace: str
    device: int
    lower_bound: int
    packing: _packing.Packing | None = None

    def to_json(self) -> dict[str, Any]:
        pk = self.packing
        return {
            "trace": self.trace,
            "device": self.device,
            "lower_bound_bytes": self.lower_bound,
            "static_packing": None if pk is None else {
                "peak_bytes": pk.peak, "ratio": pk.ratio, "method": pk.method, "seconds": round(pk.seconds, 3)},
        }

    def line(self) -> str:
        """One sentence for a terminal report."""
        text = (f"{trace_label(self.trace)}, {device_name(self.device)}: lower bound {format_bytes(self.lower_bound)} "
                "(peak live requested)")
        pk = self.packing
        if pk is not None:
            text += (f"; best static packing {format_bytes(pk.peak)} = {pk.ratio:.4f} x the bound "
                     f"({pk.method}, every lifetime known)")
        return text


def bounds(results: Sequence[ReplayResult], pack_seconds: float = 2.0, *, rounds: int | None = None,
           lenient: bool = False, progress: Callable[[str], None] | None = None) -> list[Bound]:
    """One :class:`Bound` per trace/device stream of ``results`` (in their order).

    Lifetime tables read from a file also get the best static packing
    :func:`memtune.trace.packing.pack` finds in ``pack_seconds`` (0 = none) and, if
    given, ``rounds`` improvement rounds (output independent of the machine's speed).
    ``progress(trace)`` is called before each packing.
    """
    from memtune.trace.plan import lifetimes
    from memtune.trace.replay import load

    out: list[Bound] = []
    seen: set[tuple[str, int]] = set()
    for r in results:
        key = (r.trace, r.device)
        if key in seen:
            continue
        seen.add(key)
        pk = None
        if pack_seconds > 0 and r.trace_format in STATIC_FORMATS and Path(r.trace).is_file():
            if progress is not None:
                progress(r.trace)
            dt = load(r.trace, lenient=lenient).device(r.device)
            pk = _packing.pack(lifetimes(dt.events), time_budget=pack_seconds, rounds=rounds)
        out.append(Bound(r.trace, r.device, r.peak_requested_bytes, pk))
    return out
