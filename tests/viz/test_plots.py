"""The matplotlib views draw what the schedule says."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

from opsched.demo import branches_graph, seed_problem
from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.viz import plot_gantt, plot_memory


def bars(ax) -> list[tuple[float, float, float]]:
    """(start, width, row) of every bar of a Gantt chart (one collection of bars per row)."""
    out = []
    for c in ax.collections:
        for path in c.get_paths():
            x, y, w, h = path.get_extents().bounds
            out.append((x, w, y + h / 2))
    return out


def test_gantt_has_one_bar_per_op_on_its_unit() -> None:
    s = greedy(seed_problem(units=2))
    ax = plot_gantt(s)
    drawn = bars(ax)
    assert len(drawn) == 7
    # Conv2 runs on unit 1 over [2, 3): the only bar on the second row
    second_row = [(x, w) for x, w, row in drawn if abs(row - 1) < 1e-9]
    assert second_row == [(2.0, 1.0)]
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
    rows = {round(row): x for x, _, row in bars(ax)}
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
    row = {t.get_text(): round(t.get_position()[1]) for t in ax.texts}
    assert sorted(bars(ax)) == sorted(
        (o.start, o.end - o.start, float(row[o.name])) for o in s.ops
    )  # each label on its op's bar
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


def test_gantt_bars_and_lanes_match_the_schedule_on_random_graphs() -> None:
    # every op that takes time is one bar over [start, end) on its unit's row, or on a lane
    # below them where no two ops of a lane overlap (first fit), with colours by op
    import numpy as np

    from opsched.heuristics.listsched import list_schedule
    from opsched.zoo import layered

    for seed, units in [(0, None), (1, 3), (2, None)]:
        s = list_schedule(Problem(layered(60, seed=seed), Machine(units=units)))
        ax = plot_gantt(s)
        drawn = sorted(bars(ax))
        timed = [o for o in s.ops if o.end > o.start]
        assert [(x, w) for x, w, _ in drawn] == sorted((o.start, o.end - o.start) for o in timed)
        lanes: dict[float, list[tuple[float, float]]] = {}
        for x, w, row in drawn:
            lanes.setdefault(row, []).append((x, x + w))
        for spans in lanes.values():
            spans.sort()
            assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))
        if units is None:  # as many lanes as ops ever run at once
            t = np.array(sorted({o.start for o in timed}))
            most = max(sum(o.start <= x < o.end for o in timed) for x in t)
            assert len(lanes) == most
        colours = [tuple(c) for coll in ax.collections for c in coll.get_facecolors()]
        assert len(set(colours)) == min(20, len(timed))


def test_lanes_as_the_scan_of_every_row_gave() -> None:
    # the heaps of free and busy rows give each op the first row free at its start, as the
    # scan of every row did (ties, zero gaps and equal ends included)
    import random

    from opsched.schedule import ScheduledOp
    from opsched.viz.plots import _lanes

    def scanned(ops):
        free_at: list[float] = []
        lane = {}
        for o in sorted(ops, key=lambda o: (o.start, o.end)):
            k = next((i for i, f in enumerate(free_at) if f <= o.start), len(free_at))
            if k == len(free_at):
                free_at.append(o.end)
            free_at[k] = o.end
            lane[o.name] = k
        return lane

    rng = random.Random(0)
    for case in range(300):
        n = rng.randint(0, 40)
        ops = []
        for i in range(n):
            a = float(rng.randint(0, 12))
            ops.append(ScheduledOp(f"o{i}", a, a + rng.randint(1, 1 + case % 9)))
        assert _lanes(ops) == scanned(ops)
