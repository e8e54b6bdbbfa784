"""One CP-SAT model of a :class:`~opsched.problem.Problem`, and its solution.

:class:`CpsatModel` builds variables, constraints and an objective (the three roles live in
their own modules), solves with the given parameters and turns the solution back into real
times. Compute-unit indices are not modelled: identical units are interchangeable, so a
cumulative over ``units`` is exact and has no symmetric solutions; after solving, ops are
given units by sweeping them in start order and taking the lowest free unit (interval
colouring, which needs exactly as many units as the most ops running at once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from opsched.heuristics._resources import assign_units
from opsched.ir.graph import OpGraph
from opsched.problem import Machine, Problem
from opsched.solver.cpsat.constraints import Constraints
from opsched.solver.cpsat.hint import HINT_ORDER_SEARCHES, Start, heuristic_start
from opsched.solver.cpsat.objective import Objective
from opsched.solver.cpsat.variables import Variables
from opsched.solver.defaults import DEFAULT_SUBSOLVERS, DEFAULT_WORKERS
from opsched.solver.interrupt import run_solver
from opsched.solver.scaling import Scaling, choose_scaling

__all__ = ["HINT_ORDER_SEARCHES", "CpsatModel", "Params", "assign_units", "tick_problem"]


@dataclass(frozen=True)
class Params:
    """Solver parameters.

    ``time_limit`` in seconds (wall clock, model building included); ``num_workers`` CP-SAT
    search threads; ``deterministic`` makes repeated runs return the same result (interleaved
    search, fixed seed); ``log`` prints CP-SAT's search log; ``hint`` seeds the search with
    the best heuristic schedule (:mod:`opsched.solver.cpsat.hint`); ``strong_cumulative``
    turns on CP-SAT's overload checker, timetable edge finding and precedence reasoning in
    cumulative constraints. ``edge_finding``: the timetable edge finding among them; None
    (the default) keeps it on unless the model holds a cumulative of a named resource
    (PSPLIB's R1-R4), where it doubled the hardest J30 proofs (docs/cpsat-model.md).
    ``domains`` (heads, tails
    and lower bounds in the variable domains), ``lifetimes`` (each tensor interval at least
    its output's least lifetime, ``opsched.analysis.min_lifetimes``), ``ramp`` (the ramp
    bounds of :mod:`opsched.analysis.ramp` in the makespan's domain), ``nested`` (their heads
    and tails raised by the ramp bound of each op's ancestors and descendants,
    :func:`opsched.analysis.ramp.nested_heads`, and those tails in the start domains),
    ``tails`` (redundant tail constraints) and ``greedy_horizon`` (the starting schedule's
    makespan as horizon) exist to measure what each idea is worth
    (``benchmarks/bench_ablation.py``); leave them on. ``subsolvers`` names CP-SAT's
    worker strategies (default :data:`~opsched.solver.defaults.DEFAULT_SUBSOLVERS`; empty:
    CP-SAT's choice). ``full_search`` (default on): every worker runs a full search (CP-SAT's
    ``num_full_subsolvers``), none a large-neighbourhood search, which improves schedules but
    proves nothing.
    ``memory_model``: ``"cumulative"`` (tensor lifetimes as variable-size intervals) or
    ``"reservoir"`` (allocation and free events), under a memory cap.
    ``linearization_level``: CP-SAT's LP relaxation (2 adds cumulative cuts); None: CP-SAT's
    default (measured on hard J30 instances: ``benchmarks/bench_j30_hard.py``).
    ``cap_orders``: under a memory cap, add the precedences the cap forces
    (:func:`opsched.analysis.cap_orders.cap_orders`) and refute a cap two ops cannot share.
    ``serial_check``: under a memory cap the greedy schedules break, decide the cap on one
    unit first (:func:`opsched.solver.serial.serial_cap_check`): refute it before any search
    when no one-unit order fits, else start from the order that does.
    ``downsets``: under such a cap, with a makespan to minimise on at most
    :data:`~opsched.solver.downsets.MAX_UNITS` units, first try the exact down-set search
    (:func:`opsched.solver.downsets.downset_search`); when it finishes, its optimum is the
    makespan's floor and its schedule the hint, and CP-SAT proves it at once. ``probe``:
    before that search, CP-SAT alone for :data:`~opsched.solver.cpsat.stages.PROBE_SHARE` of
    the time limit, at most :data:`~opsched.solver.cpsat.stages.PROBE_MAX_S` seconds (it
    proves the looser of these caps at once; off: the search first).
    ``split``: a makespan under a memory cap is solved phase by phase where cut ops (ops
    every other op precedes or follows, :func:`opsched.solver.split.cut_ops`) split the
    graph into independent phases.
    ``overlap``: under a memory cap on two units, the bound of
    :func:`opsched.analysis.overlap.pair_overlap_bound` (the work less the most time the cap
    lets two ops run at once) is the makespan's known bound: the search stops at a schedule
    that meets it, and the result's bound is never below it. The model itself is unchanged
    (as the floor of the makespan's domain it changed CP-SAT's search, docs/cpsat-model.md).
    ``cases``: that bound split on the tensors whose lifetimes the cap keeps apart, with
    each op's overlap capacity (:mod:`opsched.analysis.tensor_cases`), its cuts and programs
    each budgeted to about the same share of the time limit, where ``cap_orders`` is on too
    (each case builds on the cap's orders); when every case is empty, no schedule fits and
    the result is INFEASIBLE with that proof.
    ``lists``: the start goes on from the greedy schedules through the portfolio's list
    schedules (:func:`opsched.solver.cpsat.hint.heuristic_start`), without a memory cap or
    named resources (off: the greedy start alone, to compare).
    """

    time_limit: float = 10.0
    num_workers: int = DEFAULT_WORKERS
    deterministic: bool = False
    log: bool = False
    hint: bool = True
    seed: int = 0
    strong_cumulative: bool = True
    edge_finding: bool | None = None
    domains: bool = True
    lifetimes: bool = True
    ramp: bool = True
    nested: bool = True
    tails: bool = True
    greedy_horizon: bool = True
    subsolvers: tuple[str, ...] = DEFAULT_SUBSOLVERS
    full_search: bool = True
    memory_model: str = "cumulative"
    linearization_level: int | None = None
    cap_orders: bool = True
    serial_check: bool = True
    downsets: bool = True
    probe: bool = True
    split: bool = True
    overlap: bool = True
    cases: bool = True
    lists: bool = True


def tick_problem(problem: Problem, scaling: Scaling) -> Problem:
    """The problem in integers: durations in ticks, sizes and cap in quanta, no persistent."""
    g = problem.graph
    ops = [
        replace(op, duration=d, output_bytes=o, workspace_bytes=w)
        for op, d, o, w in zip(
            g.ops, scaling.durations, scaling.sizes_out, scaling.sizes_ws, strict=True
        )
    ]
    tg = OpGraph(tuple(ops), name=g.name, resources=g.resources)
    m = problem.machine
    cap = None if scaling.cap is None else max(scaling.cap, 0)
    return Problem(tg, Machine(m.units, m.resources, cap), problem.objective)


class CpsatModel:
    """Build, solve and read back one CP-SAT model.

    Parameters
    ----------
    problem
        The problem (real units).
    with_memory, with_peak
        Model tensor lifetimes (needed under a memory cap), and a ``peak`` variable.
    memory_order
        A one-unit order within the memory cap, for the hint when the greedy schedules break
        the cap (instead of searching for one).
    peak_floor
        A proven least peak in quanta (the ``peak`` variable starts there).
    makespan_floor
        A proven least makespan in ticks (the ``makespan`` variable starts there).
    start
        Without ``hint_starts``: the starting schedule already found for ``tick``
        (:func:`~opsched.solver.cpsat.hint.heuristic_start`), used instead of searching
        again; its starts are the hint, its makespan the horizon.
    deadline
        Where the model searches for its own start: when that search stops (None: its
        state counts alone).
    """

    def __init__(
        self,
        problem: Problem,
        *,
        with_memory: bool,
        with_peak: bool,
        scaling: Scaling | None = None,
        horizon: int | None = None,
        hint_starts: list[int] | None = None,
        params: Params | None = None,
        tick: Problem | None = None,
        orders: Sequence[tuple[int, int]] = (),
        memory_order: np.ndarray | None = None,
        peak_floor: int = 0,
        makespan_floor: int = 0,
        start: Start | None = None,
        deadline: float | None = None,
    ) -> None:
        params = params or Params()
        self.memory_order = memory_order
        self.problem = problem
        self.scaling = scaling or choose_scaling(problem.graph, problem.memory_cap)
        self.tick = tick if tick is not None else tick_problem(problem, self.scaling)
        self.model = cp_model.CpModel()
        if hint_starts is None:  # the greedy schedule: a hint, and the horizon if none given
            if start is None:
                start = heuristic_start(self.tick, self.memory_order, deadline=deadline)
            greedy_ms, hint_starts = start.makespan, start.starts
            if horizon is None:
                horizon = greedy_ms if params.greedy_horizon else int(sum(self.scaling.durations))
        elif horizon is None:
            horizon = int(sum(self.scaling.durations))
        self.hint_starts = hint_starts
        self.vars = Variables(
            self.model,
            self.tick,
            self.scaling,
            horizon,
            with_memory or with_peak,
            with_peak,
            self.tick.graph,
            domains=params.domains,
            lifetimes=params.lifetimes,
            ramp=params.ramp,
            nested=params.nested,
            tails=params.tails,
            memory_model=params.memory_model,
            orders=tuple(orders),
            peak_floor=peak_floor,
            makespan_floor=makespan_floor,
        )
        self.vars.build()
        constraints = Constraints(self.vars)
        constraints.add_constraints()
        #: cumulatives of named resources in the model (``Params.edge_finding``)
        self.resource_cumulatives = constraints.resource_cumulatives
        self.edge_finding: bool | None = None  #: as the last solve set it
        self.objective = Objective(self.vars)
        self.solver: cp_model.CpSolver | None = None
        self.status: Any = None
        self.known_bound: int | None = None
        self.met_known_bound = False

    def heuristic_upper_bound(self) -> tuple[int, list[int] | None]:
        """Best greedy makespan in ticks (horizon) and its starts (hint), if one is found
        (:func:`~opsched.solver.cpsat.hint.heuristic_start` without the list schedules: a
        solve passes its own start, found once)."""
        start = heuristic_start(self.tick, self.memory_order)
        return start.makespan, start.starts

    def solve(
        self,
        params: Params,
        deadline: float,
        on_solution: Callable[[float, float], None] | None = None,
        known_bound: int | None = None,
    ) -> Any:
        """Solve until ``deadline`` (a ``time.perf_counter()`` value); return CP-SAT's status.

        ``on_solution``, if given, is called with the objective and the best bound (in the
        model's integers) at each improving solution. ``known_bound``: a lower bound on the
        objective proven outside the model (the overlap bound, :mod:`opsched.analysis.overlap`).
        It is not put into the model; the search stops at the first solution that meets it,
        which is then optimal (status OPTIMAL, ``stats()["met_known_bound"]``), and
        ``stats()["objective_bound"]`` is never below it."""
        self.known_bound = known_bound
        if params.hint and self.hint_starts is not None:
            self.model.clear_hints()
            for var, val in zip(self.vars.start, self.hint_starts, strict=True):
                self.model.add_hint(var, val)
        solver = cp_model.CpSolver()
        p = solver.parameters
        p.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
        p.num_workers = params.num_workers
        p.random_seed = params.seed
        if params.deterministic:
            p.interleave_search = True
        for name in params.subsolvers:
            p.subsolvers.append(name)
        if params.full_search:
            p.num_full_subsolvers = params.num_workers
        if params.linearization_level is not None:
            p.linearization_level = params.linearization_level
        if params.strong_cumulative:
            # measured on STG 50 (benchmarks/bench_cpsat.py): these close instances where
            # the default propagation leaves the bound at work/k for the whole time limit.
            # Edge finding off by default where named resources have cumulatives (J30)
            edge = params.edge_finding
            self.edge_finding = self.resource_cumulatives == 0 if edge is None else edge
            p.use_overload_checker_in_cumulative = True
            p.use_timetable_edge_finding_in_cumulative = self.edge_finding
            p.use_hard_precedences_in_cumulative = True
        self.solver = solver
        model = self.model
        if known_bound is not None and self._hint_meets(known_bound, params):
            # The hint is already optimal: nothing to search. Stopping the search at the
            # hint's own solution crashes CP-SAT 9.15 with interleave_search (deterministic
            # mode: an abort in its postsolve that kills the process), so the hint is
            # checked in a copy of the model with every start fixed to it instead.
            model = self.model.clone()
            for var, val in zip(self.vars.start, self.hint_starts or [], strict=True):
                model.add(var == val)
            known_bound = None  # nothing to stop
        callback = None
        if on_solution is not None or known_bound is not None:
            callback = Improvements(on_solution, known_bound)
        self.status = run_solver(solver, model, callback, log=params.log)
        if model is not self.model and self.status != cp_model.OPTIMAL:
            # the hint breaks the model after all (or the time ran out): the search
            # proper, from no hint, stopped where it meets the bound
            model = self.model
            model.clear_hints()
            known_bound = self.known_bound
            callback = Improvements(on_solution, known_bound)
            solver.parameters.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
            self.status = run_solver(solver, model, callback, log=params.log)
        # the hint checked (OPTIMAL in the copy) or a search stopped at the bound
        met = model is not self.model or self.status == cp_model.FEASIBLE
        self.met_known_bound = (
            self.known_bound is not None
            and met
            and self.status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
            and solver.objective_value <= self.known_bound
        )
        if self.met_known_bound:
            self.status = cp_model.OPTIMAL  # a schedule at a proven bound
        return self.status

    def _hint_meets(self, known_bound: int, params: Params) -> bool:
        """Whether the hint, used, ends by ``known_bound`` (ticks): a makespan no schedule
        beats, so the hint is optimal if the model accepts it."""
        if not params.hint or self.hint_starts is None or self.vars.makespan is None:
            return False
        ends = [s + d for s, d in zip(self.hint_starts, self.scaling.durations, strict=True)]
        return max(ends, default=0) <= known_bound

    # ------------------------------------------------------------------ reading back
    def tick_starts(self) -> list[int]:
        assert self.solver is not None
        return [int(self.solver.value(s)) for s in self.vars.start]

    def units_of(self, tick_starts: list[int]) -> list[int | None]:
        """Unit indices by colouring in integer ticks (no float rounding; real intervals lie
        inside their tick intervals, so a colouring valid in ticks is valid in real time)."""
        d = self.scaling.durations
        ends = [s + dd for s, dd in zip(tick_starts, d, strict=True)]
        demand = self.problem.graph.demand_array("units").tolist()
        return assign_units([float(s) for s in tick_starts], [float(e) for e in ends], demand)

    def stats(self) -> dict[str, Any]:
        assert self.solver is not None
        s = self.solver
        bound = s.best_objective_bound
        if self.known_bound is not None and self.status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            bound = max(bound, self.known_bound)
        return {
            "cpsat_status": s.status_name(self.status),
            "met_known_bound": self.met_known_bound,
            "objective_value": s.objective_value,
            "objective_bound": bound,
            "edge_finding": bool(self.edge_finding),
            "conflicts": s.num_conflicts,
            "branches": s.num_branches,
            "solve_time_s": s.wall_time,
        }


def makespan_lines(
    progress: Callable[[str], None], to_time: Callable[[float], float]
) -> Callable[[float, float], None]:
    """The ``on_solution`` function of a makespan objective: a line for ``progress`` with
    the makespan and CP-SAT's bound, ticks turned into time by ``to_time``.

    >>> lines = []
    >>> makespan_lines(lines.append, lambda t: t / 2)(13, 11)
    >>> lines
    ['makespan 6.5 (bound 5.5)']
    """
    return lambda value, bound: progress(f"makespan {to_time(value):g} (bound {to_time(bound):g})")


class Improvements(cp_model.CpSolverSolutionCallback):
    """Hands each improving solution's objective and best bound to a function, and stops
    the search at the first one that meets ``known_bound`` (then optimal)."""

    def __init__(
        self, report: Callable[[float, float], None] | None, known_bound: int | None = None
    ) -> None:
        super().__init__()
        self._report = report
        self._known = known_bound

    def on_solution_callback(self) -> None:
        if self._report is not None:
            self._report(self.objective_value, self.best_objective_bound)
        if self._known is not None and self.objective_value <= self._known:
            self.stop_search()
