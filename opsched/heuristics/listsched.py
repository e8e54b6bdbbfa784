"""List scheduling as *priority rule x placement rule*.

A priority rule (:mod:`opsched.analysis.ranks`: b-level, t-level, HEFT upward rank, CPOP,
longest processing time, most successors, seeded random, or your own numbers) orders the
ops; a placement rule decides where and when each goes:

``earliest``
    Graham's list scheduling: at every moment, the free units take the highest-ranked ready
    ops (a non-delay schedule: no unit idles while a ready op could run).
``insertion``
    HEFT's placement: ops in rank order among those whose predecessors are placed, each on
    the unit where it starts earliest, allowed into an idle gap between placed ops. Where
    ops demand several units or named resources (PSPLIB's), the serial scheme: each op at
    the earliest time every resource it holds has room for its whole run
    (:mod:`opsched.heuristics._serial`, without a memory cap, up to 20,000 ops).
``memory``
    Non-delay as ``earliest``, but an op starts only if the memory it allocates keeps the
    total under the cap; if nothing runs and no ready op fits, the dead end is reported
    (status UNKNOWN with the reason) instead of returning an invalid schedule.

Speed: on graphs whose ops demand at most one unit and no other resource, without a memory
cap, ``earliest`` and ``insertion`` run as compiled array loops
(:mod:`opsched.heuristics._kernels`), O((V + E) log V) for ``earliest``. Other problems use
the event-driven engine of :func:`opsched.heuristics.greedy`, which handles any resources and
the memory cap, for ``earliest``, and the serial scheme for ``insertion``. With a memory
cap, ``earliest`` is ``memory``; ``insertion`` keeps its result when its peak fits the cap
and otherwise falls back to ``memory`` (noted in ``info``).

``wall_time_s`` of the result is the scheduling time: ranks plus placement, not building the
:class:`~opsched.schedule.Schedule` object.

Examples
--------
>>> from opsched.demo import seed_problem
>>> list_schedule(seed_problem(units=2)).makespan
6.0
>>> list_schedule(seed_problem(units=1), "lpt", "insertion").makespan
7.0
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from opsched._jit import call
from opsched.analysis.bounds import lower_bounds
from opsched.analysis.ranks import PRIORITY_RULES, priority
from opsched.errors import ProblemError
from opsched.heuristics._insertion import insertion
from opsched.heuristics._kernels import nondelay
from opsched.heuristics._serial import SERIAL_MAX_OPS, serial_schedule
from opsched.heuristics.greedy import greedy
from opsched.problem import Problem, check_seed, require_problem
from opsched.schedule import Schedule, Status

__all__ = ["PLACEMENTS", "list_arrays", "list_schedule", "list_solver_name", "units_only"]

#: Names accepted for ``placement``.
PLACEMENTS = ("earliest", "insertion", "memory")


#: (priority, placement) -> the registry name that runs exactly that combination.
_REGISTERED = {
    ("b-level", "earliest"): "list",
    ("heft", "insertion"): "heft",
    ("cpop", "earliest"): "list-cpop",
    ("t-level", "earliest"): "list-tlevel",
    ("lpt", "earliest"): "list-lpt",
    ("successors", "earliest"): "list-successors",
    ("random", "earliest"): "list-random",
    ("b-level", "memory"): "list-memory",
}


def list_solver_name(priority_rule: str, placement: str) -> str:
    """The name a list schedule reports: its registry name where it has one (``list`` for
    b-level x earliest, ``heft`` for HEFT x insertion...), else ``list-<rule>-<placement>``.

    >>> list_solver_name("heft", "insertion"), list_solver_name("lpt", "insertion")
    ('heft', 'list-lpt-insertion')
    """
    if priority_rule in ("blevel", "critical-path"):
        priority_rule = "b-level"
    return _REGISTERED.get((priority_rule, placement), f"list-{priority_rule}-{placement}")


def units_only(problem: Problem) -> bool:
    """True if every op demands at most one unit and nothing else that is limited."""
    g = problem.graph
    caps = problem.capacities
    for r in g.resource_names():
        dem = g.demand_array(r)
        if r == "units":
            if len(dem) and dem.max() > 1:
                return False
        elif caps.get(r) is not None and dem.any():
            return False
    return True


def list_arrays(
    problem: Problem, prio: np.ndarray, placement: str, durations: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Starts and units (graph order) of the list schedule by ``prio`` (larger first) and
    ``placement`` ``"earliest"`` or ``"insertion"``, where :func:`units_only` holds; memory
    is not looked at. ``durations`` (float64, graph order) replace the graph's."""
    g = problem.graph
    d = g.durations if durations is None else durations
    units = problem.unit_pool  # the kernels size per-unit state by it
    wants = (g.demand_array("units") == 1).astype(np.int8)
    size = g.num_ops + g.num_edges
    if placement == "insertion" and units is not None:
        return call(
            insertion, size, units, d, wants, -prio, g.pred_ptr, g.pred_idx, g.succ_ptr,
            g.succ_idx,
        )  # fmt: skip
    # unlimited units: insertion and non-delay both start every op at once
    return call(
        nondelay, size, units or 0, d, wants, -prio, False, g.pred_ptr, g.succ_ptr,
        g.succ_idx,
    )  # fmt: skip


