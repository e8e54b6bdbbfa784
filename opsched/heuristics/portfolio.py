"""``portfolio``: run several heuristics, keep the best — cuDNN's benchmark mode for schedules.

cuDNN's ``benchmark=True`` times every candidate algorithm once and keeps the fastest; the
portfolio does the same with schedules. Each candidate is a list schedule (priority rule x
placement, :mod:`opsched.heuristics.listsched`; ten seeded perturbations of the b-level
among them) improved by forward-backward justification
(:mod:`opsched.heuristics.improve`); under a memory cap, memory-feasible placements join
in, with the memory-aware k-unit schedule of :mod:`opsched.heuristics.memory_list`. The winner
has the smallest makespan, then the smallest peak memory, then the earliest place in the
candidate list.

With ``noise`` (a relative spread, e.g. ``0.1``) candidates are ranked by their *expected*
makespan when actual durations vary: each schedule's per-unit orders are replayed
(:func:`opsched.validate.simulate.execute_orders`) with durations drawn from a lognormal of
median 1 and ``sigma = noise`` around the estimates, ``runs`` times with a fixed ``seed``.
Where unit orders do not keep a schedule valid (an op of several units, other resources), a
replay that breaks a capacity besides memory is left out of the mean: no machine runs it so.
Candidates with fewer such replays rank first (``info["left_out"]``: candidate -> count).

Examples
--------
>>> from opsched.demo import seed_problem
>>> s = portfolio(seed_problem(units=2))
>>> s.solver, s.makespan, s.info["winner"]
('portfolio', 6.0, 'list')
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from opsched.analysis.bounds import lower_bounds
from opsched.analysis.ranks import PRIORITY_RULES, priority
from opsched.errors import ProblemError
from opsched.heuristics.greedy import greedy
from opsched.heuristics.improve import justify, justify_arrays
from opsched.heuristics.listsched import list_arrays, list_schedule, list_solver_name, units_only
from opsched.liveness import peak_memory
from opsched.problem import Problem, check_seed, check_spread, require_problem
from opsched.schedule import Schedule, Status
from opsched.solver.defaults import check_seconds

__all__ = ["DEFAULT_CANDIDATES", "Candidate", "portfolio"]


@dataclass(frozen=True)
class Candidate:
    """One portfolio member: ``priority`` x ``placement``, optionally justified."""

    priority: str
    placement: str = "earliest"
    justify: bool = True
    seed: int | None = None  # for the seeded rules; None: the portfolio's seed

    def run(self, problem: Problem, seed: int = 0, deadline: float | None = None) -> Schedule:
        """The candidate's schedule; ``deadline`` (a :func:`time.perf_counter` time) bounds
        the one slow member, the min-memory order search."""
        seed = seed if self.seed is None else self.seed
        if self.priority == "fifo":
            s = greedy(problem, "fifo")
        elif self.priority == "min-memory":
            from opsched.heuristics.memory_list import memory_list

            s = memory_list(problem, deadline=deadline)
        else:
            s = list_schedule(problem, self.priority, self.placement, seed=seed)
            if self.seed is not None:
                s.solver = f"{s.solver}-{self.seed}"
        return justify(problem, s) if self.justify else s


@dataclass
class _Found:
    """A candidate's schedule as arrays (the fast path): built into a Schedule only if it
    wins; its peak memory is computed only where makespans tie."""

    label: str
    starts: np.ndarray
    units: np.ndarray
    makespan: float
    info: dict[str, object]
    _peak: int | None = None

    def peak(self, problem: Problem) -> int:
        if self._peak is None:
            self._peak = peak_memory(problem.graph, self.starts, self.makespan)
        return self._peak

    def build(self, problem: Problem) -> Schedule:
        g = problem.graph
        low = lower_bounds(g, problem.machine.units, problem.capacities).value
        return Schedule.build(problem, self.starts, self.units, solver=self.label,
                              status=Status.FEASIBLE, lower_bound=low, info=self.info)  # fmt: skip


def _beats(problem: Problem, new: _Found, best: _Found) -> bool:
    """``new`` ends sooner than ``best``, or as soon with a lower peak (ties keep ``best``,
    the earlier candidate)."""
    if new.makespan != best.makespan:
        return new.makespan < best.makespan
    return new.peak(problem) < best.peak(problem)


def _on_arrays(problem: Problem) -> bool:
    """Whether the list candidates may run on arrays: ops demand units only, the units are
    counted, and no memory cap (where a schedule's peak decides whether it counts)."""
    return problem.memory_cap is None and problem.machine.units is not None and units_only(problem)


def _run_on_arrays(problem: Problem, cand: Candidate, seed: int) -> _Found | None:
    """``cand``'s schedule as :meth:`Candidate.run` gives it, on arrays, or None where the
    candidate is not a plain list schedule (fifo, min-memory, another kind of member)."""
    if type(cand) is not Candidate or cand.priority not in PRIORITY_RULES:
        return None
    if cand.placement not in ("earliest", "insertion"):
        return None
    g = problem.graph
    prio = priority(g, cand.priority, seed=seed if cand.seed is None else cand.seed)
    starts, units = list_arrays(problem, prio, cand.placement)
    label = list_solver_name(cand.priority, cand.placement)
    if cand.seed is not None:
        label = f"{label}-{cand.seed}"
    info: dict[str, object] = {"priority": cand.priority, "placement": cand.placement}
    span = float((starts + g.durations).max()) if g.num_ops else 0.0
    if cand.justify and g.num_ops:  # as justify(): kept only where it ends sooner
        new, new_units, rounds = justify_arrays(problem, starts)
        new_span = float((new + g.durations).max())
        if new_span < span - 1e-9:
            starts, units, span, label = new, new_units, new_span, f"{label}+fbi"
            info["fbi_rounds"] = rounds
    return _Found(label, starts, units, span, info)


#: Tried in this order (ties keep the earlier one).
DEFAULT_CANDIDATES: tuple[Candidate, ...] = tuple(
    [Candidate(p, pl) for p in ("b-level", "cpop", "t-level", "successors", "lpt")
     for pl in ("earliest", "insertion")]
    + [Candidate("random", "earliest"), Candidate("fifo", "earliest")]
    + [Candidate("perturbed", pl, seed=i) for i in range(10) for pl in ("earliest", "insertion")]
)  # fmt: skip

_MEMORY_CANDIDATES: tuple[Candidate, ...] = (
    Candidate("b-level", "memory"),
    Candidate("t-level", "memory"),
    Candidate("successors", "memory"),
    Candidate("fifo", "memory"),
    Candidate("min-memory", "memory"),
)


def _expected_makespan(
    problem: Problem, schedule: Schedule, noise: float, runs: int, seed: int
) -> tuple[float, int]:
    """Mean makespan of the replays that some machine could run, and how many could not.

    A replay keeps each unit's order and the dependencies (an op of several units also
    waits for the ops that had ended by its start: :meth:`UnitOrders.run
    <opsched.validate.simulate.UnitOrders.run>`, the replay of :mod:`opsched.dynamic`).
    Where that does not keep the schedule valid
    (:func:`~opsched.validate.simulate.orders_suffice`: an op of several units, resources
    besides ``units``, a memory cap), each replay is checked: one that breaks a capacity
    other than memory (a run stretched so that more units are busy than exist) has a
    makespan no machine gives, so it is left out and counted; one only over the memory cap
    counts, as in :func:`opsched.dynamic.robust.expected_makespan`."""
    from dataclasses import replace

    from opsched.validate.simulate import UnitOrders, execute_orders, orders_suffice

    g = problem.graph
    # ops that hold no unit (none named, or no time) run on pseudo-units of their own, past
    # the machine's count: the orders sequence the real units themselves
    orders = UnitOrders(problem, schedule)
    free = problem.with_machine(units=None)
    check = not orders_suffice(problem)
    rng = np.random.default_rng(seed)
    spans: list[float] = []
    left_out = 0
    for _ in range(runs):
        actual = g.durations * rng.lognormal(0.0, noise, g.num_ops)
        if not check:  # unit orders keep the schedule valid: the plain replay is enough
            span = orders.replay_makespan(problem, actual)
            if span is None:
                span = float(execute_orders(free, orders.orders, actual, check=False).makespan or 0)
            spans.append(span)
            continue
        # the replay of opsched.dynamic, checked
        ops = [replace(op, duration=float(x)) for op, x in zip(g.ops, actual, strict=True)]
        run = orders.run(Problem(g.replace_ops(ops), problem.machine, problem.objective))
        if set(run.info.get("broken", ())) - {"memory"}:
            left_out += 1
            continue
        spans.append(float(run.makespan or 0.0))
    return (float(np.mean(spans)) if spans else float("inf")), left_out


def portfolio(
    problem: Problem,
    candidates: Sequence[Candidate] | None = None,
    *,
    noise: float | None = None,
    runs: int = 20,
    seed: int = 0,
    time_limit: float | None = None,
) -> Schedule:
    """Run every candidate and return the best schedule (see the module docstring).

    ``info`` holds ``winner`` and ``candidates`` (name -> makespan, or expected makespan with
    ``noise``). If no candidate finds a schedule (a dead end under a tight memory cap), the
    result is UNKNOWN with each candidate's reason; if the problem's own checks
    (:meth:`~opsched.problem.Problem.infeasibility_reason`) prove that none exists, it is
    UNKNOWN with that reason at once.

    ``time_limit`` (seconds; ``None``: none): no candidate starts after it once one has
    found a schedule (until then they run on, without a limit), and the min-memory order
    search stops at it; ``info["time_limit"]`` then says how many candidates ran.
    """
    require_problem(problem, "portfolio")
    seed = check_seed(seed)
    if noise is not None:
        noise = check_spread(noise)
    if isinstance(runs, bool) or not isinstance(runs, numbers.Integral) or runs < 1:
        raise ProblemError(f"runs must be an integer >= 1, got {runs!r}")
    if time_limit is not None:
        time_limit = check_seconds(time_limit)
    t0 = time.perf_counter()
    none = Schedule.if_impossible(problem, solver="portfolio", t0=t0)
    if none is not None:
        return none
    deadline = None if time_limit is None else t0 + time_limit
    if candidates is None:
        candidates = DEFAULT_CANDIDATES
        if problem.memory_cap is not None:
            candidates = (*candidates, *_MEMORY_CANDIDATES)
    # members are duck-typed (anything with run(problem, seed=, deadline=)): a string or a
    # single Candidate is the slip to catch, not a list of list_schedule's rule names
    if isinstance(candidates, str | Candidate) or not all(
        callable(getattr(c, "run", None)) for c in candidates
    ):
        raise TypeError(
            "portfolio: candidates must be a sequence of Candidate "
            "(e.g. [Candidate('b-level', 'insertion')])"
        )
    scores: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    left_out: dict[str, int] = {}
    best: tuple[tuple[int, float, float, int], Schedule] | None = None
    # no noise and no cap: list candidates stay arrays, ranked by makespan, then peak only
    # where makespans tie (a Schedule per candidate was a third of the time at 100k ops)
    fast = not noise and _on_arrays(problem)
    best_fast: tuple[float, int, _Found] | None = None
    stopped = None
    for i, cand in enumerate(candidates):
        late = deadline is not None and time.perf_counter() >= deadline
        if late and (best is not None or best_fast is not None):
            stopped = f"reached after {i} of {len(candidates)} candidates"
            break
        found = _run_on_arrays(problem, cand, seed) if fast else None
        if found is not None:
            scores[found.label] = found.makespan
            if best_fast is None or _beats(problem, found, best_fast[2]):
                best_fast = (found.makespan, i, found)
            continue
        s = cand.run(problem, seed=seed, deadline=None if late else deadline)
        label = s.solver
        if s.status not in (Status.FEASIBLE, Status.OPTIMAL) or s.makespan is None:
            scores[label] = None
            reasons[label] = str(s.info.get("reason", s.status.value))
            continue
        score, broken = s.makespan, 0
        if noise:
            score, broken = _expected_makespan(problem, s, noise, runs, seed)
            if broken:
                left_out[label] = broken
        scores[label] = score if np.isfinite(score) else None  # every replay left out
        key = (broken, score, float(s.peak_memory or 0), i)
        if best is None or key < best[0]:
            best = (key, s)
    if best_fast is not None:
        span, i, found = best_fast
        if best is None or (0, span, float(found.peak(problem)), i) < best[0]:
            best = ((0, span, float(found.peak(problem)), i), found.build(problem))
    elapsed = time.perf_counter() - t0
    info: dict[str, object] = {"candidates": scores}
    if noise:
        info.update(noise=noise, runs=runs, seed=seed, left_out=left_out)
    if stopped is not None:
        info["time_limit"] = stopped
    if best is None:
        info["reasons"] = reasons
        info["reason"] = "no candidate found a schedule: " + "; ".join(
            f"{k}: {v}" for k, v in list(reasons.items())[:3]
        )
        return Schedule.empty(
            problem, solver="portfolio", status=Status.UNKNOWN, info=info, wall_time_s=elapsed
        )
    win = best[1]
    info["winner"] = win.solver
    if noise:
        info["expected_makespan"] = best[0][1] if np.isfinite(best[0][1]) else None
    return Schedule(
        graph=win.graph, solver="portfolio", status=win.status, ops=win.ops,
        machine=win.machine, makespan=win.makespan, peak_memory=win.peak_memory,
        lower_bound=win.lower_bound, wall_time_s=elapsed, info={**win.info, **info},
    )  # fmt: skip
