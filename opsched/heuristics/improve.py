"""Forward-backward improvement (double justification) of a schedule on identical units.

Given a schedule, the *backward pass* re-places every op as late as possible, in order of
decreasing end time, without passing the makespan (a serial schedule-generation scheme on the
reversed graph, with insertion into idle gaps); the *forward pass* then re-places every op as
early as possible in order of increasing start. Neither pass can lengthen the schedule, and
together they often shorten it: ops that sat early for no reason move right, which opens
room on the critical path when everything moves back left. Repeated until nothing changes.

The technique is Valls, Ballestin and Quintanilla's "justification" for resource-constrained
project scheduling (European Journal of Operational Research 165, 2005), here on the CSR
arrays with the compiled insertion kernel where ops demand at most one unit and nothing else
limited. Where they demand several units or named resources, both passes are the serial
scheme over the resources' load profiles (:mod:`opsched.heuristics._serial`, up to
:data:`~opsched.heuristics._serial.SERIAL_MAX_OPS` ops). Under a memory cap it returns the
input: moving an op can lengthen a tensor's life past the cap.

Examples
--------
>>> from opsched.demo import seed_problem
>>> from opsched.heuristics.listsched import list_schedule
>>> s = list_schedule(seed_problem(units=1), "lpt", "insertion")
>>> justify(seed_problem(units=1), s).makespan
7.0
"""

from __future__ import annotations

import time

import numpy as np

from opsched._jit import call
from opsched.errors import ScheduleFormatError
from opsched.heuristics._insertion import insertion
from opsched.heuristics._serial import SERIAL_MAX_OPS, justify_serial
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule

__all__ = ["justify", "justify_arrays"]


def forward_place(problem: Problem, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Re-place ops in order of ``starts``, each as early as possible (insertion allowed).

    If ``starts`` is a feasible schedule, no op starts later than it did (an op placed earlier
    in the order only moves left, which never adds load to a later interval); the result also
    names each op's unit.
    """
    g = problem.graph
    wants = (g.demand_array("units") == 1).astype(np.int8)
    return call(
        insertion, g.num_ops + g.num_edges, int(problem.unit_pool or 1), g.durations,
        wants, np.asarray(starts, dtype=np.float64), g.pred_ptr, g.pred_idx, g.succ_ptr,
        g.succ_idx,
    )  # fmt: skip


def justify_arrays(
    problem: Problem, starts: np.ndarray, max_rounds: int = 10
) -> tuple[np.ndarray, np.ndarray, int]:
    """Double justification on arrays: returns ``(starts, units, rounds)``, never longer."""
    g = problem.graph
    k = problem.unit_pool
    d = g.durations
    wants = (g.demand_array("units") == 1).astype(np.int8)
    size = g.num_ops + g.num_edges
    best, best_units = forward_place(problem, starts)
    if k is None or g.num_ops == 0:
        return best, best_units, 0
    span = float((best + d).max())
    rounds = 0
    for rounds in range(1, max_rounds + 1):  # noqa: B007
        # backward: latest ends first, on the reversed graph (its "starts" count back from T)
        rs, _ = call(
            insertion, size, k, d, wants, -(best + d), g.succ_ptr, g.succ_idx, g.pred_ptr,
            g.pred_idx,
        )  # fmt: skip
        back = span - (rs + d)
        back -= back.min()
        fs, fu = forward_place(problem, back)
        new_span = float((fs + d).max())
        if new_span >= span - 1e-9:
            break
        best, best_units, span = fs, fu, new_span
    return best, best_units, rounds


def justify(problem: Problem, schedule: Schedule, max_rounds: int = 10) -> Schedule:
    """Return ``schedule`` improved by forward-backward passes (or itself if not applicable).

    The result is named ``<solver>+fbi`` and records the rounds in ``info["fbi_rounds"]``.
    """
    from opsched.heuristics.listsched import units_only

    require_problem(problem, "justify")
    if not isinstance(schedule, Schedule):
        raise TypeError(f"justify: schedule must be a Schedule, got {type(schedule).__name__}")
    if not schedule.ops or problem.memory_cap is not None:  # no schedule, or no ops
        return schedule
    serial = not units_only(problem)
    if serial and problem.graph.num_ops > SERIAL_MAX_OPS:
        return schedule
    if not serial and problem.machine.units is None:  # every op starts at once anyway
        return schedule
    t0 = time.perf_counter()
    by_name = schedule.starts()  # in graph order, whatever the order of the schedule's ops
    missing = [n for n in problem.graph.names if n not in by_name]
    if missing or len(by_name) != problem.graph.num_ops:
        raise ScheduleFormatError(
            f"justify: the schedule (of graph {schedule.graph!r}) does not schedule the ops "
            f"of graph {problem.graph.name!r}"
            + (f" (no start for {missing[:5]})" if missing else "")
        )
    starts = np.array([by_name[n] for n in problem.graph.names], dtype=np.float64)
    if serial:
        new, units, rounds = justify_serial(problem, starts, max_rounds)
    else:
        new, units, rounds = justify_arrays(problem, starts, max_rounds)
    if float((new + problem.graph.durations).max()) >= (schedule.makespan or 0.0) - 1e-9:
        return schedule
    return Schedule.build(
        problem, new, units, solver=f"{schedule.solver}+fbi", status=schedule.status,
        lower_bound=schedule.lower_bound,
        wall_time_s=(schedule.wall_time_s or 0.0) + time.perf_counter() - t0,
        info={**schedule.info, "fbi_rounds": rounds},
    )  # fmt: skip