def list_schedule(
    problem: Problem,
    priority_rule: str | Sequence[float] | np.ndarray = "b-level",
    placement: str = "earliest",
    *,
    seed: int = 0,
) -> Schedule:
    """Schedule ``problem`` by ``priority_rule`` x ``placement`` (see the module docstring).

    Parameters
    ----------
    problem
        Graph and machine (units, resources, memory cap).
    priority_rule
        One of :data:`opsched.analysis.ranks.PRIORITY_RULES` or one number per op (graph
        order), larger first.
    placement
        ``"earliest"``, ``"insertion"`` or ``"memory"``.
    seed
        For the ``random`` rule.

    Returns
    -------
    Schedule
        FEASIBLE, or UNKNOWN with ``info["reason"]`` on a dead end under the memory cap or
        when the problem cannot be scheduled at all.
    """
    require_problem(problem, "list_schedule")
    seed = check_seed(seed)
    t0 = time.perf_counter()
    if placement not in PLACEMENTS:
        raise ProblemError(f"unknown placement {placement!r}; known: {', '.join(PLACEMENTS)}")
    g = problem.graph
    if isinstance(priority_rule, str):
        if priority_rule not in PRIORITY_RULES and priority_rule not in ("blevel",):
            raise ProblemError(
                f"unknown priority rule {priority_rule!r}; known: {', '.join(PRIORITY_RULES)}"
            )
        rule_name = priority_rule
    else:
        rule_name = "custom"
    name = list_solver_name(rule_name, placement)
    none = Schedule.if_impossible(problem, solver=name)
    if none is not None:
        return none
    if isinstance(priority_rule, str):
        prio = priority(g, priority_rule, seed=seed)
    else:
        prio = np.asarray(priority_rule, dtype=np.float64)
        if prio.shape != (g.num_ops,) or not np.isfinite(prio).all():
            raise ProblemError(f"priority needs {g.num_ops} finite numbers, got {prio.shape}")

    fast = units_only(problem)
    cap = problem.memory_cap
    info: dict[str, object] = {"priority": rule_name, "placement": placement}
    result: Schedule | None = None
    placed: tuple[np.ndarray, np.ndarray] | None = None
    if fast and (placement == "insertion" or (placement == "earliest" and cap is None)):
        placed = list_arrays(problem, prio, placement)
    elif placement == "insertion" and cap is None and g.num_ops <= SERIAL_MAX_OPS:
        # several units or named resources: the serial scheme, insertion into the load
        # profiles
        placed = serial_schedule(problem, prio)
    elif placement == "insertion":
        info["fallback"] = (
            "insertion beside resources other than one unit takes no memory cap; placed "
            "non-delay instead"
            if cap is not None
            else f"insertion beside resources other than one unit takes at most "
            f"{SERIAL_MAX_OPS} ops; placed non-delay instead"
        )
    if placed is not None:
        result = Schedule.build(
            problem, *placed, solver=name, status=Status.FEASIBLE,
            lower_bound=lower_bounds(g, problem.machine.units, problem.capacities).value,
            wall_time_s=time.perf_counter() - t0, info=info,
        )  # fmt: skip
        if cap is not None and result.peak_memory is not None and result.peak_memory > cap:
            info["fallback"] = (
                f"insertion peaked at {result.peak_memory} B over the cap of {cap} B; "
                "placed with memory-feasible non-delay instead"
            )
            result = None
    if result is None:
        res = greedy(problem, prio)
        elapsed = time.perf_counter() - t0
        res.solver = name
        res.wall_time_s = elapsed
        res.info = {**info, **res.info}
        result = res
    return result
