"""Python calls that had given a wrong answer, or a pass, without a word (a fuzzing review)."""

from __future__ import annotations

import math

import pytest

import opsched
from opsched import Machine, Problem, Schedule, Status, validate
from opsched.errors import ProblemError
from opsched.ir import Op, OpGraph
from opsched.schedule import ScheduledOp


def _two_outputs(objective: str = "peak_memory") -> Problem:
    # one at a time holds 8 bytes (makespan 2), both at once 16 (makespan 1)
    g = OpGraph((Op("a", 1, output_bytes=8), Op("b", 1, output_bytes=8)))
    return Problem(g, Machine(units=2, memory_cap=16), objective)


def test_the_problems_own_objective_is_not_ignored() -> None:
    p = _two_outputs()
    assert opsched.solve_brute_force(p).peak_memory == 8  # the exact answer for this objective
    # the down-set search minimises the makespan: it had returned peak 16 as OPTIMAL
    with pytest.raises(ProblemError, match="minimises the makespan, not peak_memory"):
        opsched.solve_downsets(p, time_limit=1)
    for name in ("downsets", "greedy", "lns", "memory-list"):
        with pytest.raises(ProblemError, match="makespan, not peak_memory"):
            opsched.registry.run(name, p)
    ok = opsched.registry.run("greedy", _two_outputs("makespan"))
    assert ok.makespan == 1 and validate(_two_outputs("makespan"), ok).valid


def _precedence_broken() -> tuple[Problem, Schedule]:
    g = OpGraph((Op("a", 1), Op("b", 2, deps=("a",))))
    p = Problem(g, Machine(units=2))
    ops = [ScheduledOp("a", 0, 1, 0), ScheduledOp("b", 0.5, 2.5, 1)]
    return p, Schedule(graph="graph", solver="hand", status="FEASIBLE", ops=ops, makespan=2.5)


@pytest.mark.parametrize("tol", [math.nan, -1, 1, 1e9, "x", True])
def test_a_tolerance_that_checks_nothing_is_refused(tol: object) -> None:
    p, bad = _precedence_broken()
    assert not validate(p, bad).valid
    with pytest.raises(ValueError, match=r"tol must be a number in \[0, 1\)"):
        validate(p, bad, tol=tol)  # type: ignore[arg-type]  # NaN had passed every check


def test_a_schedule_written_by_hand_is_checked_as_a_file_would_be() -> None:
    p, bad = _precedence_broken()
    assert bad.status is Status.FEASIBLE and "FEASIBLE" in bad.summary()  # was a str
    with pytest.raises(ValueError, match="unknown status 'DONE'; known: OPTIMAL"):
        Schedule(graph="graph", solver="hand", status="DONE", ops=[])  # type: ignore[arg-type]
    ops = [ScheduledOp("a", 0, 1, 0), ScheduledOp("b", 1, 3, 1.5)]  # type: ignore[arg-type]
    odd = Schedule(graph="graph", solver="hand", status=Status.INFEASIBLE, ops=ops, makespan=3)
    msgs = [v.message for v in validate(p, odd).violations]
    assert "the status is INFEASIBLE, yet the schedule places ops" in msgs
    assert "op 'b': unit 1.5 is no integer" in msgs
    for u in (True, "0"):
        ops = [ScheduledOp("a", 0, 1, 0), ScheduledOp("b", 1, 3, u)]  # type: ignore[arg-type]
        s = Schedule(graph="graph", solver="hand", status=Status.FEASIBLE, ops=ops, makespan=3)
        assert f"op 'b': unit {u!r} is no integer" in [v.message for v in validate(p, s).violations]
    good = [ScheduledOp("a", 0, 1, 0), ScheduledOp("b", 1, 3, 0)]
    assert validate(p, Schedule("graph", "hand", Status.FEASIBLE, good, makespan=3)).valid


def test_with_machine_refuses_a_field_it_does_not_know() -> None:
    p = _two_outputs("makespan")
    with pytest.raises(ProblemError, match="unknown machine field 'memory'; known: memory_cap"):
        p.with_machine(memory=8)  # had given a machine without any cap
    assert p.with_machine(memory_cap=8).machine.memory_cap == 8


@pytest.mark.parametrize("limit", [0, -1, math.nan, math.inf])
def test_exact_solvers_refuse_time_limits_that_are_no_limit(limit: float) -> None:
    p = _two_outputs("makespan")
    with pytest.raises(ProblemError, match="time_limit must be a positive, finite number"):
        opsched.solve_brute_force(p, time_limit=limit)
    with pytest.raises(ProblemError, match="time_limit must be a positive, finite number"):
        opsched.registry.run("brute-force", p, time_limit=limit)
    with pytest.raises(ProblemError, match="time_limit must be a positive, finite number"):
        opsched.solve_downsets(p, time_limit=limit)


def test_every_scheduler_takes_every_run_option() -> None:
    # seed and noise reach the randomised heuristics; cpsat had crashed on them (TypeError)
    from opsched.demo import seed_problem

    p = seed_problem(units=2).with_machine(memory_cap=10**12)
    for name in opsched.registry.SOLVERS:
        s = opsched.registry.run(name, p, seed=1, noise=0.1, time_limit=1)
        assert s.has_schedule and validate(p, s).valid, name


def test_portfolio_under_a_short_time_limit_still_returns_a_schedule() -> None:
    # the deadline had come before the first candidate: UNKNOWN on a trivial problem, and
    # lns then said it had no start schedule
    from opsched.demo import seed_problem
    from opsched.heuristics.lns import lns
    from opsched.heuristics.portfolio import portfolio

    p = seed_problem(units=2)
    s = portfolio(p, time_limit=1e-9)
    assert s.has_schedule and validate(p, s).valid
    assert s.info["time_limit"] == "reached after 1 of 32 candidates"
    assert lns(p, time_limit=1e-6).has_schedule
    for bad in (0, -1, math.nan):
        with pytest.raises(ProblemError, match="time_limit must be a positive, finite number"):
            portfolio(p, time_limit=bad)


def test_numpy_tolerances_and_a_seed_of_none_are_taken() -> None:
    import numpy as np

    p, bad = _precedence_broken()
    assert not validate(p, bad, tol=np.float32(1e-6)).valid
    ok = opsched.registry.run("list-random", _two_outputs("makespan"), seed=None)
    assert ok.has_schedule
