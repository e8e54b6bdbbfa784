"""One registry of every scheduler by name, exact solvers and heuristics alike.

The CLI, the quick study and (later) batch runs look schedulers up here, so they treat them
all the same way: ``run(name, problem, ...)`` returns a :class:`~opsched.schedule.Schedule`.

Examples
--------
>>> from opsched.demo import seed_problem
>>> run("greedy", seed_problem(units=2)).makespan
6.0
>>> sorted(SOLVERS)[:3]
['brute-force', 'cpsat', 'downsets']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opsched.errors import ProblemError
from opsched.heuristics import greedy, serial
from opsched.heuristics.listsched import list_schedule
from opsched.heuristics.lns import lns
from opsched.heuristics.memory import inductor_memory, min_memory, xla_memory
from opsched.heuristics.memory_list import memory_list
from opsched.heuristics.portfolio import portfolio
from opsched.problem import Objective, Problem, check_seed, check_spread, require_problem
from opsched.schedule import Schedule
from opsched.solver import solve_brute_force, solve_cpsat
from opsched.solver.downset_solver import solve_downsets

__all__ = ["SOLVERS", "SolverInfo", "get_solver", "run"]


@dataclass(frozen=True)
class SolverInfo:
    """A named scheduler: ``exact`` ones can prove optimality and honour ``objective``.

    ``refuses(units, capped, objective, num_ops)`` says why the scheduler cannot take a job
    of that shape (None when it can): an experiment leaves such jobs out rather than store
    them as failures.
    """

    name: str
    description: str
    exact: bool
    fn: Callable[..., Schedule]
    refuses: Callable[[int | None, bool, str, int], str | None] | None = None


def _brute_refuses(units: int | None, capped: bool, objective: str, num_ops: int) -> str | None:
    from opsched.solver.brute import MAX_BRUTE_FORCE_OPS

    if num_ops > MAX_BRUTE_FORCE_OPS:
        return f"graphs of more than {MAX_BRUTE_FORCE_OPS} ops"
    return None


def _downsets_refuse(units: int | None, capped: bool, objective: str, num_ops: int) -> str | None:
    from opsched.solver.downsets import shape_refusal

    if objective != "makespan":
        return f"objective {objective} (it minimises the makespan)"
    return shape_refusal(units, capped, num_ops)


def _cpsat(problem: Problem, seed: Any = None, noise: Any = None, **opts: Any) -> Schedule:
    # seed and noise are the randomised heuristics' options, which apply to no exact search
    return solve_cpsat(problem, **opts)


def _brute(
    problem: Problem,
    objective: Objective | str | None = None,
    time_limit: float | None = None,
    **_: Any,
) -> Schedule:
    return solve_brute_force(problem, objective, time_limit=time_limit)


SOLVERS: dict[str, SolverInfo] = {
    s.name: s
    for s in [
        SolverInfo("cpsat", "OR-Tools CP-SAT, proven optimal (makespan, peak, lexicographic)",
                   True, _cpsat),
        SolverInfo("brute-force", "enumerates semi-active schedules; graphs of <= 10 ops",
                   True, _brute, _brute_refuses),
        SolverInfo("downsets", "least makespan under a tight memory cap, exact search over "
                   "down-sets; <= 4 units, integer durations, each op of positive duration "
                   "on exactly one unit", True, solve_downsets, _downsets_refuse),
        SolverInfo("serial", "all ops one after another on one unit, topological order",
                   False, lambda p, **_: serial(p)),
        SolverInfo("greedy", "event-driven ready-set scheduling, FIFO priority (seed loop)",
                   False, lambda p, **_: greedy(p, "fifo")),
        SolverInfo("greedy-blevel", "event-driven ready-set scheduling, b-level priority",
                   False, lambda p, **_: greedy(p, "b-level")),
        SolverInfo("list", "Graham list scheduling, critical-path (b-level) priority",
                   False, lambda p, **_: list_schedule(p)),
        SolverInfo("heft", "HEFT: upward rank, insertion into idle gaps (identical units)",
                   False, lambda p, **_: list_schedule(p, "heft", "insertion")),
        SolverInfo("list-cpop", "list scheduling, CPOP priority (t-level + b-level)",
                   False, lambda p, **_: list_schedule(p, "cpop")),
        SolverInfo("list-tlevel", "list scheduling, smallest t-level (ASAP start) first",
                   False, lambda p, **_: list_schedule(p, "t-level")),
        SolverInfo("list-lpt", "list scheduling, longest processing time first",
                   False, lambda p, **_: list_schedule(p, "lpt")),
        SolverInfo("list-successors", "list scheduling, most successors first",
                   False, lambda p, **_: list_schedule(p, "successors")),
        SolverInfo("list-random", "list scheduling, seeded random priority (seed option)",
                   False, lambda p, seed=0, **_: list_schedule(p, "random", seed=seed)),
        SolverInfo("list-memory", "b-level list scheduling, memory-feasible placement",
                   False, lambda p, **_: list_schedule(p, "b-level", "memory")),
        SolverInfo("portfolio", "best of many list schedules + forward-backward improvement",
                   False, lambda p, noise=None, seed=0, **_: portfolio(p, noise=noise,
                                                                       seed=seed)),
        SolverInfo("inductor-memory", "one unit, PyTorch Inductor's peak-memory reordering "
                   "(best of baseline, LPMF, BFS, DFS)", False, lambda p, **_: inductor_memory(p)),
        SolverInfo("xla-memory", "one unit, XLA's default memory scheduler (best of List, DFS, "
                   "PostOrder)", False, lambda p, **_: xla_memory(p)),
        SolverInfo("min-memory", "one unit, least peak memory: exact search on small graphs, "
                   "beam on large", False, lambda p, **_: min_memory(p)),
        SolverInfo("memory-beam", "one unit, least peak memory by beam search",
                   False, lambda p, **_: min_memory(p, method="beam")),
        SolverInfo("memory-list", "k units under a cap: min-memory order as list priority, "
                   "memory-feasible and safe placements (no dead end when the order fits)",
                   False, lambda p, **_: memory_list(p)),
        SolverInfo("lns", "portfolio, then CP-SAT re-optimises windows (time_limit, seed)",
                   False, lambda p, time_limit=10.0, seed=0, progress=None, **_: lns(
                       p, time_limit=time_limit, seed=seed, progress=progress)),
    ]
}  # fmt: skip


def get_solver(name: str) -> SolverInfo:
    """Look a scheduler up; an unknown name raises ProblemError listing the known ones."""
    if not isinstance(name, str):
        raise TypeError(
            f"a solver name must be a str, got {type(name).__name__} {name!r} "
            f"(known: {', '.join(SOLVERS)})"
        )
    try:
        return SOLVERS[name]
    except KeyError:
        raise ProblemError(f"unknown solver {name!r}; known: {', '.join(SOLVERS)}") from None


#: The options :func:`run` passes on; each scheduler takes those that apply to it.
RUN_OPTIONS = frozenset({
    "objective", "time_limit", "num_workers", "deterministic", "log", "hint", "makespan_limit",
    "params", "progress", "seed", "noise",
})  # fmt: skip


def run(name: str, problem: Problem, **options: Any) -> Schedule:
    """Run scheduler ``name`` on ``problem``.

    Options (:data:`RUN_OPTIONS`: ``objective``, ``time_limit``, ``num_workers``,
    ``deterministic``, ``log``...) reach the schedulers that take them: the exact solvers
    take them all, ``lns`` its time limit, seed and progress, ``portfolio`` and
    ``list-random`` a seed, and the other heuristics none. A name outside that list (a typo)
    is refused, and so is an objective other than the makespan for a heuristic, which would
    ignore it.

    >>> from opsched.demo import seed_problem
    >>> run("greedy", seed_problem(units=2), time_limt=2)
    Traceback (most recent call last):
    opsched.errors.ProblemError: run('greedy'): unknown option 'time_limt'; known: ...
    """
    info = get_solver(name)
    require_problem(problem, f"run({name!r}, problem)")
    unknown = sorted(set(options) - RUN_OPTIONS)
    if unknown:
        raise ProblemError(f"run({name!r}): unknown option {unknown[0]!r}; known: "
                           f"{', '.join(sorted(RUN_OPTIONS))}")  # fmt: skip
    for key in ("seed", "noise"):  # None: the scheduler's own default
        if key in options and options[key] is None:
            del options[key]
    if "seed" in options:
        check_seed(options["seed"])
    if options.get("noise") is not None:
        check_spread(options["noise"])
    obj = options.get("objective")
    if obj is None:  # the problem's own objective, which a heuristic would ignore as well
        obj = problem.objective
    if not info.exact and Objective(obj) is not Objective.MAKESPAN:
        raise ProblemError(
            f"run({name!r}): a heuristic minimises the makespan, not {Objective(obj).value} "
            "(the exact solvers take other objectives)"
        )
    return info.fn(problem, **options)
