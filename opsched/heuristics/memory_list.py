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

from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.memory import min_memory_order
from opsched.heuristics.safe_list import safe_list
from opsched.problem import Problem
from opsched.schedule import Schedule, Status

__all__ = ["in_order", "memory_list"]


def in_order(problem: Problem, order: np.ndarray) -> Schedule:
    """Start ops strictly in ``order`` on the problem's units, each as soon as its deps are
    done, the units and other resources it demands are free and its memory fits the cap
    (else wait for the next completion). An op holding several units has no unit index.
    """
    import heapq

    t0 = time.perf_counter()
    g = problem.graph
    n = g.num_ops
    dur = g.durations.tolist()
    out_b, ws_b = g.output_sizes.tolist(), g.workspace_sizes.tolist()
    left = np.diff(g.succ_ptr).tolist()  # consumers not yet finished
    # the liveness rule: an output flag keeps a tensor to the end only when nothing reads it
    is_out = [op.output and left[v] == 0 for v, op in enumerate(g.ops)]
    units = g.demand_array("units").tolist()
    pp, pi = g.pred_ptr.tolist(), g.pred_idx.tolist()
    k = problem.machine.units or int(sum(units)) or 1
    cap = problem.memory_cap
    free_units = list(range(k))
    limited = {r: c for r, c in problem.capacities.items() if c is not None and r != "units"}
    dem = {r: g.demand_array(r).tolist() for r in limited}
    free_res = dict(limited)
    held: dict[int, list[int]] = {}
    done = [False] * n
    starts, unit_of = [0.0] * n, [-1] * n
    running: list[tuple[float, int]] = []
    mem, t = g.persistent_bytes, 0.0

    def finish(v: int) -> None:
        nonlocal mem
        done[v] = True
        for u in held.pop(v, []):
            heapq.heappush(free_units, u)
        if dur[v] > 0:
            for r in limited:
                free_res[r] += dem[r][v]
            mem -= ws_b[v]
            if left[v] == 0 and not is_out[v]:
                mem -= out_b[v]
        for u in pi[pp[v] : pp[v + 1]]:
            left[u] -= 1
            if left[u] == 0 and not is_out[u]:
                mem -= out_b[u]

    def need_of(v: int) -> int:
        """Bytes ``v`` allocates as it starts: its output unless nothing keeps it (no reader,
        not an output, no time), its workspace while it runs."""
        holds = dur[v] > 0 or left[v] > 0 or is_out[v]
        return (out_b[v] if holds else 0) + (ws_b[v] if dur[v] > 0 else 0)

    def zero_run(i: int) -> int:
        """How many ops from position ``i`` of the order, all taking no time, to start at
        once: the most whose level, once each has run (memory at an instant counts what
        lives past it), fits the cap. A tensor that a zero-duration op writes and another
        reads at the same instant takes no memory, though one at a time it would not fit."""
        level, fits = mem, 0
        gone: set[int] = set()
        spent: dict[int, int] = {}  # consumers left per producer, after the run so far
        for j in range(i, len(seq)):
            v = seq[j]
            if dur[v] > 0 or not all(done[u] or u in gone for u in pi[pp[v] : pp[v + 1]]):
                break
            level += need_of(v)
            gone.add(v)
            for u in pi[pp[v] : pp[v + 1]]:
                spent[u] = spent.get(u, left[u]) - 1
                if spent[u] == 0 and not is_out[u]:
                    level -= out_b[u]
            if cap is None or level <= cap:
                fits = j - i + 1
        return fits

    seq = order.tolist()
    i = 0
    while i < len(seq):
        v = seq[i]
        batch = 1
        while True:
            ready = all(done[u] for u in pi[pp[v] : pp[v + 1]])
            need = need_of(v)
            unit_ok = dur[v] == 0 or (
                len(free_units) >= units[v] and all(dem[r][v] <= free_res[r] for r in limited)
            )
            if ready and unit_ok and (cap is None or mem + need <= cap):
                break
            if ready and dur[v] == 0 and cap is not None:
                batch = zero_run(i)
                if batch:
                    break
                batch = 1
            if not running:
                return Schedule.empty(problem, solver="memory-in-order", status=Status.UNKNOWN,
                                      info={"reason": f"op {g.names[v]!r} does not fit the "
                                            f"memory cap even with nothing running"})  # fmt: skip
            t = running[0][0]
            while running and running[0][0] <= t:
                finish(heapq.heappop(running)[1])
        for v in seq[i : i + batch]:
            starts[v] = t
            mem += need_of(v)
            if dur[v] > 0:
                held[v] = [heapq.heappop(free_units) for _ in range(units[v])]
                unit_of[v] = held[v][0] if units[v] == 1 else -1
                for r in limited:
                    free_res[r] -= dem[r][v]
                heapq.heappush(running, (t + dur[v], v))
            else:
                if units[v] == 1:  # takes no time: beside whatever runs, on no unit's time
                    unit_of[v] = (free_units or [0])[0]
                finish(v)
        i += batch
    return Schedule.build(problem, starts, unit_of, solver="memory-in-order",
                          wall_time_s=time.perf_counter() - t0)  # fmt: skip


def memory_list(
    problem: Problem,
    *,
    order_options: dict[str, Any] | None = None,
    order: np.ndarray | None = None,
    **_: object,
) -> Schedule:
    """Min-memory order as list priority with memory-feasible placement, or b-level if shorter.

    The in-order schedule (:func:`in_order`) and the two safe schedules
    (:func:`~opsched.heuristics.safe_list.safe_list`) join in. ``order_options`` go to
    :func:`~opsched.heuristics.memory.min_memory_order` (e.g. ``{"method": "beam",
    "rounds": 1}`` for a fast order; the default search can take seconds at 50-120 ops).
    ``order``: a one-unit order to use instead of searching for one (e.g. the one
    :func:`opsched.solver.serial.serial_cap_check` found within the cap).

    ``info["order_peak"]`` is the one-unit order's peak; UNKNOWN with a reason if neither
    priority finds a schedule within the cap.
    """
    t0 = time.perf_counter()
    g = problem.graph
    if order is None:
        order = min_memory_order(problem, **(order_options or {}))
    order = np.asarray(order, dtype=np.int64)
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
    best.wall_time_s = time.perf_counter() - t0
    how = {id(a): "min-memory order", id(b): "b-level", id(c): "in min-memory order",
           id(d): "safe, in min-memory order", id(e): "safe, b-level"}  # fmt: skip
    best.info = {**best.info, "priority": how[id(best)]}
    return best
