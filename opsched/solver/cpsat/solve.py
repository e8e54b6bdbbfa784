"""``solve_cpsat``: proven-optimal schedules with OR-Tools CP-SAT.

The result's status is OPTIMAL only when CP-SAT proved it *and* the integer scaling was exact
(:mod:`opsched.solver.scaling`); FEASIBLE carries the best bound and the gap; INFEASIBLE a
reason; UNKNOWN means the time ran out with no schedule. Makespan and peak memory are
recomputed from the returned op times.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ortools.sat.python import cp_model

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
    Start,
    deterministic_tries,
    heuristic_start,
    lists_apply,
)
from opsched.solver.cpsat.model import (
    CpsatModel,
    Params,
    assign_units,
    tick_problem,
)
from opsched.solver.cpsat.outside import (  # the two shares: re-exported (__all__)
    CAP_ORDER_SHARE,
    SERIAL_SHARE,
    exact_start,
    no_worse_than_greedy,
    overlap_bound,
    serial_check,
    serial_states,
)
from opsched.solver.cpsat.results import greedy_fallback, no_schedule, reporter
from opsched.solver.defaults import DEFAULT_WORKERS, check_seconds, check_workers
from opsched.solver.downsets import (
    COMPILE_S,
    compile_kernels,
    downset_budget,
    downset_candidate,
    downset_search,
    must_compile,
)
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

#: Share of the time limit the down-set search may take (as down-set and label counts).
DOWNSET_SHARE = 0.4

#: Share of the time limit CP-SAT has alone first, where the down-set search would run,
#: and the most seconds that may be: the caps it proves there, it proves in about a second,
#: and a longer try delays the search where it is needed (RandWire's tightest caps at 60 s,
#: 6 s tries -> 2 s: 2.9-20.9 s to the proofs instead of 4.2-25.1 s; ``python
#: benchmarks/bench_zoo_memory.py --only stage --probe-max-s 6``, then without the flag).
PROBE_SHARE = 0.1
PROBE_MAX_S = 2.0

#: Larger graphs get no one-unit check or least-peak search: their beam run alone takes
#: seconds (about 0.7 s at 1,000 ops, 5 s at 10,000; docs/memory-orders.md), and CP-SAT
#: proves nothing there anyway.
SERIAL_MAX_OPS = 1_000

_STATUS = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.UNKNOWN: Status.UNKNOWN,
}


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

    def none_found(cp_status: str, proven: bool, proof: str | None = None) -> Schedule:
        """The result where the model gave no schedule: INFEASIBLE with a proof, else a
        valid schedule of the problem itself (FEASIBLE, the model's failure noted), else
        UNKNOWN. A rounded model that is infeasible proves nothing: its sizes are rounded
        up and its cap down, so the problem may still have room, and the schedule the
        greedy finds there was dropped with it."""
        out = no_schedule(problem, cp_status, proven, info, t0, makespan_limit, proof)
        if out.status is not Status.UNKNOWN:
            return out
        memory_first = obj in (Objective.PEAK_MEMORY, Objective.MEMORY_THEN_MAKESPAN)
        found = exact_start(problem, makespan_limit, memory_first)
        if found is None:
            return out
        why = info.pop("reason")
        info["note_fallback"] = f"{why}: the {found.solver} schedule of the problem is returned"
        if not (scaling.time_exact and scaling.memory_exact):
            info["note"] = "durations or sizes were rounded; optimality is not claimed"
        low = lower_bounds(problem.graph, problem.machine.units, problem.capacities).value
        by_name = {o.name: o for o in found.ops}
        ops = [by_name[n] for n in problem.graph.names]
        return Schedule.build(
            problem, [o.start for o in ops], [o.unit for o in ops],
            solver="cpsat", status=Status.FEASIBLE, lower_bound=low,
            wall_time_s=time.perf_counter() - t0, info=info,
        )  # fmt: skip

    tick = tick_problem(problem, scaling)
    orders: tuple[tuple[int, int], ...] = ()
    if params.cap_orders and scaling.cap is not None:
        # computed on the integer problem the model solves (its sizes and cap in quanta),
        # with at most a tenth of the time limit's worth of maximum flows
        n = problem.graph.num_ops
        forced = cap_orders(tick.graph, scaling.cap, flow_budget(n, CAP_ORDER_SHARE * time_limit))
        if forced.conflict is not None:
            why = forced.describe_conflict(problem.graph)
            return none_found("INFEASIBLE", scaling.memory_exact, proof=why)
        orders = forced.edges
        info["cap_orders"] = {"orders": len(orders), "started": forced.started,
                              "flows": forced.flows, "complete": forced.complete}  # fmt: skip
    known_makespan: int | None = None  # a bound proven outside the model, in ticks
    with_makespan = obj is not Objective.PEAK_MEMORY  # a stage minimises the makespan
    if params.overlap and with_makespan and scaling.cap is not None and problem.machine.units == 2:
        # the case split builds on the cap's orders, so it runs where they do
        known_makespan, proof = overlap_bound(tick, scaling.cap, orders, time_limit, info,
                                               cases=params.cases and params.cap_orders,
                                               clock=not params.deterministic)  # fmt: skip
        if proof is not None:
            return none_found("INFEASIBLE", scaling.memory_exact, proof=proof)
    memory_order = None
    serial = params.serial_check and problem.graph.num_ops <= SERIAL_MAX_OPS
    if serial and problem.memory_cap is not None:
        check = serial_check(problem, time_limit)
        if check is not None:
            info["serial_check"] = {"fits": check.fits, "states": check.states}
            if check.fits is False:
                proof = check.describe(problem.memory_cap)
                return none_found("INFEASIBLE", True, proof=proof)
            memory_order = check.order
    limit_ticks = None
    if makespan_limit is not None:
        # past the total work it binds nothing: a schedule shifted left (each start at 0 or
        # at an end) has no idle time and keeps its memory and capacity, so ends by then
        work = sum(scaling.durations)
        limit_ticks = min(work, limit_in_ticks(makespan_limit, scaling))
    peak_floor, peak_hint = 0, None
    if serial and obj in (Objective.PEAK_MEMORY, Objective.MEMORY_THEN_MAKESPAN):
        least = least_peak_start(tick, max_states=serial_states(time_limit))
        info["least_peak"] = {"quanta": least.peak, "proven": least.proven}
        peak_floor = least.peak if least.proven else 0
        peak_hint = least.hint
        if limit_ticks is not None:
            peak_hint = None  # it may end after the limit

    own: list[Start] = []  # the models' own start, searched for once (probe and model)

    def own_start() -> Start:
        if not own:
            # under a cap the greedy schedules break, its order searches take seconds at
            # 100 ops: stopped by the time limit (by their state counts alone when
            # deterministic), and not repeated for each model
            until = None if params.deterministic else deadline
            own.append(heuristic_start(tick, memory_order, deadline=until))
        return own[0]

    def build(kind: str, bound: int | None, hint_starts: list[int] | None,
              horizon: int | None, floor: int) -> CpsatModel:  # fmt: skip
        """The model of one stage; ``bound`` caps the other criterion (makespan or peak)."""
        peak_bounded = kind == "makespan" and bound is not None  # memory_then_makespan
        with_peak = kind == "peak" or peak_bounded
        start = own_start() if hint_starts is None else None
        model = CpsatModel(
            problem,
            with_memory=problem.memory_cap is not None or with_peak,
            with_peak=with_peak,
            scaling=scaling,
            horizon=horizon,
            hint_starts=hint_starts,
            params=params,
            tick=tick,
            orders=orders,
            memory_order=memory_order,
            peak_floor=peak_floor if with_peak else 0,
            makespan_floor=floor,
            start=start,
        )
        if kind == "makespan":
            if peak_bounded and bound is not None:
                model.objective.peak_at_most(bound)
            model.objective.minimise_makespan()
        else:
            if bound is not None:
                model.objective.makespan_at_most(bound)
            if limit_ticks is not None:
                model.objective.makespan_at_most(limit_ticks)
            model.objective.minimise_peak()
        return model

    def run(model: CpsatModel, kind: str, until: float) -> Any:
        report = None if progress is None else reporter(kind, scaling, problem, progress)
        # the overlap bound holds under this stage's cap too (never above the problem's)
        known = known_makespan if kind == "makespan" else None
        status = model.solve(params, until, report, known_bound=known)
        if status == cp_model.MODEL_INVALID:
            raise RuntimeError(f"CP-SAT rejected the model: {model.model.validate()}")
        return status

    def stage(kind: str, bound: int | None, hint_starts: list[int] | None,
              hint_horizon: int | None = None) -> CpsatModel:  # fmt: skip
        """Solve one stage; ``bound`` caps the other criterion (makespan or peak);
        ``hint_horizon``: the makespan of ``hint_starts``, where it is the horizon."""
        peak_bounded = kind == "makespan" and bound is not None  # memory_then_makespan
        with_peak = kind == "peak" or peak_bounded
        # else: the starting schedule's makespan (None: the model's greedy one)
        horizon = sum_ticks if with_peak else hint_horizon
        if kind == "peak" and bound is not None:
            horizon = bound  # makespan_then_memory: keep the optimal makespan
        if limit_ticks is not None:
            horizon = limit_ticks if horizon is None else min(horizon, limit_ticks)
        floor = 0
        cap = bound if peak_bounded else tick.memory_cap  # or memory_then_makespan's least peak
        dp = None if cap is None else tick.with_machine(memory_cap=cap)
        # a cap both greedy schedules break: CP-SAT alone for a while (it proves the looser
        # of these caps at once), then the down-set search, then CP-SAT again
        search = kind == "makespan" and params.downsets and dp is not None and downset_candidate(dp)
        share = DOWNSET_SHARE * time_limit
        cold = search and dp is not None and must_compile(dp.graph.num_ops)
        if cold and share < COMPILE_S:  # compiling would eat the share and more
            why = f"its kernels are not compiled yet (about {COMPILE_S:g} s, over its "
            why += f"{share:.1f} s share); opsched.solver.compile_kernels() compiles them"
            info["downsets"] = {"skipped": why}
            search = False
        if search and dp is not None:
            probed: dict[str, Any] = {}
            if params.probe:
                probe = build(kind, bound, hint_starts, horizon, 0)
                probe_s = min(PROBE_MAX_S, PROBE_SHARE * time_limit)
                until = min(deadline, time.perf_counter() + probe_s)
                if run(probe, kind, until) == cp_model.OPTIMAL:
                    info["stages"].append({"minimise": kind, **probe.stats()})
                    return probe
                probed = {"probe": probe.stats()}
                if probe.status == cp_model.FEASIBLE and probe.solver is not None:
                    hint_starts = probe.tick_starts()  # a better start than the greedy one
                    horizon = round(probe.solver.objective_value)
            if cold:  # once per installation
                if progress is not None:
                    progress("down-set search: compiling its kernels (once per installation)")
                compiled_s = compile_kernels()
                probed["compile_s"] = round(compiled_s, 3)
                share = max(0.0, share - compiled_s)
            rows, labels = downset_budget(share)
            # the budgets are counts, the same on every run, so a loaded machine takes
            # longer over them than their share (RandWire stage4, 2 units, 10 s limit, load
            # 7 on 2 cores: 14.8 s against 4, the limit overrun by 7.4 s); the clock stops
            # it at its share there, except in deterministic mode
            stop = None if params.deterministic else min(deadline, time.perf_counter() + share)
            found = downset_search(dp, max_downsets=rows, max_labels=labels, deadline=stop)
            info["downsets"] = {**found.to_info(), **probed}
            if progress is not None:
                progress(found.describe(scaling.to_time))
            if found.proven and found.makespan is not None:
                hint_starts, floor = found.starts, found.makespan
                horizon = found.makespan
        model = build(kind, bound, hint_starts, horizon, floor)
        run(model, kind, deadline)
        info["stages"].append({"minimise": kind, **model.stats()})
        return model

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
    if makespan_limit is not None and makespan_limit < lb - 1e-9:
        info["reason"] = (
            f"makespan limit {makespan_limit:g} is below the lower bound {lb:g} "
            f"(critical path, work, resource and ramp bounds)"
        )
        return Schedule.empty(problem, solver="cpsat", status=Status.INFEASIBLE, info=info,
                              wall_time_s=time.perf_counter() - t0)  # fmt: skip
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
            model = stage(kind, bound, start.starts, horizon)
        else:
            model = stage(kind, bound, best_ticks if best_ticks is not None else peak_hint)
        last = info["stages"][-1]["cpsat_status"]
        statuses.append(last)
        if last not in ("OPTIMAL", "FEASIBLE"):
            if best_ticks is None:  # the first stage found nothing
                fallback = greedy_fallback(model, last, makespan_limit)
                if fallback is None:
                    return none_found(last, exact)
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
        tight = limit_ticks is not None and not scaling.time_exact
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
        lower_bound=lb, wall_time_s=time.perf_counter() - t0, info=info,
    )  # fmt: skip
    if not scaling.time_exact and order == ["makespan"]:
        out = no_worse_than_greedy(problem, out)
    return out
