"""Makespan under noise: expected value, p95, the clairvoyant gap, and a robust portfolio.

:func:`expected_makespan` executes one policy on ``runs`` sampled duration vectors
(:func:`~opsched.dynamic.noise.sample_durations`, same seed -> same numbers) and returns
:class:`NoiseStats`. A policy is

* a :class:`~opsched.schedule.Schedule`: its unit orders are replayed
  (:func:`~opsched.dynamic.execute.replay`);
* a scheduler (a registry name such as ``"greedy-blevel"``, or a function
  ``Problem -> Schedule``): it schedules the *estimates* once, and that schedule is replayed
  (running it on the actual durations would be clairvoyant);
* :class:`Online` (or the string ``"online"``): online list scheduling at run time
  (:func:`~opsched.dynamic.execute.online`).

:func:`robust_portfolio` ranks candidates by expected makespan (then p95), all on the same
draws. :func:`clairvoyant_gaps` compares policies with CP-SAT's optimum for each realised
duration vector (small graphs).

Examples
--------
>>> from opsched.demo import seed_problem
>>> from opsched.dynamic.noise import Lognormal
>>> p = seed_problem(units=2)
>>> st = expected_makespan(p, "greedy-blevel", Lognormal(0.0), runs=5)
>>> st.mean, st.p95, st.estimate
(6.0, 6.0, 6.0)
>>> a = expected_makespan(p, "online", Lognormal(0.3), runs=50, seed=1)
>>> a.mean == expected_makespan(p, "online", Lognormal(0.3), runs=50, seed=1).mean
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

from opsched.dynamic.execute import (
    UnitOrders,
    online,
    online_priority,
    replay,
    with_durations,
)
from opsched.dynamic.noise import NoiseModel, sample_durations
from opsched.errors import ProblemError
from opsched.heuristics.listsched import list_arrays, units_only
from opsched.problem import Problem
from opsched.schedule import Schedule, Status
from opsched.validate.simulate import orders_suffice

__all__ = [
    "NoiseStats",
    "Online",
    "Policy",
    "clairvoyant_gaps",
    "expected_makespan",
    "robust_portfolio",
]


@dataclass(frozen=True)
class Online:
    """The online list-scheduling policy with priorities from the estimates."""

    priority: str = "b-level"


Policy = Union[Schedule, str, Callable[[Problem], Schedule], Online]  # noqa: UP007


@dataclass
class NoiseStats:
    """Makespans of one policy over sampled runs."""

    policy: str
    makespans: np.ndarray
    estimate: float | None  #: makespan with the estimated durations
    seed: int
    wall_time_s: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    # the statistics are over the runs that finished (an online run can hit a memory dead
    # end, a replay can break a capacity: its makespan is NaN, counted in info["dead_ends"]
    # or info["left_out"]; a replay over the memory cap is counted, info["over_cap"]); NaN
    # if none did
    @property
    def _done(self) -> np.ndarray:
        return self.makespans[np.isfinite(self.makespans)]

    @property
    def mean(self) -> float:
        return float(self._done.mean()) if self._done.size else float("nan")

    @property
    def std(self) -> float:
        return float(self._done.std(ddof=1)) if self._done.size > 1 else 0.0

    @property
    def p50(self) -> float:
        return float(np.percentile(self._done, 50)) if self._done.size else float("nan")

    @property
    def p95(self) -> float:
        return float(np.percentile(self._done, 95)) if self._done.size else float("nan")

    @property
    def worst(self) -> float:
        return float(self._done.max()) if self._done.size else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "runs": len(self.makespans),
            "seed": self.seed,
            "estimate": self.estimate,
            "mean": self.mean,
            "std": self.std,
            "p50": self.p50,
            "p95": self.p95,
            "max": self.worst,
            "wall_time_s": self.wall_time_s,
            **self.info,
        }

    def __repr__(self) -> str:  # one line, not every run's makespan
        return f"<NoiseStats {self.summary()}>"

    def summary(self) -> str:
        est = "-" if self.estimate is None else f"{self.estimate:g}"
        return (
            f"{self.policy}: estimate {est}, mean {self.mean:.6g} (sd {self.std:.3g}), "
            f"p95 {self.p95:.6g}, max {self.worst:.6g} over {len(self.makespans)} runs"
        )


def _prepare(problem: Problem, policy: Policy) -> tuple[str, UnitOrders | Online, float | None]:
    """Resolve ``policy`` into replayable orders or the online rule, with its name."""
    if isinstance(policy, Online):
        return f"online-{policy.priority}", policy, None
    if isinstance(policy, str) and (policy == "online" or policy.startswith("online:")):
        rule = policy.partition(":")[2] or "b-level"
        return f"online-{rule}", Online(rule), None
    if isinstance(policy, Schedule):
        sched, name = policy, policy.solver
    elif isinstance(policy, str):
        from opsched.registry import run

        sched, name = run(policy, problem), policy
    elif callable(policy):
        sched = policy(problem)
        name = getattr(policy, "__name__", sched.solver)
    else:
        raise ProblemError(f"not a schedule, scheduler or online policy: {policy!r}")
    if not sched.has_schedule:
        why = sched.info.get("reason", sched.status.value)
        raise ProblemError(f"policy {name!r} produced no schedule ({why})")
    return name, UnitOrders(problem, sched), sched.makespan


def _run_all(
    problem: Problem, prepared: UnitOrders | Online, draws: np.ndarray
) -> tuple[np.ndarray, dict[str, Any]]:
    """Makespans of the runs and what the runs did to the machine: under a memory cap
    ``peak_max`` and ``over_cap`` (replays whose peak broke the cap: a replay keeps unit
    orders, not the cap), ``broken`` (replays the validator refuses), ``left_out`` (those of
    them that break more than the cap: a capacity the orders do not sequence, as an op of two
    units run beside others; their makespan is NaN, as no machine could run them so),
    ``dead_ends`` (online runs without a schedule, NaN too)."""
    out = np.empty(len(draws))
    peaks: list[float] = []
    broken = dead = impossible = 0
    # online runs without a cap on a machine of units alone: the non-delay kernel on the
    # drawn durations, as list_schedule runs it, without a graph and a Schedule per run
    # (about 2 s a run at 100k ops)
    arrays = (
        isinstance(prepared, Online)
        and problem.memory_cap is None
        and units_only(problem)
        and not problem.infeasibility_reason()
    )
    prio = online_priority(problem, prepared.priority) if arrays else None  # type: ignore[union-attr]
    for i, d in enumerate(draws):
        if prio is not None:
            actual = np.asarray(d, dtype=np.float64)
            starts, _ = list_arrays(problem, prio, "earliest", durations=actual)
            out[i] = float((starts + actual).max()) if len(actual) else 0.0
            continue
        if isinstance(prepared, Online):
            s = online(problem, d, prepared.priority)
            if not s.has_schedule:
                out[i] = np.nan
                dead += 1
                continue
        else:
            span = prepared.replay_makespan(problem, d)
            if span is not None:  # orders that keep the schedule valid: makespan alone
                out[i] = span
                continue
            s = replay(problem, prepared, d)
            if s.info.get("valid") is False:
                broken += 1
                if set(s.info.get("broken", ())) - {"memory"}:  # times no machine can give
                    out[i] = np.nan  # (3 units busy on 2): left out of the statistics
                    impossible += 1
                    continue
        out[i] = s.makespan
        if s.peak_memory is not None:
            peaks.append(float(s.peak_memory))
    info: dict[str, Any] = {}
    if problem.memory_cap is not None:
        cap = problem.memory_cap
        info |= {"memory_cap": cap, "peak_max": max(peaks) if peaks else None,
                 "over_cap": int(sum(p > cap for p in peaks))}  # fmt: skip
    if not orders_suffice(problem):
        info["broken"] = broken
        info["left_out"] = impossible
    if isinstance(prepared, Online):
        info["dead_ends"] = dead
    return out, info


def expected_makespan(
    problem: Problem,
    scheduler_or_schedule: Policy,
    noise: NoiseModel,
    runs: int = 100,
    seed: int = 0,
    *,
    decimals: int | None = None,
) -> NoiseStats:
    """Makespan statistics of a policy under ``noise`` (see the module docstring).

    Parameters
    ----------
    problem
        Graph with the estimated durations, and the machine.
    scheduler_or_schedule
        A schedule, a registry name, a function ``Problem -> Schedule``, ``"online"``,
        ``"online:<rule>"`` or :class:`Online`.
    noise
        A noise model of :mod:`opsched.dynamic.noise`.
    runs, seed
        Number of sampled executions; the seed of the draws.
    decimals
        Round the sampled durations (see :func:`~opsched.dynamic.noise.sample_durations`).
    """
    t0 = time.perf_counter()
    name, prepared, estimate = _prepare(problem, scheduler_or_schedule)
    if estimate is None:  # online: its makespan on the estimates
        estimate = online(problem, problem.graph.durations, prepared.priority).makespan  # type: ignore[union-attr]
    draws = sample_durations(problem.graph, noise, runs, seed, decimals)
    spans, info = _run_all(problem, prepared, draws)
    return NoiseStats(name, spans, estimate, seed, time.perf_counter() - t0, info)


def robust_portfolio(
    problem: Problem,
    candidates: Sequence[Policy] | Mapping[str, Policy],
    noise: NoiseModel,
    runs: int = 100,
    seed: int = 0,
) -> list[NoiseStats]:
    """Candidates ranked by expected makespan under ``noise``, then p95 (best first); a
    candidate with runs left out of its statistics (dead ends, replays past a capacity)
    ranks below those with fewer.

    Every candidate runs on the same sampled durations.

    Examples
    --------
    >>> from opsched.demo import seed_problem
    >>> from opsched.dynamic.noise import Lognormal
    >>> ranked = robust_portfolio(seed_problem(units=2), ["greedy", "serial", "online"],
    ...                           Lognormal(0.2), runs=20)
    >>> ranked[-1].policy
    'serial'
    """
    items = (
        candidates.items() if isinstance(candidates, Mapping) else [(None, c) for c in candidates]
    )
    out = []
    for label, pol in items:
        st = expected_makespan(problem, pol, noise, runs, seed)
        if label is not None:
            st.policy = label
        out.append(st)
    return sorted(out, key=_rank)


def _rank(s: NoiseStats) -> tuple[int, float, float]:
    """Fewest runs left out (dead ends, replays past a capacity) first, then mean, p95."""
    left_out = int(np.count_nonzero(~np.isfinite(s.makespans)))
    return left_out, _or_inf(s.mean), _or_inf(s.p95)


def _or_inf(x: float) -> float:
    return x if math.isfinite(x) else math.inf


def clairvoyant_gaps(
    problem: Problem,
    policies: Sequence[Policy],
    noise: NoiseModel,
    runs: int = 10,
    seed: int = 0,
    *,
    time_limit: float = 5.0,
    decimals: int = 3,
) -> dict[str, Any]:
    """Each policy's makespan against CP-SAT's optimum on the same realised durations.

    Durations are rounded to ``decimals`` so that the integer scaling is exact and CP-SAT's
    OPTIMAL is a proof. The gap of a run is ``(makespan - optimum) / optimum``; where CP-SAT
    did not prove optimality in ``time_limit``, its best schedule stands in for the optimum
    (the gap is then a lower estimate) and ``proven`` counts the proven runs.

    Returns
    -------
    dict
        ``optimum`` (per run), ``proven``, and per policy its makespans, mean and max gap
        and ``left_out``: its runs without a makespan (online dead ends, replays past a
        capacity), which the gaps leave out (NaN where none is left).
    """
    from opsched.solver import solve_cpsat

    draws = sample_durations(problem.graph, noise, runs, seed, decimals)
    prepared = [_prepare(problem, p) for p in policies]
    names = [name for name, _, _ in prepared]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:  # results are keyed by policy name: one would overwrite the other
        raise ProblemError(
            f"two policies are both named {clash[0]!r} (schedules of the same solver): "
            "set their solver names apart (schedule.solver = ...)"
        )
    opt = np.empty(runs)
    proven = 0
    for i, d in enumerate(draws):
        r = solve_cpsat(with_durations(problem, d), time_limit=time_limit)
        opt[i] = r.makespan if r.makespan is not None else np.nan
        proven += r.status == Status.OPTIMAL
    out: dict[str, Any] = {
        "runs": runs,
        "seed": seed,
        "optimum": opt.tolist(),
        "proven": proven,
        "policies": {},
    }
    for name, prep, _ in prepared:
        spans, ran = _run_all(problem, prep, draws)
        gaps = (spans - opt) / np.where(opt > 0, opt, 1.0)
        done = np.isfinite(gaps)
        ran_ok = np.isfinite(spans)  # its own mean needs its makespans, not CP-SAT's optima
        out["policies"][name] = {
            "makespans": spans.tolist(),
            "mean_gap": float(gaps[done].mean()) if done.any() else float("nan"),
            "max_gap": float(gaps[done].max()) if done.any() else float("nan"),
            "mean": float(spans[ran_ok].mean()) if ran_ok.any() else float("nan"),
            # runs without a makespan (dead ends, replays past a capacity): not in the gaps
            "left_out": int(ran.get("left_out", 0)) + int(ran.get("dead_ends", 0)),
        }
    return out
