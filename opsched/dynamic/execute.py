"""Executing under actual durations: a static schedule's unit orders vs an online list scheduler.

Static replay
    What a runtime does with a schedule prepared ahead of time on CUDA streams: every unit
    keeps its op order, and an op starts as soon as its unit is free and its dependencies have
    finished (:func:`opsched.validate.simulate.execute_orders`). Ops of zero demand wait only
    for their dependencies; an op of several units also waits for the ops (on every unit)
    that had ended by its start in the schedule, and the ops that started after its end wait
    for it. Only the unit orders and
    dependencies are kept: other resources (shared by the streams on one device) and the
    memory cap are not re-enforced, which is what a stream replay does.
Online list scheduling
    Decisions at run time: whenever a unit frees, it takes the ready op of highest priority.
    The priorities come from the *estimates* (b-level on estimated durations by default), and
    an op's actual duration is known only when it completes. A non-delay list scheduler fed
    the actual durations decides exactly so: at each event it only uses what has finished,
    which ops are ready and the fixed priorities, never a running op's future end. So
    :func:`online` is :func:`opsched.heuristics.listsched.list_schedule` (``earliest``
    placement, memory-aware under a cap) on the actual durations with estimated priorities.
    (``insertion`` placement would not be online: it fills gaps in the past.) Feeding it
    priorities computed from the actual durations would be clairvoyant.

Examples
--------
>>> from opsched.ir import Op, OpGraph
>>> from opsched.problem import Machine, Problem
>>> from opsched.heuristics.listsched import list_schedule
>>> g = OpGraph((Op("a", 2), Op("b", 1), Op("c", 1, deps=("a",))))
>>> p = Problem(g, Machine(units=2))
>>> s = list_schedule(p)
>>> replay(p, s, [4, 1, 1]).makespan, online(p, [4, 1, 1]).makespan
(5.0, 5.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from opsched.analysis.paths import b_level
from opsched.analysis.ranks import priority as rank
from opsched.errors import ScheduleFormatError
from opsched.heuristics.listsched import list_schedule
from opsched.problem import Problem
from opsched.schedule import Schedule
from opsched.validate.simulate import UnitOrders

__all__ = [
    "UnitOrders",
    "online",
    "online_priority",
    "replay",
    "unit_orders",
    "with_durations",
]


def with_durations(problem: Problem, durations: Sequence[float] | np.ndarray) -> Problem:
    """``problem`` with every op's duration replaced (graph order)."""
    g = problem.graph
    d = np.asarray(durations, dtype=np.float64)
    if d.shape != (g.num_ops,):
        raise ScheduleFormatError(f"expected {g.num_ops} durations, got shape {d.shape}")
    ops = [replace(op, duration=float(x)) for op, x in zip(g.ops, d, strict=True)]
    return Problem(g.replace_ops(ops), problem.machine, problem.objective)


def unit_orders(problem: Problem, schedule: Schedule) -> dict[int, list[str]]:
    """Each unit's ops in start order (pseudo-units for ops without one).

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> from opsched.heuristics import greedy
    >>> p = seed_problem(units=2)
    >>> unit_orders(p, greedy(p))[1]
    ['Conv2']
    """
    return UnitOrders(problem, schedule).orders


def replay(
    problem: Problem,
    schedule: Schedule | UnitOrders,
    durations: Sequence[float] | np.ndarray | None = None,
) -> Schedule:
    """Execute ``schedule``'s unit orders with actual ``durations`` (estimates if omitted).

    The result is a schedule of the problem with the actual durations
    (:func:`with_durations`), its ops on their original units; with the estimates, a
    left-justified schedule replays to itself.
    """
    orders = schedule if isinstance(schedule, UnitOrders) else UnitOrders(problem, schedule)
    actual = problem if durations is None else with_durations(problem, durations)
    return orders.run(actual)


def online_priority(
    problem: Problem, priority: str | Sequence[float] | np.ndarray = "b-level"
) -> np.ndarray:
    """The priorities :func:`online` schedules by, from the estimated durations."""
    g = problem.graph
    if isinstance(priority, str):
        return b_level(g) if priority in ("b-level", "blevel") else rank(g, priority)
    return np.asarray(priority, dtype=np.float64)


def online(
    problem: Problem,
    durations: Sequence[float] | np.ndarray,
    priority: str | Sequence[float] | np.ndarray = "b-level",
) -> Schedule:
    """Online non-delay list scheduling with priorities from the estimates.

    Parameters
    ----------
    problem
        Its durations are the estimates the priorities are computed from.
    durations
        The actual durations, revealed to the scheduler only as ops complete.
    priority
        A rule of :data:`opsched.analysis.ranks.PRIORITY_RULES` evaluated on the estimates,
        or one number per op.
    """
    prio = online_priority(problem, priority)
    s = list_schedule(with_durations(problem, durations), prio, "earliest")
    s.solver = "online"
    return s
