"""Matplotlib figures of schedules: Gantt chart and memory over time.

Each function takes ``ax=None`` (a new figure is made) and returns the axes, so figures can be
composed in notebooks and papers. Needs the ``plot`` extra (``pip install 'opsched[plot]'``).
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from opsched.errors import OpschedError, ScheduleFormatError
from opsched.liveness import memory_curve
from opsched.problem import Problem
from opsched.schedule import Schedule
from opsched.units import format_bytes

__all__ = ["plot_gantt", "plot_memory"]


def _plt() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise OpschedError("plotting needs matplotlib: pip install 'opsched[plot]'") from None
    return plt


def _lanes(ops: list[Any]) -> dict[str, int]:
    """Rows for ops without a unit: each op in the first row free at its start (as few rows
    as ops ever run at once).

    The rows that ended by an op's start wait in a heap, the busy ones in another by end: a
    scan of every row for each op had been quadratic where many ops run at once (8,000 ops
    side by side, 1.1 s; 4x the ops, 16x the time).

    >>> from opsched.schedule import ScheduledOp as S
    >>> _lanes([S("a", 0, 2), S("b", 1, 3), S("c", 2, 4), S("d", 2, 3)])
    {'a': 0, 'b': 1, 'd': 0, 'c': 2}
    """
    free: list[int] = []  # rows free at the current start, lowest first
    busy: list[tuple[float, int]] = []  # (end, row) of the rows in use
    lane: dict[str, int] = {}
    rows = 0
    for o in sorted(ops, key=lambda o: (o.start, o.end)):
        while busy and busy[0][0] <= o.start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            k = heapq.heappop(free)
        else:
            k, rows = rows, rows + 1
        heapq.heappush(busy, (o.end, k))
        lane[o.name] = k
    return lane


def new_axes(plt: Any, size: tuple[float, float]) -> Any:
    # constrained layout keeps the axis labels inside a saved figure
    _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def bytes_axis(ax: Any, label: str) -> None:
    """Label the y axis in binary units (KiB, MiB, GiB) rather than raw bytes."""
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_bytes(v)))
    ax.set_ylabel(label)


def plot_gantt(schedule: Schedule, ax: Any = None, labels: bool = True) -> Any:
    """One row per unit, one bar per op. Ops without a unit (a schedule of unlimited units,
    an op that takes no unit) are packed below them into as many rows ("lanes") as ever run
    at once."""
    plt = _plt()
    if not schedule.has_schedule:
        raise OpschedError(f"no schedule to plot ({schedule.status.value})")
    if ax is None:
        ax = new_axes(plt, (8, 3))
    ops = [o for o in schedule.ops if o.end > o.start]
    units = sorted({o.unit for o in ops if o.unit is not None})
    lane = _lanes([o for o in ops if o.unit is None])  # below the units' rows
    row_of = {u: i for i, u in enumerate(units)}
    names = [f"unit {u}" for u in units]
    lanes = max(lane.values(), default=-1) + 1
    names += [f"lane {k}" if not units else f"no unit {k}" for k in range(lanes)]
    colors = plt.get_cmap("tab20")
    # one collection of bars per row, not one artist per op: a bar each took 1.7 ms to add
    # and 0.6 ms to draw (17 s and 6 s at 10,000 ops, hours at a million)
    bars: dict[int, tuple[list[tuple[float, float]], list[Any]]] = {}
    for k, o in enumerate(ops):
        y = row_of[o.unit] if o.unit is not None else len(units) + lane[o.name]
        spans, fill = bars.setdefault(y, ([], []))
        spans.append((o.start, o.end - o.start))
        fill.append(colors(k % 20))
        if labels and len(ops) <= 80:
            ax.text((o.start + o.end) / 2, y, o.name, ha="center", va="center", fontsize=7)
    for y, (spans, fill) in bars.items():  # barh's bars: 0.8 high, centred on the row
        ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=fill, edgecolor="black",
                       linewidth=0.5)  # fmt: skip
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlabel("time")
    ax.set_title(schedule.summary(), fontsize=8)
    return ax


def plot_memory(problem: Problem, schedule: Schedule, ax: Any = None) -> Any:
    """Memory in use over time (persistent bytes included), with the cap if there is one."""
    plt = _plt()
    if not schedule.has_schedule:
        raise OpschedError(f"no schedule to plot ({schedule.status.value})")
    starts = schedule.starts()
    missing = [n for n in problem.graph.names if n not in starts]
    if missing:
        raise ScheduleFormatError(
            f"the schedule (of graph {schedule.graph!r}) has no start for op(s) {missing[:5]} "
            f"of graph {problem.graph.name!r}"
        )
    if ax is None:
        ax = new_axes(plt, (8, 2.5))
    arr = np.array([starts[n] for n in problem.graph.names], dtype=np.float64)
    t, m = memory_curve(problem.graph, arr, schedule.makespan)
    ax.step(t, m, where="post", color="tab:blue", label="memory in use")
    if problem.memory_cap is not None:
        ax.axhline(problem.memory_cap, color="tab:red", linestyle="--", label="memory cap")
    ax.set_xlabel("time")
    bytes_axis(ax, "memory")
    ax.legend(loc="best", fontsize=7)
    return ax
