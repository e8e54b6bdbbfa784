"""Matplotlib figures of schedules: Gantt chart and memory over time.

Each function takes ``ax=None`` (a new figure is made) and returns the axes, so figures can be
composed in notebooks and papers. Needs the ``plot`` extra (``pip install 'opsched[plot]'``).
"""

from __future__ import annotations

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
    as ops ever run at once)."""
    free_at: list[float] = []
    lane: dict[str, int] = {}
    for o in sorted(ops, key=lambda o: (o.start, o.end)):
        k = next((i for i, f in enumerate(free_at) if f <= o.start), len(free_at))
        if k == len(free_at):
            free_at.append(o.end)
        free_at[k] = o.end
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
    for k, o in enumerate(ops):
        y = row_of[o.unit] if o.unit is not None else len(units) + lane[o.name]
        ax.barh(y, o.end - o.start, left=o.start, color=colors(k % 20), edgecolor="black",
                linewidth=0.5)  # fmt: skip
        if labels and len(ops) <= 80:
            ax.text((o.start + o.end) / 2, y, o.name, ha="center", va="center", fontsize=7)
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
