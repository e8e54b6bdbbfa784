"""Heuristic-vs-optimal reports from a results store (``opsched report``).

:func:`build_report` writes a self-contained HTML page (interactive plotly figures, plotly.js
inline), static matplotlib PNGs and optionally Markdown; :mod:`opsched.report.stats` has the
numbers (gaps to proven optima, wins, time to solution, performance profiles, peak memory).
"""

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
