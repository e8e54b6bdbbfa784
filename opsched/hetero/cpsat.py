"""Exact heterogeneous scheduling with OR-Tools CP-SAT.

The model
---------
For every op ``i``: start ``s_i`` and end ``e_i`` in ``[0, H]``; for every type ``k`` that
can run it a literal ``y_ik`` (exactly one true) and ``e_i = s_i + sum_k d_ik y_ik``.

``formulation="instances"`` (default)
    For every instance ``q`` of type ``k`` a literal ``x_iq`` with ``sum_q x_iq = y_ik`` and
    an optional fixed-size interval ``[s_i, s_i + d_ik)`` present iff ``x_iq``; a
    no-overlap per instance. Identical instances are interchangeable, so the labels are
    fixed: an op may use instance ``j > 0`` of a type only if an op of smaller index uses
    instance ``j - 1`` (``x_iq_j <= sum_{i' < i} x_i'q_{j-1}``: order the instances by the
    smallest op index they hold). A cumulative per type over the ``y`` intervals (capacity
    = count) is added as a redundant constraint.
``formulation="cumulative"``
    Only the per-type cumulative. With unit demands this is exact: the instances are
    assigned afterwards by interval colouring per type, with no symmetry to break.

Transfers: for an edge ``u -> v``, ``s_v >= e_u`` always, and for each pair of distinct
types ``(a, b)`` with a positive transfer, ``s_v >= e_u + c_u(a, b)`` enforced if
``y_ua and y_vb`` (reified precedence).

The horizon ``H`` and the hint come from HEFT re-timed in ticks; the makespan's domain starts
at the model's simple lower bound.

Integer scaling
---------------
Durations and transfer times are numbers of *ticks* of ``1 / time_scale``, chosen like
:mod:`opsched.solver.scaling` chooses them: the smallest ``10^j`` (``j <= 6``) that makes
every duration and transfer an integer (exact); otherwise ticks of ``total / 10^6`` with every
value rounded **up**, so a schedule valid in ticks is valid in real time (ops and transfers
only finish earlier), and the result is not claimed OPTIMAL.

Status: OPTIMAL when CP-SAT proved it and the scaling was exact, or when the makespan meets
the model's lower bound (:meth:`HeteroProblem.lower_bound`); FEASIBLE with the best bound
otherwise. With rounded ticks the solution's placement and orders are re-timed in real time
(ops only move earlier), and HEFT's schedule is kept if it is still shorter. If time runs
out before CP-SAT finds anything, the HEFT schedule it started from is returned (FEASIBLE,
``info["note_fallback"]``). Every result passes
:func:`opsched.hetero.validate.validate_hetero`.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.hetero.model import HeteroMachine, HeteroProblem
>>> g = OpGraph((Op("a", attrs={"durations": {"gpu": 1, "cpu": 3}}, output_bytes=10),
...              Op("b", deps=("a",), attrs={"durations": {"cpu": 2}}),
...              Op("c", deps=("a",), attrs={"durations": {"gpu": 2, "cpu": 6}})))
>>> p = HeteroProblem(g, HeteroMachine.parse("gpu:1,cpu:1", bandwidth=10, latency=1))
>>> r = solve_hetero_cpsat(p, time_limit=5)
>>> r.status.value, r.makespan
('OPTIMAL', 5.0)
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from opsched.errors import ProblemError
from opsched.hetero.heft import heft
from opsched.hetero.model import HeteroProblem
from opsched.hetero.schedule import HeteroSchedule
from opsched.hetero.simulate import execute_placement, placement_orders
from opsched.hetero.validate import validate_hetero
from opsched.schedule import Status
from opsched.solver.defaults import check_seconds, check_workers
from opsched.solver.interrupt import run_solver

__all__ = ["FORMULATIONS", "solve_hetero_cpsat", "tick_scale"]

FORMULATIONS = ("instances", "cumulative")
_MAX_DECIMALS = 6
_TICKS_IF_INEXACT = 10**6


def tick_scale(values: np.ndarray) -> tuple[float, bool]:
    """Ticks per time unit for ``values`` and whether they become integers exactly.

    >>> tick_scale(np.array([1.5, 0.25, 3.0]))
    (100, True)
    >>> s, exact = tick_scale(np.array([1 / 3, 1.0]))
    >>> exact, round(s, 3)
    (False, 750000.0)
    """
    v = values[np.isfinite(values)]
    for j in range(_MAX_DECIMALS + 1):
        x = v * 10**j
        r = np.round(x)
        close = np.abs(x - r) <= np.maximum(1e-9, 8 * np.finfo(float).eps * np.abs(x))
        # a positive value within 1e-9 of 0 is not a whole number of ticks: 1e-10 had
        # become 0 ticks, and two such ops shared one device at t = 0
        if np.all(close & ((r > 0) | (v <= 0))):
            return 10**j, True
    total = float(v.sum())
    return (_TICKS_IF_INEXACT / total if total > 0 else 1.0), False


def _ticks(x: np.ndarray, scale: float, exact: bool) -> np.ndarray:
    y = x * scale
    y = np.round(y) if exact else np.ceil(y - 1e-9)
    return np.where(np.isfinite(x), y, -1).astype(np.int64)


def solve_hetero_cpsat(
    problem: HeteroProblem,
    *,
    time_limit: float = 10.0,
    num_workers: int = 2,
    deterministic: bool = False,
    log: bool = False,
    hint: bool = True,
    formulation: str = "instances",
    progress: Callable[[str], None] | None = None,
) -> HeteroSchedule:
    """Minimise the makespan of ``problem`` exactly (see the module docstring).

    Parameters
    ----------
    problem
        Graph, device types, durations per type, links.
    time_limit
        Seconds of wall clock for the whole call.
    num_workers
        CP-SAT search threads.
    deterministic
        Same answer on every run (interleaved search, fixed seed).
    log
        Print CP-SAT's search log.
    hint
        Start the search from the HEFT schedule (the horizon is HEFT's makespan either way).
    formulation
        ``"instances"`` or ``"cumulative"``.
    progress
        Called with a line at each improving schedule: its makespan and CP-SAT's bound.

    Returns
    -------
    HeteroSchedule
        OPTIMAL, or FEASIBLE with ``lower_bound``; ``info`` holds the scaling and statistics.
    """
    from ortools.sat.python import cp_model

    from opsched.solver.cpsat.model import Improvements, makespan_lines

    t0 = time.perf_counter()
    check_seconds(time_limit)
    check_workers(num_workers)
    if formulation not in FORMULATIONS:
        raise ProblemError(f"unknown formulation {formulation!r}; known: {', '.join(FORMULATIONS)}")
    g = problem.graph
    n, nt = g.num_ops, len(problem.types)
    xfer = np.stack([problem.transfer_matrix(i) for i in range(n)]) if n else np.zeros((0, nt, nt))
    has_succ = np.diff(g.succ_ptr) > 0
    scale, exact = tick_scale(np.concatenate([problem.durations.ravel(), xfer[has_succ].ravel()]))
    dt = _ticks(problem.durations, scale, exact)  # -1 where the type cannot run the op
    ct = _ticks(xfer, scale, exact)
    info: dict[str, Any] = {
        "formulation": formulation,
        "scaling": {"time_scale": scale, "time_exact": exact},
    }
    # HEFT, re-timed in ticks: a feasible integer schedule, so its makespan bounds the model
    start_heft = heft(problem)
    if n == 0:  # nothing to place: HEFT's empty schedule is the proven optimum
        start_heft.solver, start_heft.status = "cpsat", Status.OPTIMAL
        start_heft.info = {**start_heft.info, **info}
        return start_heft
    inst, orders = placement_orders(problem, start_heft)
    hint_s = execute_placement(problem, inst, orders, dt.astype(np.float64),
                               lambda u, a, b: float(ct[u, a, b])).astype(np.int64)  # fmt: skip
    hint_k = problem.instance_type[inst]
    horizon = int(max((hint_s[i] + dt[i, hint_k[i]] for i in range(n)), default=0))
    info["heft_makespan"] = start_heft.makespan

    m = cp_model.CpModel()
    s = [m.new_int_var(0, horizon, f"s{i}") for i in range(n)]
    e = [m.new_int_var(0, horizon, f"e{i}") for i in range(n)]
    y: dict[tuple[int, int], Any] = {}
    for i in range(n):
        for k in range(nt):
            if dt[i, k] >= 0:
                y[i, k] = m.new_bool_var(f"y{i}_{k}")
        m.add_exactly_one(y[i, k] for k in range(nt) if (i, k) in y)
        m.add(e[i] == s[i] + sum(int(dt[i, k]) * y[i, k] for k in range(nt) if (i, k) in y))
    by_type = [[q for q, t in enumerate(problem.instance_type.tolist()) if t == k]
               for k in range(nt)]  # fmt: skip
    for k in range(nt):  # the per-type cumulative (the whole model, or redundant)
        ivs = [m.new_optional_fixed_size_interval_var(s[i], int(dt[i, k]), y[i, k], f"t{i}_{k}")
               for i in range(n) if (i, k) in y and dt[i, k] > 0]  # fmt: skip
        if ivs and len(by_type[k]) < len(ivs):
            m.add_cumulative(ivs, [1] * len(ivs), len(by_type[k]))
    x: dict[tuple[int, int], Any] = {}
    if formulation == "instances":
        for k in range(nt):
            qs = by_type[k]
            users = [i for i in range(n) if (i, k) in y]
            for i in users:
                if len(qs) == 1:
                    x[i, qs[0]] = y[i, k]
                    continue
                for q in qs:
                    x[i, q] = m.new_bool_var(f"x{i}_{q}")
                m.add(sum(x[i, q] for q in qs) == y[i, k])
            for q in qs:
                ivs = [m.new_optional_fixed_size_interval_var(s[i], int(dt[i, k]), x[i, q],
                                                              f"i{i}_{q}")
                       for i in users if dt[i, k] > 0]  # fmt: skip
                if len(ivs) > 1:
                    m.add_no_overlap(ivs)
            for q_prev, q in itertools.pairwise(qs):
                # symmetry: op i may use q only if an op before it (by index) uses q_prev
                used: Any = None  # "some earlier op is on q_prev"
                for i in users:
                    if used is None:
                        m.add(x[i, q] == 0)
                    else:
                        m.add_implication(x[i, q], used)
                    nxt = m.new_bool_var(f"u{i}_{q_prev}")
                    m.add_max_equality(nxt, [x[i, q_prev]] + ([used] if used is not None else []))
                    used = nxt
    for v in range(n):
        for u in g.pred_idx[g.pred_ptr[v] : g.pred_ptr[v + 1]].tolist():
            m.add(s[v] >= e[u])
            for a in range(nt):
                for b in range(nt):
                    if a != b and (u, a) in y and (v, b) in y and ct[u, a, b] > 0:
                        m.add(s[v] >= e[u] + int(ct[u, a, b])).only_enforce_if(y[u, a], y[v, b])
    lb_ticks = min(horizon, math.ceil(problem.lower_bound() * scale - 1e-6))
    makespan = m.new_int_var(lb_ticks, horizon, "makespan")
    m.add_max_equality(makespan, e) if n else m.add(makespan == 0)
    m.minimize(makespan)
    if hint:
        relabel = _first_use_labels(hint_k.tolist(), inst, by_type) if x else {}
        for i in range(n):
            m.add_hint(s[i], int(hint_s[i]))
            for k in range(nt):
                if (i, k) in y:
                    m.add_hint(y[i, k], int(k == hint_k[i]))
            for q in by_type[int(hint_k[i])] if x else ():
                if (i, q) in x and x[i, q] is not y.get((i, int(hint_k[i]))):
                    m.add_hint(x[i, q], int(relabel.get(inst[i]) == q))

    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = max(0.01, time_limit - (time.perf_counter() - t0))
    p.num_workers = num_workers
    if deterministic:
        p.interleave_search = True
    improvements = None
    if progress is not None:  # each improving makespan and CP-SAT's bound, in time units
        improvements = Improvements(makespan_lines(progress, lambda t: t / scale))
    code = run_solver(solver, m, improvements, log=log)
    name = solver.status_name(code)
    info["cpsat_status"] = name
    info["conflicts"] = solver.num_conflicts
    info["solve_time_s"] = solver.wall_time
    lb = problem.lower_bound()
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        starts = [solver.value(s[i]) for i in range(n)]
        kinds = [next(k for k in range(nt) if (i, k) in y and solver.value(y[i, k]))
                 for i in range(n)]  # fmt: skip
        if x:
            where = [next(q for q in by_type[kinds[i]] if solver.value(x[i, q]))
                     for i in range(n)]  # fmt: skip
        else:
            where = _colour(starts, [int(dt[i, kinds[i]]) for i in range(n)], kinds, by_type)
        real = [t / scale for t in starts]
        if exact:
            lb = max(lb, math.ceil(solver.best_objective_bound - 1e-9) / scale)
        else:  # re-time the placement and orders in real time: ops only move earlier
            info["note"] = "durations or transfers were rounded up; optimality is not claimed"
            tmp = HeteroSchedule.build(problem, real, where, solver="cpsat")
            real = execute_placement(problem, *placement_orders(problem, tmp)).tolist()
        result = HeteroSchedule.build(
            problem, real, where, solver="cpsat", status=Status.FEASIBLE, lower_bound=lb,
            info=info,
        )  # fmt: skip
        assert result.makespan is not None and start_heft.makespan is not None
        if start_heft.makespan < result.makespan - 1e-12:  # only when rounding hurt
            info["note_heft"] = "HEFT's schedule is shorter in real time than the rounded optimum"
            result = HeteroSchedule(g.name, "cpsat", Status.FEASIBLE, start_heft.ops,
                                    result.machine, lb, None, info)  # fmt: skip
        if code == cp_model.OPTIMAL and exact:
            result.status = Status.OPTIMAL
    elif code == cp_model.UNKNOWN:
        result = start_heft
        result.solver, result.lower_bound, result.info = "cpsat", lb, info
        info["note_fallback"] = "time ran out: the HEFT schedule CP-SAT started from"
    else:  # the HEFT schedule is a solution, so anything else is a modelling bug
        raise RuntimeError(f"CP-SAT answered {name} on a problem with a known schedule")
    if result.makespan is not None and result.makespan <= lb * (1 + 1e-12):
        result.status = Status.OPTIMAL  # it meets a proven lower bound
    result.wall_time_s = time.perf_counter() - t0
    report = validate_hetero(problem, result)
    if not report.valid:
        raise RuntimeError(f"CP-SAT produced an invalid schedule: {report.violations[0]}")
    return result


def _first_use_labels(
    kinds: list[int], inst: list[int], by_type: list[list[int]]
) -> dict[int, int]:
    """Relabel a placement's instances, per type, in the order of their smallest op index."""
    out: dict[int, int] = {}
    used = [0] * len(by_type)
    for i, q in enumerate(inst):
        if q not in out:
            k = kinds[i]
            out[q] = by_type[k][used[k]]
            used[k] += 1
    return out


def _colour(starts: list[int], dur: list[int], kinds: list[int],
            by_type: list[list[int]]) -> list[int]:  # fmt: skip
    """Instances by interval colouring per type (exact for unit demands within the count)."""
    import heapq

    where = [by_type[k][0] for k in kinds]
    free: list[list[tuple[int, int]]] = [[(0, q) for q in qs] for qs in by_type]
    for i in sorted(range(len(starts)), key=lambda i: (starts[i], dur[i])):
        if dur[i] == 0:
            continue
        heap = free[kinds[i]]
        t, q = heapq.heappop(heap)
        assert t <= starts[i], "the cumulative let more ops overlap than instances"
        where[i] = q
        heapq.heappush(heap, (starts[i] + dur[i], q))
    return where
