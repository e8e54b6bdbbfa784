"""Exact pipeline scheduling with CP-SAT: the unrolled and the modulo formulation.

Both choose the stage of every op (unless one is given) together with the times; the
formulations and the measurement that picked the default are in ``docs/pipeline.md``.

``unrolled``
    One start variable per op and micro-batch, one boolean ``x[v,s]`` per op and stage
    (exactly one true, shared by all micro-batches), stages non-decreasing along edges, an
    optional interval per (copy, stage) present iff ``x[v,s]``, one cumulative per stage with
    its units as capacity; minimise the makespan of all ``M`` micro-batches. Copies of one op
    start in micro-batch order (a valid symmetry cut: sorting each op's copy starts keeps
    precedence and every stage's load). OPTIMAL means the least makespan over every stage
    assignment.
``modulo``
    A periodic schedule: micro-batch ``m`` runs op ``v`` at ``m * II + t[v]``. For a fixed
    period ``II``, ``t[v] = II * q[v] + r[v]`` with ``0 <= r[v] < II``; the copies of ``v``
    at ``r[v] + k * II`` (``k = 0 .. ceil(max d / II)``) in a per-stage cumulative give the
    steady-state load at every phase. From a lower bound, ``II`` gallops up (steps 1, 2, 4,
    ... ticks) to a feasible model, bisects down to the least feasible ``II`` it can find,
    then tries every smaller ``II`` not yet tried (up to :data:`MAX_PROOF_PERIODS`): when all
    are infeasible, ``info["ii_proven_least"]`` (feasibility need not be monotone in ``II``,
    so the bisection alone proves nothing). The latency ``max t[v] + d[v]`` is minimised at
    that ``II``.

Only unit demands are modelled (no other resources, no memory cap); other problems raise
:class:`~opsched.errors.ProblemError`: use the heuristic.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.problem import Machine, Problem
>>> g = OpGraph((Op("a", 2), Op("b", 1, deps=("a",)), Op("c", 2, deps=("b",))))
>>> p = Problem(g, Machine(units=2))
>>> r = pipeline_cpsat(p, stages=2, microbatches=2, time_limit=5)
>>> r.schedule.status.value, r.metrics.makespan
('OPTIMAL', 8.0)
>>> m = pipeline_cpsat(p, 2, 4, formulation="modulo", time_limit=5)
>>> m.info["ii"], m.metrics.latency, m.metrics.makespan
(3.0, 5.0, 14.0)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.pipeline.heuristic import pipeline_heuristic
from opsched.pipeline.model import (
    PipelineResult,
    pipeline_metrics,
    stage_capacities,
    stage_units,
    unroll,
)
from opsched.pipeline.partition import balanced_partition
from opsched.problem import Problem
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.model import Improvements, makespan_lines
from opsched.solver.defaults import check_seconds
from opsched.solver.interrupt import run_solver
from opsched.solver.scaling import choose_scaling
from opsched.solver.settle import settle_starts

__all__ = ["AUTO_UNROLLED_MAX_COPIES", "FORMULATIONS", "pipeline_cpsat"]

#: Names accepted for ``formulation``.
FORMULATIONS = ("auto", "unrolled", "modulo")

#: ``auto`` picks ``unrolled`` up to this many op copies (ops x micro-batches), else ``modulo``:
#: measured on layered graphs (``docs/pipeline.md``), CP-SAT proves the unrolled optimum
#: within about 2.5 s up to 48 copies, and times out at 10 s on some beyond 96.
AUTO_UNROLLED_MAX_COPIES = 48


def _check(problem: Problem) -> None:
    g = problem.graph
    if problem.memory_cap is not None:
        raise ProblemError("the CP-SAT pipeline models no memory cap; use the heuristic")
    for op in g.ops:
        extra = [r for r, x in op.demands.items() if r != "units" and x]
        if extra and any(problem.capacity(r) is not None for r in extra):
            raise ProblemError(
                f"demands {extra[0]!r}; the CP-SAT pipeline models units only (use the heuristic)",
                f"op {op.name!r}",
            )


def _heads_tails(problem: Problem, d: list[int]) -> tuple[list[int], list[int]]:
    g = problem.graph
    order = topo_indices(g).tolist()
    head = [0] * g.num_ops
    tail = [0] * g.num_ops
    for v in order:
        ps = g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist()
        head[v] = max((head[u] + d[u] for u in ps), default=0)
    for v in reversed(order):
        ss = g.succ_idx[g.succ_ptr[v] : g.succ_ptr[v + 1]].tolist()
        tail[v] = d[v] + max((tail[w] for w in ss), default=0)
    return head, tail


def _solve(
    model: Any,
    time_limit: float,
    workers: int,
    on_solution: Callable[[float, float], None] | None = None,
) -> Any:
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
    solver.parameters.num_workers = workers
    callback = None if on_solution is None else Improvements(on_solution)
    return solver, run_solver(solver, model, callback)


def _stage_literals(
    model: Any, problem: Problem, stages: int, assignment: Sequence[int] | None
) -> list[list[Any]]:
    """``x[v][s]``: op ``v`` in stage ``s``; exactly one per op, monotone along edges."""
    g = problem.graph
    x = [[model.new_bool_var(f"x{v}_{s}") for s in range(stages)] for v in range(g.num_ops)]
    level = []
    for v in range(g.num_ops):
        model.add_exactly_one(x[v])
        level.append(sum(s * x[v][s] for s in range(stages)))
        if assignment is not None:
            model.add(x[v][int(assignment[v])] == 1)
    for v in range(g.num_ops):
        for u in g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist():
            model.add(level[u] <= level[v])
    return x


def _result(
    problem: Problem,
    assign: list[int],
    m_count: int,
    caps: list[int],
    starts: list[float],
    status: Status,
    bound: float | None,
    method: str,
    info: dict[str, Any],
    t0: float,
) -> PipelineResult:
    up = unroll(problem.graph, assign, m_count, caps)
    starts = settle_starts(starts, up.graph.durations).tolist()  # ticks read back exactly
    sched = Schedule.build(
        up,
        starts,
        stage_units(up, starts),
        solver=f"pipeline-{method}",
        status=status,
        lower_bound=bound,
        wall_time_s=time.perf_counter() - t0,
        info=info,
    )
    return PipelineResult(up, sched, assign, pipeline_metrics(up, sched), method, info)


def _fallback(heur: PipelineResult, method: str, why: str, t0: float) -> PipelineResult:
    heur.info = {**heur.info, "fallback": why}
    heur.schedule.info = {**heur.schedule.info, "fallback": why}
    heur.schedule.wall_time_s = time.perf_counter() - t0
    heur.method = f"{method} (heuristic fallback)"
    return heur


def pipeline_cpsat(
    problem: Problem,
    stages: int,
    microbatches: int,
    *,
    formulation: str = "auto",
    assignment: Sequence[int] | None = None,
    time_limit: float = 10.0,
    num_workers: int = 2,
    progress: Callable[[str], None] | None = None,
) -> PipelineResult:
    """Pipeline ``problem.graph`` exactly (see the module docstring for both formulations).

    Parameters
    ----------
    problem
        One micro-batch's graph; the machine's units are split over the stages.
    stages, microbatches
        ``S`` and ``M``.
    formulation
        ``"unrolled"`` (least makespan of ``M`` micro-batches), ``"modulo"`` (least
        period, then least latency) or ``"auto"``: unrolled up to
        :data:`AUTO_UNROLLED_MAX_COPIES` op copies, modulo beyond.
    assignment
        Fix the stage of every op instead of choosing it.
    time_limit, num_workers
        CP-SAT settings (the modulo search shares the time over its periods).
    progress
        Called with a line at each improving unrolled schedule (its makespan and CP-SAT's
        bound), or for each period the modulo search settles.

    Returns
    -------
    PipelineResult
        Its ``schedule`` is a schedule of the unrolled problem (validate it with
        :func:`opsched.validate.validate`); if CP-SAT finds nothing in time, the heuristic's
        result with ``info["fallback"]``.
    """
    t0 = time.perf_counter()
    check_seconds(time_limit)
    if formulation not in FORMULATIONS:
        raise ProblemError(f"unknown formulation {formulation!r}; known: {', '.join(FORMULATIONS)}")
    _check(problem)
    if formulation == "auto":
        small = problem.graph.num_ops * microbatches <= AUTO_UNROLLED_MAX_COPIES
        formulation = "unrolled" if small else "modulo"
    caps = stage_capacities(problem.machine.units, stages)
    heur = pipeline_heuristic(problem, stages, microbatches, assignment=assignment)
    args = (problem, caps, microbatches, assignment, heur, time_limit, num_workers, t0, progress)
    return _unrolled(*args) if formulation == "unrolled" else _modulo(*args)


def _unrolled(
    problem: Problem,
    caps: list[int],
    m_count: int,
    assignment: Sequence[int] | None,
    heur: PipelineResult,
    time_limit: float,
    workers: int,
    t0: float,
    say: Callable[[str], None] | None,
) -> PipelineResult:
    from ortools.sat.python import cp_model

    g = problem.graph
    n, stages = g.num_ops, len(caps)
    sc = choose_scaling(g, None)
    d = [int(x) for x in sc.durations]
    dem = g.demand_array("units").tolist()
    head, tail = _heads_tails(problem, d)
    horizon = m_count * sum(d)
    if sc.time_exact and heur.metrics is not None:
        horizon = min(horizon, round(heur.metrics.makespan * sc.time_scale))
    model = cp_model.CpModel()
    x = _stage_literals(model, problem, stages, assignment)
    mk = model.new_int_var(max(tail, default=0), horizon, "makespan")
    start = [
        [model.new_int_var(head[v], horizon - tail[v], f"s{m}_{v}") for v in range(n)]
        for m in range(m_count)
    ]
    per_stage: list[list[Any]] = [[] for _ in range(stages)]
    per_dem: list[list[int]] = [[] for _ in range(stages)]
    for m in range(m_count):
        for v in range(n):
            for u in g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist():
                model.add(start[m][v] >= start[m][u] + d[u])
            model.add(mk >= start[m][v] + d[v])
            if m:
                model.add(start[m - 1][v] <= start[m][v])  # copies in micro-batch order
            if d[v] > 0 and dem[v] > 0:
                for s in range(stages):
                    iv = model.new_optional_fixed_size_interval_var(
                        start[m][v], d[v], x[v][s], f"i{m}_{v}_{s}"
                    )
                    per_stage[s].append(iv)
                    per_dem[s].append(dem[v])
    for s in range(stages):
        if per_stage[s]:
            model.add_cumulative(per_stage[s], per_dem[s], caps[s])
    model.minimize(mk)
    if sc.time_exact and heur.metrics is not None:
        for v in range(n):
            for s in range(stages):
                model.add_hint(x[v][s], heur.assignment[v] == s)
        for i, o in enumerate(heur.schedule.ops):
            model.add_hint(start[i // n][i % n], round(o.start * sc.time_scale))
    report = None if say is None else makespan_lines(say, sc.to_time)
    solver, status = _solve(model, time_limit - (time.perf_counter() - t0), workers, report)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _fallback(heur, "cpsat-unrolled", f"CP-SAT: {solver.status_name(status)}", t0)
    assign = [next(s for s in range(stages) if solver.value(x[v][s])) for v in range(n)]
    starts = [sc.to_time(solver.value(start[m][v])) for m in range(m_count) for v in range(n)]
    proven = status == cp_model.OPTIMAL and sc.time_exact
    info = {
        "formulation": "unrolled",
        "cpsat_status": solver.status_name(status),
        "scaling": sc.to_dict(),
        "capacities": caps,
    }
    bound = sc.to_time(math.ceil(solver.best_objective_bound - 1e-9)) if sc.time_exact else None
    return _result(
        problem,
        assign,
        m_count,
        caps,
        starts,
        Status.OPTIMAL if proven else Status.FEASIBLE,
        bound,
        "cpsat-unrolled",
        info,
        t0,
    )


#: Most periods below the best found that the modulo formulation tries one by one to prove
#: the best least (a period of many ticks, from durations with six decimals, has far more).
MAX_PROOF_PERIODS = 1000

#: Share of the time left that one period's feasibility solve may take.
SEARCH_SHARE = 0.5


def _modulo(
    problem: Problem,
    caps: list[int],
    m_count: int,
    assignment: Sequence[int] | None,
    heur: PipelineResult,
    time_limit: float,
    workers: int,
    t0: float,
    say: Callable[[str], None] | None,
) -> PipelineResult:
    from ortools.sat.python import cp_model

    g = problem.graph
    n, stages = g.num_ops, len(caps)
    sc = choose_scaling(g, None)
    d = [int(x) for x in sc.durations]
    dem = g.demand_array("units").tolist()
    head, _ = _heads_tails(problem, d)
    work = np.array([dv * u for dv, u in zip(d, dem, strict=True)], dtype=np.int64)
    base = assignment if assignment is not None else balanced_partition(g, stages, caps)
    per = np.bincount(np.asarray(base, dtype=np.int64), weights=work, minlength=stages)
    ii_hi = max(1, int(per.max()))  # each stage serial, back to back: always feasible
    if assignment is None:
        lo_cands = [math.ceil(int(work.sum()) / sum(caps))]
        lo_cands += [math.ceil(dv / max(caps)) for dv, u in zip(d, dem, strict=True) if u]
    else:
        lo_cands = [math.ceil(per[s] / caps[s]) for s in range(stages)]
        lo_cands += [math.ceil(d[v] / caps[int(assignment[v])]) for v in range(n) if dem[v]]
    ii_lo = max(1, *lo_cands)
    tried: dict[int, str] = {}  # period -> "infeasible" / "feasible" / "unknown"
    found: dict[int, tuple[Any, ...]] = {}  # feasible period -> (solver, x, t, lat, status)

    def attempt(ii: int, minimise: bool = False) -> str:
        """Solve at period ``ii``: "feasible", "infeasible", or "unknown" (time ran out).
        The search only needs feasibility; the latency is minimised at the period chosen."""
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return "unknown"
        if not minimise:  # a hard period leaves time to minimise the latency at the best
            left *= SEARCH_SHARE
        lmax = sum(d) + n * ii  # a latency bound any feasible residues can reach
        model = cp_model.CpModel()
        x = _stage_literals(model, problem, stages, assignment)
        t = [model.new_int_var(head[v], lmax, f"t{v}") for v in range(n)]
        r = [model.new_int_var(0, ii - 1, f"r{v}") for v in range(n)]
        q = [model.new_int_var(0, lmax // ii, f"q{v}") for v in range(n)]
        lat = model.new_int_var(0, lmax, "latency")
        copies = max(d) // ii + 2 if n else 1
        per_stage: list[list[Any]] = [[] for _ in range(stages)]
        per_dem: list[list[int]] = [[] for _ in range(stages)]
        for v in range(n):
            model.add(t[v] == ii * q[v] + r[v])
            model.add(lat >= t[v] + d[v])
            for u in g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist():
                model.add(t[v] >= t[u] + d[u])
            if d[v] > 0 and dem[v] > 0:
                for s in range(stages):
                    for k in range(copies):
                        per_stage[s].append(
                            model.new_optional_fixed_size_interval_var(
                                r[v] + k * ii, d[v], x[v][s], f"c{v}_{s}_{k}"
                            )
                        )
                        per_dem[s].append(dem[v])
        for s in range(stages):
            if per_stage[s]:
                model.add_cumulative(per_stage[s], per_dem[s], caps[s])
        if minimise:
            model.minimize(lat)
        solver, status = _solve(model, left, workers)
        if status == cp_model.INFEASIBLE:
            tried[ii] = "infeasible"
            if say is not None:
                say(f"period {sc.to_time(ii):g}: infeasible")
        elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            tried[ii] = "feasible"
            found[ii] = (solver, x, t, lat, status if minimise else None)
            if say is not None:  # the latency only once minimised
                said = f", latency {sc.to_time(solver.value(lat)):g}" if minimise else ""
                say(f"period {sc.to_time(ii):g}: feasible{said}")
        else:
            tried[ii] = "unknown"
        return tried[ii]

    # The least feasible period, in three passes (each stops when the time is up):
    # 1. gallop up from the lower bound (steps 1, 2, 4, ...) to a feasible period, so a
    #    long range of ticks (durations with six decimals) is not walked one tick a solve;
    # 2. bisect between the last infeasible period and the feasible one;
    # 3. prove: every period below the best not yet tried, upwards; the first feasible one
    #    is the least (all below it are infeasible), and if none is, the best is.
    best: int | None = None
    low, step, ii = ii_lo, 1, ii_lo
    while ii <= ii_hi:
        verdict = attempt(ii)
        if verdict == "feasible":
            best = ii
            break
        if verdict == "unknown":
            break
        low = ii + 1
        ii = ii_hi if ii + step > ii_hi and ii < ii_hi else ii + step
        step *= 2
    while best is not None and low < best:
        mid = (low + best) // 2
        verdict = attempt(mid)
        if verdict == "unknown":
            break
        if verdict == "feasible":
            best = mid
        else:
            low = mid + 1
    below = 0 if best is None else sum(1 for p in range(ii_lo, best) if p not in tried)
    # a proof that would take more solves than any time limit allows is not started
    proven = best is not None and below <= MAX_PROOF_PERIODS
    for ii in range(ii_lo, best if best is not None and proven else ii_lo):
        if tried.get(ii) == "infeasible":
            continue
        verdict = tried.get(ii) or attempt(ii)
        if verdict == "feasible":
            best = ii
            break
        if verdict == "unknown":
            proven = False
            break
    if best is None:
        top = max(tried, default=ii_lo)
        why = f"no period up to {sc.to_time(top):g} proven feasible in time (tried {len(tried)})"
        return _fallback(heur, "cpsat-modulo", why, t0)
    if found[best][4] is None:  # its latency, least when there is time for the proof
        kept = found.pop(best)
        if attempt(best, minimise=True) != "feasible":
            found[best] = kept
            tried[best] = "feasible"
    solver, x, t, lat, status = found[best]
    unproven = 0 if proven else sum(1 for p in range(ii_lo, best) if tried.get(p) != "infeasible")
    assign = [next(s for s in range(stages) if solver.value(x[v][s])) for v in range(n)]
    tv = [solver.value(t[v]) for v in range(n)]
    starts = [sc.to_time(m * best + tv[v]) for m in range(m_count) for v in range(n)]
    info = {
        "formulation": "modulo",
        "ii": sc.to_time(best),
        "latency": sc.to_time(solver.value(lat)),
        "ii_proven_least": proven and sc.time_exact,
        "latency_proven_least": status == cp_model.OPTIMAL and sc.time_exact,
        "periods_tried": len(tried),
        "periods_left_unproven": unproven,
        "scaling": sc.to_dict(),
        "capacities": caps,
    }
    return _result(
        problem, assign, m_count, caps, starts, Status.FEASIBLE, None, "cpsat-modulo", info, t0
    )
