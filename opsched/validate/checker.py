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

import numbers

import numpy as np

from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule, Status
from opsched.validate.report import ValidationReport, Violation  # re-exported, as before

__all__ = ["ValidationReport", "Violation", "validate"]

_SHOW = 8  # ops named in one message at most


def validate(problem: Problem, schedule: Schedule, tol: float = 1e-9) -> ValidationReport:
    """Check ``schedule`` against ``problem``; return every violation found: each broken
    dependency, duration or unit, each stretch of time over a resource's capacity (at its
    highest level) and the memory peak, if it is over the cap.

    Parameters
    ----------
    problem
        The graph, machine (units, resources, memory cap) and objective.
    schedule
        The schedule to check (from any solver, heuristic or file).
    tol
        Relative tolerance for comparing times, scaled by the graph's total duration (the
        longest any schedule without idle time can be), never by the schedule's own times:
        one op placed far off cannot widen the checks of the others. An op at a time past
        that also gets :data:`TIME_ULPS` units in the last place of its own times (the
        rounding a float sum of its predecessors' durations can carry). Integer schedules
        are compared exactly.

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
    if isinstance(problem, Schedule) and isinstance(schedule, Problem):
        raise TypeError("validate(problem, schedule): the arguments are the other way round")
    require_problem(problem, "validate(problem, schedule)")
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"validate(problem, schedule): schedule must be a Schedule, got "
            f"{type(schedule).__name__} (Schedule.from_dict reads a file's)"
        )
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1:
        raise ValueError(  # NaN passes no comparison, so every check would pass
            f"validate: tol must be a number in [0, 1) (relative to the graph's work), got {tol!r}"
        )
    g = problem.graph
    report = ValidationReport()
    out = report.violations

    if schedule.status in (Status.INFEASIBLE, Status.UNKNOWN) and not schedule.ops:
        report.checked = False
        return report  # no schedule to check
    if schedule.status is Status.INFEASIBLE:  # a proof that none exists, yet ops are placed
        out.append(Violation("report", "the status is INFEASIBLE, yet the schedule places ops"))
    if schedule.graph != g.name:
        out.append(Violation("graph", f"schedule is for graph {schedule.graph!r}, not {g.name!r}"))

    # ---- one entry per op, gathered into arrays in graph order ----------------------------
    n = g.num_ops
    names = g.names
    index: dict[str, int] = {name: i for i, name in enumerate(names)}
    present = np.zeros(n, dtype=bool)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    unit = np.zeros(n, dtype=np.int64)
    has_unit = np.zeros(n, dtype=bool)  # the op names a unit (any integer, checked below)
    for o in schedule.ops:
        pos = index.get(o.name)
        if pos is None:
            out.append(Violation("unknown_op", f"op {o.name!r} is not in the graph", (o.name,)))
        elif present[pos]:
            out.append(Violation("duplicate_op", f"op {o.name!r} is scheduled twice", (o.name,)))
        else:
            present[pos] = True
            start[pos], end[pos] = o.start, o.end
            if o.unit is None:
                pass
            elif isinstance(o.unit, bool) or not isinstance(o.unit, int | np.integer):
                out.append(  # 1.5 or "0" would be read as a unit by int()
                    Violation("unit", f"op {o.name!r}: unit {o.unit!r} is no integer", (o.name,))
                )
            else:
                unit[pos], has_unit[pos] = o.unit, True
    if not present.all():
        missing = [names[i] for i in np.flatnonzero(~present)]
        out.append(
            Violation(
                "missing_op",
                f"{len(missing)} op(s) not scheduled: {_names(missing)}",
                tuple(missing[:_SHOW]),
            )
        )
    seen = np.abs(np.concatenate([start[present], end[present]]))
    seen = seen[np.isfinite(seen)]
    # Each op's tolerance: relative to the graph's total duration (a floor of 1 would let
    # ops of 1e-9 overlap; one relative to the schedule's largest time let an op placed at
    # 1e10 switch every check off, a tolerance of 10 for ops of length 1), or a few ulps of
    # its own times where those are larger. None where every time and duration is a whole
    # number (1e-9 x 1e10 = 10 would let integer ops of 8 overlap).
    with np.errstate(invalid="ignore"):
        mag = np.fmax(np.abs(start), np.abs(end))
    mag = np.where(np.isfinite(mag), mag, 0.0)
    exact = _whole(seen) and _whole(g.durations)
    work = float(g.durations.sum())

    def tolerance(at: np.ndarray | float) -> np.ndarray:
        """The tolerance of times of magnitude ``at``."""
        if exact:
            return np.zeros(np.shape(at))
        return np.maximum(tol * work, TIME_ULPS * np.spacing(at))

    eps = tolerance(mag)

    # ---- times --------------------------------------------------------------------------
    d = g.durations
    ok = present & np.isfinite(start) & np.isfinite(end)  # ops whose times enter the checks
    for i in np.flatnonzero(present & ~ok):
        out.append(Violation("time", f"op {names[i]!r} has a non-finite time", (names[i],)))
    with np.errstate(invalid="ignore"):
        early = ok & (start < -eps)
        wrong = ok & (np.abs((end - start) - d) > eps)
    for i in np.flatnonzero(early | wrong):
        if early[i]:
            out.append(Violation("time", f"op {names[i]!r} starts before 0 ({start[i]:g})",
                                 (names[i],), float(start[i])))  # fmt: skip
        if wrong[i]:
            out.append(Violation(
                "duration",
                f"op {names[i]!r} runs {end[i] - start[i]:g} but its duration is {d[i]:g}",
                (names[i],), float(start[i]),
            ))  # fmt: skip
    S = np.where(ok, start, 0.0)
    E = S + d  # the times every later check uses: start + the op's own duration

    # ---- precedence -----------------------------------------------------------------
    src = g.pred_idx
    dst = np.repeat(np.arange(n), np.diff(g.pred_ptr))
    pair_eps = np.maximum(eps[src], eps[dst])
    for edge in np.flatnonzero(ok[src] & ok[dst] & (S[dst] < E[src] - pair_eps)):
        u, v = int(src[edge]), int(dst[edge])
        out.append(
            Violation(
                "precedence",
                f"op {names[v]!r} starts at {S[v]:.12g} before its dependency {names[u]!r} ends "
                f"at {E[u]:.12g}",
                (names[u], names[v]),
                float(S[v]),
            )
        )

    # ---- resources: sweep over starts and ends, ends first at equal times -----------------
    running = ok & (eps < E - S)  # zero-duration ops hold nothing
    name_arr = np.asarray(names, dtype=str)
    for res, cap in problem.capacities.items():
        if cap is None:
            continue
        amt = g.demand_array(res)
        users = np.flatnonzero(running & (amt > 0))
        if not len(users):
            continue
        found, total = _overflows(S[users], E[users] - eps[users], amt[users], name_arr[users], cap)
        if total > len(found):
            out.append(
                Violation(
                    "capacity",
                    f"resource {res!r} is over its capacity {cap} in "
                    f"{total:,} stretches of time; the first {len(found)} follow",
                )
            )
        for when, level, holders_idx in found:
            holders = sorted(names[i] for i in users[holders_idx])
            out.append(
                Violation(
                    "capacity",
                    f"resource {res!r} used {level} > capacity {cap} by {_names(holders)}",
                    tuple(holders[:_SHOW]),
                    when,
                )
            )

    # ---- unit indices ---------------------------------------------------------------------
    k = problem.machine.units
    dem = g.demand_array("units")
    given = ok & has_unit
    needs_unit = int((ok & (dem == 1)).sum())
    for i in np.flatnonzero(given & (dem != 1)):
        out.append(Violation("unit", f"op {names[i]!r} demands {dem[i]} units but names unit "
                             f"{unit[i]}", (names[i],)))  # fmt: skip
    beyond = (unit >= k) if k is not None else np.zeros(n, dtype=bool)
    outside = given & (dem == 1) & ((unit < 0) | beyond)
    for i in np.flatnonzero(outside):
        out.append(Violation("unit", f"op {names[i]!r} is on unit {unit[i]}, outside "
                             f"0..{(k or 0) - 1}", (names[i],), float(S[i])))  # fmt: skip
    with_unit = int(given.sum())
    if 0 < with_unit < needs_unit:
        out.append(
            Violation("unit", f"{needs_unit - with_unit} op(s) have no unit index while others do")
        )
    on_unit = np.flatnonzero(given & (dem == 1) & ~outside & (eps < E - S))
    for a_i, b_i in _unit_overlaps(
        unit[on_unit], S[on_unit], E[on_unit], name_arr[on_unit], eps[on_unit]
    ):
        a_op, b_op = on_unit[a_i], on_unit[b_i]
        out.append(Violation("unit_overlap", f"ops {names[a_op]!r} and {names[b_op]!r} overlap "
                             f"on unit {unit[a_op]}", (names[a_op], names[b_op]),
                             float(S[b_op])))  # fmt: skip

    # ---- makespan and memory ------------------------------------------------------------
    makespan = float(E[ok].max()) if ok.any() else 0.0
    report.makespan = makespan
    if ok.all():
        peak, when_peak, live = _memory_peak(problem, S, E, makespan)
        report.peak_memory = peak
        cap = problem.memory_cap
        if cap is not None and peak > cap:
            out.append(
                Violation(
                    "memory",
                    f"peak memory {peak} B > cap {cap} B; live: {_names(live)}",
                    tuple(live[:_SHOW]),
                    when_peak,
                )
            )
        if schedule.peak_memory is not None and schedule.peak_memory != peak:
            out.append(
                Violation(
                    "report",
                    f"schedule reports peak memory {schedule.peak_memory} B, recomputed {peak} B",
                )
            )
    # the figure a schedule file states (from_dict recomputes ``makespan``), else its own
    stated = schedule.makespan if schedule.reported_makespan is None else schedule.reported_makespan
    end_eps = float(tolerance(makespan))
    if stated is not None and abs(stated - makespan) > end_eps:
        out.append(
            Violation("report", f"schedule reports makespan {stated:g}, recomputed {makespan:g}")
        )
    if schedule.lower_bound is not None and schedule.lower_bound > makespan + end_eps:
        out.append(
            Violation(
                "report", f"lower bound {schedule.lower_bound:g} exceeds the makespan {makespan:g}"
            )
        )
    return report


#: Units in the last place of an op's own times that :func:`validate` allows it beyond its
#: relative tolerance (which scales with the graph's total duration): a schedule placed past
#: that total, with float times, still compares as equal what a sum of durations rounds.
TIME_ULPS = 1024

#: Most stretches over one resource's capacity that are reported one by one (each costs a
#: pass over the schedule's events: a million-op schedule broken everywhere took minutes).
MAX_STRETCHES = 50


def _overflows(
    s: np.ndarray, e: np.ndarray, amt: np.ndarray, names: np.ndarray, cap: int
) -> tuple[list[tuple[float, int, np.ndarray]], int]:
    """Each stretch of time over ``cap``, at its highest level: (time, level, holders), the
    first :data:`MAX_STRETCHES` of them, and how many there are.

    Events are ordered by time, ends before starts at equal times, then by op name; a
    stretch runs from a start that passes ``cap`` to the next event back within it, and is
    reported at its first event of the highest level, with the ops started and not yet
    ended there.
    """
    m = len(s)
    when = np.concatenate([e, s])
    is_start = np.concatenate([np.zeros(m, dtype=np.int8), np.ones(m, dtype=np.int8)])
    who = np.concatenate([np.arange(m), np.arange(m)])
    order = np.lexsort((np.concatenate([names, names]), is_start, when))
    delta = np.where(is_start == 1, amt[who], -amt[who])[order]
    level = np.cumsum(delta)
    over = level > cap
    if not over.any():
        return [], 0
    pos = np.empty(2 * m, dtype=np.int64)
    pos[order] = np.arange(2 * m)
    out = []
    edges = np.flatnonzero(np.diff(np.concatenate([[False], over, [False]]).astype(np.int8)))
    stretches = list(zip(edges[::2], edges[1::2], strict=True))  # over on events a .. b-1
    for a, b in stretches[:MAX_STRETCHES]:  # each costs a pass over the events
        p = int(a + np.argmax(level[a:b]))
        started, ended = pos[m:] <= p, pos[:m] <= p
        out.append((float(when[order[p]]), int(level[p]), np.flatnonzero(started & ~ended)))
    return out, len(stretches)


def _unit_overlaps(
    unit: np.ndarray, s: np.ndarray, e: np.ndarray, names: np.ndarray, eps: np.ndarray
) -> list[tuple[int, int]]:
    """Consecutive pairs (by unit, then start, end, name) that overlap on their unit.

    Each op holds its unit over ``[s, e - eps)``, its end pulled in by its own tolerance, as
    in the capacity sweep: a pair that breaks a one-unit capacity also breaks its unit. The
    callers pass only ops with ``eps < e - s``, so every such interval is non-empty and, in
    start order, any overlap shows up between neighbours."""
    if len(unit) < 2:
        return []
    order = np.lexsort((names, e, s, unit))
    u, s2, e2 = unit[order], s[order], e[order] - eps[order]
    clash = np.flatnonzero((u[1:] == u[:-1]) & (s2[1:] < e2[:-1]))
    return [(int(order[c]), int(order[c + 1])) for c in clash]


def _memory_peak(
    problem: Problem, start: np.ndarray, end: np.ndarray, makespan: float
) -> tuple[int, float | None, list[str]]:
    """Peak of memory(t) by an event sweep, with the time and the tensors live then.

    A tensor lives over ``[start(v), release(v))`` with release the latest end of its
    consumers (the makespan for an unconsumed graph output, its own end otherwise); a
    workspace over ``[start(v), end(v))``. Frees at ``t`` come before allocations at ``t``.
    """
    g = problem.graph
    n = g.num_ops
    src = g.pred_idx
    dst = np.repeat(np.arange(n), np.diff(g.pred_ptr))
    release = np.full(n, -np.inf)
    np.maximum.at(release, src, end[dst])
    consumed = np.diff(g.succ_ptr) > 0
    is_output = np.fromiter((op.output for op in g.ops), dtype=bool, count=n)
    release = np.where(consumed, release, np.where(is_output, makespan, end))
    out_b, ws_b = g.output_sizes, g.workspace_sizes
    a_out = np.flatnonzero((out_b > 0) & (release > start))
    a_ws = np.flatnonzero((ws_b > 0) & (end > start))
    lo = np.concatenate([start[a_out], start[a_ws]])
    hi = np.concatenate([release[a_out], end[a_ws]])
    size = np.concatenate([out_b[a_out], ws_b[a_ws]])
    base = g.persistent_bytes
    if not len(size):
        return base, None, []
    m = len(size)
    when = np.concatenate([hi, lo])
    kind = np.concatenate([np.zeros(m, dtype=np.int8), np.ones(m, dtype=np.int8)])  # free first
    order = np.lexsort((kind, when))
    level = np.cumsum(np.concatenate([-size, size])[order])
    top = int(np.argmax(level))
    if level[top] <= 0:
        return base, None, []
    t = float(when[order[top]])
    live_idx = np.flatnonzero((lo <= t) & (t < hi))
    names = g.names
    labels = [names[i] for i in a_out] + [f"{names[i]}(workspace)" for i in a_ws]
    return base + int(level[top]), t, sorted(labels[i] for i in live_idx)


def _whole(x: np.ndarray) -> bool:
    """Whether every value of ``x`` is a whole number (exactly, as floats)."""
    return bool(np.all(np.floor(x) == x))


def _names(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_SHOW])
    return shown + (f" and {len(names) - _SHOW} more" if len(names) > _SHOW else "")
