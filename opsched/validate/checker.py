"""The independent schedule validator.

:func:`validate` checks a :class:`~opsched.schedule.Schedule` against its
:class:`~opsched.problem.Problem` by the problem model's rules and nothing else: it shares no
code with any solver or heuristic, and recomputes memory with its own sweep rather than
:mod:`opsched.liveness`, so that a bug in one is caught by the other (the tests compare them).

Checked: every op scheduled exactly once; finite, non-negative starts; ``end = start +
duration``; precedence; the capacity of every resource at every moment; unit indices in range
and no two ops overlapping on one unit; the memory cap; and that the makespan and peak memory a
schedule reports equal those recomputed from its op times.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from opsched.problem import Problem
from opsched.schedule import Schedule, Status

__all__ = ["ValidationReport", "Violation", "validate"]

_SHOW = 8  # ops named in one message at most


@dataclass(frozen=True)
class Violation:
    """One broken rule: its ``kind``, a message, the ops involved and when."""

    kind: str
    message: str
    ops: tuple[str, ...] = ()
    time: float | None = None

    def __str__(self) -> str:
        at = f" at t={self.time:g}" if self.time is not None else ""
        return f"[{self.kind}]{at} {self.message}"


@dataclass
class ValidationReport:
    """The validator's verdict: ``valid`` iff there are no violations."""

    violations: list[Violation] = field(default_factory=list)
    makespan: float | None = None
    peak_memory: int | None = None

    @property
    def valid(self) -> bool:
        return not self.violations

    def __bool__(self) -> bool:
        return self.valid

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "makespan": self.makespan,
            "peak_memory": self.peak_memory,
            "violations": [
                {"kind": v.kind, "message": v.message, "ops": list(v.ops), "time": v.time}
                for v in self.violations
            ],
        }

    def summary(self) -> str:
        if self.valid:
            return f"valid: makespan {self.makespan:g}, peak memory {self.peak_memory} B"
        lines = [f"invalid: {len(self.violations)} violation(s)"]
        lines += [f"  {v}" for v in self.violations[:50]]
        if len(self.violations) > 50:
            lines.append(f"  ... and {len(self.violations) - 50} more")
        return "\n".join(lines)


