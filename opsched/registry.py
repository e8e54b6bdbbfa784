"""One registry of every scheduler by name, exact solvers and heuristics alike.

The CLI, the quick study and (later) batch runs look schedulers up here, so they treat them
all the same way: ``run(name, problem, ...)`` returns a :class:`~opsched.schedule.Schedule`.

Examples
--------
>>> from opsched.demo import seed_problem
>>> run("greedy", seed_problem(units=2)).makespan
6.0
>>> sorted(SOLVERS)[:3]
['brute-force', 'cpsat', 'greedy']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opsched.errors import ProblemError
from opsched.heuristics import greedy, serial
from opsched.problem import Objective, Problem
from opsched.schedule import Schedule
from opsched.solver import solve_brute_force, solve_cpsat

__all__ = ["SOLVERS", "SolverInfo", "get_solver", "run"]


@dataclass(frozen=True)
class SolverInfo:
    """A named scheduler: ``exact`` ones can prove optimality and honour ``objective``."""

    name: str
    description: str
    exact: bool
    fn: Callable[..., Schedule]


def _cpsat(problem: Problem, **opts: Any) -> Schedule:
    return solve_cpsat(problem, **opts)


def _brute(problem: Problem, objective: Objective | str | None = None, **_: Any) -> Schedule:
    return solve_brute_force(problem, objective)


SOLVERS: dict[str, SolverInfo] = {
    s.name: s
    for s in [
        SolverInfo("cpsat", "OR-Tools CP-SAT, proven optimal (makespan, peak, lexicographic)",
                   True, _cpsat),
        SolverInfo("brute-force", "enumerates semi-active schedules; graphs of <= 10 ops",
                   True, _brute),
        SolverInfo("serial", "all ops one after another on one unit, topological order",
                   False, lambda p, **_: serial(p)),
        SolverInfo("greedy", "event-driven ready-set scheduling, FIFO priority (seed loop)",
                   False, lambda p, **_: greedy(p, "fifo")),
        SolverInfo("greedy-blevel", "event-driven ready-set scheduling, b-level priority",
                   False, lambda p, **_: greedy(p, "b-level")),
    ]
}  # fmt: skip


def get_solver(name: str) -> SolverInfo:
    """Look a scheduler up; an unknown name raises ProblemError listing the known ones."""
    try:
        return SOLVERS[name]
    except KeyError:
        raise ProblemError(f"unknown solver {name!r}; known: {', '.join(SOLVERS)}") from None


def run(name: str, problem: Problem, **options: Any) -> Schedule:
    """Run scheduler ``name`` on ``problem``.

    Options (``objective``, ``time_limit``, ``num_workers``, ``deterministic``, ``log``)
    reach exact solvers; heuristics ignore them.
    """
    return get_solver(name).fn(problem, **options)
