"""Exact brute force for tiny graphs: the independent check of the CP-SAT solver.

It enumerates every *semi-active* schedule: each op starts at 0 or at the end of some op.
That set always holds an optimal schedule for makespan and for peak memory under this
problem model: an op that starts at ``t`` can move left to the latest end ``e <= t`` without
breaking precedence (its dependencies end by ``e``), capacity (ops running in ``[e, t)`` also
run at ``t``) or the memory cap (nothing is freed in ``(e, t)``, so memory at each moment of
``[e, t)`` is at most the original memory at ``t``).

Schedules are built in order of start time (ties in topological order), so each op's start is
0 or the end of an op already placed, and resource use only needs checking at the new start.
Exponential: meant for graphs of at most about 8 ops.
"""

from __future__ import annotations

import math
import time

import numpy as np

from opsched.analysis.topo import topo_indices
from opsched.errors import ProblemError
from opsched.liveness import peak_memory
from opsched.problem import Objective, Problem
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.model import assign_units
from opsched.solver.defaults import check_seconds

__all__ = ["MAX_BRUTE_FORCE_OPS", "solve_brute_force"]

MAX_BRUTE_FORCE_OPS = 10


class _OutOfTime(Exception):
    """The enumeration's time limit passed."""


#: Search nodes between two looks at the clock.
_CLOCK_EVERY = 256


def solve_brute_force(
    problem: Problem,
    objective: Objective | str | None = None,
    *,
    time_limit: float | None = None,
) -> Schedule:
    """Optimal schedule of a tiny problem by enumeration.

    ``objective``: ``"makespan"`` (ties broken by lower peak memory) or ``"peak_memory"``
    (ties broken by lower makespan); the problem's objective by default. Returns status
    OPTIMAL, or INFEASIBLE when no schedule meets the memory cap. With ``time_limit``
    (seconds), an enumeration still running then stops: the best schedule found so far
    comes back FEASIBLE (nothing proven), or UNKNOWN when there is none yet.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> solve_brute_force(seed_problem(units=1)).makespan
    7.0
    """
    t0 = time.perf_counter()
    obj = Objective(objective if objective is not None else problem.objective)
    g = problem.graph
    n = g.num_ops
    if n > MAX_BRUTE_FORCE_OPS:
        raise ProblemError(
            f"brute force is for graphs of at most {MAX_BRUTE_FORCE_OPS} ops; "
            f"this one has {n} (use cpsat)"
        )
    d = g.durations.tolist()
    pos = np.empty(n, dtype=np.int64)
    pos[topo_indices(g)] = np.arange(n)
    preds = [[g.index(x) for x in op.deps] for op in g.ops]
    caps = {r: c for r, c in problem.capacities.items() if c is not None}
    dem = {r: g.demand_array(r).tolist() for r in caps}
    cap = problem.memory_cap
    mem_first = obj in (Objective.PEAK_MEMORY, Objective.MEMORY_THEN_MAKESPAN)
    deadline = math.inf if time_limit is None else t0 + check_seconds(time_limit)
    nodes = 0

    best_key: tuple[float, float] = (math.inf, math.inf)
    best_starts: list[float] | None = None
    start = [0.0] * n
    placed = [False] * n

    def key(starts: list[float]) -> tuple[float, float] | None:
        arr = np.asarray(starts)
        ms = float(max((s + dd for s, dd in zip(starts, d, strict=True)), default=0.0))
        pk = float(peak_memory(g, arr, ms))
        if cap is not None and pk > cap:
            return None
        return (pk, ms) if mem_first else (ms, pk)

    def rec(count: int, last_start: float, last_pos: int, max_end: float) -> None:
        nonlocal best_key, best_starts, nodes
        nodes += 1
        if nodes % _CLOCK_EVERY == 0 and time.perf_counter() > deadline:
            raise _OutOfTime
        if not mem_first and max_end > best_key[0]:
            return  # makespan can only grow
        if count == n:
            k = key(start)
            if k is not None and k < best_key:
                best_key, best_starts = k, list(start)
            return
        cands = sorted({0.0} | {start[i] + d[i] for i in range(n) if placed[i]})
        for v in range(n):
            if placed[v] or not all(placed[u] for u in preds[v]):
                continue
            ready = max((start[u] + d[u] for u in preds[v]), default=0.0)
            for s in cands:
                if s < ready or s < last_start or (s == last_start and pos[v] < last_pos):
                    continue
                if d[v] > 0 and not _fits(v, s):
                    continue
                start[v], placed[v] = s, True
                rec(count + 1, s, int(pos[v]), max(max_end, s + d[v]))
                placed[v] = False

    def _fits(v: int, s: float) -> bool:
        for r, c in caps.items():
            need = dem[r][v]
            if need == 0:
                continue
            used = sum(
                dem[r][i]
                for i in range(n)
                if placed[i] and d[i] > 0 and start[i] <= s < start[i] + d[i]
            )
            if used + need > c:
                return False
        return True

    finished = True
    reason = problem.infeasibility_reason()
    if reason is None:
        what = "the capacities" if cap is None else f"the memory cap of {cap} B"
        reason = f"every semi-active schedule breaks {what} (exhaustive search)"
        try:
            rec(0, 0.0, -1, 0.0)
        except _OutOfTime:
            finished = False
    wall = time.perf_counter() - t0
    if best_starts is None:
        return Schedule.empty(
            problem,
            solver="brute-force",
            status=Status.INFEASIBLE if finished else Status.UNKNOWN,
            info={"reason": reason if finished else "time limit reached"},
            wall_time_s=wall,
        )
    ends = [s + dd for s, dd in zip(best_starts, d, strict=True)]
    units = assign_units(best_starts, ends, g.demand_array("units").tolist())
    return Schedule.build(
        problem,
        best_starts,
        units,
        solver="brute-force",
        status=Status.OPTIMAL if finished else Status.FEASIBLE,
        wall_time_s=wall,
        lower_bound=None if mem_first or not finished else best_key[0],
        info={} if finished else {"reason": "time limit reached"},
    )