def validate(problem: Problem, schedule: Schedule, tol: float = 1e-9) -> ValidationReport:
    """Check ``schedule`` against ``problem``; return every violation found.

    Parameters
    ----------
    problem
        The graph, machine (units, resources, memory cap) and objective.
    schedule
        The schedule to check (from any solver, heuristic or file).
    tol
        Relative tolerance for comparing times, scaled by the largest time in the schedule.
        Integer schedules are compared exactly.

    Examples
    --------
    Two ops on one unit that overlap:

    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine, Problem
    >>> g = OpGraph((Op("a", 2), Op("b", 2)))
    >>> p = Problem(g, Machine(units=1))
    >>> bad = Schedule.build(p, {"a": 0, "b": 1}, {"a": 0, "b": 0}, solver="hand")
    >>> sorted(validate(p, bad).kinds())
    ['capacity', 'unit_overlap']
    >>> validate(p, Schedule.build(p, {"a": 0, "b": 2}, solver="hand")).valid
    True
    """
    g = problem.graph
    report = ValidationReport()
    out = report.violations

    if schedule.status in (Status.INFEASIBLE, Status.UNKNOWN) and not schedule.ops:
        return report  # no schedule to check
    if schedule.graph != g.name:
        out.append(Violation("graph", f"schedule is for graph {schedule.graph!r}, not {g.name!r}"))

    # ---- one entry per op -------------------------------------------------------------
    by_name: dict[str, Any] = {}
    for o in schedule.ops:
        if o.name not in g:
            out.append(Violation("unknown_op", f"op {o.name!r} is not in the graph", (o.name,)))
        elif o.name in by_name:
            out.append(Violation("duplicate_op", f"op {o.name!r} is scheduled twice", (o.name,)))
        else:
            by_name[o.name] = o
    missing = [op.name for op in g.ops if op.name not in by_name]
    if missing:
        out.append(
            Violation(
                "missing_op",
                f"{len(missing)} op(s) not scheduled: {_names(missing)}",
                tuple(missing[:_SHOW]),
            )
        )

    horizon = max(
        [abs(o.end) for o in by_name.values()] + [abs(o.start) for o in by_name.values()] + [1.0]
    )
    eps = tol * horizon

    # ---- times --------------------------------------------------------------------------
    times: dict[str, tuple[float, float]] = {}
    for op in g.ops:
        entry = by_name.get(op.name)
        if entry is None:
            continue
        o = entry
        if not (math.isfinite(o.start) and math.isfinite(o.end)):
            out.append(Violation("time", f"op {op.name!r} has a non-finite time", (op.name,)))
            continue
        if o.start < -eps:
            out.append(
                Violation(
                    "time", f"op {op.name!r} starts before 0 ({o.start:g})", (op.name,), o.start
                )
            )
        if abs((o.end - o.start) - op.duration) > eps:
            out.append(
                Violation(
                    "duration",
                    f"op {op.name!r} runs {o.end - o.start:g} but its duration is {op.duration:g}",
                    (op.name,),
                    o.start,
                )
            )
        times[op.name] = (o.start, o.start + op.duration)

    # ---- precedence -----------------------------------------------------------------
    for op in g.ops:
        if op.name not in times:
            continue
        s = times[op.name][0]
        for d in op.deps:
            if d in times and s < times[d][1] - eps:
                out.append(
                    Violation(
                        "precedence",
                        f"op {op.name!r} starts at {s:g} before its dependency {d!r} ends at "
                        f"{times[d][1]:g}",
                        (d, op.name),
                        s,
                    )
                )

    # ---- resources: sweep over starts and ends, ends first at equal times -----------------
    caps = problem.capacities
    running = [
        (name, t) for name, t in times.items() if t[1] - t[0] > eps
    ]  # zero-duration ops hold nothing
    for res, cap in caps.items():
        if cap is None:
            continue
        users = [(name, t, g[name].demands.get(res, 0)) for name, t in running]
        users = [u for u in users if u[2] > 0]
        events = sorted(
            [(t[1] - eps, 0, name, -amt) for name, t, amt in users]
            + [(t[0], 1, name, amt) for name, t, amt in users]
        )
        level = 0
        active: dict[str, int] = {}
        reported = False
        for when, is_start, name, delta in events:
            level += delta
            if is_start:
                active[name] = delta
            else:
                active.pop(name, None)
            if is_start and level > cap and not reported:
                holders = sorted(active)
                out.append(
                    Violation(
                        "capacity",
                        f"resource {res!r} used {level} > capacity {cap} by {_names(holders)}",
                        tuple(holders[:_SHOW]),
                        when,
                    )
                )
                reported = True  # one report per resource is enough to locate the fault

    # ---- unit indices ---------------------------------------------------------------------
    k = problem.machine.units
    per_unit: dict[int, list[tuple[float, float, str]]] = {}
    with_unit = 0
    needs_unit = 0
    for name, (s, e) in times.items():
        u = by_name[name].unit
        dem = g[name].demands.get("units", 0)
        needs_unit += dem == 1
        if u is None:
            continue
        with_unit += 1
        if dem != 1:
            out.append(
                Violation("unit", f"op {name!r} demands {dem} units but names unit {u}", (name,))
            )
            continue
        if u < 0 or (k is not None and u >= k):
            out.append(
                Violation(
                    "unit", f"op {name!r} is on unit {u}, outside 0..{(k or 0) - 1}", (name,), s
                )
            )
            continue
        if e - s > eps:
            per_unit.setdefault(u, []).append((s, e, name))
    if 0 < with_unit < needs_unit:
        out.append(
            Violation("unit", f"{needs_unit - with_unit} op(s) have no unit index while others do")
        )
    for u, items in per_unit.items():
        items.sort()
        for (_s1, e1, n1), (s2, _e2, n2) in itertools.pairwise(items):
            if s2 < e1 - eps:
                out.append(
                    Violation(
                        "unit_overlap", f"ops {n1!r} and {n2!r} overlap on unit {u}", (n1, n2), s2
                    )
                )

    # ---- makespan and memory ------------------------------------------------------------
    makespan = max((e for _s, e in times.values()), default=0.0)
    report.makespan = makespan
    if len(times) == g.num_ops:
        peak, when, holders = _memory_peak(problem, times, makespan)
        report.peak_memory = peak
        cap = problem.memory_cap
        if cap is not None and peak > cap:
            out.append(
                Violation(
                    "memory",
                    f"peak memory {peak} B > cap {cap} B; live: {_names(holders)}",
                    tuple(holders[:_SHOW]),
                    when,
                )
            )
        if schedule.peak_memory is not None and schedule.peak_memory != peak:
            out.append(
                Violation(
                    "report",
                    f"schedule reports peak memory {schedule.peak_memory} B, recomputed {peak} B",
                )
            )
    if schedule.makespan is not None and abs(schedule.makespan - makespan) > eps:
        out.append(
            Violation(
                "report",
                f"schedule reports makespan {schedule.makespan:g}, recomputed {makespan:g}",
            )
        )
    if schedule.lower_bound is not None and schedule.lower_bound > makespan + eps:
        out.append(
            Violation(
                "report", f"lower bound {schedule.lower_bound:g} exceeds the makespan {makespan:g}"
            )
        )
    return report


def _memory_peak(
    problem: Problem, times: dict[str, tuple[float, float]], makespan: float
) -> tuple[int, float | None, list[str]]:
    """Peak of memory(t) by a plain event sweep, with the time and the tensors live then."""
    g = problem.graph
    release: dict[str, float] = {}
    for op in g.ops:
        for d in op.deps:
            e = times[op.name][1]
            if d not in release or e > release[d]:
                release[d] = e
    allocs: list[tuple[float, float, int, str]] = []  # (from, to, bytes, what)
    for op in g.ops:
        s, e = times[op.name]
        rel = release.get(op.name, makespan if op.output else e)
        if op.output_bytes and rel > s:
            allocs.append((s, rel, op.output_bytes, op.name))
        if op.workspace_bytes and e > s:
            allocs.append((s, e, op.workspace_bytes, f"{op.name}(workspace)"))
    base = g.persistent_bytes
    starts = sorted(allocs)
    live: list[tuple[float, int, str]] = []  # heap by free time
    level = 0
    best, best_t, best_live = base, None, []
    i = 0
    while i < len(starts):
        t = starts[i][0]
        while live and live[0][0] <= t:  # half-open: freed at t before t's allocations
            _, b, _w = heapq.heappop(live)
            level -= b
        while i < len(starts) and starts[i][0] == t:
            _s, rel, b, what = starts[i]
            heapq.heappush(live, (rel, b, what))
            level += b
            i += 1
        if base + level > best:
            best, best_t = base + level, t
    if best_t is not None:  # what is live at the peak, found once (not at every new high)
        best_live = sorted(w for s, rel, _b, w in allocs if s <= best_t < rel)
    return best, best_t, best_live


def _names(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_SHOW])
    return shown + (f" and {len(names) - _SHOW} more" if len(names) > _SHOW else "")
