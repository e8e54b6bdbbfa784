"""What the two CP-SAT pipeline formulations share: the problem check, heads and tails, the
stage literals, the solve call and the result (or the heuristic's, as a fallback).

Split from :mod:`opsched.pipeline.cpsat` so that :mod:`opsched.pipeline.modulo` and the
unrolled formulation import it without importing each other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.pipeline.model import PipelineResult, pipeline_metrics, stage_units, unroll
from opsched.problem import Problem
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.model import Improvements
from opsched.solver.interrupt import run_solver
from opsched.solver.scaling import Scaling, choose_scaling
from opsched.solver.settle import settle_starts


def check_cpsat_problem(problem: Problem) -> None:
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


def heads_tails(problem: Problem, d: list[int]) -> tuple[list[int], list[int]]:
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


def solve_model(
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


def stage_literals(
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


def pipeline_result(
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


def fallback(heur: PipelineResult, method: str, why: str, t0: float) -> PipelineResult:
    heur.info = {**heur.info, "fallback": why}
    heur.schedule.info = {**heur.schedule.info, "fallback": why}
    heur.schedule.wall_time_s = time.perf_counter() - t0
    heur.method = f"{method} (heuristic fallback)"
    return heur


@dataclass
class PipelineRun:
    """One exact pipeline solve: what :func:`opsched.pipeline.cpsat.pipeline_cpsat` was given
    and settled (stage capacities, the heuristic's result), and the problem in ticks (the
    scaling, the durations and unit demands, and the heads and tails of the ops), which
    both formulations build their models on."""

    problem: Problem
    caps: list[int]
    m_count: int
    assignment: Sequence[int] | None
    heur: PipelineResult
    time_limit: float
    workers: int
    t0: float
    say: Callable[[str], None] | None
    sc: Scaling = field(init=False)
    d: list[int] = field(init=False)
    dem: list[int] = field(init=False)
    head: list[int] = field(init=False)
    tail: list[int] = field(init=False)

    def __post_init__(self) -> None:
        g = self.problem.graph
        self.sc = choose_scaling(g, None)
        self.d = [int(x) for x in self.sc.durations]
        self.dem = g.demand_array("units").tolist()
        self.head, self.tail = heads_tails(self.problem, self.d)

    @property
    def stages(self) -> int:
        return len(self.caps)

    def time_left(self) -> float:
        return self.time_limit - (time.perf_counter() - self.t0)
