"""Execution of per-unit op orders, re-exported by :mod:`opsched.validate.simulate`:
:func:`execute_orders` runs each unit's sequence as early as its unit and the dependencies
allow (a compiled longest path over the dependencies plus each op's predecessor on its
unit), :func:`mark_broken` marks a result by what it breaks where :func:`orders_suffice`
says the orders alone do not keep a schedule valid, and :class:`UnitOrders` holds a
schedule's orders to replay many times with other durations.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from opsched.errors import ScheduleFormatError
from opsched.ir.graph import MAX_SIZE, MAX_TOTAL_TIME
from opsched.problem import Problem, require_problem
from opsched.schedule import Schedule, Status

__all__ = ["UnitOrders", "execute_orders", "mark_broken", "orders_suffice"]


def execute_orders(
    problem: Problem,
    orders: Mapping[int, Sequence[str]] | Sequence[Sequence[str]],
    durations: Mapping[str, float] | np.ndarray | None = None,
    solver: str = "orders",
    check: bool = True,
) -> Schedule:
    """Run each unit's op sequence as early as dependencies and the unit allow.

    Parameters
    ----------
    problem
        The problem (its graph gives dependencies and the estimated durations).
    orders
        For each unit, the ops it runs, in order. Every op must appear exactly once.
    durations
        Actual durations to execute with (by name or in graph order); the estimates if omitted.
        The returned schedule uses a copy of the graph with these durations.

    Only the unit orders and dependencies are enforced: with ``check``, where the problem has
    a memory cap or resources besides ``units``, a result the validator refuses has status
    UNKNOWN and ``info["reason"]`` names its first violation (FEASIBLE only for a valid
    schedule).

    Raises
    ------
    ScheduleFormatError
        If an op is missing or repeated, or the orders deadlock (an op waits on one that is
        queued behind it on another unit); the message names the ops.

    Examples
    --------
    >>> from opsched.ir import Op, OpGraph
    >>> from opsched.problem import Machine
    >>> g = OpGraph((Op("a", 2), Op("b", 1), Op("c", 1, deps=("a", "b"))))
    >>> s = execute_orders(Problem(g, Machine(units=2)), [["a", "c"], ["b"]])
    >>> [(o.name, o.start, o.unit) for o in s.ops]
    [('a', 0.0, 0), ('b', 0.0, 1), ('c', 2.0, 0)]
    """
    require_problem(problem, "execute_orders(problem, orders)")
    g = problem.graph
    if durations is not None:
        if isinstance(durations, Mapping):
            unknown = [str(n) for n in durations if n not in g]
            if unknown:
                raise ScheduleFormatError(f"durations name op(s) not in the graph: {unknown[:8]}")
            new = [
                float(durations.get(n, op.duration)) for n, op in zip(g.names, g.ops, strict=True)
            ]
        else:
            new = [float(x) for x in durations]
            if len(new) != g.num_ops:
                raise ScheduleFormatError(
                    f"durations has {len(new)} entries, the graph {g.num_ops} ops"
                )
        bad = [(g.names[i], x) for i, x in enumerate(new) if not (math.isfinite(x) and x >= 0)]
        if bad:
            raise ScheduleFormatError(
                f"duration of op {bad[0][0]!r} must be finite and >= 0, got {bad[0][1]!r}"
            )
        from dataclasses import replace

        g = g.replace_ops([replace(op, duration=d) for op, d in zip(g.ops, new, strict=True)])
        problem = Problem(g, problem.machine, problem.objective)
    items = list(orders.items() if isinstance(orders, Mapping) else enumerate(orders))
    units = problem.capacity("units")
    for u, _ in items:
        if isinstance(u, bool) or not isinstance(u, int | np.integer) or u < 0:
            raise ScheduleFormatError(f"unit orders: unit {u!r} is not an index >= 0")
        if units is not None and u >= units:
            raise ScheduleFormatError(
                f"unit orders name unit {u}, but the machine has {units} unit(s) (0..{units - 1})"
            )
    unit_of = np.full(g.num_ops, -1, dtype=np.int64)
    prev_on_unit = np.full(g.num_ops, -1, dtype=np.int64)
    for u, seq in items:
        last = -1
        for name in seq:
            i = g.index(name)
            if unit_of[i] >= 0:
                raise ScheduleFormatError(f"op {name!r} appears twice in the unit orders")
            unit_of[i] = u
            prev_on_unit[i] = last
            last = i
    missing = [g.names[i] for i in np.flatnonzero(unit_of < 0)]
    if missing:
        raise ScheduleFormatError(f"op(s) missing from the unit orders: {missing[:8]}")
    chain = _unit_chain(g, prev_on_unit)
    start = _chain_starts(chain, g.durations)
    if start is None:
        left = np.ones(g.num_ops, dtype=bool)
        left[chain[2]] = False
        stuck = [g.names[i] for i in np.flatnonzero(left)]
        raise ScheduleFormatError(f"unit orders deadlock: {stuck[:8]} wait on each other")
    out = Schedule.build(problem, start, unit_of.tolist(), solver=solver, status=Status.FEASIBLE)
    return mark_broken(problem, out) if check else out


def _unit_chain(graph: Any, prev_on_unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The dependency edges plus an edge from each op's predecessor on its unit
    (``prev_on_unit``, -1 for none): ``(pred_ptr, pred_idx, order)``, the predecessors as
    CSR arrays and Kahn's order of the ops (short of every op where the orders deadlock)."""
    from opsched._jit import call
    from opsched.analysis._kernels import kahn_order

    n = graph.num_ops
    chained = np.flatnonzero(prev_on_unit >= 0)
    src = np.concatenate([graph.pred_idx, prev_on_unit[chained]]).astype(np.int64)
    dst = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.pred_ptr)),
                          chained]).astype(np.int64)  # fmt: skip
    pred_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=pred_ptr[1:])
    pred_idx = src[np.argsort(dst, kind="stable")]
    succ_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=succ_ptr[1:])
    succ_idx = dst[np.argsort(src, kind="stable")]
    order = call(kahn_order, n + len(src), n, pred_ptr, succ_ptr, succ_idx)
    return pred_ptr, pred_idx, order


