"""Matplotlib figures of schedules: Gantt chart and memory over time.

Each function takes ``ax=None`` (a new figure is made) and returns the axes, so figures can be
composed in notebooks and papers. Needs the ``plot`` extra (``pip install 'opsched[plot]'``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opsched.errors import OpschedError
from opsched.liveness import memory_curve
from opsched.problem import Problem
from opsched.schedule import Schedule

__all__ = ["plot_gantt", "plot_memory"]


def _plt() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise OpschedError("plotting needs matplotlib: pip install 'opsched[plot]'") from None
    return plt


def plot_gantt(schedule: Schedule, ax: Any = None, labels: bool = True) -> Any:
    """One row per unit (or per op when units are not assigned), one bar per op."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    ops = [o for o in schedule.ops if o.end > o.start]
    by_unit = all(o.unit is not None for o in ops)
    keys: list[Any] = (
        sorted({o.unit for o in ops if o.unit is not None}) if by_unit else [o.name for o in ops]
    )
    row_of: dict[Any, int] = {r: i for i, r in enumerate(keys)}
    rows = keys
    colors = plt.get_cmap("tab20")
    for k, o in enumerate(ops):
        y = row_of[o.unit] if by_unit else row_of[o.name]
        ax.barh(y, o.end - o.start, left=o.start, color=colors(k % 20), edgecolor="black",
                linewidth=0.5)  # fmt: skip
        if labels and len(ops) <= 80:
            ax.text((o.start + o.end) / 2, y, o.name, ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"unit {r}" for r in rows] if by_unit else rows)
    ax.invert_yaxis()
    ax.set_xlabel("time")
    ax.set_title(schedule.summary(), fontsize=8)
    return ax


def plot_memory(problem: Problem, schedule: Schedule, ax: Any = None) -> Any:
    """Memory in use over time (persistent bytes included), with the cap if there is one."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 2.5))
    starts = schedule.starts()
    arr = np.array([starts[n] for n in problem.graph.names], dtype=np.float64)
    t, m = memory_curve(problem.graph, arr, schedule.makespan)
    ax.step(t, m, where="post", color="tab:blue", label="memory in use")
    if problem.memory_cap is not None:
        ax.axhline(problem.memory_cap, color="tab:red", linestyle="--", label="memory cap")
    ax.set_xlabel("time")
    ax.set_ylabel("bytes")
    ax.legend(loc="upper right", fontsize=7)
    return ax
