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

from opsched.errors import ProblemError
from opsched.pipeline._cpsat_common import (
    PipelineRun,
    check_cpsat_problem,
    fallback,
    pipeline_result,
    solve_model,
    stage_literals,
)
from opsched.pipeline.heuristic import pipeline_heuristic
from opsched.pipeline.model import PipelineResult, stage_capacities
from opsched.pipeline.modulo import modulo
from opsched.problem import Problem
from opsched.schedule import Status
from opsched.solver.cpsat.model import makespan_lines
from opsched.solver.defaults import check_seconds

__all__ = ["AUTO_UNROLLED_MAX_COPIES", "FORMULATIONS", "pipeline_cpsat"]

#: Names accepted for ``formulation``.
FORMULATIONS = ("auto", "unrolled", "modulo")

#: ``auto`` picks ``unrolled`` up to this many op copies (ops x micro-batches), else ``modulo``:
#: measured on layered graphs (``docs/pipeline.md``), CP-SAT proves the unrolled optimum
#: within about 2.5 s up to 48 copies, and times out at 10 s on some beyond 96.
AUTO_UNROLLED_MAX_COPIES = 48


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
    check_cpsat_problem(problem)
    if formulation == "auto":
        small = problem.graph.num_ops * microbatches <= AUTO_UNROLLED_MAX_COPIES
        formulation = "unrolled" if small else "modulo"
    caps = stage_capacities(problem.machine.units, stages)
    heur = pipeline_heuristic(problem, stages, microbatches, assignment=assignment)
    run = PipelineRun(problem, caps, microbatches, assignment, heur, time_limit, num_workers, t0,
                      progress)  # fmt: skip
    return _unrolled(run) if formulation == "unrolled" else modulo(run)


def _unrolled(run: PipelineRun) -> PipelineResult:
    from ortools.sat.python import cp_model

    problem, caps, m_count, heur, t0 = run.problem, run.caps, run.m_count, run.heur, run.t0
    g, n, stages, sc, d, dem = (
        problem.graph, problem.graph.num_ops, run.stages, run.sc, run.d, run.dem
    )  # fmt: skip
    head, tail = run.head, run.tail
    horizon = m_count * sum(d)
    if sc.time_exact and heur.metrics is not None:
        horizon = min(horizon, round(heur.metrics.makespan * sc.time_scale))
    model = cp_model.CpModel()
    x = stage_literals(model, problem, stages, run.assignment)
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
    report = None if run.say is None else makespan_lines(run.say, sc.to_time)
    solver, status = solve_model(model, run.time_left(), run.workers, report)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return fallback(heur, "cpsat-unrolled", f"CP-SAT: {solver.status_name(status)}", t0)
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
    return pipeline_result(
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
