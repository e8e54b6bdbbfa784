"""The down-set search as a solver of its own (registry name ``downsets``).

:func:`solve_downsets` runs :func:`opsched.solver.downsets.downset_search` on the integer
problem CP-SAT would solve and returns a :class:`~opsched.schedule.Schedule` in real time
units: OPTIMAL when the search finishes, a beam schedule where its budget runs out.
"""

from __future__ import annotations

import time
from typing import Any

from opsched.errors import ProblemError
from opsched.problem import Objective, Problem
from opsched.schedule import Schedule, Status
from opsched.solver.defaults import check_seconds
from opsched.solver.downsets import (
    compile_kernels,
    downset_budget,
    downset_search,
    downset_search_applies,
    must_compile,
)

__all__ = ["BEAM_MIN_S", "solve_downsets"]

#: Seconds the beam run (after an exact search that gave up) may take past the time limit
#: at most; it stops at the limit otherwise. A beam stopped short has no schedule.
BEAM_MIN_S = 0.5


def solve_downsets(
    problem: Problem,
    objective: Objective | str | None = None,
    *,
    time_limit: float = 10.0,
    beam: int = 2_000,
    **_: Any,
) -> Schedule:
    """The down-set search as a solver of its own: least makespan under a memory cap.

    The problem is turned into integers as for CP-SAT (:mod:`opsched.solver.scaling`), and
    searched with :func:`downset_budget` of ``time_limit`` (budgets in counts, sized to the
    limit, which also stops both searches as a deadline: the beam run below gets at most
    :data:`BEAM_MIN_S` past it; the first search of an installation first compiles its
    kernels, :data:`~opsched.solver.downsets.COMPILE_S` or so, taken from that time and
    reported as ``info["compile_s"]``). OPTIMAL when the search finishes and the scaling is
    exact, INFEASIBLE when it finds that no schedule fits. Where the label budget runs out,
    a beam run (``beam`` labels per layer) gives a schedule (FEASIBLE, with the lower bound
    of :func:`opsched.analysis.lower_bounds`, on two units also the overlap bound of
    :mod:`opsched.analysis.overlap` with the cap's orders; OPTIMAL if the schedule meets
    it); where the down-sets run out, there is none (UNKNOWN: use ``cpsat``).

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 2, output_bytes=4), Op("b", 2, output_bytes=4),
    ...              Op("c", 1, deps=("a",)), Op("d", 1, deps=("b",))))
    >>> s = solve_downsets(Problem(g, Machine(units=2, memory_cap=4)))
    >>> s.status.value, s.makespan, s.lower_bound
    ('OPTIMAL', 6.0, 6.0)
    """
    from opsched.analysis.bounds import lower_bounds
    from opsched.analysis.overlap import budgeted_overlap_bound
    from opsched.solver.cpsat.model import assign_units, tick_problem
    from opsched.solver.cpsat.outside import CAP_ORDER_SHARE
    from opsched.solver.scaling import choose_scaling

    t0 = time.perf_counter()
    time_limit = check_seconds(time_limit)
    obj = Objective(objective if objective is not None else problem.objective)
    if obj is not Objective.MAKESPAN:  # the problem's own objective too: never OPTIMAL for it
        raise ProblemError(f"the down-set search minimises the makespan, not {obj.value}")
    if problem.memory_cap is None:
        raise ProblemError("the down-set search needs a memory cap (--memory-cap)")
    reason = problem.infeasibility_reason(cut=True)
    if reason is not None:
        return Schedule.empty(problem, solver="downsets", status=Status.INFEASIBLE,
                              info={"reason": reason},
                              wall_time_s=time.perf_counter() - t0)  # fmt: skip
    scaling = choose_scaling(problem.graph, problem.memory_cap)
    tick = tick_problem(problem, scaling)
    why = downset_search_applies(tick)
    if why is not None:
        raise ProblemError(f"the down-set search does not apply: {why}")
    info: dict[str, Any] = {"scaling": scaling.to_dict()}
    if must_compile(tick.graph.num_ops):
        info["compile_s"] = round(compile_kernels(), 3)  # once per installation
    rows, labels = downset_budget(max(0.0, time_limit - info.get("compile_s", 0.0)))
    # the budgets are counts (the same on every run); the deadline stops a loaded machine
    found = downset_search(tick, max_downsets=rows, max_labels=labels,
                           deadline=t0 + time_limit)  # fmt: skip
    info["downsets"] = found.to_info()
    if found.proven and found.makespan is None:
        if scaling.memory_exact:
            info["reason"] = "no schedule fits the memory cap (the down-set search is exhaustive)"
            status = Status.INFEASIBLE
        else:  # sizes rounded up, the cap down: a schedule may still fit the real cap
            info["reason"] = (
                f"no schedule fits the memory cap once sizes are rounded up to quanta of "
                f"{scaling.memory_quantum} B (rounding was not exact: one may fit the real "
                "cap; try --solver brute-force on a small graph)"
            )
            status = Status.UNKNOWN
        return Schedule.empty(problem, solver="downsets", status=status, info=info,
                              wall_time_s=time.perf_counter() - t0)  # fmt: skip
    lb = lower_bounds(problem.graph, problem.machine.units, problem.capacities).value
    if not found.proven:  # the beam keeps beam labels a layer: its own, smaller budget
        if problem.machine.units == 2:
            # in real units and bytes (the cap's orders too), so it holds whatever the
            # scaling rounded
            g = problem.graph
            free = int(problem.memory_cap) - g.persistent_bytes
            ob = budgeted_overlap_bound(g, free, CAP_ORDER_SHARE * time_limit)
            lb = lb if ob is None else max(lb, ob.value)
        # the rest of the limit, and at least BEAM_MIN_S past an exact search that used it up
        until = max(t0 + time_limit, time.perf_counter() + BEAM_MIN_S)
        found = downset_search(tick, max_downsets=rows, max_labels=max(labels, 64 * beam),
                               beam=beam, deadline=until)  # fmt: skip
        info["beam"] = found.to_info()
    if found.starts is None:
        ran_out = ("the search's budget" if found.reason != "time limit"
                   else f"the {time_limit:g} s time limit")  # fmt: skip
        info["reason"] = f"{ran_out} ran out before any schedule"
        compile_s = info.get("compile_s", 0.0)
        if compile_s >= 0.5 * time_limit:  # the budget went to compiling, not to the cap
            info["reason"] += (
                f": compiling the search's kernels took {compile_s:g} s of the"
                f" {time_limit:g} s limit (once per installation; they are cached now,"
                " run it again)"
            )
        return Schedule.empty(problem, solver="downsets", status=Status.UNKNOWN, info=info,
                              wall_time_s=time.perf_counter() - t0)  # fmt: skip
    ticks = found.starts
    ends = [t + d for t, d in zip(ticks, scaling.durations, strict=True)]
    units = assign_units([float(t) for t in ticks], [float(e) for e in ends],
                         problem.graph.demand_array("units").tolist())  # fmt: skip
    proven = found.proven and scaling.exact
    # the search's optimum bounds the problem only where its integers are the problem's:
    # sizes rounded up and the cap down can leave it less room than the problem has
    if found.proven and scaling.exact and found.makespan is not None:
        lb = max(lb, scaling.to_time(found.makespan))
    real_ms = max((scaling.to_time(e) for e in ends), default=0.0)
    proven = proven or (scaling.exact and real_ms <= lb + 1e-9)  # a beam schedule at the bound
    return Schedule.build(
        problem, scaling.starts_of(ticks, problem.graph.durations), units, solver="downsets",
        status=Status.OPTIMAL if proven else Status.FEASIBLE, lower_bound=lb,
        wall_time_s=time.perf_counter() - t0, info=info,
    )  # fmt: skip
