"""memtune.report: tables, plots, the HTML report and the ``export ...`` advice.

Everything here consumes :class:`memtune.trace.replay.ReplayResult` objects.
"""

from __future__ import annotations

from typing import Any

__all__ = ["write_report", "advise", "summary_table", "chrome_trace"]


def __getattr__(name: str) -> Any:  # lazy: matplotlib loads only when plotting
    if name == "write_report":
        from memtune.report.html import write_report

        return write_report
    if name == "advise":
        from memtune.report.advice import advise

        return advise
    if name == "summary_table":
        from memtune.report.tables import summary_table

        return summary_table
    if name == "chrome_trace":
        from memtune.report.chrome import chrome_trace

        return chrome_trace
    raise AttributeError(f"module 'memtune.report' has no attribute {name!r}")
