"""The matplotlib views draw what the schedule says."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from opsched.demo import branches_graph, seed_problem
from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.viz import plot_gantt, plot_memory


def test_gantt_has_one_bar_per_op_on_its_unit() -> None:
    s = greedy(seed_problem(units=2))
    ax = plot_gantt(s)
    bars = ax.patches
    assert len(bars) == 7
    # Conv2 runs on unit 1 over [2, 3): the only bar on the second row
    second_row = [b for b in bars if abs(b.get_y() + b.get_height() / 2 - 1) < 1e-9]
    assert [(b.get_x(), b.get_width()) for b in second_row] == [(2.0, 1.0)]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["unit 0", "unit 1"]


def test_memory_curve_and_cap() -> None:
    p = Problem(branches_graph(), Machine(units=1, memory_cap=30))
    s = greedy(p)
    ax = plot_memory(p, s)
    xs, ys = ax.lines[0].get_data()
    # FIFO on one unit: a1 [0,1) 10, b1 [1,2) 20, a2 [2,3) frees a1 at 3: peak 21 at t=2
    assert max(ys) == 21 == s.peak_memory
    assert list(xs)[:3] == [0.0, 1.0, 2.0]
    assert ax.lines[1].get_ydata()[0] == 30  # the cap line


def test_ops_without_units_pack_into_as_few_lanes_as_run_at_once() -> None:
    from opsched.ir import Op, OpGraph
    from opsched.schedule import Schedule

    g = OpGraph((Op("a", 2), Op("b", 1), Op("c", 1, deps=("b",)), Op("d", 1, deps=("a",))))
    p = Problem(g, Machine(units=None))
    s = Schedule.build(p, {"a": 0, "b": 0, "c": 1, "d": 2}, solver="hand")  # no unit indices
    ax = plot_gantt(s)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["lane 0", "lane 1"]
    rows = {round(b.get_y() + b.get_height() / 2): b.get_x() for b in ax.patches}
    assert sorted(rows) == [0, 1]  # b, c, d on lane 0 (first fit), a on lane 1


def test_ops_on_units_keep_their_rows_beside_an_op_that_takes_none() -> None:
    # h demands no unit: it goes below the units' rows, and a / c stay together on unit 0
    # (every op had been re-packed into lanes, c beside h and away from a)
    from opsched.ir import Op, OpGraph
    from opsched.viz import gantt_text

    g = OpGraph((Op("a", 4), Op("b", 4), Op("h", 3, demands={"units": 0}),
                 Op("c", 2, deps=("a",)), Op("d", 2, deps=("b",))))  # fmt: skip
    s = greedy(Problem(g, Machine(units=2)), "b-level")
    unit_of = {o.name: o.unit for o in s.ops}
    assert unit_of["h"] is None and unit_of["a"] == unit_of["c"] != unit_of["b"]
    ax = plot_gantt(s)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["unit 0", "unit 1", "no unit 0"]
    row = {t.get_text(): round(b.get_y() + b.get_height() / 2)
           for b, t in zip(ax.patches, ax.texts, strict=True)}  # fmt: skip
    assert row["a"] == row["c"] == unit_of["a"] and row["h"] == 2
    assert gantt_text(s, 20).splitlines()[2].startswith("h ")


def test_memory_axis_reads_in_binary_units_and_bad_schedules_are_refused() -> None:
    import pytest

    from opsched.errors import OpschedError, ScheduleFormatError
    from opsched.ir import Op, OpGraph

    p = Problem(branches_graph(), Machine(units=2))
    ax = plot_memory(p, greedy(p))
    fmt = ax.yaxis.get_major_formatter()
    assert fmt(3 * 2**20, 0) == "3.0MiB" and ax.get_ylabel() == "memory"
    tight = Problem(OpGraph((Op("a", 1, output_bytes=8),)), Machine(memory_cap=4))
    with pytest.raises(OpschedError, match="no schedule to plot"):
        plot_memory(tight, greedy(tight))  # a dead end has no ops
    with pytest.raises(ScheduleFormatError, match="has no start for op"):
        plot_memory(p, greedy(seed_problem(units=2)))  # another graph's schedule
