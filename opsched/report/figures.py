"""Report figures: interactive plotly figures for the HTML page, matplotlib PNGs for papers.

Every figure exists in both forms, drawn from the same data: ``plotly_*`` functions return a
``plotly.graph_objects.Figure``; ``png_*`` functions draw with matplotlib (Agg backend) and
return the PNG bytes.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd

from opsched.liveness import memory_curve
from opsched.problem import Problem
from opsched.report.stats import profile_title
from opsched.schedule import Schedule

__all__ = [
    "memory_series",
    "plotly_box",
    "plotly_instance",
    "plotly_profile",
    "png_box",
    "png_instance",
    "png_profile",
]


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    _plt().close(fig)
    return buf.getvalue()


def memory_series(problem: Problem, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """Memory in use over time of ``schedule`` (times, bytes), as a step function.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> from opsched.heuristics import greedy
    >>> p = seed_problem(units=2)
    >>> t, m = memory_series(p, greedy(p))
    >>> len(t) == len(m), float(t[0])
    (True, 0.0)
    """
    starts = schedule.starts()
    arr = np.array([starts[n] for n in problem.graph.names], dtype=np.float64)
    return memory_curve(problem.graph, arr, schedule.makespan)


# ---------------------------------------------------------------------- distributions
def _finite(values: pd.Series) -> pd.Series:
    """The values a box can draw: an infinite gap (a positive value against a best of 0,
    which the tables show) has no place on an axis."""
    v = pd.to_numeric(values, errors="coerce").astype(float)
    return v[np.isfinite(v)]


def plotly_box(df: pd.DataFrame, column: str, title: str, log: bool = False) -> Any:
    """One box (with points) per scheduler of ``df[column]``."""
    go = _go()
    fig = go.Figure()
    for s, g in df.groupby("scheduler", sort=True):
        vals = _finite(g[column])
        fig.add_trace(go.Box(y=vals, name=str(s), boxpoints="all", jitter=0.4, pointpos=0))
    fig.update_layout(title=title, yaxis_title=column, showlegend=False, height=420)
    if log:
        fig.update_yaxes(type="log")
    return fig


def png_box(df: pd.DataFrame, column: str, title: str, log: bool = False) -> bytes:
    """The matplotlib version of :func:`plotly_box`."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    groups = [(str(s), _finite(g[column]).to_numpy()) for s, g in df.groupby("scheduler")]
    groups = [(s, v) for s, v in groups if len(v)]
    if groups:
        ax.boxplot([v for _, v in groups], tick_labels=[s for s, _ in groups])
    if log and groups:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_ylabel(column)
    return _png(fig)


# ---------------------------------------------------------------------- profiles
def plotly_profile(profile: pd.DataFrame) -> Any:
    """Dolan-More performance profile, one step line per scheduler."""
    go = _go()
    fig = go.Figure()
    tmax = float(profile["tau"].max()) * 1.05 if len(profile) else 2.0
    for s, g in profile.groupby("scheduler", sort=True):
        x = [1.0, *g["tau"].tolist(), tmax]
        y = [0.0, *g["rho"].tolist(), g["rho"].iloc[-1]]
        if g["tau"].iloc[0] == 1.0:
            x, y = x[1:], y[1:]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line_shape="hv", name=str(s)))
    fig.update_layout(
        title=profile_title(profile),
        xaxis_title="tau: within this factor of the best makespan found",
        yaxis_title="share of instances",
        height=420,
    )
    fig.update_yaxes(range=[0, 1.02])
    return fig


def png_profile(profile: pd.DataFrame) -> bytes:
    """The matplotlib version of :func:`plotly_profile`."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    tmax = float(profile["tau"].max()) * 1.05 if len(profile) else 2.0
    for s, g in profile.groupby("scheduler", sort=True):
        x = [1.0, *g["tau"].tolist(), tmax]
        y = [0.0, *g["rho"].tolist(), g["rho"].iloc[-1]]
        ax.step(x, y, where="post", label=str(s))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("tau (ratio to the best makespan)")
    ax.set_ylabel("share of instances")
    ax.set_title(profile_title(profile), fontsize=9)
    ax.legend(fontsize=7)
    return _png(fig)


# ---------------------------------------------------------------------- one instance
def plotly_instance(problem: Problem, schedules: list[Schedule], title: str) -> Any:
    """Gantt chart of each schedule (one row per scheduler and unit) and memory curves."""
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(
        rows=2, cols=1, row_heights=[0.6, 0.4], vertical_spacing=0.12,
        subplot_titles=("Gantt (row: scheduler / unit)", "Memory in use"),
    )  # fmt: skip
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
    for k, s in enumerate(schedules):
        color = palette[k % len(palette)]
        ops = [o for o in s.ops if o.end > o.start]
        rows = [f"{s.solver} / {'-' if o.unit is None else o.unit}" for o in ops]
        fig.add_trace(
            go.Bar(
                y=rows, x=[o.end - o.start for o in ops], base=[o.start for o in ops],
                orientation="h", marker_color=color, name=s.solver, legendgroup=s.solver,
                text=[o.name for o in ops], hovertemplate="%{text}: %{base} + %{x}<extra></extra>",
            ),
            row=1, col=1,
        )  # fmt: skip
        t, m = memory_series(problem, s)
        fig.add_trace(
            go.Scatter(x=t, y=m, mode="lines", line_shape="hv", line_color=color,
                       name=f"{s.solver} memory", legendgroup=s.solver, showlegend=False),
            row=2, col=1,
        )  # fmt: skip
    if problem.memory_cap is not None:
        fig.add_hline(y=problem.memory_cap, line_dash="dash", line_color="red", row=2, col=1)
    fig.update_layout(title=title, barmode="overlay", height=260 + 22 * _n_rows(schedules))
    fig.update_xaxes(title_text="time", row=2, col=1)
    fig.update_yaxes(title_text="bytes", row=2, col=1)
    return fig


def _n_rows(schedules: list[Schedule]) -> int:
    return sum(len({o.unit for o in s.ops}) for s in schedules)


def png_instance(problem: Problem, schedules: list[Schedule], title: str) -> bytes:
    """The matplotlib version of :func:`plotly_instance` (one Gantt per scheduler).

    The memory panel is left out when the graph has no memory sizes at all.
    """
    from opsched.viz.plots import plot_gantt

    plt = _plt()
    curves = [memory_series(problem, s) for s in schedules]
    has_memory = any(float(m.max(initial=0)) > 0 for _, m in curves)
    n = len(schedules) + has_memory
    fig, axes = plt.subplots(n, 1, figsize=(8, 1.9 * n + 0.6), squeeze=False, layout="constrained")
    for ax, s in zip(axes[:, 0], schedules, strict=False):
        plot_gantt(s, ax=ax, labels=problem.graph.num_ops <= 30)
        ax.set_title(f"{s.solver}: makespan {s.makespan:g}", fontsize=9)
    if has_memory:
        ax = axes[-1, 0]
        for s, (t, m) in zip(schedules, curves, strict=True):
            ax.step(t, m, where="post", label=s.solver)
        if problem.memory_cap is not None:
            ax.axhline(problem.memory_cap, color="red", linestyle="--", label="cap")
        ax.set_xlabel("time")
        ax.set_ylabel("bytes")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return _png(fig)
