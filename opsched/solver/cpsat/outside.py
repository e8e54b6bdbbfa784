"""Bounds and checks ``solve_cpsat`` proves outside the CP-SAT model, on the problem itself:
the two-unit overlap bound and its case split (a known bound that stops the search when met,
or a refutation of the cap), the one-unit check of a memory cap, and the greedy schedule
that replaces a rounded model's optimum where it ends earlier in real time.
"""

from __future__ import annotations

import math
from typing import Any

from opsched.analysis.cap_orders import flow_budget
from opsched.analysis.overlap import budgeted_overlap_bound, pair_test_seconds
from opsched.analysis.overlap_capacity import program_budget
from opsched.analysis.tensor_cases import case_overlap_bound, case_proof
from opsched.heuristics.greedy import greedy
from opsched.problem import Problem
from opsched.schedule import Schedule, Status
from opsched.solver.serial import SerialCheck, serial_cap_check, serial_state_budget

__all__ = [
    "CAP_ORDER_SHARE",
    "SERIAL_MAX_STATES",
    "SERIAL_SHARE",
    "exact_start",
    "no_worse_than_greedy",
    "overlap_bound",
    "serial_check",
    "serial_states",
]

#: Share of the time limit the orders a memory cap forces may take (as a flow count).
CAP_ORDER_SHARE = 0.1

#: Share of the time limit the one-unit check of a memory cap may take (as a state count).
SERIAL_SHARE = 0.2

#: Most states the one-unit check keeps, whatever the time limit (about 1 GB of memory).
SERIAL_MAX_STATES = 500_000


def exact_start(
    problem: Problem, makespan_limit: float | None = None, memory_first: bool = False
) -> Schedule | None:
    """A schedule of the problem itself (not rounded), for when the integer model gives
    none without a proof (its rounded sizes and cap leave no room the problem has, or the
    time ran out): the better of the two greedy schedules (b-level, FIFO; shorter, or with
    ``memory_first`` the lower peak), else the memory-aware one with the hint's quick order
    search; each must pass the validator and end by ``makespan_limit``. None if none does.
    It is no hint (``hint=False`` leaves it on): a schedule for a model that found none."""
    from opsched.heuristics.memory_list import memory_list
    from opsched.solver.cpsat.hint import HINT_ORDER_SEARCHES
    from opsched.validate import validate

    def usable(s: Schedule) -> bool:
        if not s.has_schedule or s.makespan is None:
            return False
        if makespan_limit is not None and s.makespan > makespan_limit + 1e-9:
            return False
        return validate(problem, s).valid

    found = [s for s in (greedy(problem, "b-level"), greedy(problem)) if usable(s)]
    if not found and problem.memory_cap is not None:
        s = memory_list(problem, order_options=HINT_ORDER_SEARCHES[0])
        found = [s] if usable(s) else []
    if not found:
        return None
    if memory_first:
        return min(found, key=lambda s: (int(s.peak_memory or 0), float(s.makespan or 0.0)))
    return min(found, key=lambda s: (float(s.makespan or 0.0), int(s.peak_memory or 0)))


def no_worse_than_greedy(problem: Problem, found: Schedule) -> Schedule:
    """Under rounded-up durations CP-SAT's optimum is that of the rounded model: in real
    time a greedy schedule (the model's hint) can end earlier (squeezenet, float16 on an
    A100, 4 units: 316.247 against list scheduling's 316.239). Then the greedy schedule is
    returned, with CP-SAT's bound and status FEASIBLE, and ``info`` says so."""
    from opsched.heuristics.listsched import list_schedule

    done = [(float(c.makespan), c) for c in (greedy(problem, "b-level"), greedy(problem),
            list_schedule(problem)) if c.makespan is not None]  # fmt: skip
    if not done or found.makespan is None:
        return found
    span, best = min(done, key=lambda sc: sc[0])
    if span >= found.makespan - 1e-12:
        return found
    info = {**found.info, "note_greedy": (
        f"the rounded model's optimum ends at {found.makespan:g} in real time; "
        f"{best.solver} ({best.makespan:g}) ends earlier: its schedule is returned"
    )}  # fmt: skip
    by_name = {o.name: o for o in best.ops}
    ops = [by_name[n] for n in problem.graph.names]
    return Schedule.build(
        problem, [o.start for o in ops], [o.unit for o in ops], solver="cpsat",
        status=Status.FEASIBLE, lower_bound=found.lower_bound,
        wall_time_s=found.wall_time_s, info=info,
    )  # fmt: skip


def overlap_bound(
    tick: Problem, cap: int, orders: tuple[tuple[int, int], ...], time_limit: float,
    info: dict[str, Any], cases: bool = True, clock: bool = True,
) -> tuple[int | None, str | None]:  # fmt: skip
    """The two-unit overlap bound in ticks (:mod:`opsched.analysis.overlap`), with at most
    :data:`CAP_ORDER_SHARE` of the time limit for its pair tests and minimum cuts; None where
    the pair tests alone would take longer. With ``cases``, split on the exclusive tensors
    (:mod:`opsched.analysis.tensor_cases`), its cuts and programs each within about the same
    share (the programs held to it by the clock as well unless ``clock`` is off: a
    deterministic solve).

    Returns ``(bound, proof)``: ``proof`` says why no schedule fits the cap where every case
    of the split is empty (the bound is then None)."""
    share = CAP_ORDER_SHARE * time_limit
    n = tick.graph.num_ops
    if not cases:
        ob = budgeted_overlap_bound(tick.graph, cap, share, orders)
        if ob is None:
            return None, None
        bound = math.ceil(ob.value - 1e-9)
    else:
        if pair_test_seconds(n) > share:
            return None, None
        split = case_overlap_bound(tick.graph, cap, orders, max_flows=flow_budget(n, share),
                                   max_programs=program_budget(n, share),
                                   seconds=share if clock else None)  # fmt: skip
        if math.isinf(split.value):
            info["overlap"] = {"cases": {"exclusive": len(split.pairs), "empty": True,
                                         "flows": split.flows}}  # fmt: skip
            return None, case_proof(tick.graph, split.pairs)
        ob = split.overlap
        bound = math.ceil(split.value - 1e-9)
    info["overlap"] = {"bound_ticks": bound, "pairs": ob.pairs, "apart": ob.apart,
                       "flows": ob.flows, "complete": ob.complete}  # fmt: skip
    if cases:
        info["overlap"]["cases"] = {
            "plain_ticks": math.ceil(split.plain - 1e-9), "exclusive": len(split.pairs),
            "cases": len(split.cases), "programs": split.programs, "flows": split.flows,
            "complete": split.complete,
        }  # fmt: skip
    return bound, None


def serial_check(problem: Problem, time_limit: float) -> SerialCheck | None:
    """The one-unit check of the memory cap, or None when a greedy schedule already fits.

    Done on the problem in bytes, so a refutation holds whatever the integer scaling; at most
    :data:`SERIAL_SHARE` of the time limit's worth of states.
    """
    assert problem.memory_cap is not None
    if any(greedy(problem, prio).has_schedule for prio in ("b-level", "fifo")):
        return None
    return serial_cap_check(
        problem.graph, int(problem.memory_cap), max_states=serial_states(time_limit)
    )


def serial_states(time_limit: float) -> int:
    """States either one-unit search may keep: :data:`SERIAL_SHARE` of the time limit's worth,
    at most :data:`SERIAL_MAX_STATES`."""
    return min(SERIAL_MAX_STATES, serial_state_budget(SERIAL_SHARE * time_limit))
