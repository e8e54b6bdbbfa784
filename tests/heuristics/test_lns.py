"""Tests of :func:`opsched.heuristics.lns.lns` (CP-SAT windows over a heuristic schedule)."""

from __future__ import annotations

import time

import pytest
from ortools.sat.python import cp_model  # noqa: F401  (imported once here, not timed below)

from opsched.datasets import dataset_path, stg_optima
from opsched.heuristics import greedy
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.lns import lns
from opsched.importers import read_stg
from opsched.ir import Op, OpGraph
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule
from opsched.validate import validate
from opsched.zoo.generators import gnp, layered


@pytest.fixture(autouse=True, scope="module")
def _warm_kernels() -> None:
    """Load the compiled kernels once, so that timing checks measure the search alone (the
    portfolio's and LNS's own are compiled by the session fixture in tests/conftest.py)."""
    from opsched.heuristics.improve import justify

    p = Problem(layered(60, seed=0), Machine(units=3))
    justify(p, greedy(p, "fifo"))


def _ms(s: Schedule) -> float:
    """The makespan of a result that has a schedule."""
    assert s.makespan is not None
    return s.makespan


def _stg(name: str, procs: int) -> Problem:
    return Problem(read_stg(dataset_path(f"stg/50/{name}.stg")), Machine(units=procs))


@pytest.mark.timing
@pytest.mark.parametrize("seed", range(3))
def test_never_worse_than_its_start_and_valid(seed: int) -> None:
    g = layered(40, seed=seed) if seed % 2 else gnp(40, 0.08, seed=seed)
    p = Problem(g, Machine(units=3))
    start = greedy(p, "fifo")  # a weak start leaves room to improve
    t0 = time.perf_counter()
    s = lns(p, time_limit=0.6, window=12, seed=seed, start=start)
    took = time.perf_counter() - t0
    assert took <= 0.6 + 1.0
    rep = validate(p, s)
    assert rep.valid, rep.summary()
    assert s.solver == "lns" and _ms(s) < _ms(start) and s.info["improvements"] >= 1
    assert _ms(s) >= (s.lower_bound or 0.0) - 1e-9
    assert s.info["start_makespan"] == start.makespan and s.info["start_solver"] == "greedy"
    assert s.info["window"] == 12 and s.info["seed"] == seed
    assert s.info["improvements"] <= s.info["iterations"]


@pytest.mark.timing
def test_respects_the_time_limit_on_an_open_instance() -> None:
    # rand0177 on 4 processors: the lower bound (107) is below every schedule found so far,
    # so the search only stops at the time limit
    p = _stg("rand0177", 4)
    t0 = time.perf_counter()
    s = lns(p, time_limit=1.0)
    took = time.perf_counter() - t0
    assert _ms(s) > (s.lower_bound or 0.0)
    assert took <= 1.0 + 1.0 and (s.wall_time_s or 0.0) <= 1.0 + 1.0
    assert s.info["iterations"] >= 1 and s.info["start_solver"] == "portfolio"
    assert validate(p, s).valid
    assert s.makespan <= s.info["start_makespan"]


@pytest.mark.parametrize(("name", "procs"), [("rand0064", 4), ("rand0140", 4)])
def test_reaches_the_published_optimum_where_list_does_not(name: str, procs: int) -> None:
    p = _stg(name, procs)
    lb, opt = stg_optima(procs)[name]
    assert lb == opt
    start = list_schedule(p)
    assert _ms(start) > opt
    lines: list[str] = []
    s = lns(p, time_limit=10, seed=0, start=start, progress=lines.append)
    assert s.makespan == opt
    assert validate(p, s).valid
    assert s.info["improvements"] >= 1 and (s.wall_time_s or 0.0) < 10 + 1  # stopped at the bound
    # the start, then one line per improvement, the last at the optimum
    assert lines[0] == f"makespan {_ms(start):g} (list; lower bound {lb:g})"
    assert len(lines) == 1 + s.info["improvements"]
    assert lines[-1].startswith(f"makespan {opt:g} (iteration ")


def test_stops_at_once_when_the_start_meets_its_lower_bound() -> None:
    p = _stg("rand0000", 16)  # 16 processors: the list schedule is optimal
    start = list_schedule(p)
    assert start.makespan == start.lower_bound
    s = lns(p, time_limit=5, start=start)
    assert s.info["iterations"] == 0 and s.makespan == start.makespan
    assert validate(p, s).valid


def test_not_applicable_returns_the_start_with_a_note() -> None:
    g = layered(12, seed=1)
    capped = Problem(g, Machine(units=2, memory_cap=10**12))
    start = list_schedule(capped)
    s = lns(capped, time_limit=1, start=start)
    assert s is start and "not applicable" in s.info["lns"]
    unlimited = Problem(g, Machine(units=None))
    start = list_schedule(unlimited)
    s = lns(unlimited, time_limit=1, start=start)
    assert s is start and "not applicable" in s.info["lns"]
    wide = Problem(OpGraph((Op("a", 2, demands={"units": 2}), Op("b", 1))), Machine(units=2))
    s = lns(wide, time_limit=1)
    assert s.solver == "portfolio" and "not applicable" in s.info["lns"]
    assert validate(wide, s).valid


def test_two_op_graph_with_a_delayed_start() -> None:
    g = OpGraph((Op("a", 1), Op("b", 1)))
    p = Problem(g, Machine(units=2))
    start = Schedule.build(p, [0.0, 5.0], [0, 1], solver="hand")  # no lower bound recorded
    s = lns(p, time_limit=0.5, start=start)
    assert s.makespan == 1.0 and validate(p, s).valid


def _capped_layered(share: float) -> Problem:
    """layered(50) on 4 units under ``share`` of its serial peak (0.7: below the graph
    outputs held at the end, which the problem's own checks see at once)."""
    from opsched.heuristics import serial

    g = layered(50, seed=0)
    peak = serial(Problem(g, Machine(units=4))).peak_memory or 0
    return Problem(g, Machine(units=4, memory_cap=int(peak * share)))


def test_a_cap_proven_impossible_is_reported_at_once() -> None:
    # the portfolio's min-memory search had spent ~10 s (200,000 states) before reporting
    # what infeasibility_reason proves in a millisecond, five times lns's time limit
    from opsched import registry
    from opsched.schedule import Status

    p = _capped_layered(0.7)
    reason = p.infeasibility_reason()
    assert reason is not None and "graph outputs held at the end" in reason
    t0 = time.perf_counter()
    s = lns(p, time_limit=2)
    assert time.perf_counter() - t0 < 5.0  # a guard against the 10 s it took
    assert s.status is Status.UNKNOWN and not s.has_schedule and s.solver == "lns"
    assert s.info["reason"] == reason
    for name in ("min-memory", "memory-beam", "memory-list", "portfolio"):
        r = registry.run(name, p)
        assert r.status is Status.UNKNOWN and not r.has_schedule, name
        assert r.info["reason"] == reason, name


def test_the_start_it_searches_for_keeps_the_time_limit() -> None:
    # under a cap that admits schedules lns does not apply and returns the portfolio's
    # schedule; the portfolio's min-memory order search (~7 s here) ran past the limit
    p = _capped_layered(1.0)
    t0 = time.perf_counter()
    s = lns(p, time_limit=1.0)
    assert time.perf_counter() - t0 < 4.0  # a guard against the 7-10 s it took
    assert s.has_schedule and validate(p, s).valid
    assert s.info["lns"] == "not applicable (a memory cap)"
