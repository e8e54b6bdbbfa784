"""Memory-aware list scheduling on k units under a memory cap.

The one-unit memory-aware search (:func:`opsched.heuristics.memory.min_memory_order`) finds
an order with a low peak; used as the priority of a memory-feasible list schedule on k
units, it makes the units follow that order as closely as the cap and the dependencies
allow, while still running ops in parallel when there is room. The b-level list schedule is
tried as well, and so is an *in-order* schedule that starts ops strictly in the one-unit
order, waiting for running ops to end (and free memory) when the next op does not fit:
whenever everything has finished it is in the same memory state as the one-unit order, so it
never reaches a dead end if that order fits the cap. The *safe* schedules
(:func:`opsched.heuristics.safe_list.safe_list`) keep that guarantee and start other ops early
where the cap provably still lets the rest of the order run, tried in the order's own sequence
and by b-level. The shortest valid schedule is kept.

Examples
--------
>>> from opsched.demo import branches_graph
>>> from opsched.problem import Machine
>>> from opsched.heuristics import greedy
>>> p = Problem(branches_graph(), Machine(units=2, memory_cap=20))
>>> greedy(p).status.value, memory_list(p).status.value, memory_list(p).peak_memory
('UNKNOWN', 'FEASIBLE', 12)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from opsched.analysis.bounds import lower_bounds
from opsched.heuristics._forward import Forward
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.memory.common import check_order
from opsched.heuristics.safe_list import safe_list
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule, Status

__all__ = ["in_order", "memory_list"]


def in_order(problem: Problem, order: np.ndarray) -> Schedule:
    """Start ops strictly in ``order`` on the problem's units, each as soon as its deps are
    done, the units and other resources it demands are free and its memory fits the cap
    (else wait for the next completion). An op holding several units has no unit index.
    Zero-duration ops are started together where one alone would not fit (a tensor written
    and read at one instant lives over an empty interval).
    """
    t0 = time.perf_counter()
    g = problem.graph
    none = Schedule.if_impossible(problem, solver="memory-in-order")
    if none is not None:
        return none
    st = Forward(problem)
    seq = order.tolist()
    i = 0
    while i < len(seq):
        v = seq[i]
        batch = [v]
        while True:
            ready = st.preds_done(v)
            if ready and st.has_room(v) and st.fits(v):
                break
            if ready and st.dur[v] == 0 and st.cap is not None:
                run = st.try_zero_run(seq, i)
                if run:
                    batch = run
                    break
            rest = st.rest_at_end(seq, i)
            if rest:
                batch = rest
                break
            if not st.running:
                return Schedule.empty(problem, solver="memory-in-order", status=Status.UNKNOWN,
                                      info={"reason": f"op {g.names[v]!r} does not fit the "
                                            f"memory cap even with nothing running"})  # fmt: skip
            st.advance()
        for x in batch:
            st.start(x, st.t)
        i += len(batch)
    return Schedule.build(problem, st.starts, st.unit_of, solver="memory-in-order",
                          wall_time_s=time.perf_counter() - t0)  # fmt: skip


def memory_list(
    problem: Problem,
    *,
    order_options: dict[str, Any] | None = None,
    order: np.ndarray | None = None,
    deadline: float | None = None,
    **_: object,
) -> Schedule:
    """Min-memory order as list priority with memory-feasible placement, or b-level if shorter.

    The in-order schedule (:func:`in_order`) and the two safe schedules
    (:func:`~opsched.heuristics.safe_list.safe_list`) join in. ``order_options`` go to
    :func:`~opsched.heuristics.memory.min_memory_order` (e.g. ``{"method": "beam",
    "rounds": 1}`` for a fast order; the default search can take seconds at 50-120 ops).
    ``order``: a one-unit order to use instead of searching for one (e.g. the one
    :func:`opsched.solver.serial.serial_cap_check` found within the cap).
    ``deadline``: a :func:`time.perf_counter` time at which the order search stops and
    keeps the best order found by then.

    ``info["order_peak"]`` is the one-unit order's peak; UNKNOWN with a reason if neither
    priority finds a schedule within the cap.
    """
    require_problem(problem, "memory_list")
    t0 = time.perf_counter()
    g = problem.graph
    none = Schedule.if_impossible(problem, solver="memory-list", t0=t0)
    if none is not None:  # a proof: no order to search for (the search took seconds to fail)
        return none
    if order is None:
        order = min_memory_order(problem, **{"deadline": deadline, **(order_options or {})})
    order = check_order(g, order)  # a given one may be of the wrong length or not topological
    prio = np.empty(g.num_ops)
    prio[order] = np.arange(g.num_ops, 0, -1, dtype=np.float64)
    a = list_schedule(problem, prio, "memory")
    b = list_schedule(problem, "b-level", "memory")
    c = in_order(problem, order)
    d = safe_list(problem, order, "order")
    e = safe_list(problem, order, "b-level")
    ok = [s for s in (a, b, c, d, e) if s is not None and s.status == Status.FEASIBLE]
    best = min(ok, key=lambda s: (s.makespan, s.peak_memory or 0)) if ok else a
    best.solver = "memory-list"
    if best.has_schedule and best.lower_bound is None:  # the in-order and safe schedules
        best.lower_bound = lower_bounds(g, problem.machine.units, problem.capacities).value
    best.wall_time_s = time.perf_counter() - t0
    how = {id(a): "min-memory order", id(b): "b-level", id(c): "in min-memory order",
           id(d): "safe, in min-memory order", id(e): "safe, b-level"}  # fmt: skip
    best.info = {**best.info, "priority": how[id(best)]}
    return best
