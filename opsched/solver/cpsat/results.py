"""What ``solve_cpsat`` returns when a stage ends without a proof or without a schedule,
and the lines it reports as CP-SAT improves (helpers of :mod:`opsched.solver.cpsat.solve`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from opsched.analysis.bounds import min_memory_bound
from opsched.problem import Problem
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.model import CpsatModel, makespan_lines
from opsched.solver.scaling import Scaling
from opsched.units import format_bytes

__all__ = ["greedy_fallback", "no_schedule", "reporter"]


def greedy_fallback(
    model: CpsatModel, cp_status: str, makespan_limit: float | None
) -> list[int] | None:
    """The starting schedule the model was hinted with (greedy, a list schedule or the
    memory-aware one: :mod:`opsched.solver.cpsat.hint`), if time ran out and it is usable.

    It respects units, resources and the memory cap (the greedy places ops memory-feasibly on
    the integer problem; list schedules are checked and used only without a cap), so it is a
    valid best-so-far; it is not used against a makespan
    limit it breaks.
    """
    if cp_status != "UNKNOWN" or not model.hint_starts:
        return None
    ticks = list(model.hint_starts)
    end = max((t + d for t, d in zip(ticks, model.scaling.durations, strict=True)), default=0)
    if makespan_limit is not None and model.scaling.to_time(end) > makespan_limit + 1e-9:
        return None
    return ticks


def no_schedule(
    problem: Problem,
    cp_status: str,
    exact: bool,
    info: dict[str, Any],
    t0: float,
    makespan_limit: float | None = None,
    proof: str | None = None,
) -> Schedule:
    """The result without a schedule; ``proof``: why none exists, found before the search."""
    if cp_status == "INFEASIBLE" and exact:
        cap = problem.memory_cap
        if proof is not None:
            info["reason"] = proof
        elif makespan_limit is not None and cap is not None:
            info["reason"] = (
                f"CP-SAT proved that no schedule ends by {makespan_limit:g} within the memory "
                f"cap of {format_bytes(cap)} ({cap} B)"
            )
        elif makespan_limit is not None:
            info["reason"] = f"CP-SAT proved that no schedule ends by {makespan_limit:g}"
        elif cap is not None:
            need, who = min_memory_bound(problem.graph)
            info["reason"] = (
                f"CP-SAT proved that no schedule fits in {format_bytes(cap)} ({cap} B); "
                f"the analysis bound is {format_bytes(need)} ({need} B), for {who}"
            )
        else:
            info["reason"] = "CP-SAT proved the problem infeasible"
        status = Status.INFEASIBLE
    else:
        info["reason"] = (
            "time limit reached before any schedule was found"
            if cp_status == "UNKNOWN"
            else "the rounded model is infeasible (rounding was not exact)"
        )
        status = Status.UNKNOWN
    return Schedule.empty(
        problem, solver="cpsat", status=status, info=info, wall_time_s=time.perf_counter() - t0
    )


def reporter(
    kind: str, scaling: Scaling, problem: Problem, progress: Callable[[str], None]
) -> Callable[[float, float], None]:
    """A stage's improving solutions as lines for ``progress``, in real units."""
    if kind == "makespan" and not scaling.time_exact:
        # the model's durations are rounded up: its makespans and bound are of that model,
        # not a bound on the real optimum
        to = scaling.to_time
        return lambda value, bound: progress(
            f"makespan {to(value):g} in rounded-up durations (that model's bound {to(bound):g})"
        )
    if kind == "makespan":
        return makespan_lines(progress, scaling.to_time)
    base, q = problem.graph.persistent_bytes, scaling.memory_quantum

    def line(value: float, bound: float) -> None:
        least = base + math.ceil(bound - 1e-9) * q
        progress(f"peak memory {base + round(value) * q} (bound {least})")

    return line
