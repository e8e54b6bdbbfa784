"""Under a memory cap where greedy dead-ends, CP-SAT starts from the memory-aware list
schedule, a valid schedule under the cap."""

from __future__ import annotations

from opsched.demo import branches_graph
from opsched.heuristics import greedy
from opsched.problem import Machine, Problem
from opsched.schedule import Schedule, Status
from opsched.solver import solve_cpsat
from opsched.solver.cpsat.model import CpsatModel, assign_units
from opsched.validate import validate


def test_hint_comes_from_memory_list_when_greedy_dead_ends() -> None:
    p = Problem(branches_graph(), Machine(units=2, memory_cap=20))
    assert greedy(p, "b-level").status == Status.UNKNOWN
    assert greedy(p, "fifo").status == Status.UNKNOWN
    m = CpsatModel(p, with_memory=True, with_peak=False)
    assert m.hint_starts is not None
    # the hint, read back as a schedule, fits the cap
    starts = [m.scaling.to_time(t) for t in m.hint_starts]
    ends = [s + op.duration for s, op in zip(starts, p.graph.ops, strict=True)]
    units = assign_units(starts, ends, p.graph.demand_array("units").tolist())
    hint = Schedule.build(p, starts, units, solver="hint", status=Status.FEASIBLE)
    assert validate(p, hint).valid
    r = solve_cpsat(p, time_limit=10)
    assert r.status == Status.OPTIMAL and validate(p, r).valid
    assert r.makespan is not None and hint.makespan is not None
    assert r.makespan <= hint.makespan
