"""A replay keeps unit orders, not the memory cap: what breaks the cap is said, not hidden."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from opsched.cli import main
from opsched.dynamic import Lognormal, Online, expected_makespan, replay
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.validate import execute_orders, validate


def _held() -> Problem:
    """a -> c on one unit, b -> d on the other; a and b each write 10 B, c and d 1 B.

    Under a 15 B cap b must wait until c has consumed a's tensor: the valid schedule runs
    a [0, 1), c [1, 2) on unit 0 and b [2, 3), d [3, 4) on unit 1, peak 11 B (a's tensor and
    c's, then b's and d's). Replayed, b starts as soon as its unit is free, at 0, next to a:
    20 B live at once, 22 B while c and d run.
    """
    g = OpGraph([Op("a", 1.0, output_bytes=10), Op("b", 1.0, output_bytes=10),
                 Op("c", 1.0, deps=("a",), output_bytes=1),
                 Op("d", 1.0, deps=("b",), output_bytes=1)])  # fmt: skip
    return Problem(g, Machine(units=2, memory_cap=15))


def _valid(p: Problem) -> Schedule:
    s = Schedule.build(p, [0.0, 2.0, 1.0, 3.0], [0, 1, 0, 1], solver="hand")
    assert validate(p, s).valid and s.peak_memory == 11
    return s


def test_orders_replayed_past_the_cap_are_not_called_feasible():
    p = _held()
    run = execute_orders(p, [["a", "c"], ["b", "d"]])
    assert run.peak_memory == 22 and run.status is Status.UNKNOWN
    assert run.info["valid"] is False and "the orders break the problem" in run.info["reason"]
    assert not validate(p, run).valid
    again = replay(p, _valid(p))
    assert again.status is Status.UNKNOWN and again.info["valid"] is False
    # without the cap the same orders are a feasible schedule
    free = Problem(p.graph, Machine(units=2))
    assert execute_orders(free, [["a", "c"], ["b", "d"]]).status is Status.FEASIBLE


def test_noise_statistics_count_the_runs_over_the_cap_and_the_dead_ends():
    p = _held()
    st = expected_makespan(p, _valid(p), Lognormal(0.2), runs=10, seed=3)
    assert st.info["over_cap"] == 10 and st.info["peak_max"] >= 20  # a and b start at 0
    assert st.info["broken"] == 10 and st.info["memory_cap"] == 15
    on = expected_makespan(p, Online(), Lognormal(0.2), runs=10, seed=3)
    # the online list scheduler keeps the cap: b waits for c here, on every draw
    assert on.info["dead_ends"] == 0 and on.info["over_cap"] == 0 and on.info["peak_max"] <= 15


def test_online_dead_ends_are_counted_not_fatal():
    from opsched.solver import solve_cpsat
    from opsched.zoo import layered

    # 12 layered ops under 40 MiB on 2 units: CP-SAT finds a schedule, the online list
    # scheduler runs into a dead end on every draw (and on the estimates)
    p = Problem(layered(12, seed=0), Machine(units=2, memory_cap=40 * 2**20))
    s = solve_cpsat(p, time_limit=5)
    assert s.has_schedule and validate(p, s).valid
    on = expected_makespan(p, Online(), Lognormal(0.2), runs=6, seed=0)
    assert on.info["dead_ends"] == 6 and on.estimate is None
    assert on.mean != on.mean and on.to_dict()["runs"] == 6  # NaN: no run finished
    static = expected_makespan(p, s, Lognormal(0.2), runs=6, seed=0)
    assert static.info["over_cap"] == static.info["broken"] and static.mean == static.mean


def test_simulate_reports_memory_and_survives_online_dead_ends(tmp_path):
    p = _held()
    gpath, spath = tmp_path / "g.json", tmp_path / "s.json"
    gpath.write_text(json.dumps(p.graph.to_dict()))
    _valid(p).to_json(str(spath))
    r = CliRunner().invoke(main, ["simulate", str(gpath), str(spath), "--noise", "0.1",
                                  "--runs", "8", "--online"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "(cap 15B): 8 of 8 runs over the cap" in r.output
    assert "online" in r.output


def test_an_op_of_two_units_replays_where_its_schedule_had_it():
    # b takes both units, so the list schedule runs it after a: a [0, 2), b [2, 4). A replay
    # that kept unit orders only started b beside a at 0 (3 units busy on 2) in every run,
    # even at zero noise, and all runs were left out of the statistics (mean NaN)
    from opsched.heuristics.listsched import list_schedule

    g = OpGraph((Op("a", 2, output_bytes=1), Op("b", 2, demands={"units": 2})))
    p = Problem(g, Machine(units=2))
    s = list_schedule(p)
    assert validate(p, s).valid and s.makespan == 4
    r = replay(p, s)
    assert [(o.name, o.start) for o in r.ops] == [("a", 0), ("b", 2)] and validate(p, r).valid
    slow = replay(p, s, [3, 1])  # b waits for a whatever a takes
    assert [(o.name, o.start) for o in slow.ops] == [("a", 0), ("b", 3)]
    st = expected_makespan(p, s, Lognormal(0.0), runs=3)
    assert st.info["broken"] == st.info["left_out"] == 0 and st.mean == 4


def test_replays_past_a_unit_capacity_are_left_out_of_the_statistics():
    # 3 units: A [0, 1.5) on 0, B [0, 1) on 1, X (2 units) [1, 2) after B, W (no unit)
    # [0, 1.5) and C [1.5, 3) on 2 after W. With A 3 and W 0.5, C starts at 0.5 while A and
    # X run: 4 units busy on 3, a time no machine gives (its makespan had entered the mean)
    from opsched.dynamic.noise import sample_durations
    from opsched.dynamic.robust import robust_portfolio

    g = OpGraph((Op("A", 1.5), Op("B", 1), Op("X", 1, demands={"units": 2}),
                 Op("W", 1.5, demands={"units": 0}), Op("C", 1.5, deps=("W",))))  # fmt: skip
    p = Problem(g, Machine(units=3))
    s = Schedule.build(p, [0, 0, 1, 0, 1.5], [0, 1, None, None, 2], solver="hand")
    assert validate(p, s).valid and s.makespan == 3
    assert replay(p, s).makespan == 3
    r = replay(p, s, [3, 1, 1, 0.5, 1.5])
    assert r.info["broken"] == ["capacity"] and "used 4 > capacity 3" in r.info["reason"]
    noise = Lognormal(0.5)
    st = expected_makespan(p, s, noise, runs=20, seed=0)
    draws = sample_durations(g, noise, 20, 0)
    bad = [replay(p, s, d).info.get("valid") is False for d in draws]
    assert 0 < sum(bad) < 20 and st.info["broken"] == st.info["left_out"] == sum(bad)
    kept = [replay(p, s, d).makespan for d, b in zip(draws, bad, strict=True) if not b]
    assert st.mean == pytest.approx(sum(kept) / len(kept))
    ranked = robust_portfolio(p, {"static": s, "online": "online"}, noise, runs=20)
    assert [r.policy for r in ranked] == ["online", "static"]  # fewer runs left out first
    # a replay only over the memory cap still counts (its time is one a machine gives)
    held = _held()
    over = expected_makespan(held, _valid(held), Lognormal(0.2), runs=4, seed=3)
    assert over.info["over_cap"] == over.info["broken"] == 4 and over.info["left_out"] == 0
    assert over.mean == over.mean
