"""``lns``: large-neighbourhood search with CP-SAT over windows of a heuristic schedule.

Start from the portfolio's schedule. Repeatedly pick a *window* (a run of consecutive ops in
start order), free those ops and keep every other op where it is; CP-SAT then re-places the
window ops optimally for the sum of their ends, subject to their predecessors' ends, their
fixed successors' starts and the units left over by the fixed ops. Forward-backward
justification (:mod:`opsched.heuristics.improve`) then carries any room that opened through
the rest of the schedule. A new schedule is kept when its makespan is no worse, so the search
can move across plateaus; the best one is returned when the time limit is reached.

Times go to CP-SAT in the ticks of :func:`opsched.solver.scaling.choose_scaling`, rounded so
that a window placement valid in ticks is valid in real time (durations and fixed ends up,
fixed starts down); the final schedule is rebuilt from real durations. Units only: ops that
demand at most one unit, no other limited resource and no memory cap (otherwise the starting
schedule is returned unchanged with a note).

Examples
--------
>>> from opsched.demo import seed_problem
>>> s = lns(seed_problem(units=2), time_limit=1)
>>> s.solver, s.makespan
('lns', 6.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from opsched.heuristics.improve import forward_place, justify_arrays
from opsched.heuristics.listsched import units_only
from opsched.heuristics.portfolio import portfolio
from opsched.problem import Problem, check_callable, check_seed, require_problem
from opsched.schedule import Schedule
from opsched.solver.defaults import check_seconds
from opsched.solver.interrupt import run_solver

__all__ = ["lns"]


def _window_model(
    problem: Problem,
    starts: np.ndarray,
    window: np.ndarray,
    scale: float,
    time_limit: float,
    seed: int,
) -> np.ndarray | None:
    """Re-place the ops of ``window``; return their new starts (real time) or None."""
    from ortools.sat.python import cp_model

    g = problem.graph
    k = int(problem.unit_pool or 0)
    d = g.durations
    free = np.zeros(g.num_ops, dtype=bool)
    free[window] = True
    dt = np.ceil(d * scale - 1e-9).astype(np.int64)
    s_lo = np.floor(starts * scale + 1e-9).astype(np.int64)  # fixed starts, rounded down
    e_hi = np.ceil((starts + d) * scale - 1e-9).astype(np.int64)  # fixed ends, rounded up
    wants = g.demand_array("units") == 1
    lo = 0
    hi = int(e_hi.max()) + int(dt[window].sum())
    m = cp_model.CpModel()
    sv: dict[int, cp_model.IntVar] = {}
    ivs = []
    for v in window.tolist():
        s = m.new_int_var(lo, hi, f"s{v}")
        sv[v] = s
        if wants[v] and dt[v] > 0:
            ivs.append(m.new_fixed_size_interval_var(s, int(dt[v]), f"i{v}"))
    pp, pi, sp, si = g.pred_ptr, g.pred_idx, g.succ_ptr, g.succ_idx
    for v in window.tolist():
        for u in pi[pp[v] : pp[v + 1]].tolist():
            if free[u]:
                m.add(sv[v] >= sv[u] + int(dt[u]))
            else:
                m.add(sv[v] >= int(e_hi[u]))
        for w in si[sp[v] : sp[v + 1]].tolist():
            if not free[w]:
                m.add(sv[v] + int(dt[v]) <= int(s_lo[w]))
    # units: the fixed ops that could overlap the window's reach keep theirs
    reach_lo = min(int(s_lo[window].min()), int(e_hi[window].min()))
    reach_hi = int(e_hi[window].max())
    fixed = np.flatnonzero(~free & wants & (dt > 0) & (e_hi > 0))
    fixed = fixed[(e_hi[fixed] > reach_lo - int(dt.max())) & (s_lo[fixed] < reach_hi)]
    demands = [1] * len(ivs)
    for u in fixed.tolist():
        ivs.append(m.new_interval_var(int(s_lo[u]), int(e_hi[u] - s_lo[u]), int(e_hi[u]),
                                      f"f{u}"))  # fmt: skip
        demands.append(1)
    if ivs:
        m.add_cumulative(ivs, demands, k)
    # keep the window inside the current horizon: never lengthen the schedule
    span = int(e_hi.max())
    for v in window.tolist():
        m.add(sv[v] + int(dt[v]) <= span)
        m.add_hint(sv[v], int(s_lo[v]))
    m.minimize(sum(sv[v] + int(dt[v]) for v in window.tolist()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.05, time_limit)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    st = run_solver(solver, m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    out = starts.copy()
    for v, s in sv.items():
        out[v] = solver.value(s) / scale
    return out


def lns(
    problem: Problem,
    *,
    time_limit: float = 10.0,
    window: int = 40,
    seed: int = 0,
    start: Schedule | None = None,
    progress: Callable[[str], None] | None = None,
) -> Schedule:
    """Improve ``start`` (default: the portfolio's schedule) for ``time_limit`` seconds.

    Only problems of ``units`` alone, with a unit count and no memory cap, are improved; any
    other comes back as ``start`` with ``info["lns"]`` saying why. The portfolio that finds
    the default start runs within ``time_limit`` too; a problem its checks
    (:meth:`~opsched.problem.Problem.infeasibility_reason`) prove has no schedule is UNKNOWN
    with that reason at once.

    ``info`` records ``iterations``, ``improvements`` and the starting makespan;
    ``progress``, if given, is called with a line at the start and at each improvement.
    """
    from opsched.solver.scaling import choose_scaling

    require_problem(problem, "lns")
    seed = check_seed(seed)
    check_callable(progress, "progress")
    t0 = time.perf_counter()
    check_seconds(time_limit)
    if start is None:
        none = Schedule.if_impossible(problem, solver="lns", t0=t0)
        if none is not None:  # a proof: nothing to start from, nor to improve
            return none
    # the start gets the time limit too (its min-memory search alone had taken 10 s)
    base = start if start is not None else portfolio(problem, time_limit=time_limit)
    g = problem.graph
    why = _not_applicable(problem, base)
    if why is not None:
        base.info = {**base.info, "lns": f"not applicable ({why})"}
        return base
    scale = float(choose_scaling(g).time_scale)
    rng = np.random.default_rng(seed)
    d = g.durations
    starts = np.array([o.start for o in base.ops])
    units = np.array([-1 if o.unit is None else o.unit for o in base.ops])
    span = float((starts + d).max())
    first = span
    lb = base.lower_bound
    iters = improvements = 0
    w = max(1, min(window, g.num_ops))
    say = progress or (lambda _: None)
    say(f"makespan {span:g} ({base.solver}; lower bound {lb:g})" if lb is not None
        else f"makespan {span:g} ({base.solver})")  # fmt: skip
    while time.perf_counter() - t0 < time_limit:
        if lb is not None and span <= lb + 1e-9:
            break
        iters += 1
        order = np.argsort(starts + rng.random(g.num_ops) * 1e-9, kind="stable")
        # bias windows towards the end, where the makespan is decided
        back = int(rng.geometric(min(1.0, 3.0 / g.num_ops)))
        pos = int(min(g.num_ops - w, max(0, g.num_ops - w - back)))
        win = np.sort(order[pos : pos + w])
        left = time_limit - (time.perf_counter() - t0)
        new = _window_model(problem, starts, win, scale, min(0.3, left), seed + iters)
        if new is None:
            continue
        new_starts, new_units, _rounds = justify_arrays(problem, new)
        new_span = float((new_starts + d).max())
        if new_span <= span + 1e-9:
            if new_span < span - 1e-9:
                improvements += 1
                say(f"makespan {new_span:g} (iteration {iters})")
            starts, span = new_starts, new_span
            units = new_units
    if iters == 0 or improvements == 0:
        starts, units = forward_place(problem, starts)
    elapsed = time.perf_counter() - t0
    return Schedule.build(
        problem, starts, units.tolist(), solver="lns", status=base.status, lower_bound=lb,
        wall_time_s=elapsed,
        info={"start_solver": base.solver, "start_makespan": first, "iterations": iters,
              "improvements": improvements, "time_scale": scale,
              "window": w, "seed": seed},
    )  # fmt: skip


def _not_applicable(problem: Problem, base: Schedule) -> str | None:
    """Why the window search does not apply, or None."""
    if not base.has_schedule:
        return "no start schedule"
    if problem.memory_cap is not None:
        return "a memory cap"
    if problem.machine.units is None:
        return "unlimited units"
    if not units_only(problem):
        return "resources other than units"
    if problem.graph.num_ops == 0:
        return "no ops"
    return None
