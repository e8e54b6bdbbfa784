"""``solve_cpsat``: proven-optimal schedules with OR-Tools CP-SAT.

The result's status is OPTIMAL only when CP-SAT proved it *and* the integer scaling was exact
(:mod:`opsched.solver.scaling`), or when a makespan-only result meets a lower bound of the
problem itself (:func:`~opsched.solver.cpsat.stages.optimal_at_bound`); FEASIBLE carries
the best bound and the gap; INFEASIBLE a reason; UNKNOWN means the time ran out with no
schedule. Makespan and peak memory are recomputed from the returned op times.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from opsched._jit import without_compiling
from opsched.analysis.bounds import lower_bounds, min_memory_bound
from opsched.analysis.cap_orders import cap_orders, flow_budget
from opsched.errors import ProblemError
from opsched.problem import (
    Objective,
    Problem,
    check_callable,
    check_flag,
    require_problem,
)
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.hint import (
    HINT_SHARE,
    deterministic_tries,
    heuristic_start,
    lists_apply,
)
from opsched.solver.cpsat.model import (
    Params,
    assign_units,
    tick_problem,
)
from opsched.solver.cpsat.outside import (  # the two shares: re-exported (__all__)
    CAP_ORDER_SHARE,
    SERIAL_SHARE,
    no_worse_than_greedy,
    overlap_bound,
    serial_check,
    serial_states,
)
from opsched.solver.cpsat.results import greedy_fallback
from opsched.solver.cpsat.stages import (
    DOWNSET_SHARE,
    PROBE_MAX_S,
    PROBE_SHARE,
    Run,
    optimal_at_bound,
)
from opsched.solver.defaults import DEFAULT_WORKERS, check_seconds, check_workers
from opsched.solver.scaling import choose_scaling, limit_in_ticks
from opsched.solver.serial import least_peak_start
from opsched.solver.split import solve_phases, split_points

__all__ = [
    "CAP_ORDER_SHARE",
    "DOWNSET_SHARE",
    "PROBE_MAX_S",
    "PROBE_SHARE",
    "SERIAL_SHARE",
    "solve_cpsat",
]

#: Most ticks the ops' durations may sum to: the horizon, energy and objective sums of the
#: model stay far inside CP-SAT's 64-bit domains (its variables hold at most 2**62).
MAX_TICKS = 2**50

#: Larger graphs get no one-unit check or least-peak search: their beam run alone takes
#: seconds (about 0.7 s at 1,000 ops, 5 s at 10,000; docs/memory-orders.md), and CP-SAT
#: proves nothing there anyway.
SERIAL_MAX_OPS = 1_000


@without_compiling()  # the time limit is the solver's: no kernel compiles within it
def solve_cpsat(
    problem: Problem,
    objective: Objective | str | None = None,
    *,
    time_limit: float = 10.0,
    num_workers: int = DEFAULT_WORKERS,
    deterministic: bool = False,
    log: bool = False,
    hint: bool = True,
    makespan_limit: float | None = None,
    params: Params | None = None,
    progress: Callable[[str], None] | None = None,
) -> Schedule:
    """Solve ``problem`` exactly with CP-SAT.

    Parameters
    ----------
    problem
        Graph, machine (units, resources, memory cap) and default objective.
    objective
        ``"makespan"``, ``"peak_memory"``, ``"makespan_then_memory"`` or
        ``"memory_then_makespan"``; the problem's objective if omitted.
    time_limit
        Seconds of wall clock for the whole call (all stages).
    num_workers
        CP-SAT search threads (:data:`~opsched.solver.defaults.DEFAULT_WORKERS`).
    deterministic
        Same answer on every run (interleaved search with a fixed seed).
    log
        Print CP-SAT's search log.
    hint
        Start from the best heuristic schedule (also used as the horizon): greedy, and
        without a memory cap the portfolio's list schedules, for at most
        :data:`~opsched.solver.cpsat.hint.HINT_SHARE` of the time limit
        (:func:`~opsched.solver.cpsat.hint.heuristic_start`; ``info["start"]`` says which).
    makespan_limit
        With a peak-memory objective: only schedules that end by this time.
    params
        Full :class:`~opsched.solver.cpsat.model.Params` (overrides the keywords above except
        ``time_limit``).
    progress
        Called with a line at each improving solution of each stage: the objective and
        CP-SAT's best bound, in real units (time, bytes).

    Examples
    --------
    The seed graph on 2 units: the critical path (6) is optimal.

    >>> from opsched.demo import seed_problem
    >>> r = solve_cpsat(seed_problem(units=2), time_limit=5)
    >>> r.status.value, r.makespan, r.lower_bound
    ('OPTIMAL', 6.0, 6.0)
    """
    require_problem(problem, "solve_cpsat")
    if params is not None and not isinstance(params, Params):
        raise TypeError(
            f"solve_cpsat takes a Params as params, got {type(params).__name__} "
            "(opsched.solver.cpsat.model.Params(num_workers=4); or the keywords themselves)"
        )
    check_callable(progress, "progress")
    for flag, value in (("deterministic", deterministic), ("log", log), ("hint", hint)):
        check_flag(value, flag)
    t0 = time.perf_counter()
    deadline = t0 + check_seconds(time_limit)
    check_workers(params.num_workers if params is not None else num_workers)
    if makespan_limit is not None and not math.isfinite(makespan_limit):
        raise ProblemError(f"makespan_limit must be a finite number, got {makespan_limit!r}")
    obj = Objective(objective if objective is not None else problem.objective)
    if params is None:
        params = Params(time_limit, num_workers, deterministic, log, hint)
    else:
        params = replace(params, time_limit=time_limit)
    reason = problem.infeasibility_reason(cut=True)
    if reason is not None:
        return Schedule.empty(
            problem, solver="cpsat", status=Status.INFEASIBLE, info={"reason": reason},
            wall_time_s=time.perf_counter() - t0,
        )  # fmt: skip

    split = makespan_limit is None  # the phases would each be solved without the limit
    if split and params.split and obj is Objective.MAKESPAN and problem.memory_cap is not None:
        cuts = split_points(problem.graph)
        if cuts:  # independent phases, each solved on its own (opsched.solver.split)
            inner = replace(params, split=False)

            def phase(p: Problem, seconds: float) -> Schedule:
                return solve_cpsat(p, obj, time_limit=seconds, params=inner, progress=progress)

            return solve_phases(problem, cuts, phase, time_limit, progress)
    scaling = choose_scaling(problem.graph, problem.memory_cap)
    sum_ticks = int(sum(scaling.durations))
    if sum_ticks > MAX_TICKS:
        raise ProblemError(
            f"the ops' total duration is {sum_ticks:.3g} ticks, over the {MAX_TICKS:.3g} "
            "(2**50) the CP-SAT model holds (its sums must stay within 64-bit integers): "
            "give the durations in a coarser time unit"
        )
    info: dict[str, Any] = {"objective": obj.value, "scaling": scaling.to_dict(), "stages": []}
    run = Run(
        problem, obj, params, time_limit, t0, deadline, makespan_limit, progress,
        scaling, tick_problem(problem, scaling), info,
    )  # fmt: skip
    refuted = _analyse(run)
    if refuted is not None:
        return refuted
    return _stages(run)


def _analyse(run: Run) -> Schedule | None:
    """The analyses before the model, on ``run``: the cap's forced orders, the overlap
    bound on 2 units, the one-unit check and the least peak; an INFEASIBLE result where one
    of them refutes the cap."""
    problem, params, scaling, info = run.problem, run.params, run.scaling, run.info
    tick, time_limit = run.tick, run.time_limit
    if params.cap_orders and scaling.cap is not None:
        # computed on the integer problem the model solves (its sizes and cap in quanta),
        # with at most a tenth of the time limit's worth of maximum flows
        n = problem.graph.num_ops
        forced = cap_orders(tick.graph, scaling.cap, flow_budget(n, CAP_ORDER_SHARE * time_limit))
        if forced.conflict is not None:
            why = forced.describe_conflict(problem.graph)
            return run.none_found("INFEASIBLE", scaling.memory_exact, proof=why)
        run.orders = forced.edges
        info["cap_orders"] = {"orders": len(run.orders), "started": forced.started,
                              "flows": forced.flows, "complete": forced.complete}  # fmt: skip
    with_makespan = run.obj is not Objective.PEAK_MEMORY  # a stage minimises the makespan
    if params.overlap and with_makespan and scaling.cap is not None and problem.machine.units == 2:
        # the case split builds on the cap's orders, so it runs where they do
        run.known_makespan, proof = overlap_bound(
            tick, scaling.cap, run.orders, time_limit, info,
            cases=params.cases and params.cap_orders, clock=not params.deterministic,
        )  # fmt: skip
        if proof is not None:
            return run.none_found("INFEASIBLE", scaling.memory_exact, proof=proof)
    serial = params.serial_check and problem.graph.num_ops <= SERIAL_MAX_OPS
    if serial and problem.memory_cap is not None:
        check = serial_check(problem, time_limit)
        if check is not None:
            info["serial_check"] = {"fits": check.fits, "states": check.states}
            if check.fits is False:
                proof = check.describe(problem.memory_cap)
                return run.none_found("INFEASIBLE", True, proof=proof)
            run.memory_order = check.order
    if run.makespan_limit is not None:
        # past the total work it binds nothing: a schedule shifted left (each start at 0 or
        # at an end) has no idle time and keeps its memory and capacity, so ends by then
        run.limit_ticks = min(run.sum_ticks, limit_in_ticks(run.makespan_limit, scaling))
    if serial and run.obj in (Objective.PEAK_MEMORY, Objective.MEMORY_THEN_MAKESPAN):
        least = least_peak_start(tick, max_states=serial_states(time_limit))
        info["least_peak"] = {"quanta": least.peak, "proven": least.proven}
        run.peak_floor = least.peak if least.proven else 0
        # with a makespan limit it may end after the limit
        run.peak_hint = least.hint if run.limit_ticks is None else None
    return None


def _stages(run: Run) -> Schedule:
    """Solve the objective's stages in order and build the result from the last schedule."""
    problem, params, scaling, info = run.problem, run.params, run.scaling, run.info
    tick, time_limit, makespan_limit, obj = run.tick, run.time_limit, run.makespan_limit, run.obj
    order = {
        Objective.MAKESPAN: ["makespan"],
        Objective.PEAK_MEMORY: ["peak"],
        Objective.MAKESPAN_THEN_MEMORY: ["makespan", "peak"],
        Objective.MEMORY_THEN_MAKESPAN: ["peak", "makespan"],
    }[obj]
    # rounded sizes cost no proof where memory plays no part (no cap, makespan only)
    memory_counts = problem.memory_cap is not None or "peak" in order
    exact = scaling.time_exact and (scaling.memory_exact or not memory_counts)
    lb = lower_bounds(problem.graph, problem.machine.units, problem.capacities).value
    bound_of_problem = lb  # from the problem itself, whatever the rounding
    if makespan_limit is not None and makespan_limit < lb - 1e-9:
        info["reason"] = (
            f"makespan limit {makespan_limit:g} is below the lower bound {lb:g} "
            f"(critical path, work, resource and ramp bounds)"
        )
        return Schedule.empty(problem, solver="cpsat", status=Status.INFEASIBLE, info=info,
                              wall_time_s=time.perf_counter() - run.t0)  # fmt: skip
    start = None
    if params.hint and params.lists and order[0] == "makespan" and lists_apply(tick):
        # the list schedules beyond greedy, once, stopping at the model's own lower bound
        low = lower_bounds(tick.graph, tick.machine.units, tick.capacities, params.ramp,
                           nested=params.nested)  # fmt: skip
        # deterministic: a count, not the clock, so the start is the same on every machine
        det = params.deterministic
        start = heuristic_start(
            tick, seconds=None if det else HINT_SHARE * time_limit,
            target=math.ceil(low.value - 1e-9),
            max_tries=deterministic_tries(tick.graph.num_ops, time_limit) if det else None,
        )  # fmt: skip
        info["start"] = start.to_info()
    best_ticks: list[int] | None = None
    statuses: list[str] = []
    bound: int | None = None
    for kind in order:
        if best_ticks is None and start is not None and start.starts is not None:
            horizon = start.makespan if params.greedy_horizon else None
            model = run.stage(kind, bound, start.starts, horizon)
        else:
            model = run.stage(kind, bound, best_ticks if best_ticks is not None else run.peak_hint)
        last = info["stages"][-1]["cpsat_status"]
        statuses.append(last)
        if last not in ("OPTIMAL", "FEASIBLE"):
            if best_ticks is None:  # the first stage found nothing
                fallback = greedy_fallback(model, last, makespan_limit)
                if fallback is None:
                    return run.none_found(last, exact)
                best_ticks = fallback
                info["note_fallback"] = "time ran out: the heuristic schedule CP-SAT started from"
            break  # keep the previous stage's schedule
        best_ticks = model.tick_starts()
        assert model.solver is not None
        bound = round(model.solver.objective_value)
    assert best_ticks is not None
    proven = len(statuses) == len(order) and all(s == "OPTIMAL" for s in statuses)
    status = Status.OPTIMAL if proven and exact else Status.FEASIBLE
    first = info["stages"][0]
    # CP-SAT's bound holds for the problem only where the model is the problem: with sizes
    # rounded up (and the cap down) it is tighter, and so is its bound
    if order[0] == "makespan" and exact and first["cpsat_status"] != "UNKNOWN":
        lb = max(lb, math.ceil(first["objective_bound"] - 1e-9) / scaling.time_scale)
    if order[0] == "peak":
        need, _ = min_memory_bound(problem.graph)
        # with durations rounded up to ticks, the model's makespan limit is tighter too
        tight = run.limit_ticks is not None and not scaling.time_exact
        if scaling.memory_exact and not tight and first["cpsat_status"] != "UNKNOWN":
            need = max(
                need,
                problem.graph.persistent_bytes
                + math.ceil(first["objective_bound"] - 1e-9) * scaling.memory_quantum,
            )
        info["peak_lower_bound"] = need
    if not exact:
        info["note"] = "durations or sizes were rounded; optimality is not claimed"
    demand = problem.graph.demand_array("units").tolist()
    tick_ends = [t + d for t, d in zip(best_ticks, scaling.durations, strict=True)]
    units = assign_units([float(t) for t in best_ticks], [float(e) for e in tick_ends], demand)
    starts = scaling.starts_of(best_ticks, problem.graph.durations)
    out = Schedule.build(
        problem, starts, units, solver="cpsat", status=status,
        lower_bound=lb, wall_time_s=time.perf_counter() - run.t0, info=info,
    )  # fmt: skip
    if not scaling.time_exact and order == ["makespan"]:
        out = no_worse_than_greedy(problem, out)
    return optimal_at_bound(out, obj, bound_of_problem)