def _chain_starts(
    chain: tuple[np.ndarray, np.ndarray, np.ndarray], durations: np.ndarray
) -> np.ndarray | None:
    """Each op's earliest start once its predecessors in ``chain`` (:func:`_unit_chain`: its
    dependencies and the op before it on its unit) have ended, with ``durations`` (graph
    order); None where the orders deadlock. The longest path in compiled array loops
    (:mod:`opsched._jit`): a Python walk had cost about a second per 100,000 ops and replay."""
    from opsched._jit import call
    from opsched.analysis._kernels import forward_longest

    pred_ptr, pred_idx, order = chain
    d = np.asarray(durations, dtype=np.float64)
    if len(order) < len(d):
        return None
    starts: np.ndarray = call(forward_longest, len(order) + len(pred_idx), order, d, pred_ptr,
                              pred_idx)  # fmt: skip
    return starts


def orders_suffice(problem: Problem) -> bool:
    """Whether keeping unit orders and dependencies keeps a schedule valid: no memory cap
    and no resource besides ``units`` (which a replay of orders does not enforce)."""
    return (
        problem.memory_cap is None
        and set(problem.capacities) <= {"units"}
        and all(op.units <= 1 for op in problem.graph.ops)  # an order holds one unit
    )


def mark_broken(problem: Problem, schedule: Schedule) -> Schedule:
    """``schedule``, run from unit orders (:func:`execute_orders`, a replay), marked by what it
    breaks: where :func:`orders_suffice` does not hold and the validator refuses it, status
    UNKNOWN, ``info["valid"]`` False, ``info["reason"]`` its first violation (a slower op
    can keep a tensor alive past the cap) and ``info["broken"]`` the kinds of its violations
    (``memory``, ``capacity``...). A valid one is returned as it is."""
    if orders_suffice(problem):
        return schedule
    from opsched.validate.checker import validate

    report = validate(problem, schedule)
    if not report.valid:
        schedule.status = Status.UNKNOWN
        why = f"the orders break the problem: {report.violations[0]}"
        kinds = sorted(report.kinds())
        schedule.info = {**schedule.info, "valid": False, "reason": why, "broken": kinds}
    return schedule


