"""The stages of one ``solve_cpsat`` call (helpers of :mod:`opsched.solver.cpsat.solve`).

A :class:`Run` holds what the analyses before the model found (the cap's forced orders, a
makespan bound proven outside the model, the one-unit order, the least peak) and builds and
solves the model of each stage: one per criterion, in the objective's order. Before a makespan
stage under a cap that both greedy schedules break, CP-SAT runs alone for a short probe and
then the down-set search (:mod:`opsched.solver.downsets`) gives the model a proven start.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from opsched.analysis.bounds import lower_bounds
from opsched.problem import Objective, Problem
from opsched.schedule import Schedule, Status
from opsched.solver.cpsat.hint import Start, heuristic_start
from opsched.solver.cpsat.model import CpsatModel, Params
from opsched.solver.cpsat.outside import exact_start
from opsched.solver.cpsat.results import no_schedule, reporter
from opsched.solver.downsets import (
    COMPILE_S,
    compile_kernels,
    downset_budget,
    downset_candidate,
    downset_search,
    must_compile,
)
from opsched.solver.scaling import Scaling

__all__ = ["DOWNSET_SHARE", "PROBE_MAX_S", "PROBE_SHARE", "Run", "optimal_at_bound"]

#: Share of the time limit the down-set search may take (as down-set and label counts).
DOWNSET_SHARE = 0.4

#: Share of the time limit CP-SAT has alone first, where the down-set search would run,
#: and the most seconds that may be: the caps it proves there, it proves in about a second,
#: and a longer try delays the search where it is needed (RandWire's tightest caps at 60 s,
#: 6 s tries -> 2 s: 2.9-20.9 s to the proofs instead of 4.2-25.1 s; ``python
#: benchmarks/bench_zoo_memory.py --only stage --probe-max-s 6``, then without the flag).
PROBE_SHARE = 0.1
PROBE_MAX_S = 2.0


def optimal_at_bound(out: Schedule, obj: Objective, low: float) -> Schedule:
    """``out`` marked OPTIMAL where it is a FEASIBLE makespan-only result whose makespan
    meets ``low``, a lower bound of the problem itself (not of its rounded model): rounding
    kept CP-SAT from proving it, but no schedule ends sooner."""
    met = out.makespan is not None and out.makespan <= low
    if obj is not Objective.MAKESPAN or out.status is not Status.FEASIBLE or not met:
        return out
    if "note" in out.info:
        out.info["note"] = (
            "durations or sizes were rounded, but the makespan meets the problem's lower "
            "bound (critical path, work, resources), so it is optimal"
        )
    return replace(out, status=Status.OPTIMAL)


@dataclass
class Run:
    """One call's problem, settings and analyses; its methods build and solve the stages.

    ``tick`` is the integer problem the model solves (:func:`~.model.tick_problem`);
    ``orders`` the cap's forced orders; ``known_makespan`` a makespan bound in ticks proven
    outside the model (the overlap bound); ``memory_order`` the one-unit check's order;
    ``limit_ticks`` the makespan limit in ticks; ``peak_floor`` / ``peak_hint`` the least
    peak in quanta, where proven, and its schedule.
    """

    problem: Problem
    obj: Objective
    params: Params
    time_limit: float
    t0: float
    deadline: float
    makespan_limit: float | None
    progress: Callable[[str], None] | None
    scaling: Scaling
    tick: Problem
    info: dict[str, Any]
    orders: tuple[tuple[int, int], ...] = ()
    known_makespan: int | None = None
    memory_order: np.ndarray | None = None
    limit_ticks: int | None = None
    peak_floor: int = 0
    peak_hint: list[int] | None = None
    _own: Start | None = field(default=None, repr=False)

    @property
    def sum_ticks(self) -> int:
        return int(sum(self.scaling.durations))

    def none_found(self, cp_status: str, proven: bool, proof: str | None = None) -> Schedule:
        """The result where the model gave no schedule: INFEASIBLE with a proof, else a
        valid schedule of the problem itself (FEASIBLE, the model's failure noted), else
        UNKNOWN. A rounded model that is infeasible proves nothing: its sizes are rounded
        up and its cap down, so the problem may still have room, and the schedule the
        greedy finds there was dropped with it."""
        problem, info = self.problem, self.info
        out = no_schedule(problem, cp_status, proven, info, self.t0, self.makespan_limit, proof)
        if out.status is not Status.UNKNOWN:
            return out
        memory_first = self.obj in (Objective.PEAK_MEMORY, Objective.MEMORY_THEN_MAKESPAN)
        found = exact_start(problem, self.makespan_limit, memory_first)
        if found is None:
            return out
        why = info.pop("reason")
        info["note_fallback"] = f"{why}: the {found.solver} schedule of the problem is returned"
        if not (self.scaling.time_exact and self.scaling.memory_exact):
            info["note"] = "durations or sizes were rounded; optimality is not claimed"
        low = lower_bounds(problem.graph, problem.machine.units, problem.capacities).value
        by_name = {o.name: o for o in found.ops}
        ops = [by_name[n] for n in problem.graph.names]
        out = Schedule.build(
            problem, [o.start for o in ops], [o.unit for o in ops],
            solver="cpsat", status=Status.FEASIBLE, lower_bound=low,
            wall_time_s=time.perf_counter() - self.t0, info=info,
        )  # fmt: skip
        return optimal_at_bound(out, self.obj, low)

    def own_start(self) -> Start:
        """The models' own start, searched for once (probe and model): under a cap the
        greedy schedules break, its order searches take seconds at 100 ops, so they are
        stopped by the time limit (by their state counts alone when deterministic)."""
        if self._own is None:
            until = None if self.params.deterministic else self.deadline
            self._own = heuristic_start(self.tick, self.memory_order, deadline=until)
        return self._own

    def build(self, kind: str, bound: int | None, hint_starts: list[int] | None,
              horizon: int | None, floor: int) -> CpsatModel:  # fmt: skip
        """The model of one stage; ``bound`` caps the other criterion (makespan or peak)."""
        problem = self.problem
        peak_bounded = kind == "makespan" and bound is not None  # memory_then_makespan
        with_peak = kind == "peak" or peak_bounded
        model = CpsatModel(
            problem,
            with_memory=problem.memory_cap is not None or with_peak,
            with_peak=with_peak,
            scaling=self.scaling,
            horizon=horizon,
            hint_starts=hint_starts,
            params=self.params,
            tick=self.tick,
            orders=self.orders,
            memory_order=self.memory_order,
            peak_floor=self.peak_floor if with_peak else 0,
            makespan_floor=floor,
            start=self.own_start() if hint_starts is None else None,
        )
        if kind == "makespan":
            if peak_bounded and bound is not None:
                model.objective.peak_at_most(bound)
            model.objective.minimise_makespan()
        else:
            if bound is not None:
                model.objective.makespan_at_most(bound)
            if self.limit_ticks is not None:
                model.objective.makespan_at_most(self.limit_ticks)
            model.objective.minimise_peak()
        return model

    def solve(self, model: CpsatModel, kind: str, until: float) -> Any:
        """Solve ``model`` until the clock reads ``until``; CP-SAT's status."""
        progress = self.progress
        report = None if progress is None else reporter(kind, self.scaling, self.problem, progress)
        # the overlap bound holds under this stage's cap too (never above the problem's)
        known = self.known_makespan if kind == "makespan" else None
        status = model.solve(self.params, until, report, known_bound=known)
        if status == cp_model.MODEL_INVALID:
            raise RuntimeError(f"CP-SAT rejected the model: {model.model.validate()}")
        return status

    def stage(self, kind: str, bound: int | None, hint_starts: list[int] | None,
              hint_horizon: int | None = None) -> CpsatModel:  # fmt: skip
        """Solve one stage; ``bound`` caps the other criterion (makespan or peak);
        ``hint_horizon``: the makespan of ``hint_starts``, where it is the horizon."""
        peak_bounded = kind == "makespan" and bound is not None  # memory_then_makespan
        with_peak = kind == "peak" or peak_bounded
        # else: the starting schedule's makespan (None: the model's greedy one)
        horizon = self.sum_ticks if with_peak else hint_horizon
        if kind == "peak" and bound is not None:
            horizon = bound  # makespan_then_memory: keep the optimal makespan
        if self.limit_ticks is not None:
            horizon = self.limit_ticks if horizon is None else min(horizon, self.limit_ticks)
        floor = 0
        # memory_then_makespan's cap is the least peak
        cap = bound if peak_bounded else self.tick.memory_cap
        dp = None if cap is None else self.tick.with_machine(memory_cap=cap)
        # a cap both greedy schedules break: CP-SAT alone for a while (it proves the looser
        # of these caps at once), then the down-set search, then CP-SAT again
        search = kind == "makespan" and self.params.downsets and dp is not None
        if search and dp is not None and downset_candidate(dp):
            done = self._search_first(kind, bound, hint_starts, horizon, dp)
            if isinstance(done, CpsatModel):
                return done
            hint_starts, horizon, floor = done
        model = self.build(kind, bound, hint_starts, horizon, floor)
        self.solve(model, kind, self.deadline)
        self.info["stages"].append({"minimise": kind, **model.stats()})
        return model

    def _search_first(
        self, kind: str, bound: int | None, hint_starts: list[int] | None,
        horizon: int | None, dp: Problem,
    ) -> CpsatModel | tuple[list[int] | None, int | None, int]:  # fmt: skip
        """The probe and the down-set search before a capped makespan stage: the probe's
        model where it proved the stage, else the start, horizon and makespan floor the
        stage's model gets."""
        info, progress = self.info, self.progress
        floor = 0
        share = DOWNSET_SHARE * self.time_limit
        cold = must_compile(dp.graph.num_ops)
        if cold and share < COMPILE_S:  # compiling would eat the share and more
            why = f"its kernels are not compiled yet (about {COMPILE_S:g} s, over its "
            why += f"{share:.1f} s share); opsched.solver.compile_kernels() compiles them"
            info["downsets"] = {"skipped": why}
            return hint_starts, horizon, floor
        probed: dict[str, Any] = {}
        if self.params.probe:
            probe = self.build(kind, bound, hint_starts, horizon, 0)
            probe_s = min(PROBE_MAX_S, PROBE_SHARE * self.time_limit)
            until = min(self.deadline, time.perf_counter() + probe_s)
            if self.solve(probe, kind, until) == cp_model.OPTIMAL:
                info["stages"].append({"minimise": kind, **probe.stats()})
                return probe
            probed = {"probe": probe.stats()}
            if probe.status == cp_model.FEASIBLE and probe.solver is not None:
                hint_starts = probe.tick_starts()  # a better start than the greedy one
                horizon = round(probe.solver.objective_value)
        if cold:  # once per installation
            if progress is not None:
                progress("down-set search: compiling its kernels (once per installation)")
            compiled_s = compile_kernels()
            probed["compile_s"] = round(compiled_s, 3)
            share = max(0.0, share - compiled_s)
        rows, labels = downset_budget(share)
        # the budgets are counts, the same on every run, so a loaded machine takes longer
        # over them than their share (RandWire stage4, 2 units, 10 s limit, load 7 on 2
        # cores: 14.8 s against 4, the limit overrun by 7.4 s); the clock stops it at its
        # share there, except in deterministic mode
        det = self.params.deterministic
        stop = None if det else min(self.deadline, time.perf_counter() + share)
        found = downset_search(dp, max_downsets=rows, max_labels=labels, deadline=stop)
        info["downsets"] = {**found.to_info(), **probed}
        if progress is not None:
            progress(found.describe(self.scaling.to_time))
        if found.proven and found.makespan is not None:
            hint_starts, floor = found.starts, found.makespan
            horizon = found.makespan
        return hint_starts, horizon, floor
