"""Heuristic-vs-optimal reports from a results store (``opsched report``).

:func:`build_report` writes a self-contained HTML page (interactive plotly figures, plotly.js
inline), static matplotlib PNGs and optionally Markdown; :mod:`opsched.report.stats` has the
numbers (gaps to proven optima, wins, time to solution, performance profiles, peak memory).
"""

from typing import TYPE_CHECKING

from opsched._lazy import lazy_exports

#: Loaded on first use (:mod:`opsched._lazy`), so that the command line's modules here import
#: only what a command needs.
_LAZY: dict[str, str] = {
    "ReportData": "opsched.report.build",
    "build_report": "opsched.report.build",
    "collect": "opsched.report.build",
    "gap_table": "opsched.report.stats",
    "instance_optima": "opsched.report.stats",
    "peak_memory_table": "opsched.report.stats",
    "performance_profile": "opsched.report.stats",
    "time_table": "opsched.report.stats",
    "win_table": "opsched.report.stats",
    "with_gaps": "opsched.report.stats",
    "with_peak_gaps": "opsched.report.stats",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

if TYPE_CHECKING:
    from opsched.report.build import ReportData, build_report, collect
    from opsched.report.stats import (
        gap_table,
        instance_optima,
        peak_memory_table,
        performance_profile,
        time_table,
        win_table,
        with_gaps,
        with_peak_gaps,
    )


__all__ = [
    "ReportData",
    "build_report",
    "collect",
    "gap_table",
    "instance_optima",
    "peak_memory_table",
    "performance_profile",
    "time_table",
    "win_table",
    "with_gaps",
    "with_peak_gaps",
]