class UnitOrders:
    """The per-unit op orders of a schedule, ready to replay many times.

    Ops without a unit get a private pseudo-unit each (they only wait for dependencies), and
    so do ops that take no time: they hold no unit (the validator's rule), so queued on one
    behind a running op they had delayed their readers (a replay at zero noise ended at 3
    where the schedule ends at 2).
    """

    def __init__(self, problem: Problem, schedule: Schedule) -> None:
        names = set(problem.graph.names)
        got = {o.name for o in schedule.ops}
        if got != names:
            missing = sorted(names - got)[:5] or sorted(got - names)[:5]
            raise ScheduleFormatError(f"schedule does not match the graph: op(s) {missing}")
        by_unit: dict[int, list[tuple[float, float, str]]] = {}
        extra = max((o.unit for o in schedule.ops if o.unit is not None), default=-1) + 1
        self.units: dict[str, int | None] = {}
        g = problem.graph
        for o in schedule.ops:
            self.units[o.name] = o.unit
            # an op that takes no time holds no unit
            u = o.unit if o.unit is not None and g[o.name].duration > 0 else extra + len(by_unit)
            by_unit.setdefault(u, []).append((o.start, o.end, o.name))
        self.orders = {u: [n for _, _, n in sorted(seq)] for u, seq in by_unit.items()}
        #: ops each op of several units waits for, and ops that wait for it (see
        #: :meth:`_sequence_wide_ops`); a replay adds them to the dependencies
        self.after: dict[str, list[str]] = self._sequence_wide_ops(problem, schedule)
        self._graph = g
        #: (pred_ptr, pred_idx, order) of the orders with the dependencies, for
        #: :meth:`replay_makespan`; worked out at its first call
        self._chain: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._plain_for: Problem | None = None  # the problem replay_makespan applies to

    def replay_makespan(self, problem: Problem, durations: np.ndarray) -> float | None:
        """The makespan of :meth:`run` on ``problem`` with the actual ``durations`` (graph
        order), worked out on arrays: no graph with those durations and no schedule is built
        (a replay of a million ops took seconds so). None where that does not apply, and
        :meth:`run` is needed: where :func:`orders_suffice` does not hold (the replay is
        then checked), for another graph than the orders', and for durations a graph would
        refuse (negative, not finite, or totalling 2^53 or more), whose error :meth:`run`
        raises."""
        g = problem.graph
        d = np.asarray(durations, dtype=np.float64)
        if self._plain_for is not problem:  # orders_suffice walks the ops: once per problem
            if g is not self._graph or self.after or not orders_suffice(problem):
                return None
            self._plain_for = problem
        if (
            d.shape != (g.num_ops,)
            or not (np.isfinite(d).all() and (d >= 0).all())
            or float(d.sum()) >= MAX_TOTAL_TIME
            or (d > MAX_SIZE).any()
        ):
            return None
        if self._chain is None:
            if sum(len(seq) for seq in self.orders.values()) != g.num_ops:
                return None  # an op twice: run() says so
            prev = np.full(g.num_ops, -1, dtype=np.int64)
            for seq in self.orders.values():
                idx = np.fromiter((g.index(name) for name in seq), np.int64, count=len(seq))
                prev[idx[1:]] = idx[:-1]
            self._chain = _unit_chain(g, prev)
        starts = _chain_starts(self._chain, d)
        if starts is None:  # a deadlock: run() names the ops
            return None
        return float((starts + d).max()) if g.num_ops else 0.0

    def run(self, problem: Problem) -> Schedule:
        """Replay the orders on ``problem``, whose durations are the actual ones: each unit
        keeps its order, and an op starts once its unit is free and its dependencies (for
        an op of several units, also the ops of :attr:`after`) have finished. The result is
        a schedule of ``problem``, each op on its unit of the original schedule, marked by
        :func:`mark_broken` (memory and resources besides units are not enforced)."""
        from dataclasses import replace

        # the orders sequence the units themselves; the pseudo-units of ops that hold none
        # (unit-less, zero-duration) lie past the machine's count, which execute_orders refuses
        free = problem.with_machine(units=None)
        if self.after:  # ops of several units keep their place among the others
            g = free.graph
            ops = [
                replace(op, deps=tuple(dict.fromkeys(op.deps + tuple(self.after.get(op.name, ())))))
                for op in g.ops
            ]
            free = Problem(g.replace_ops(ops), free.machine, free.objective)
        run = execute_orders(free, self.orders, solver="replay", check=False)
        starts = [o.start for o in run.ops]
        units = [self.units[n] for n in problem.graph.names]
        out = Schedule.build(problem, starts, units, solver="replay", status=Status.FEASIBLE)
        return mark_broken(problem, out)

    @staticmethod
    def _sequence_wide_ops(problem: Problem, schedule: Schedule) -> dict[str, list[str]]:
        """Extra predecessors that keep an op of several units where its schedule had it.

        Such an op holds no single unit, so no unit order places it: replayed on its
        dependencies alone it started beside the ops it had waited for (a list schedule
        with one replayed at zero noise broke the unit capacity every run). It now waits,
        on every unit, for the last op that ended by its start, and for the other ops of
        several units that did, and the first op starting at or after its end on every
        unit, and such ops of several units, wait for it. With the schedule's own
        durations a left-justified schedule replays to itself.
        """
        g = problem.graph
        busy = [o for o in schedule.ops if g[o.name].duration > 0 and g[o.name].units > 0]
        wide = [o for o in busy if o.unit is None and g[o.name].units > 1]
        after: dict[str, list[str]] = {}
        if not wide:
            return after
        lanes: dict[int, list[Any]] = {}
        for o in busy:
            if o.unit is not None:
                lanes.setdefault(o.unit, []).append(o)
        # a unit's ops do not overlap: by start, their ends are in order too
        ordered = [sorted(lane, key=lambda o: o.start) for lane in lanes.values()]
        marks = [([o.start for o in lane], [o.end for o in lane]) for lane in ordered]
        for x in wide:
            for lane, (starts, ends) in zip(ordered, marks, strict=True):
                k = bisect.bisect_right(ends, x.start)  # lane[:k] ended by x's start
                if k:
                    after.setdefault(x.name, []).append(lane[k - 1].name)
                k = bisect.bisect_left(starts, x.end)  # lane[k:] start at or after x's end
                if k < len(lane):
                    after.setdefault(lane[k].name, []).append(x.name)
            for y in wide:
                if y is not x and y.end <= x.start:
                    after.setdefault(x.name, []).append(y.name)
        return after
