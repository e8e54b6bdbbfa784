"""Event simulation of schedules: metrics of a given schedule, and execution of unit orders.

:func:`simulate` reports makespan, peak memory, the memory-over-time curve, per-unit busy and
idle time and utilisation of a :class:`~opsched.schedule.Schedule`.
:func:`execute_orders` runs a per-unit op order (what a runtime keeps when it replays a static
schedule on CUDA streams): each op starts as soon as its unit is free and its dependencies
have finished, optionally with actual durations that differ from the estimates. It and the
rest of the replay of unit orders (:class:`UnitOrders`, :func:`orders_suffice`,
:func:`mark_broken`) live in :mod:`opsched.validate._simulate_replay` and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opsched.errors import ScheduleFormatError
from opsched.liveness import memory_curve, peak_demand
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule
from opsched.validate._simulate_replay import (
    UnitOrders,
    execute_orders,
    mark_broken,
    orders_suffice,
)

__all__ = [
    "SimulationReport",
    "UnitOrders",
    "execute_orders",
    "mark_broken",
    "orders_suffice",
    "simulate",
]


@dataclass
class SimulationReport:
    """Metrics of one executed schedule."""

    makespan: float
    peak_memory: int
    memory_times: np.ndarray
    memory_bytes: np.ndarray
    unit_busy: dict[int, float] = field(default_factory=dict)
    unit_idle: dict[int, float] = field(default_factory=dict)
    utilisation: float = 0.0

    def __repr__(self) -> str:  # one line, not the memory curve's arrays
        return (
            f"<SimulationReport makespan {self.makespan:g}, peak memory {self.peak_memory} B, "
            f"utilisation {self.utilisation:.1%}, {len(self.memory_times)} memory steps>"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan": self.makespan,
            "peak_memory": self.peak_memory,
            "utilisation": self.utilisation,
            "unit_busy": self.unit_busy,
            "unit_idle": self.unit_idle,
            "memory_curve": list(
                zip(self.memory_times.tolist(), self.memory_bytes.tolist(), strict=True)
            ),
        }


def simulate(problem: Problem, schedule: Schedule) -> SimulationReport:
    """Execute ``schedule`` as given and measure it.

    Utilisation is the busy unit-time (duration x units demand, summed) over
    ``units x makespan``; with unlimited units, over ``width x makespan``, where the width
    is the units the schedule names or, where more, the most units its ops demand at once
    (an op of several units names none).
    Busy and idle time are listed for each unit the schedule names and each unit up to the
    ops' total unit demand (:attr:`Problem.unit_pool`): the units of a machine beyond that
    are never used, idle throughout, and not listed one by one.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 2, output_bytes=4), Op("b", 1), Op("c", 1, deps=("a",))))
    >>> p = Problem(g, Machine(units=2))
    >>> s = Schedule.build(p, [0, 0, 2], [0, 1, 0], solver="hand")
    >>> r = simulate(p, s)
    >>> r.makespan, r.peak_memory, r.unit_busy, r.unit_idle, r.utilisation
    (3.0, 4, {0: 3.0, 1: 1.0}, {0: 0.0, 1: 2.0}, 0.6666666666666666)
    """
    if isinstance(problem, Schedule) and isinstance(schedule, Problem):
        raise TypeError("simulate(problem, schedule): the arguments are the other way round")
    require_problem(problem, "simulate(problem, schedule)")
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"simulate(problem, schedule): schedule must be a Schedule, got "
            f"{type(schedule).__name__} (Schedule.from_dict reads a file's)"
        )
    g = problem.graph
    starts_by_name = schedule.starts()
    try:
        starts = np.array([starts_by_name[n] for n in g.names], dtype=np.float64)
    except KeyError as e:
        raise ScheduleFormatError(f"op {e.args[0]!r} is not scheduled") from None
    ends = starts + g.durations
    makespan = float(ends.max()) if g.num_ops else 0.0
    t, m = memory_curve(g, starts, makespan)
    busy: dict[int, float] = {}
    for o in schedule.ops:
        if o.unit is not None:
            busy[o.unit] = busy.get(o.unit, 0.0) + (o.end - o.start)
    k = problem.machine.units
    for u in range(problem.unit_pool or 0):  # not units past all the ops' demand: never used
        busy.setdefault(u, 0.0)
    idle = {u: makespan - b for u, b in sorted(busy.items())}
    unit_dem = g.demand_array("units")
    unit_work = float((g.durations * unit_dem).sum())
    width = k if k is not None else max(len(busy), peak_demand(starts, ends, unit_dem), 1)
    util = unit_work / (width * makespan) if makespan > 0 else 0.0
    return SimulationReport(makespan, int(m.max()), t, m, dict(sorted(busy.items())), idle, util)
